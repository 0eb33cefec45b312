// vipl_wait.h - the waiting policy shared by the layers above VIPL (Active
// Messages, the Split-C runtime, Fast Messages, BIP): how a process that polls
// for a message and finds none gives its CPU away.  Header-only C++.
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
// Which case holds is learnt from the first message after giving the CPU
// away, and from how long the CPU was away (give_up_cpu times it):
//
//   - the message took more than two polls: the peer runs elsewhere and was
//     merely slow; the window doubles;
//   - it was there at once and the CPU was away for about one turn of a peer
//     (kOtherRanNs..kOtherSliceNs): a process that spins a window and then
//     yields back - the peer - ran on our CPU while we waited; the window
//     halves;
//   - it was there at once but the yield only cost its system call (nobody
//     else wanted the CPU: the message came during the call itself), or the
//     CPU was away for a whole time slice of another program (the peer, which
//     yields after its window, is not the one holding our core): giving the
//     CPU away bought nothing; the window doubles.
//
// The window starts at its maximum: 4096 idle polls, or 64 when the job has
// more processes than this process may use CPUs.  It adapts in both cases:
// the scheduler puts two processes of a job on one CPU on a loaded machine
// even when the job has a CPU per process (docs/fm.md, "The slow mode"), and
// a fixed window of 4096 polls then makes every wait spin ~60 us before the
// peer may run.  The duration is what tells that case from a yield that
// merely lasted as long as a round trip (which, counted as "at once", would
// shrink the window to its minimum and keep it there: docs/am.md, "Waiting").
//
// Everything on the polling path is plain integer arithmetic on a
// caller-owned WaitState: no allocation, lock or system call until the
// window runs out; then one clock read on each side of giving the CPU away.
#pragma once

#ifdef __cplusplus

#include <sched.h>
#include <time.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace vipl_wait {

enum class Mode : uint8_t { spin, yield, block };

inline const char *mode_name(Mode m) { return m == Mode::spin ? "spin" : m == Mode::yield ? "yield" : "block"; }

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

// CPUs the job's ranks on this host have among them: the launcher's list
// when it bound each rank to a CPU of its own (vipl-run --bind core sets
// VIASTACK_JOB_CPUS, e.g. "0,1"), else the CPUs this process may use.
inline int job_cpus() {
    const char *v = std::getenv("VIASTACK_JOB_CPUS");
    if (v && *v) {
        int n = 1;
        for (const char *p = v; *p; ++p) n += *p == ',';
        return n;
    }
    return usable_cpus();
}

// Processes of the job on this host, as far as the launcher says
// (vipl-run sets VIASTACK_SIZE); 1 when unknown.
inline int job_size_hint() {
    const char *v = std::getenv("VIASTACK_SIZE");
    long n = v ? std::strtol(v, nullptr, 10) : 0;
    return n > 0 ? int(n) : 1;
}

// How long the CPU was away when giving it away ran another process for
// about one turn of a peer that spins its window and yields back: at least
// the two context switches (an empty sched_yield() takes 1.1-1.4 us on the
// project's 2-vCPU VM, a yield to a process that yields straight back 9-12 us)
// and less than a time slice of a program that does not yield (0.75 ms and
// more; a peer's turn is at most its 4096-poll window, ~60-120 us).
inline constexpr uint64_t kOtherRanNs = 4000;
inline constexpr uint64_t kOtherSliceNs = 500000;

inline uint64_t clock_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

struct WaitState {
    Mode mode = Mode::yield;
    uint32_t idle = 0;          // idle polls since the last message or yield
    uint32_t spin_limit = 4096; // the window
    uint32_t spin_min = 8, spin_max = 4096;
    uint32_t polls_since_yield = 0;
    uint64_t away_ns = 0; // how long the CPU was away at the last give-up
    bool yielded = false;
    bool adaptive = true;
};

// Sets up the window for a job of `procs` processes (0: ask the launcher).
inline void init(WaitState &w, Mode mode, int procs = 0) {
    if (procs <= 0) procs = job_size_hint();
    w = WaitState{};
    w.mode = mode;
    const bool oversubscribed = procs > job_cpus();
    w.spin_max = oversubscribed ? 64 : 4096;
    w.spin_min = 8;
    w.spin_limit = w.spin_max;
}

// A fixed window (SPLITC_SPIN): no adaptation.
inline void fix_window(WaitState &w, uint32_t n) {
    w.spin_limit = n ? n : 1;
    w.adaptive = false;
}

// Whether the last give-up handed the CPU to a peer that needed it (see the
// top of this file): the message was there at once, and the CPU was away
// for about one turn of a process that spins and yields back.
inline bool peer_needed_cpu(const WaitState &w) {
    return w.polls_since_yield <= 2 && w.away_ns >= kOtherRanNs && w.away_ns < kOtherSliceNs;
}

// The poll found work: adapt the window if we gave the CPU away before it.
inline void progress(WaitState &w) {
    w.idle = 0;
    if (w.yielded && w.adaptive) {
        if (peer_needed_cpu(w)) w.spin_limit = w.spin_limit / 2 > w.spin_min ? w.spin_limit / 2 : w.spin_min;
        else w.spin_limit = w.spin_limit * 2 < w.spin_max ? w.spin_limit * 2 : w.spin_max;
    }
    w.yielded = false;
}

// The poll found nothing.  Returns true when the window is used up and the
// caller should give the CPU away now through give_up_cpu() (sched_yield,
// or a VIPL wait call in block mode).  Never true in spin mode.
inline bool idle(WaitState &w) {
    ++w.polls_since_yield;
    if (++w.idle < w.spin_limit || w.mode == Mode::spin) return false;
    return true;
}

// The CPU was given away for away_ns (give_up_cpu measures it).
inline void gave_up_cpu(WaitState &w, uint64_t away_ns) {
    w.idle = 0;
    w.yielded = true;
    w.polls_since_yield = 0;
    w.away_ns = away_ns;
}

// Gives the CPU away with `how` (sched_yield, or a VIPL wait call in block
// mode) and records how long it was away: what the next progress() judges
// the window by.  For callers whose idle() returned true.
template <class How>
inline void give_up_cpu(WaitState &w, How &&how) {
    const uint64_t t0 = clock_ns();
    how();
    gave_up_cpu(w, clock_ns() - t0);
}

// idle() + sched_yield(): for waits that have nothing to block on.
inline void idle_yield(WaitState &w) {
    if (idle(w)) give_up_cpu(w, [] { sched_yield(); });
}

} // namespace vipl_wait

#endif // __cplusplus
