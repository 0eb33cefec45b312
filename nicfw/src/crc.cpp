// crc.cpp - link CRC (see crc.hpp).
#include "crc.hpp"

#include <zlib.h>

#include <cstring>

namespace nicfw {

namespace {
#if defined(__x86_64__)
__attribute__((target("sse4.2"), always_inline)) inline uint32_t crc32c_hw(uint32_t crc, const unsigned char *p, size_t len) {
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
bool have_sse42() { return __builtin_cpu_supports("sse4.2"); }
#else
uint32_t crc32c_hw(uint32_t, const unsigned char *, size_t) { return 0; }
bool have_sse42() { return false; }
#endif

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc2_hw(const unsigned char *a, size_t alen, const unsigned char *b,
                                                   size_t blen) {
    return crc32c_hw(crc32c_hw(0, a, alen), b, blen);
}
#else
uint32_t crc2_hw(const unsigned char *, size_t, const unsigned char *, size_t) { return 0; }
#endif

uint32_t crc_zlib(uint32_t crc, const unsigned char *p, size_t len) {
    return static_cast<uint32_t>(::crc32_z(crc, p, len));
}

using CrcFn = uint32_t (*)(uint32_t, const unsigned char *, size_t);
const CrcFn g_crc = have_sse42() ? crc32c_hw : crc_zlib;

uint32_t crc2_zlib(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen) {
    return crc_zlib(crc_zlib(0, a, alen), b, blen);
}
using Crc2Fn = uint32_t (*)(const unsigned char *, size_t, const unsigned char *, size_t);
const Crc2Fn g_crc2 = have_sse42() ? crc2_hw : crc2_zlib;
} // namespace

uint32_t crc32c2(const void *a, size_t alen, const void *b, size_t blen) {
    return g_crc2(static_cast<const unsigned char *>(a), alen, static_cast<const unsigned char *>(b), blen);
}

uint32_t crc32c(uint32_t crc, const void *data, size_t len) {
    return g_crc(crc, static_cast<const unsigned char *>(data), len);
}

} // namespace nicfw
