// timer.hpp - the suite's clock: the TSC (via vipl_instr_now), converted with
// the instrumentation module's once-calibrated rate.  Reading it costs a few
// ns, so timing one receive operation of ~1 us is not distorted.
#pragma once

#include "vipl_instr.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace logp {

inline double ns_per_cycle() {
    static const double r = 1.0 / vipl_instr_cycles_per_ns();
    return r;
}
inline std::uint64_t ticks() { return vipl_instr_now(); }
inline double ticks_to_ns(std::uint64_t t) { return double(t) * ns_per_cycle(); }

// The clock's own cost: the median of many timed empty intervals (two
// back-to-back reads).  A single timed operation carries it once.
inline double timer_cost_ns() {
    static const double cost = [] {
        std::uint64_t d[201];
        for (auto &x : d) {
            std::uint64_t t0 = ticks();
            x = ticks() - t0;
        }
        std::sort(std::begin(d), std::end(d));
        return ticks_to_ns(d[100]);
    }();
    return cost;
}

// Busy-waits ns nanoseconds without entering any library: the "computation"
// of the LogP method (inserted delays, the receiver's settle time).
inline void spin_ns(double ns) {
    if (ns <= 0) return;
    std::uint64_t t0 = ticks();
    std::uint64_t want = std::uint64_t(ns / ns_per_cycle());
    while (ticks() - t0 < want) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

// Involuntary context switches of this thread so far: a timed interval over
// which this changes was (partly) spent off the CPU and is dropped, not kept.
inline long involuntary_switches() {
    rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}
// All context switches (a provider may also yield inside a call).
inline long context_switches() {
    rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw + ru.ru_nvcsw : 0;
}

} // namespace logp
