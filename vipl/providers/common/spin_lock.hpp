// spin_lock.hpp - a lock for the per-queue critical sections of the data path
// (a work queue's posters, its reapers, a CQ's consumers): held for a few
// dozen instructions, never across a wait.
//
// Biased (owner_bias.hpp): the first thread that takes it owns it, and while
// no other thread has taken it, the owner takes and releases it with plain
// stores and a compiler barrier, no locked instruction; so a single-threaded
// program pays a few loads and stores per call for thread safety.  The first
// time another thread takes it, that thread pays one membarrier(2) and the
// lock turns shared for good: from then on every taker (the owner too) uses
// an atomic exchange and a release store, and a contended taker spins with
// pause and yields the CPU now and then (two cores are shared by many
// processes here: a holder that was descheduled must get to run).  Threads
// that use different queues never touch the same word.
#pragma once

#include <sched.h>

#include <atomic>

#include "owner_bias.hpp"

namespace vipl::common {

class SpinLock {
public:
    // True: taken on the owner's unlocked path; pass it back to unlock().
    bool lock() {
        if (__builtin_expect(!bias_.shared(), 1)) {
            const uintptr_t me = this_thread_id();
            if (__builtin_expect(bias_.owned_by(me), 1) || bias_.claim(me)) {
                if (__builtin_expect(bias_.enter(), 1)) return true;
            } else {
                bias_.share();
            }
        } else if (__builtin_expect(!bias_.fully_shared(), 0)) {
            bias_.wait_shared();
        }
        lock_shared();
        return false;
    }
    // lock()'s owner path alone, for a caller that keeps the rest (lock())
    // out of line: true (release with unlock(true)) when the calling thread
    // owns the lock and no other thread has taken it; false, holding
    // nothing, else.  It makes no call.
    bool try_alone() { return !bias_.shared() && bias_.owned_by(this_thread_id()) && bias_.try_enter(); }
    void unlock(bool unlocked_path) {
        if (unlocked_path) bias_.leave();
        else held_.store(false, std::memory_order_release);
    }

private:
    void lock_shared() {
        if (__builtin_expect(!held_.exchange(true, std::memory_order_acquire), 1)) return;
        for (unsigned i = 1;; ++i) {
            if (!held_.load(std::memory_order_relaxed) && !held_.exchange(true, std::memory_order_acquire)) return;
            spin_pause(i);
        }
    }
    OwnerBias bias_;
    std::atomic<bool> held_{false};
};

// std::lock_guard for a SpinLock, without <mutex>.
class SpinGuard {
public:
    explicit SpinGuard(SpinLock &l) : l_(l), unlocked_path_(l_.lock()) {}
    ~SpinGuard() { l_.unlock(unlocked_path_); }
    SpinGuard(const SpinGuard &) = delete;
    SpinGuard &operator=(const SpinGuard &) = delete;

private:
    SpinLock &l_;
    bool unlocked_path_;
};

} // namespace vipl::common
