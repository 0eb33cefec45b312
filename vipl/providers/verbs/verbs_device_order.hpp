// verbs_device_order.hpp - the order the device gives a work request, told to
// ThreadSanitizer.
//
// A work request goes from the thread that posts it to the thread that polls
// its completion through the device: ibv_post_* hands it over (on rxe a system
// call, elsewhere a doorbell), and the device reports the completion only
// after that; ibv_poll_cq reads the report.  The queue slot named by wr_id is
// written by the poster (descriptor, operation) and read by the poller, and
// that path is what orders the two.  libibverbs and its device library (librxe)
// are not instrumented and the device is the kernel or hardware, so
// ThreadSanitizer cannot see the order and reports every completion polled on
// another thread than its post as a race on the slot.  Under TSan the poster
// therefore releases the slot just before the doorbell and the poller acquires
// it when a completion names it: exactly the device's guarantee, no more (a
// slot written after its post, or read before its completion, is still
// reported).  In every other build both are nothing.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define VIPL_VERBS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VIPL_VERBS_TSAN 1
#endif
#endif

#ifdef VIPL_VERBS_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace vipl::verbs::device_order {

// The work request whose wr_id is `slot` is about to be handed to the device.
inline void posting(const void *slot) {
#ifdef VIPL_VERBS_TSAN
    __tsan_release(const_cast<void *>(slot));
#else
    (void)slot;
#endif
}

// A completion of the work request whose wr_id is `slot` was polled.
inline void completed(const void *slot) {
#ifdef VIPL_VERBS_TSAN
    __tsan_acquire(const_cast<void *>(slot));
#else
    (void)slot;
#endif
}

} // namespace vipl::verbs::device_order
