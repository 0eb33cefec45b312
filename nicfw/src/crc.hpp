// crc.hpp - the link CRC of nicfw packets: CRC-32C (Castagnoli, the iSCSI CRC),
// the same value on every CPU.  It is computed with the SSE4.2 crc32
// instruction where the CPU has it and with a slicing-by-8 table otherwise;
// both give bit-identical results, so NICs on machines of different kinds
// accept each other's packets.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nicfw {

// zlib-style chaining: crc32c(crc32c(0, a), b) == crc32c(0, a followed by b).
uint32_t crc32c(uint32_t crc, const void *data, size_t len);
// CRC of two pieces (a packet's header fields, then its payload) in one call.
uint32_t crc32c2(const void *a, size_t alen, const void *b, size_t blen);

// The two implementations crc32c() chooses between (once, by CPU), exposed so
// the tests can check each one on any machine and compare them.
namespace crc_path {
bool hardware_available();                                     // x86-64 with SSE4.2
uint32_t hardware(uint32_t crc, const void *data, size_t len); // only if hardware_available()
uint32_t table(uint32_t crc, const void *data, size_t len);    // any CPU
} // namespace crc_path

} // namespace nicfw
