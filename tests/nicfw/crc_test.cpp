// crc_test.cpp - the link CRC is CRC-32C on every CPU: the SSE4.2 path and the
// table path (the one a CPU without SSE4.2 uses) both give the published
// CRC-32C check values, and they agree with each other and with a bitwise
// reference on random buffers of every small length and alignment.  Two NICs
// on machines of different kinds therefore accept each other's packets.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "crc.hpp"

using namespace nicfw;

namespace {
// The definition, one bit at a time (reflected polynomial 0x82F63B78).
uint32_t reference(uint32_t crc, const unsigned char *p, size_t len) {
    uint32_t c = ~crc;
    while (len--) {
        c ^= *p++;
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return ~c;
}

using CrcFn = uint32_t (*)(uint32_t, const void *, size_t);

// Published CRC-32C check values: the catalogue's "123456789" and the iSCSI
// test vectors of RFC 3720, appendix B.4.
void expect_known_answers(CrcFn f, const char *path) {
    SCOPED_TRACE(path);
    EXPECT_EQ(f(0, "123456789", 9), 0xE3069283u);
    EXPECT_EQ(f(0, "", 0), 0u);
    unsigned char b[32];
    std::memset(b, 0, sizeof b);
    EXPECT_EQ(f(0, b, 32), 0x8A9136AAu);
    std::memset(b, 0xff, sizeof b);
    EXPECT_EQ(f(0, b, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; ++i) b[i] = static_cast<unsigned char>(i);
    EXPECT_EQ(f(0, b, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; ++i) b[i] = static_cast<unsigned char>(31 - i);
    EXPECT_EQ(f(0, b, 32), 0x113FDB5Cu);
}

std::vector<unsigned char> random_bytes(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<unsigned char> v(n);
    for (auto &x : v) x = static_cast<unsigned char>(rng());
    return v;
}
} // namespace

TEST(Crc32c, TablePathGivesTheCrc32cCheckValues) { expect_known_answers(crc_path::table, "table"); }

TEST(Crc32c, HardwarePathGivesTheCrc32cCheckValues) {
    if (!crc_path::hardware_available()) GTEST_SKIP() << "this CPU has no SSE4.2";
    expect_known_answers(crc_path::hardware, "sse4.2");
}

TEST(Crc32c, WhatPacketsUseGivesTheCrc32cCheckValues) { expect_known_answers(crc32c, "dispatch"); }

// Every length 0..300 at every alignment 0..7, in one piece and chained in two
// pieces split anywhere: table == reference == hardware == what packets use.
TEST(Crc32c, PathsAgreeOnRandomBuffersLengthsAndAlignments) {
    const auto buf = random_bytes(300 + 8, 14);
    const bool hw = crc_path::hardware_available();
    for (size_t align = 0; align < 8; ++align) {
        for (size_t len = 0; len <= 300; ++len) {
            const unsigned char *p = buf.data() + align;
            const uint32_t ref = reference(0, p, len);
            ASSERT_EQ(crc_path::table(0, p, len), ref) << "table, len " << len << " align " << align;
            if (hw) { ASSERT_EQ(crc_path::hardware(0, p, len), ref) << "sse4.2, len " << len << " align " << align; }
            ASSERT_EQ(crc32c(0, p, len), ref) << "dispatch, len " << len << " align " << align;
            const size_t cut = len / 3;
            ASSERT_EQ(crc_path::table(crc_path::table(0, p, cut), p + cut, len - cut), ref) << "chained, len " << len;
            ASSERT_EQ(crc32c2(p, cut, p + cut, len - cut), ref) << "two pieces, len " << len;
        }
    }
}

// Large random buffers (up to a 64 KiB payload) with random seeds for the chain.
TEST(Crc32c, PathsAgreeOnLargeBuffersAndNonZeroSeeds) {
    std::mt19937 rng(2026);
    const bool hw = crc_path::hardware_available();
    for (int round = 0; round < 40; ++round) {
        const size_t len = rng() % (64 * 1024 + 1);
        const size_t align = rng() % 8;
        const auto buf = random_bytes(len + align, static_cast<uint32_t>(round));
        const uint32_t seed = rng();
        const uint32_t t = crc_path::table(seed, buf.data() + align, len);
        EXPECT_EQ(t, reference(seed, buf.data() + align, len)) << "len " << len;
        if (hw) { EXPECT_EQ(crc_path::hardware(seed, buf.data() + align, len), t) << "len " << len; }
        EXPECT_EQ(crc32c(seed, buf.data() + align, len), t) << "len " << len;
    }
}
