// handles.hpp - opaque VIPL handles.  A handle is (kind, generation, index)
// packed into a pointer-sized value, never a raw pointer: a stale, forged or
// wrongly-typed handle is recognised and rejected with VIP_INVALID_PARAMETER
// instead of being dereferenced.  Lookup is lock-free, so the data path
// (VipPostSend, VipRecvDone, ...) pays almost nothing for it.
//
// Lookup racing remove (VipPostSend on one thread, VipDestroyVi and a new
// VipCreateVi reusing the slot on another) is a seqlock read: the generation
// is read before and after the object and owner, and a lookup that saw it
// change returns nullptr.  So a lookup returns the object its handle named
// while it was live, or nothing -- never the slot's next object or a torn
// (object, owner) pair -- and the slot's fields are atomics, so the race is
// not a data race.  On x86 the extra cost is one load and a compare (acquire
// loads and release stores are plain moves); no lock, no read-modify-write,
// no fence.
//
// A call that uses the object past the lookup holds a *use* of it (Use, below):
// the slot named in the calling thread's in-call record (in_call.hpp: a plain
// store, no locked instruction), or where records cannot be used a count in
// the handle's slot.  The slot outlives every object put in it, so neither is
// ever touched in freed memory.  Destroying the object (close, then the
// provider's destroy, then remove or reopen) first marks the slot closing,
// runs membarrier(2) and waits until no use is held; a use taken meanwhile is
// given back at once and waits for the outcome (docs/vipl.md, "Threads":
// handle lifetime).
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "in_call.hpp"
#include "vipl_provider.hpp"

namespace vipl::api {

enum class Kind : uint8_t { Nic = 1, Vi = 2, Cq = 3, Ptag = 4, Conn = 5 };

struct NicEntry; // API-layer bookkeeping of one open NIC handle

// One table per kind.  `owner` is the NIC entry an object was made through.
template <class T>
class HandleTable {
    // Written under mu_ (and `state` by close/reopen), read without it: every
    // field is an atomic.
    struct Slot {
        // The generation (low 32 bits; odd while an object is in the slot)
        // and kClosing from close() to remove()/reopen(): one word, so that a
        // use checks "this handle's object, not being destroyed" with one
        // load and one compare against the handle's generation.
        std::atomic<uint64_t> state{0};
        std::atomic<T *> obj{nullptr};
        std::atomic<NicEntry *> owner{nullptr};
        std::atomic<uint32_t> uses{0}; // calls holding a Use of the object
    };
    static constexpr uint64_t kClosing = uint64_t(1) << 32;
    static uint32_t gen_in(uint64_t state) { return static_cast<uint32_t>(state); }
    // A handle is (kind << 56) | (generation << 24) | index.  One that can
    // name a live object of this kind has these bits exactly as shape_ has
    // them: the kind, an index below kCap (bits 16..23 clear), an odd
    // generation (bit 24).  One mask and one compare check all three.
    static constexpr uint64_t kShapeMask = (uint64_t(0xff) << 56) | (uint64_t(0xff) << 16) | (uint64_t(1) << 24);
    static uint64_t shape_for(Kind k) { return (static_cast<uint64_t>(k) << 56) | (uint64_t(1) << 24); }
    bool well_formed(const void *h) const { return (reinterpret_cast<uint64_t>(h) & kShapeMask) == shape_; }
    // The slot a well-formed live-looking handle of this kind names, or nullptr.
    Slot *slot_of(const void *h) const { return well_formed(h) ? &slots_[index_of(h)] : nullptr; }
    static uint32_t index_of(const void *h) { return static_cast<uint32_t>(reinterpret_cast<uint64_t>(h) & 0xffffff); }
    static uint32_t gen_of(const void *h) {
        return static_cast<uint32_t>((reinterpret_cast<uint64_t>(h) >> 24) & 0xffffffff);
    }

public:
    static constexpr uint32_t kCap = 1u << 16;

    static_assert(kCap == (1u << 16), "kShapeMask: an index below kCap has bits 16..23 clear");

    explicit HandleTable(Kind k) : kind_(k), shape_(shape_for(k)), slots_(new Slot[kCap]) {}

    void *insert(T *obj, NicEntry *owner) {
        std::lock_guard<std::mutex> g(mu_);
        uint32_t idx;
        if (!free_.empty()) {
            idx = free_.back();
            free_.pop_back();
        } else if (next_ < kCap) {
            idx = next_++;
        } else {
            return nullptr;
        }
        Slot &s = slots_[idx];
        // The slot is free (even generation, not closing): no lookup returns
        // these fields until the odd generation below is published.  Release
        // stores: a lookup with an old handle that reads them also sees the
        // remove that freed the slot (it happened before, under mu_) on its
        // re-check.
        s.obj.store(obj, std::memory_order_release);
        s.owner.store(owner, std::memory_order_release);
        const uint32_t gen = gen_in(s.state.load(std::memory_order_relaxed)) | 1u; // odd = live
        s.state.store(gen, std::memory_order_release);
        return encode(idx, gen);
    }

    T *lookup(const void *h, NicEntry **owner = nullptr) const {
        if (!well_formed(h)) return nullptr;
        const uint32_t gen = gen_of(h);
        const Slot &s = slots_[index_of(h)];
        if (gen_in(s.state.load(std::memory_order_acquire)) != gen) return nullptr;
        // Acquire loads (plain loads on x86): the re-check below cannot be
        // done before them, and a field value written by a remove or insert
        // brings that writer's generation with it.
        T *obj = s.obj.load(std::memory_order_acquire);
        NicEntry *own = s.owner.load(std::memory_order_acquire);
        // Seqlock re-check: the fields are this handle's only if the slot was
        // not removed (and perhaps reused) while they were read.
        if (gen_in(s.state.load(std::memory_order_relaxed)) != gen) return nullptr;
        if (owner) *owner = own;
        return obj;
    }

    // A use of the object `h` names for one call (true while it names one).
    // The use is published first (the slot in this thread's record, or the
    // slot's count), then the handle checked.  close() marks the slot
    // closing, runs membarrier (or, for counts, its own locked exchange) and
    // then reads the records and the count: so either close() waits for this
    // use or this use sees the mark and backs off.  With the use held and the
    // mark clear, the object cannot be removed (remove() follows close()), so
    // the slot's fields are read once, without the lookup's seqlock re-check.
    //
    // A call's outermost use with a record (the data path's case) is inline
    // and costs, beyond lookup()'s handle decoding: the record's address (a
    // TLS load), one load finding its first entry free, the store naming the
    // slot there, one load and compare of the slot's state (generation and
    // closing mark in one word), and the store clearing the entry at the end
    // (the entry is known to be the first: no position to work out).  The rest
    // is out of line: a nested use (the record's stack), a thread's first call
    // (enrol), a count, a handle that is stale or being destroyed.
    class Use {
    public:
        Use(HandleTable &t, const void *h, NicEntry **owner = nullptr) : held_(take(t, h, owner)) {}
        ~Use() {
            if (__builtin_expect((held_.at & kTag) == 0, 1)) // the first entry: its address, untagged
                InCallRecord::give_back_first(reinterpret_cast<std::atomic<const void *> *>(held_.at));
            else if (held_.at != kNone) give_back(held_.at);
        }
        Use(const Use &) = delete;
        Use &operator=(const Use &) = delete;
        T *get() const { return held_.obj; }
        T *operator->() const { return held_.obj; }
        explicit operator bool() const { return held_.obj != nullptr; }

    private:
        // Where a use is held, in one word (what the common case keeps across
        // the provider call): the first entry of this thread's record (tag
        // 0), an entry of its stack (tag 1), the slot whose count it is in
        // (tag 2), or nowhere (kNone).  Entries and slots are 8-byte aligned.
        static constexpr uintptr_t kTag = 3, kNested = 1, kCounted = 2, kNone = 3;
        static std::atomic<const void *> *entry(uintptr_t at) {
            return reinterpret_cast<std::atomic<const void *> *>(at & ~kTag);
        }
        struct Held {
            T *obj = nullptr;
            uintptr_t at = kNone;
        };
        [[gnu::always_inline]] static Held take(HandleTable &t, const void *h, NicEntry **owner) {
            if (__builtin_expect(!t.well_formed(h), 0)) return {};
            Slot *s = &t.slots_[index_of(h)];
            InCallRecord *r = InCallRegistry::mine();
            if (__builtin_expect(r != nullptr, 1) &&
                __builtin_expect(r->slot[0].load(std::memory_order_relaxed) == nullptr, 1)) {
                r->slot[0].store(s, std::memory_order_relaxed);
                std::atomic_signal_fence(std::memory_order_seq_cst); // close()'s membarrier orders it
                if (__builtin_expect(live(s, h), 1)) return held(s, reinterpret_cast<uintptr_t>(&r->slot[0]), owner);
                InCallRecord::give_back_first(&r->slot[0]);
            }
            return slow(s, h, owner);
        }
        // The handle still names the object and it is not being destroyed:
        // the slot's state is exactly the handle's generation.
        static bool live(Slot *s, const void *h) { return s->state.load(std::memory_order_seq_cst) == gen_of(h); }
        static Held held(Slot *s, uintptr_t at, NicEntry **owner) {
            if (owner) *owner = s->owner.load(std::memory_order_relaxed);
            return {s->obj.load(std::memory_order_relaxed), at};
        }
        // No record yet (enrol), none possible or the record full (count), a
        // nested use (the record's stack), or the handle is stale or its
        // object being destroyed: wait for the outcome (the handle gone, or
        // the destroy refused) and look again.
        __attribute__((noinline)) static Held slow(Slot *s, const void *h, NicEntry **owner) {
            for (;;) {
                uint64_t st;
                while ((st = s->state.load(std::memory_order_acquire)) & kClosing) {
                    if (gen_in(st) != gen_of(h)) return {};
                    sched_yield();
                }
                if (gen_in(st) != gen_of(h)) return {};
                InCallRecord *r = g_in_calls.enroll();
                if (std::atomic<const void *> *e = r ? r->take() : nullptr) {
                    e->store(s, std::memory_order_relaxed);
                    std::atomic_signal_fence(std::memory_order_seq_cst);
                    if (live(s, h))
                        return held(s, reinterpret_cast<uintptr_t>(e) | (e == &r->slot[0] ? 0 : kNested), owner);
                    InCallRecord::give_back(e);
                    continue;
                }
                s->uses.fetch_add(1, std::memory_order_seq_cst);
                if (live(s, h)) return held(s, reinterpret_cast<uintptr_t>(s) | kCounted, owner);
                s->uses.fetch_sub(1, std::memory_order_release);
            }
        }
        __attribute__((noinline)) static void give_back(uintptr_t at) {
            if ((at & kTag) == kNested) InCallRecord::give_back(entry(at));
            else reinterpret_cast<Slot *>(at & ~kTag)->uses.fetch_sub(1, std::memory_order_release);
        }
        Held held_;
    };

    // Before the object's destroy: new uses wait, and this returns once no
    // use is held (the caller must hold none itself).  Every close is
    // followed by remove() or reopen().  nullptr: the handle names nothing,
    // or another thread is destroying it.
    T *close(const void *h) {
        T *obj = lookup(h);
        if (!obj) return nullptr;
        Slot &s = slots_[index_of(h)];
        // Marked only if still this handle's and not closing: a close racing
        // another, or a remove, fails here.
        uint64_t live = gen_of(h);
        if (!s.state.compare_exchange_strong(live, live | kClosing, std::memory_order_seq_cst)) return nullptr;
        obj->closing_.store(true, std::memory_order_release); // Waits in the provider return
        // Every thread's record store before its check of the state is now
        // visible, or its check sees the mark.
        if (common::membarrier_ready()) common::process_barrier();
        for (unsigned i = 0; s.uses.load(std::memory_order_seq_cst) != 0 || g_in_calls.named(&s); ++i)
            common::spin_pause(i);
        return obj;
    }
    // The destroy was refused: the object lives on, waiting calls go ahead.
    void reopen(const void *h, T *obj) {
        obj->closing_.store(false, std::memory_order_release);
        slots_[index_of(h)].state.store(gen_of(h), std::memory_order_release);
    }

    // Invalidates the handle (its generation moves on) and returns the object.
    T *remove(const void *h) {
        std::lock_guard<std::mutex> g(mu_);
        T *obj = lookup(h);
        if (!obj) return nullptr;
        Slot &s = slots_[index_of(h)];
        // Even = free, and the closing mark cleared: waiting calls now find
        // the handle gone.  Stored before the fields change, and they are
        // release stores, so a lookup that read a changed field also sees the
        // new generation on its re-check.
        s.state.store(static_cast<uint32_t>(gen_of(h) + 1), std::memory_order_release);
        s.obj.store(nullptr, std::memory_order_release);
        s.owner.store(nullptr, std::memory_order_release);
        free_.push_back(index_of(h));
        return obj;
    }

    template <class F>
    void for_each(F &&f) {
        std::lock_guard<std::mutex> g(mu_);
        for (uint32_t i = 0; i < next_; ++i)
            if (gen_in(slots_[i].state.load()) & 1u) f(slots_[i].obj.load(), slots_[i].owner.load());
    }

private:
    void *encode(uint32_t idx, uint32_t gen) const {
        return reinterpret_cast<void *>((static_cast<uint64_t>(kind_) << 56) | (static_cast<uint64_t>(gen) << 24) |
                                        idx);
    }

    Kind kind_;
    uint64_t shape_; // shape_for(kind_)
    std::unique_ptr<Slot[]> slots_;
    std::mutex mu_;
    std::vector<uint32_t> free_;
    uint32_t next_ = 0;
};

// Per open NIC handle: the provider object and how many objects it owns, so
// VipCloseNic can refuse while VIs, CQs, ptags or memory are still live.
struct NicEntry {
    prov::Nic *nic = nullptr;
    std::atomic<int> objects{0};
    std::atomic<int> regions{0};
    // The NIC's default protection tag: what a NULL Ptag (VI or memory
    // attributes) or NULL memory attributes mean, as in the cLAN and M-VIA
    // libraries.  Made on first use, owned by this handle (not counted in
    // `objects`), destroyed by VipCloseNic.
    std::mutex default_mu;
    prov::Ptag *default_ptag = nullptr;
};

// The tables are constructed before main (they are constant-size arrays) and are
// reached directly: the data path pays no initialisation guard.
inline HandleTable<NicEntry> g_nics{Kind::Nic};
inline HandleTable<prov::Vi> g_vis{Kind::Vi};
inline HandleTable<prov::Cq> g_cqs{Kind::Cq};
inline HandleTable<prov::Ptag> g_ptags{Kind::Ptag};
inline HandleTable<prov::Conn> g_conns{Kind::Conn};
inline HandleTable<NicEntry> &nics() { return g_nics; }
inline HandleTable<prov::Vi> &vis() { return g_vis; }
inline HandleTable<prov::Cq> &cqs() { return g_cqs; }
inline HandleTable<prov::Ptag> &ptags() { return g_ptags; }
inline HandleTable<prov::Conn> &conns() { return g_conns; }
using ViUse = HandleTable<prov::Vi>::Use;
using CqUse = HandleTable<prov::Cq>::Use;

// The default protection tag of an open NIC handle, made on first use.
VIP_RETURN default_ptag(NicEntry *e, prov::Ptag **out);

// Opens the provider owning `device` (NULL/"" = $VIPL_PROVIDER's default device).
VIP_RETURN open_device(const char *device, prov::Nic **out);

} // namespace vipl::api
