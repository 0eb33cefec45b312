// spin_lock.hpp - a one-word lock for the per-queue critical sections of the
// data path (a work queue's posters, its reapers, a CQ's consumers): held for
// a few dozen instructions, never across a wait.  Uncontended, taking it is one
// atomic exchange and releasing it one release store, so a single-threaded
// program pays a few instructions per call for thread safety, and threads that
// use different queues never touch the same word.  Contended, it spins with
// pause and yields the CPU now and then (two cores are shared by many
// processes here: a holder that was descheduled must get to run).
#pragma once

#include <sched.h>

#include <atomic>

namespace vipl::common {

class SpinLock {
public:
    void lock() {
        if (__builtin_expect(!held_.exchange(true, std::memory_order_acquire), 1)) return;
        lock_slow();
    }
    bool try_lock() {
        return !held_.load(std::memory_order_relaxed) && !held_.exchange(true, std::memory_order_acquire);
    }
    void unlock() { held_.store(false, std::memory_order_release); }

private:
    void lock_slow() {
        for (unsigned i = 1;; ++i) {
            if (!held_.load(std::memory_order_relaxed) && !held_.exchange(true, std::memory_order_acquire)) return;
            if (i % 64 == 0) sched_yield();
            else __builtin_ia32_pause();
        }
    }
    std::atomic<bool> held_{false};
};

// std::lock_guard for a SpinLock, without <mutex>.
class SpinGuard {
public:
    explicit SpinGuard(SpinLock &l) : l_(l) { l_.lock(); }
    ~SpinGuard() { l_.unlock(); }
    SpinGuard(const SpinGuard &) = delete;
    SpinGuard &operator=(const SpinGuard &) = delete;

private:
    SpinLock &l_;
};

} // namespace vipl::common
