// test_verbs_mapping.cpp - the verbs provider's pure mappings, no RDMA device needed:
// work completion status -> descriptor status bits (the table in docs/verbs.md),
// host address encoding and name parsing, discriminator encoding in private data.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <bitset>
#include <cstring>
#include <string>

#include "verbs_addr.hpp"
#include "verbs_cm.hpp"
#include "verbs_provider.hpp"

using namespace vipl::verbs;

namespace {

TEST(StatusTable, SuccessHasNoErrorBits) { EXPECT_EQ(status_bits(IBV_WC_SUCCESS), 0u); }

TEST(StatusTable, EveryErrorStatusSetsExactlyOneErrorBit) {
    for (int s = IBV_WC_LOC_LEN_ERR; s <= IBV_WC_GENERAL_ERR; s++) {
        uint32_t bits = status_bits(ibv_wc_status(s));
        EXPECT_EQ(bits & ~uint32_t(VIP_STATUS_ERROR_MASK), 0u) << ibv_wc_status_str(ibv_wc_status(s));
        EXPECT_EQ(std::bitset<32>(bits).count(), 1u) << ibv_wc_status_str(ibv_wc_status(s));
    }
}

TEST(StatusTable, DocumentedRows) {
    struct Row {
        ibv_wc_status s;
        uint32_t bits;
    } rows[] = {
        {IBV_WC_LOC_LEN_ERR, VIP_STATUS_LENGTH_ERROR},        {IBV_WC_LOC_QP_OP_ERR, VIP_STATUS_FORMAT_ERROR},
        {IBV_WC_LOC_PROT_ERR, VIP_STATUS_PROTECTION_ERROR},   {IBV_WC_WR_FLUSH_ERR, VIP_STATUS_DESC_FLUSHED_ERROR},
        {IBV_WC_LOC_ACCESS_ERR, VIP_STATUS_PROTECTION_ERROR}, {IBV_WC_REM_INV_REQ_ERR, VIP_STATUS_REMOTE_DESC_ERROR},
        {IBV_WC_REM_ACCESS_ERR, VIP_STATUS_RDMA_PROT_ERROR},  {IBV_WC_REM_OP_ERR, VIP_STATUS_REMOTE_DESC_ERROR},
        {IBV_WC_RETRY_EXC_ERR, VIP_STATUS_TRANSPORT_ERROR},   {IBV_WC_RNR_RETRY_EXC_ERR, VIP_STATUS_TRANSPORT_ERROR},
        {IBV_WC_BAD_RESP_ERR, VIP_STATUS_TRANSPORT_ERROR},    {IBV_WC_FATAL_ERR, VIP_STATUS_TRANSPORT_ERROR},
    };
    for (const Row &r : rows) EXPECT_EQ(status_bits(r.s), r.bits) << ibv_wc_status_str(r.s);
}

TEST(HostAddress, Ipv4AndPortRoundTrip) {
    HostAddr a;
    a.family = AF_INET;
    inet_pton(AF_INET, "192.0.2.1", a.ip);
    a.port = 4791;
    std::vector<uint8_t> b = a.bytes();
    ASSERT_EQ(b.size(), 6u);
    EXPECT_EQ(b[4], 4791 >> 8);
    EXPECT_EQ(b[5], 4791 & 0xff);
    HostAddr back;
    ASSERT_TRUE(HostAddr::from_bytes(b.data(), b.size(), &back));
    EXPECT_TRUE(back == a);
    EXPECT_EQ(back.to_string(), "192.0.2.1:4791");
}

TEST(HostAddress, Ipv6IsEighteenBytesAndMalformedLengthsFail) {
    std::vector<HostAddr> out;
    std::string why;
    ASSERT_TRUE(resolve_name("[::1]:7", 0, &out, &why)) << why;
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].bytes().size(), 18u);
    EXPECT_EQ(out[0].to_string(), "[::1]:7");
    HostAddr x;
    uint8_t junk[7] = {};
    EXPECT_FALSE(HostAddr::from_bytes(junk, 7, &x));
    EXPECT_FALSE(HostAddr::from_bytes(junk, 2, &x)); // a nicfw address is not a verbs one
}

TEST(HostAddress, NamesNeedAPort) {
    std::vector<HostAddr> out;
    std::string why;
    EXPECT_TRUE(resolve_name("127.0.0.1:9000", 0, &out, &why)) << why;
    out.clear();
    EXPECT_FALSE(resolve_name("127.0.0.1", 0, &out, &why));
    EXPECT_NE(why.find("port"), std::string::npos) << why;
    EXPECT_TRUE(resolve_name("127.0.0.1", 1234, &out, &why)) << why;
    EXPECT_EQ(out.at(0).port, 1234);
    EXPECT_FALSE(resolve_name("127.0.0.1:0", 0, &out, &why));
    EXPECT_FALSE(resolve_name("127.0.0.1:x", 0, &out, &why));
}

TEST(HostAddress, PeerTieBreakComparesHostThenDiscriminator) {
    alignas(8) uint8_t a[VIP_NET_ADDRESS_SIZE(6, 4)], b[VIP_NET_ADDRESS_SIZE(6, 4)];
    auto *na = reinterpret_cast<VIP_NET_ADDRESS *>(a);
    auto *nb = reinterpret_cast<VIP_NET_ADDRESS *>(b);
    const uint8_t host[6] = {192, 0, 2, 1, 0x12, 0x34};
    for (auto *n : {na, nb}) {
        n->HostAddressLen = 6;
        n->DiscriminatorLen = 4;
        std::memcpy(n->HostAddress, host, 6);
    }
    std::memcpy(na->HostAddress + 6, "lb-a", 4);
    std::memcpy(nb->HostAddress + 6, "lb-b", 4);
    EXPECT_LT(compare_net_addr(na, nb), 0);
    EXPECT_GT(compare_net_addr(nb, na), 0);
    EXPECT_EQ(compare_net_addr(na, na), 0);
    nb->HostAddress[3] = 0; // a lower host address wins whatever the discriminator
    EXPECT_GT(compare_net_addr(na, nb), 0);
}

TEST(Discriminator, ShortOnesTravelVerbatimLongOnesAsDigest) {
    std::vector<uint8_t> shortd(20, 'a'), longd(64, 'b'), longd2(64, 'b');
    longd2[63] = 'c';
    EncodedDisc e = encode_disc(shortd, 44);
    EXPECT_FALSE(e.digest);
    EXPECT_EQ(e.bytes, shortd);
    EXPECT_TRUE(disc_matches(e.bytes.data(), e.bytes.size(), false, shortd));
    EncodedDisc l = encode_disc(longd, 44);
    EXPECT_TRUE(l.digest);
    EXPECT_EQ(l.bytes.size(), kDigestLen);
    EXPECT_TRUE(disc_matches(l.bytes.data(), l.bytes.size(), true, longd));
    EXPECT_FALSE(disc_matches(l.bytes.data(), l.bytes.size(), true, longd2));
    // Not enough room left: even a short one goes as a digest.
    EXPECT_TRUE(encode_disc(shortd, 10).digest);
    // Both encoded discriminators always fit the REQ's private data.
    EXPECT_LE(offsetof(RequestPriv, bytes) + 2 * kDigestLen, 56u);
    EXPECT_LE(offsetof(RequestPriv, bytes) + kRawDiscriminator + kDigestLen, 56u);
}

} // namespace
