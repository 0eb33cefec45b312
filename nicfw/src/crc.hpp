// crc.hpp - the link CRC of nicfw packets: CRC-32C computed with the CPU's
// crc32 instruction (SSE4.2), or zlib's crc32 where the CPU lacks it.  Both
// ends of a link are on the same host, so they always agree on the choice.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nicfw {

uint32_t crc32c(uint32_t crc, const void *data, size_t len);
// CRC of two pieces (a packet's header fields, then its payload) in one call.
uint32_t crc32c2(const void *a, size_t alen, const void *b, size_t blen);

} // namespace nicfw
