// host_dma.hpp - the copies by which the emulated NIC's DMA engines write
// host memory: received data scattered into receive buffers, RDMA writes,
// RDMA read responses, the bulk path's copies; and the copy both kinds of
// DMA (and a send's gather into the wire) make, short messages inline.
//
// On real hardware these writes come from the device, outside the host's
// memory model; host code synchronises with them through the descriptor's
// status word (written with release semantics) or by polling the written
// memory itself, as VI programs do with a flag at the end of an RDMA write.
// In the emulator they are a memcpy on the firmware thread, and
// ThreadSanitizer would report every such poll as a race with the memcpy.
// Under TSan the copy is therefore marked as device DMA (its writes are not
// tracked); everywhere else it is a plain memcpy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SANITIZE_THREAD__)
#define NICFW_TSAN_DMA 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NICFW_TSAN_DMA 1
#endif
#endif

#ifdef NICFW_TSAN_DMA
extern "C" void AnnotateIgnoreWritesBegin(const char *file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char *file, int line);
#endif

namespace nicfw {

// memcpy of two buffers that do not overlap.  Up to 32 bytes (a short
// message, the common case on both sides of a send) it is two loads and two
// stores of the widest word that fits, overlapping in the middle, in place of
// a call into the C library, whose dispatch costs as much as the copy.
inline void dma_copy(void *dst, const void *src, size_t n) {
    auto *d = static_cast<unsigned char *>(dst);
    auto *s = static_cast<const unsigned char *>(src);
    const auto pair = [&](auto word) { // n >= sizeof word: the first and the last word
        decltype(word) a, b;
        std::memcpy(&a, s, sizeof a);
        std::memcpy(&b, s + n - sizeof b, sizeof b);
        std::memcpy(d, &a, sizeof a);
        std::memcpy(d + n - sizeof b, &b, sizeof b);
    };
    struct Word16 {
        uint64_t w[2];
    };
    if (n > 32) std::memcpy(d, s, n);
    else if (n >= 16) pair(Word16{});
    else if (n >= 8) pair(uint64_t{});
    else if (n >= 4) pair(uint32_t{});
    else if (n) { // 1 to 3 bytes: the first, the middle and the last
        const unsigned char a = s[0], b = s[n / 2], c = s[n - 1];
        d[0] = a;
        d[n / 2] = b;
        d[n - 1] = c;
    }
}

inline void dma_to_host(void *dst, const void *src, size_t n) {
#ifdef NICFW_TSAN_DMA
    AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
    std::memcpy(dst, src, n);
    AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
#else
    dma_copy(dst, src, n);
#endif
}

} // namespace nicfw
