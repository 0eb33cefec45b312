// clock.hpp - the providers' clock: monotonic nanoseconds for connection
// deadlines, the wire model's timing and the firmware's peer watch.
#pragma once

#include <cstdint>
#include <ctime>

namespace vipl::common {

inline uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

} // namespace vipl::common
