// host_dma.hpp - the copies by which the emulated NIC's DMA engines write
// host memory: received data scattered into receive buffers, RDMA writes,
// RDMA read responses, the bulk path's copies.
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

inline void dma_to_host(void *dst, const void *src, size_t n) {
#ifdef NICFW_TSAN_DMA
    AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
    std::memcpy(dst, src, n);
    AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
#else
    std::memcpy(dst, src, n);
#endif
}

} // namespace nicfw
