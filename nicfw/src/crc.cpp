// crc.cpp - CRC-32C (see crc.hpp): the SSE4.2 instruction path, the portable
// slicing-by-8 table path, and the choice between them made once at start-up.
#include "crc.hpp"

#include <array>
#include <cstring>

namespace nicfw {

namespace {
constexpr uint32_t kPoly = 0x82F63B78u; // CRC-32C, reflected

// kTable[0] is the classic byte-at-a-time table; kTable[k][i] is the CRC of byte
// i followed by k zero bytes, so eight table lookups consume eight bytes.
using Tables = std::array<std::array<uint32_t, 256>, 8>;
constexpr Tables make_tables() {
    Tables t{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (kPoly & (0u - (c & 1u)));
        t[0][i] = c;
    }
    for (size_t k = 1; k < 8; ++k)
        for (uint32_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
    return t;
}
constexpr Tables kTable = make_tables();

inline uint32_t table_crc(uint32_t crc, const unsigned char *p, size_t len) {
    uint32_t c = ~crc;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (len >= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        v ^= c;
        c = kTable[7][v & 0xff] ^ kTable[6][(v >> 8) & 0xff] ^ kTable[5][(v >> 16) & 0xff] ^
            kTable[4][(v >> 24) & 0xff] ^ kTable[3][(v >> 32) & 0xff] ^ kTable[2][(v >> 40) & 0xff] ^
            kTable[1][(v >> 48) & 0xff] ^ kTable[0][v >> 56];
        p += 8;
        len -= 8;
    }
#endif
    while (len--) c = kTable[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"), always_inline)) inline uint32_t hw_crc(uint32_t crc, const unsigned char *p,
                                                                        size_t len) {
    uint64_t c = ~crc;
    while (len >= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        len -= 8;
    }
    uint32_t c32 = static_cast<uint32_t>(c);
    while (len--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return ~c32;
}
__attribute__((target("sse4.2"))) uint32_t hw_crc_fn(uint32_t crc, const unsigned char *p, size_t len) {
    return hw_crc(crc, p, len);
}
__attribute__((target("sse4.2"))) uint32_t hw_crc2(const unsigned char *a, size_t alen, const unsigned char *b,
                                                   size_t blen) {
    return hw_crc(hw_crc(0, a, alen), b, blen);
}
bool have_hw() { return __builtin_cpu_supports("sse4.2"); }
#else
uint32_t hw_crc_fn(uint32_t crc, const unsigned char *p, size_t len) { return table_crc(crc, p, len); }
uint32_t hw_crc2(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen) {
    return table_crc(table_crc(0, a, alen), b, blen);
}
bool have_hw() { return false; }
#endif

uint32_t table_crc_fn(uint32_t crc, const unsigned char *p, size_t len) { return table_crc(crc, p, len); }
uint32_t table_crc2(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen) {
    return table_crc(table_crc(0, a, alen), b, blen);
}

// Chosen once at load: each packet pays one indirect call and no CPU test.
using CrcFn = uint32_t (*)(uint32_t, const unsigned char *, size_t);
using Crc2Fn = uint32_t (*)(const unsigned char *, size_t, const unsigned char *, size_t);
const bool g_hw = have_hw();
const CrcFn g_crc = g_hw ? hw_crc_fn : table_crc_fn;
const Crc2Fn g_crc2 = g_hw ? hw_crc2 : table_crc2;
} // namespace

uint32_t crc32c2(const void *a, size_t alen, const void *b, size_t blen) {
    return g_crc2(static_cast<const unsigned char *>(a), alen, static_cast<const unsigned char *>(b), blen);
}

uint32_t crc32c(uint32_t crc, const void *data, size_t len) {
    return g_crc(crc, static_cast<const unsigned char *>(data), len);
}

namespace crc_path {
bool hardware_available() { return have_hw(); }
uint32_t hardware(uint32_t crc, const void *data, size_t len) {
    return hw_crc_fn(crc, static_cast<const unsigned char *>(data), len);
}
uint32_t table(uint32_t crc, const void *data, size_t len) {
    return table_crc(crc, static_cast<const unsigned char *>(data), len);
}
} // namespace crc_path

} // namespace nicfw
