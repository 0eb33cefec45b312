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
#include <cstddef>
#include <cstdint>

#include "owner_bias.hpp"

namespace vipl::api {

// 64-byte aligned with the entries first, so that an entry's address says
// which record it is in and at which position (give_back).
struct alignas(64) InCallRecord {
    static constexpr int kDepth = 4;
    // Written by the owning thread only.  slot[0] holds the outermost use of a
    // call (one store to take it, one to give it back: the data path's case);
    // the uses nested inside it take slot[1..] as a stack.
    std::atomic<const void *> slot[kDepth] = {};
    int depth = 1; // the next free entry of the stack; the owning thread's alone
    std::atomic<bool> taken{false};
    InCallRecord *next = nullptr; // set before the record is published

    // The entry a new use of the owning thread names its slot in: slot[0]
    // when no use of this thread holds it (then no use is in progress at all:
    // a nested use always finds it taken), else the stack's next; nullptr
    // when the stack is full.
    std::atomic<const void *> *take() {
        if (__builtin_expect(slot[0].load(std::memory_order_relaxed) == nullptr, 1)) return &slot[0];
        return depth < kDepth ? &slot[depth++] : nullptr;
    }
    // Gives back slot[0] (the caller knows it holds that entry): the store alone.
    static void give_back_first(std::atomic<const void *> *e) { e->store(nullptr, std::memory_order_release); }
    // Gives back an entry take() returned.  Release: pairs with the
    // destroyer's acquire look.  Uses end in reverse order (they are scoped),
    // so a stack entry is the top: the stack's depth becomes its position.
    static void give_back(std::atomic<const void *> *e) {
        e->store(nullptr, std::memory_order_release);
        const uintptr_t a = reinterpret_cast<uintptr_t>(e);
        if (const uintptr_t pos = (a % alignof(InCallRecord)) / sizeof *e; pos != 0)
            reinterpret_cast<InCallRecord *>(a - pos * sizeof *e)->depth = static_cast<int>(pos);
    }
};
static_assert(offsetof(InCallRecord, slot) == 0 && sizeof(InCallRecord) == alignof(InCallRecord));

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
        r->depth = 1;
        r->taken.store(false, std::memory_order_release);
    }
}

} // namespace vipl::api
