// work_ring.hpp - one VI work queue as the VI Architecture defines it: the
// descriptors posted to it, in posting order, handed back (VipSendDone,
// VipRecvDone, the Waits) strictly in that order once each is complete.
//
// How a provider uses it (all inline: post and done are the data path):
//
//   common::WorkRing<MySlotInfo> ring;           // MySlotInfo: what the provider keeps per descriptor
//   ring.reset(depth);                           // control path: a power of two
//   post:  if (ring.full()) return VIP_ERROR_RESOURCE;
//          auto &s = ring.claim(d);              // clears d's Status; s.info is the provider's
//          ... hand the descriptor to the device (s's address makes a good work-request id) ...
//          ring.publish();                       // now visible to done/wait, possibly on another thread
//   (or, keeping no slot info: if (!ring.post(d)) return VIP_ERROR_RESOURCE;  the three in one)
//   completion (device or provider, any thread that owns the completion):
//          common::complete_descriptor(d, status_bits);  // sets VIP_STATUS_DONE | bits, release
//   done:  return ring.reap(d_out, [&] { poll the device once; });
//
// Completion is the descriptor's own VIP_STATUS_DONE bit, as the spec has the
// NIC report it: a program polling the descriptor and the provider's Done see
// the same thing, and no second "done" flag can disagree with it.  One thread
// posts and one thread reaps at a time (the VIPL threading rules); they may be
// different threads, so the tail is published with release and read with
// acquire.  A descriptor rejected before it reached the device still takes its
// place in the ring and is completed at once, so order is kept.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "spin_lock.hpp"
#include "vipl.h"

namespace vipl::common {

// Marks a descriptor complete with these status bits (VIP_STATUS_DONE added).
// Release: its Length, ImmediateData and data are visible to whoever sees DONE.
inline void complete_descriptor(VIP_DESCRIPTOR *d, uint32_t status) {
    __atomic_store_n(&d->CS.Status, VIP_STATUS_DONE | status, __ATOMIC_RELEASE);
}

inline bool descriptor_done(const VIP_DESCRIPTOR *d) {
    return __atomic_load_n(&d->CS.Status, __ATOMIC_ACQUIRE) & VIP_STATUS_DONE;
}

struct NoSlotInfo {};

template <class Info = NoSlotInfo>
class WorkRing {
public:
    struct Slot {
        VIP_DESCRIPTOR *desc = nullptr;
        Info info{};
    };

    // Control path: an empty ring of `depth` slots (a power of two, >= 1).
    void reset(uint32_t depth) {
        slots_.reset(new Slot[depth]);
        mask_ = depth - 1;
        head_.store(0, std::memory_order_relaxed);
        tail_.store(0, std::memory_order_relaxed);
    }

    uint32_t depth() const { return mask_ + 1; }
    uint64_t posted() const { return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire); }
    bool empty() const { return posted() == 0; }
    bool full() const { return posted() >= depth(); }

    // Every slot, for a provider that fills in per-slot constants once.
    Slot &slot(uint32_t i) { return slots_[i & mask_]; }

    // The slot for descriptor d at the tail (the ring must not be full).  Not
    // seen by reap() until publish().
    Slot &claim(VIP_DESCRIPTOR *d) {
        Slot &s = slots_[tail_.load(std::memory_order_relaxed) & mask_];
        s.desc = d;
        d->CS.Status = 0;
        return s;
    }
    void publish() { tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

    // full(), claim() and publish() in one, the tail read once, for a provider
    // that keeps nothing in the slot: false (nothing posted) when the ring is full.
    bool post(VIP_DESCRIPTOR *d) {
        const uint64_t t = tail_.load(std::memory_order_relaxed);
        if (t - head_.load(std::memory_order_acquire) >= depth()) return false;
        slots_[t & mask_].desc = d;
        d->CS.Status = 0;
        tail_.store(t + 1, std::memory_order_release);
        return true;
    }

    // The oldest posted descriptor, or nullptr when nothing is posted.  Only
    // for a queue one thread reaps: with several, another may take it (and
    // the slot be posted again) while it is read; they use take().
    VIP_DESCRIPTOR *oldest() const {
        const uint64_t h = head_.load(std::memory_order_relaxed);
        if (h == tail_.load(std::memory_order_acquire)) return nullptr;
        return slots_[h & mask_].desc;
    }

    // Every posted descriptor is complete (none is still with the device):
    // what a provider waits for after stopping a queue, before its program
    // reaps the flushed descriptors.  Control path (walks the ring).
    bool all_complete() const {
        const uint64_t t = tail_.load(std::memory_order_acquire);
        for (uint64_t i = head_.load(std::memory_order_relaxed); i != t; i++)
            if (!descriptor_done(slots_[i & mask_].desc)) return false;
        return true;
    }

    // Calls f(slot) for every posted descriptor not complete yet, oldest first:
    // what a provider hands to a new device queue again, or completes itself,
    // when the old device queue is gone.  The caller holds post_lock, so no
    // slot is claimed meanwhile; a reaper may take complete ones (skipped
    // here).  Control path.
    template <class F>
    void for_each_incomplete(F &&f) {
        const uint64_t t = tail_.load(std::memory_order_acquire);
        for (uint64_t i = head_.load(std::memory_order_acquire); i != t; i++) {
            Slot &s = slots_[i & mask_];
            if (!descriptor_done(s.desc)) f(s);
        }
    }

    // Hands back the oldest descriptor if it is complete.  If it is not,
    // calls poll() once (the provider moves completions from its device) and
    // looks again.  VIP_SUCCESS or VIP_NOT_DONE.  poll() runs outside the reap
    // lock: it may deliver an error callback that reaps this queue itself.
    template <class Poll>
    VIP_RETURN reap(VIP_DESCRIPTOR **d, Poll &&poll) {
        if (take(d)) return VIP_SUCCESS;
        if (empty()) return VIP_NOT_DONE;
        poll();
        return take(d) ? VIP_SUCCESS : VIP_NOT_DONE;
    }

    // The oldest descriptor, taken if it is complete (under the reap lock).
    bool take(VIP_DESCRIPTOR **d) {
        const Take t = try_take(d);
        return t == Take::Taken || (t == Take::Locked && take_shared(d));
    }

    // take()'s inline part, for a caller that keeps the rest out of line (it
    // calls take() again for Locked).  An empty queue is seen without the
    // lock: head and tail are atomics, and the answer is true at the moment
    // of the loads.  The reap lock's owner, while no other thread has taken
    // it, takes with plain stores: no other thread has ever reaped, so the
    // head it loaded is still the head.
    enum class Take : uint8_t { Taken, NotTaken, Locked };
    Take try_take(VIP_DESCRIPTOR **d) {
        const uint64_t h = head_.load(std::memory_order_relaxed);
        if (h == tail_.load(std::memory_order_acquire)) return Take::NotTaken; // nothing posted: no lock
        if (__builtin_expect(!reap_lock_.try_alone(), 0)) return Take::Locked;
        const bool taken = take_head(h, d);
        reap_lock_.unlock(true);
        return taken ? Take::Taken : Take::NotTaken;
    }

    // Serialises the threads posting to this queue (see the top of the file).
    SpinLock post_lock;

private:
    [[gnu::noinline]] bool take_shared(VIP_DESCRIPTOR **d) {
        SpinGuard g(reap_lock_);
        const uint64_t h = head_.load(std::memory_order_relaxed); // another reaper may have moved it
        if (h == tail_.load(std::memory_order_acquire)) return false;
        return take_head(h, d);
    }
    // Under the reap lock: the descriptor at head h (< tail), taken if complete.
    bool take_head(uint64_t h, VIP_DESCRIPTOR **d) {
        VIP_DESCRIPTOR *head = slots_[h & mask_].desc;
        if (!descriptor_done(head)) return false;
        head_.store(h + 1, std::memory_order_release);
        *d = head;
        return true;
    }

    std::unique_ptr<Slot[]> slots_;
    uint32_t mask_ = 0;
    // On their own cache lines: the posting and the reaping thread may differ.
    alignas(64) std::atomic<uint64_t> head_{0}; // next descriptor to hand back (the reaping thread)
    SpinLock reap_lock_;                        // beside head_: the reapers' line
    alignas(64) std::atomic<uint64_t> tail_{0}; // next slot to fill (the posting thread)
};

} // namespace vipl::common
