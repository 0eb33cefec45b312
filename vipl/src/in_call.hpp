// in_call.hpp - which handle slots each thread's VIPL calls are using right
// now, so that a handle Use (handles.hpp) costs no locked instruction.
//
// Each thread that makes a call gets a record: a short stack of the slots its
// calls hold (a call nests a few: a VI, its CQ, ...).  The thread writes its
// own record with plain stores; a thread destroying an object marks the slot
// closing, runs membarrier(2) (owner_bias.hpp: after it the user's record
// store is visible, or the user's later load sees `closing`), then waits until
// no record names the slot.  Records live for the whole process (a thread
// that exits gives its record back for the next thread to take), so the
// destroyer walks the list without a lock and never reads freed memory.
// Where membarrier is missing, or a thread nests deeper than the record
// holds, or the thread is exiting, a Use falls back to the slot's locked count.
#pragma once

#include <atomic>
#include <cstdint>

#include "owner_bias.hpp"

namespace vipl::api {

struct InCallRecord {
    static constexpr int kDepth = 4;
    std::atomic<const void *> slot[kDepth] = {}; // written by the owning thread only
    int depth = 0;                               // the owning thread's alone
    std::atomic<bool> taken{false};
    InCallRecord *next = nullptr; // set before the record is published
};

class InCallRegistry {
public:
    // The calling thread's record; nullptr when records cannot be used (no
    // membarrier, or the thread is exiting: its record was given back).
    static InCallRecord *mine() { return t_record; }
    // First use of a thread: take a record (slow path, locked instructions).
    InCallRecord *enroll();

    // True while some thread's record names `slot`.  The loads are acquire:
    // they pair with the release clear at the end of each use.
    bool named(const void *slot) const {
        for (InCallRecord *r = head_.load(std::memory_order_acquire); r; r = r->next) {
            for (const auto &s : r->slot)
                if (s.load(std::memory_order_acquire) == slot) return true;
        }
        return false;
    }

private:
    struct Leaver {
        ~Leaver();
    }; // gives the record back at thread exit
    static inline thread_local InCallRecord *t_record __attribute__((tls_model("initial-exec"))) = nullptr;
    static inline thread_local bool t_exiting __attribute__((tls_model("initial-exec"))) = false;
    std::atomic<InCallRecord *> head_{nullptr};
};

inline InCallRegistry g_in_calls;

inline InCallRecord *InCallRegistry::enroll() {
    if (t_record) return t_record;
    if (t_exiting || !common::membarrier_ready()) return nullptr;
    InCallRecord *r = head_.load(std::memory_order_acquire);
    for (; r; r = r->next)
        if (!r->taken.load(std::memory_order_relaxed) && !r->taken.exchange(true, std::memory_order_acquire)) break;
    if (!r) {
        r = new InCallRecord;
        r->taken.store(true, std::memory_order_relaxed);
        InCallRecord *h = head_.load(std::memory_order_relaxed);
        do r->next = h;
        while (!head_.compare_exchange_weak(h, r, std::memory_order_release, std::memory_order_relaxed));
    }
    static thread_local Leaver leaver; // its destructor runs at this thread's exit
    (void)leaver;
    t_record = r;
    return r;
}

inline InCallRegistry::Leaver::~Leaver() {
    // No call of this thread is in progress: every slot is clear.
    t_exiting = true;
    if (InCallRecord *r = t_record) {
        t_record = nullptr;
        r->depth = 0;
        r->taken.store(false, std::memory_order_release);
    }
}

} // namespace vipl::api
