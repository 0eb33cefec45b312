// owner_bias.hpp - synchronisation that one thread alone does not pay for.
//
// A lock, a firmware stepper or a handle's use count protects something that
// in most programs only one thread ever touches.  A locked instruction (lock
// add, xchg, mfence) costs tens of cycles even uncontended, so the thread that
// is alone should not execute one.  The asymmetric barrier makes that safe:
// the frequent side orders its store before its load with a compiler barrier
// only, and the rare side (a second thread arriving, a handle being
// destroyed) pays for both with membarrier(2), which runs a full barrier on
// every running thread of the process.  After it, any store the frequent side
// made before its barrier point is visible, and any load it makes after sees
// the rare side's store (Dice, Lev, Moir: "Scalable and Lock-Free Cache Efficient
// Asymmetric Synchronization"; Linux membarrier(2)).
//
// OwnerBias is that switch for a section one owner thread runs without a lock
// while it is alone:
//
//   owner:  if (b.enter()) { ... section, no lock ...; b.leave(); }
//           else { ... the shared path (a lock) ... }
//   other:  b.share();   // once: from its return on, nobody takes the unlocked path
//           ... the shared path ...
//
// share() moves alone -> sharing -> shared: it publishes `sharing` (the owner's
// next enter() fails), runs membarrier, waits until the owner's current
// section (if any) has left, then publishes `shared`.  Every thread but the
// owner waits for `shared` before its first locked section, so none overlaps a
// section the owner began before the switch.  Without membarrier (an old
// kernel, seccomp) a bias starts shared.
#pragma once

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace vipl::common {

// The calling thread's identity among the live threads of the process, as
// pthread_self() gives it, without a libc call: on x86-64 the thread pointer,
// whose first word the ABI makes point to itself (glibc's pthread_self()
// returns that same address).
inline uintptr_t this_thread_id() {
#if defined(__x86_64__)
    uintptr_t tp;
    asm("mov %%fs:0, %0" : "=r"(tp));
    return tp;
#else
    return (uintptr_t)pthread_self();
#endif
}

// membarrier(2), private expedited: registered once per process; false where
// the kernel lacks it (then every bias is shared from the start).
inline bool membarrier_ready() {
    static const bool ok = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    return ok;
}

// A full barrier on every running thread of the process (membarrier_ready()
// must have returned true).
inline void process_barrier() { syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0); }

// A bounded spin for the rare waits here: pause, and now and then give the
// CPU away (a thread being waited for may be descheduled on a busy machine).
inline void spin_pause(unsigned i) {
    if (i % 64 == 63) sched_yield();
    else __builtin_ia32_pause();
}

class OwnerBias {
public:
    // `owner` 0: the first thread that claim()s it.
    explicit OwnerBias(uintptr_t owner = 0) : owner_(owner), state_(membarrier_ready() ? kAlone : kShared) {}
    OwnerBias(const OwnerBias &) = delete;
    OwnerBias &operator=(const OwnerBias &) = delete;

    bool owned_by(uintptr_t me) const { return owner_.load(std::memory_order_relaxed) == me; }
    // Makes `me` the owner if there is none yet (once per bias: one locked
    // instruction); true if `me` owns it now.
    bool claim(uintptr_t me) {
        uintptr_t none = 0;
        return owner_.compare_exchange_strong(none, me, std::memory_order_relaxed) || none == me;
    }
    // Not alone any more (sharing or shared): the owner takes the shared path.
    bool shared() const { return state_.load(std::memory_order_relaxed) != kAlone; }
    // The switch is complete: no unlocked section runs or will run.
    bool fully_shared() const { return state_.load(std::memory_order_acquire) == kShared; }

    // Owner only.  True: in an unlocked section until leave().  False: the
    // bias is (being) shared; returns once the switch is complete, so the
    // caller's locked path cannot overlap anything unlocked.
    bool enter() {
        if (__builtin_expect(try_enter(), 1)) return true;
        wait_shared();
        return false;
    }
    // enter() without the wait: false at once when the bias is (being)
    // shared; the caller's shared path must then wait for fully_shared().
    // No call on either outcome, so an inlined caller keeps no registers.
    bool try_enter() {
        busy_.store(true, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst); // membarrier orders the store before the load
        if (__builtin_expect(state_.load(std::memory_order_relaxed) == kAlone, 1)) return true;
        busy_.store(false, std::memory_order_release);
        return false;
    }
    void leave() { busy_.store(false, std::memory_order_release); }

    // Any thread: from the return on, every thread (the owner too) takes the
    // shared path.  The first call costs one membarrier; later ones a load.
    void share() {
        if (__builtin_expect(fully_shared(), 1)) return;
        uint8_t alone = kAlone;
        if (!state_.compare_exchange_strong(alone, kSharing, std::memory_order_seq_cst)) {
            wait_shared(); // another thread is switching
            return;
        }
        process_barrier();
        for (unsigned i = 0; busy_.load(std::memory_order_acquire); ++i) spin_pause(i);
        state_.store(kShared, std::memory_order_release);
    }
    void wait_shared() const {
        for (unsigned i = 0; !fully_shared(); ++i) spin_pause(i);
    }

private:
    static constexpr uint8_t kAlone = 0, kSharing = 1, kShared = 2;
    std::atomic<uintptr_t> owner_;
    std::atomic<uint8_t> state_;
    std::atomic<bool> busy_{false}; // the owner is in an unlocked section
};

} // namespace vipl::common
