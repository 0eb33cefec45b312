// stepper.hpp - who runs the firmware, and when: the execution side of the
// NIC, kept apart from the firmware's protocol code (firmware.hpp, tx.cpp,
// rx.cpp), which only provides one MCP iteration (step()) and a few questions
// about its work.  docs/vipl.md, "Threads", and docs/nicfw.md, "Execution
// modes", describe the model; in short:
//
//  * thread mode: the firmware's own thread steps it, alone; host threads only
//    post tokens and reap completions.  quiesce() parks the thread.
//  * inline mode, one host thread (the one that opened the NIC): it steps the
//    firmware from its VIPL calls without a lock.  The check is one compare of
//    the thread pointer per call.
//  * inline mode, shared: from the first VIPL call of another thread (or the
//    progress agent) on, steps take a try-lock.  A thread that finds it held
//    does not wait: its work is already in its VI's rings, and it leaves a
//    request instead (`again_`), which the stepper honours with one more step
//    after it unlocks.  So no posted work is left unstepped when every thread
//    has left, and no thread waits for another's step.
//
// The switch from alone to shared must not let the owner's unlocked section
// (a step, a doorbell write, a receive posted without the lock) that is
// already running overlap another thread's first locked one: the owner's
// sections and the switch are an OwnerBias (vipl/providers/common/owner_bias.hpp:
// the owner marks each section with a plain store, the switching thread pays
// one membarrier(2) and waits the running section out; a third thread waits
// for the switch to complete).  Without membarrier, stepping is shared from
// the start.
//
// Fw provides: step() (one iteration), thread_step() (one iteration on the
// firmware thread; true when it found work), sleep_prepare() / has_work() /
// sleep_cancel() / sleep_commit(bell) (the firmware thread's idle sleep on the
// wire futex) and wake() (rings that futex).
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>

#include "config.hpp"
#include "owner_bias.hpp"

namespace nicfw {

using vipl::common::membarrier_ready;
using vipl::common::this_thread_id;

template <class Fw>
class Stepper {
public:
    Stepper(Mode mode, Fw &fw) : mode_(mode), fw_(fw) {}
    ~Stepper() { stop_thread(); }
    Stepper(const Stepper &) = delete;
    Stepper &operator=(const Stepper &) = delete;

    // ---- inline mode ----
    // What a host call does to make progress (nothing in thread mode).
    void host_step() {
        if (mode_ != Mode::Inline) return;
        note_host_thread();
        if (!bias_.shared()) {
            OwnerSection owner(this);
            if (owner.alone()) {
                fw_.step();
                return;
            }
        }
        locked_step();
    }
    // One step under the try-lock, or a request to the thread holding it.
    void locked_step() {
        again_.exchange(true, std::memory_order_seq_cst); // after the caller's posts, before the try
        for (;;) {
            if (step_lock_.load(std::memory_order_relaxed) || step_lock_.exchange(true, std::memory_order_acquire))
                return; // the holder sees the request once it unlocks
            // A full barrier (xchg): the step's reads of the doorbells come after
            // the request is taken, so a post requested earlier is seen.
            again_.exchange(false, std::memory_order_seq_cst);
            fw_.step();
            step_lock_.store(false, std::memory_order_release);
            std::atomic_thread_fence(std::memory_order_seq_cst); // the unlock before the look
            if (!again_.load(std::memory_order_relaxed)) return;
        }
    }
    // A section of the owner thread that runs without the step lock while
    // stepping is not shared: alone() says whether it may.
    class OwnerSection {
    public:
        explicit OwnerSection(Stepper *s) : s_(s), alone_(s_->bias_.enter()) {}
        ~OwnerSection() {
            if (alone_) s_->bias_.leave();
        }
        bool alone() const { return alone_; }
        OwnerSection(const OwnerSection &) = delete;
        OwnerSection &operator=(const OwnerSection &) = delete;

    private:
        Stepper *s_;
        bool alone_;
    };
    bool on_owner_thread() const { return bias_.owned_by(this_thread_id()); }
    // Every host call: a call from a thread other than the owner shares
    // stepping, and returns once the owner's unlocked section has ended.
    void note_host_thread() {
        if (__builtin_expect(mode_ == Mode::Inline && !bias_.fully_shared() && !on_owner_thread(), 0)) share();
    }
    // From now on more than one thread steps (the agent, a second host thread).
    void share() {
        if (mode_ == Mode::Inline) bias_.share();
    }
    bool shared() const { return bias_.shared(); }
    // Inline and alone: only the owner thread rings and serves doorbells.
    bool unshared_inline() const { return mode_ == Mode::Inline && !bias_.shared(); }

    // ---- both modes ----
    // Keeps the firmware from running until the guard goes (thread mode: parks
    // the firmware thread; inline, shared: holds the step lock; inline, alone:
    // nothing, the caller is the only stepper).
    class Quiesce {
    public:
        Quiesce(Stepper *s, bool held) : s_(s), held_(held) {}
        ~Quiesce() {
            if (!held_) return;
            if (s_->mode_ == Mode::Thread) {
                s_->pause_req_.store(false, std::memory_order_release);
                // Until it runs again: the next quiescer must not take a stale
                // paused_ for its own pause.
                while (s_->paused_.load(std::memory_order_acquire)) sched_yield();
                s_->quiesce_mu_.unlock();
            } else {
                s_->step_lock_.store(false, std::memory_order_release);
                // Requests left while the lock was ours: honour them.
                std::atomic_thread_fence(std::memory_order_seq_cst);
                if (s_->again_.load(std::memory_order_relaxed)) s_->locked_step();
            }
        }
        Quiesce(const Quiesce &) = delete;
        Quiesce &operator=(const Quiesce &) = delete;

    private:
        Stepper *s_;
        bool held_;
    };
    // Thread mode: one quiescer at a time.  The pause request is a single flag,
    // so a second host thread quiescing at once would share the first one's
    // pause: the first one's release clears the flag and lets the firmware run
    // inside the second one's section, or, if the second had not yet seen the
    // firmware park, leaves it waiting for a pause nobody requests any more.
    Quiesce quiesce() {
        if (mode_ == Mode::Thread) {
            quiesce_mu_.lock(); // released by the guard, once the firmware runs again
            pause_req_.store(true, std::memory_order_release);
            fw_.wake();
            while (!paused_.load(std::memory_order_acquire) && thread_.joinable()) sched_yield();
            return Quiesce(this, true);
        }
        if (bias_.shared()) {
            bias_.wait_shared();
            while (step_lock_.exchange(true, std::memory_order_acquire)) sched_yield();
            return Quiesce(this, true);
        }
        return Quiesce(this, false);
    }

    // Thread mode: starts the firmware thread (once the NIC is complete: it may
    // hand a packet to the connection manager at once).
    void start() {
        if (mode_ != Mode::Thread || thread_.joinable()) return;
        thread_ = std::thread([this] { run(); });
    }
    void stop_thread() {
        stop_.store(true);
        if (mode_ == Mode::Thread) fw_.wake();
        if (thread_.joinable()) thread_.join();
    }

private:
    // The firmware thread: spin while there is work, then keep yielding (cheap
    // when the core is ours, and it lets the host threads run when it is not)
    // for a few milliseconds, then sleep on the wire's futex (a host doorbell
    // and a peer's packet ring it).  A firmware that slept between the
    // messages of a ping-pong would pay a futex wake-up and a scheduling delay
    // on every one.
    void run() {
        uint32_t idle = 0;
        while (!stop_.load(std::memory_order_relaxed)) {
            if (pause_req_.load(std::memory_order_acquire)) { // the host is changing NIC tables
                paused_.store(true, std::memory_order_release);
                // The quiescer needs a CPU to finish its section: on a machine
                // with more runnable threads than cores, spinning out the time
                // slice would keep it from running.  Spin briefly, then yield.
                for (uint32_t spins = 0; pause_req_.load(std::memory_order_acquire);)
                    if (++spins < 1000) __builtin_ia32_pause();
                    else sched_yield();
                paused_.store(false, std::memory_order_release);
            }
            if (fw_.thread_step()) {
                idle = 0;
                continue;
            }
            if (++idle < 2000) {
                __builtin_ia32_pause();
                continue;
            }
            if (idle < 200000) {
                sched_yield();
                continue;
            }
            // Announce the sleep, then re-check every work source: a doorbell
            // rung before the announcement was visible would otherwise wait for
            // the timeout.
            const uint32_t bell = fw_.sleep_prepare();
            if (fw_.has_work() || pause_req_.load() || stop_.load()) fw_.sleep_cancel();
            else fw_.sleep_commit(bell);
        }
    }

    const Mode mode_;
    Fw &fw_;
    // inline
    // The host thread that opened the NIC steps it alone until another steps.
    vipl::common::OwnerBias bias_{this_thread_id()};
    alignas(64) std::atomic<bool> step_lock_{false};
    std::atomic<bool> again_{false}; // a step was asked for while the lock was held
    // thread mode
    std::atomic<bool> stop_{false};
    std::atomic<bool> pause_req_{false};
    std::atomic<bool> paused_{false};
    std::mutex quiesce_mu_; // held by the one Quiesce guard in force
    std::thread thread_;
};

} // namespace nicfw
