// vipl_wait.h - the waiting policy shared by the layers above VIPL (Active
// Messages, the Split-C runtime): how a process that polls for a message and
// finds none gives its CPU away.  Header-only C++.
//
//   VIASTACK_WAIT=spin    poll without ever giving the CPU away (one rank per
//                         core, dedicated machine: the lowest latency)
//   VIASTACK_WAIT=yield   (default) spin a window of idle polls, then
//                         sched_yield(); the window adapts (below)
//   VIASTACK_WAIT=block   spin the same window, then sleep in a VIPL wait call
//                         (VipCQWait / VipRecvWait) where the caller can
//
// Spinning keeps a round trip at its minimum when the peer runs on another
// core; giving the CPU away is what lets a peer on the same core run at all.
// Which case holds is learnt from the first message after a yield: if it is
// there at once (within two polls), the peer needed our CPU, so the window
// halves; if it takes longer, the peer runs elsewhere and was merely slow, so
// the window doubles.  The window starts at its maximum, which is small (64)
// when the job has more processes than this process may use CPUs; it adapts
// only then (otherwise it stays at its maximum, 4096).
//
// Everything on the polling path is plain integer arithmetic on a
// caller-owned WaitState: no allocation, lock or system call until the
// window runs out.
#pragma once

#ifdef __cplusplus

#include <sched.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace vipl_wait {

enum class Mode : uint8_t { spin, yield, block };

inline const char *mode_name(Mode m) {
    return m == Mode::spin ? "spin" : m == Mode::yield ? "yield" : "block";
}

// The one message every layer prints for a bad value.
inline constexpr const char *kAllowed = "spin, yield or block (unset: yield)";

// Parses VIASTACK_WAIT (or `value` when not null).  Returns false for a value
// that is not a policy; *out is then the default.
inline bool parse_mode(const char *value, Mode *out) {
    *out = Mode::yield;
    if (!value || !*value) return true;
    if (!std::strcmp(value, "spin")) *out = Mode::spin;
    else if (!std::strcmp(value, "yield")) *out = Mode::yield;
    else if (!std::strcmp(value, "block")) *out = Mode::block;
    else return false;
    return true;
}

inline bool mode_from_env(Mode *out) { return parse_mode(std::getenv("VIASTACK_WAIT"), out); }

// CPUs this process may run on.
inline int usable_cpus() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    return 1;
}

// Processes of the job on this host, as far as the launcher says
// (vipl-run sets VIASTACK_SIZE); 1 when unknown.
inline int job_size_hint() {
    const char *v = std::getenv("VIASTACK_SIZE");
    long n = v ? std::strtol(v, nullptr, 10) : 0;
    return n > 0 ? int(n) : 1;
}

struct WaitState {
    Mode mode = Mode::yield;
    uint32_t idle = 0;              // idle polls since the last message or yield
    uint32_t spin_limit = 4096;     // the window
    uint32_t spin_min = 8, spin_max = 4096;
    uint32_t polls_since_yield = 0;
    bool yielded = false;
    bool adaptive = true;
};

// Sets up the window for a job of `procs` processes (0: ask the launcher).
inline void init(WaitState &w, Mode mode, int procs = 0) {
    if (procs <= 0) procs = job_size_hint();
    w = WaitState{};
    w.mode = mode;
    const bool oversubscribed = procs > usable_cpus();
    w.spin_max = oversubscribed ? 64 : 4096;
    // The window only shrinks when the job itself has more processes than
    // CPUs: only then can the peer be waiting for our core.  Otherwise a
    // message found "at once" after a yield proves nothing (the yield itself
    // lasts about as long as a round trip, or another program held the
    // core), and a window that shrank on that evidence stuck at its minimum
    // and made every wait of a ping-pong on a busy machine pay a yield
    // (fm_pingpong, 2 ranks on 2 CPUs with a compiler running: RTT/2 5-7 us
    // instead of 0.2-0.4 us).
    w.spin_min = oversubscribed ? 8 : w.spin_max;
    w.spin_limit = w.spin_max;
}

// A fixed window (SPLITC_SPIN): no adaptation.
inline void fix_window(WaitState &w, uint32_t n) {
    w.spin_limit = n ? n : 1;
    w.adaptive = false;
}

// The poll found work: adapt the window if we gave the CPU away before it.
inline void progress(WaitState &w) {
    w.idle = 0;
    if (w.yielded && w.adaptive) {
        if (w.polls_since_yield <= 2)
            w.spin_limit = w.spin_limit / 2 > w.spin_min ? w.spin_limit / 2 : w.spin_min;
        else
            w.spin_limit = w.spin_limit * 2 < w.spin_max ? w.spin_limit * 2 : w.spin_max;
    }
    w.yielded = false;
}

// The poll found nothing.  Returns true when the window is used up and the
// caller should give the CPU away now (sched_yield, or a VIPL wait call in
// block mode) and then call gave_up_cpu().  Never true in spin mode.
inline bool idle(WaitState &w) {
    ++w.polls_since_yield;
    if (++w.idle < w.spin_limit || w.mode == Mode::spin) return false;
    return true;
}

inline void gave_up_cpu(WaitState &w) {
    w.idle = 0;
    w.yielded = true;
    w.polls_since_yield = 0;
}

// idle() + sched_yield(): for waits that have nothing to block on.
inline void idle_yield(WaitState &w) {
    if (idle(w)) {
        sched_yield();
        gave_up_cpu(w);
    }
}

} // namespace vipl_wait

#endif // __cplusplus
