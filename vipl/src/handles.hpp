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
    // Written under mu_, read without it: every field is an atomic.
    struct Slot {
        std::atomic<uint32_t> gen{0};
        std::atomic<T *> obj{nullptr};
        std::atomic<NicEntry *> owner{nullptr};
        std::atomic<uint32_t> uses{0};    // calls holding a Use of the object
        std::atomic<bool> closing{false}; // close() .. remove()/reopen()
    };
    // The slot a well-formed live-looking handle of this kind names, or nullptr.
    Slot *slot_of(const void *h) const {
        const uint64_t v = reinterpret_cast<uint64_t>(h);
        if ((v >> 56) != static_cast<uint64_t>(kind_)) return nullptr;
        const uint32_t idx = static_cast<uint32_t>(v & 0xffffff);
        if (idx >= kCap || !(gen_of(h) & 1u)) return nullptr;
        return &slots_[idx];
    }
    static uint32_t index_of(const void *h) { return static_cast<uint32_t>(reinterpret_cast<uint64_t>(h) & 0xffffff); }
    static uint32_t gen_of(const void *h) {
        return static_cast<uint32_t>((reinterpret_cast<uint64_t>(h) >> 24) & 0xffffffff);
    }

public:
    static constexpr uint32_t kCap = 1u << 16;

    explicit HandleTable(Kind k) : kind_(k), slots_(new Slot[kCap]) {}

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
        // The slot is free (even generation): no lookup returns these fields
        // until the odd generation below is published.  Release stores: a
        // lookup with an old handle that reads them also sees the remove that
        // freed the slot (it happened before, under mu_) on its re-check.
        s.obj.store(obj, std::memory_order_release);
        s.owner.store(owner, std::memory_order_release);
        const uint32_t gen = s.gen.load(std::memory_order_relaxed) | 1u; // odd = live
        s.gen.store(gen, std::memory_order_release);
        return encode(idx, gen);
    }

    T *lookup(const void *h, NicEntry **owner = nullptr) const {
        const uint64_t v = reinterpret_cast<uint64_t>(h);
        if ((v >> 56) != static_cast<uint64_t>(kind_)) return nullptr;
        const uint32_t idx = static_cast<uint32_t>(v & 0xffffff);
        const uint32_t gen = static_cast<uint32_t>((v >> 24) & 0xffffffff);
        if (idx >= kCap || !(gen & 1u)) return nullptr;
        const Slot &s = slots_[idx];
        if (s.gen.load(std::memory_order_acquire) != gen) return nullptr;
        // Acquire loads (plain loads on x86): the re-check below cannot be
        // done before them, and a field value written by a remove or insert
        // brings that writer's generation with it.
        T *obj = s.obj.load(std::memory_order_acquire);
        NicEntry *own = s.owner.load(std::memory_order_acquire);
        // Seqlock re-check: the fields are this handle's only if the slot was
        // not removed (and perhaps reused) while they were read.
        if (s.gen.load(std::memory_order_relaxed) != gen) return nullptr;
        if (owner) *owner = own;
        return obj;
    }

    // A use of the object `h` names for one call (true while it names one).
    // The use is published first (the slot in this thread's record, or the
    // slot's count), then the handle checked.  close() stores `closing`, runs
    // membarrier (or, for counts, its own locked exchange) and then reads the
    // records and the count: so either close() waits for this use or this use
    // sees `closing` and backs off.  With the use held and `closing` clear,
    // the object cannot be removed (remove() follows close()), so the slot's
    // fields are read once, without the lookup's seqlock re-check.  The
    // uncontended cost with a record, for a call's outermost use: one plain
    // store to take it (its entry is the record's first, found free by one
    // load), one to give it back, and one more load than lookup().
    class Use {
    public:
        Use(HandleTable &t, const void *h, NicEntry **owner = nullptr) : held_(take(t, h, owner)) {}
        ~Use() {
            if (!held_.slot) return;
            if (held_.entry) InCallRecord::give_back(held_.entry);
            else held_.slot->uses.fetch_sub(1, std::memory_order_release);
        }
        Use(const Use &) = delete;
        Use &operator=(const Use &) = delete;
        T *get() const { return held_.obj; }
        T *operator->() const { return held_.obj; }
        explicit operator bool() const { return held_.obj != nullptr; }

    private:
        // What a use holds: nothing (slot null), or the object, its slot and
        // the record entry naming it (null: the use is in the slot's count).
        // Returned by value, so that the common case keeps it in registers.
        struct Held {
            T *obj = nullptr;
            Slot *slot = nullptr;
            std::atomic<const void *> *entry = nullptr;
        };
        static Held take(HandleTable &t, const void *h, NicEntry **owner) {
            Slot *s = t.slot_of(h);
            if (__builtin_expect(s == nullptr, 0)) return {};
            if (InCallRecord *r = InCallRegistry::mine(); __builtin_expect(r != nullptr, 1))
                if (std::atomic<const void *> *e = r->take(); __builtin_expect(e != nullptr, 1)) {
                    Held u = hold_in(e, s, h, owner);
                    if (__builtin_expect(u.slot != nullptr, 1)) return u;
                }
            return slow(t, h, owner);
        }
        // The handle still names the object and it is not being destroyed:
        // the use is held.
        static bool live(Slot *s, const void *h) {
            return s->gen.load(std::memory_order_acquire) == gen_of(h) && !s->closing.load(std::memory_order_seq_cst);
        }
        static Held held(Slot *s, std::atomic<const void *> *e, NicEntry **owner) {
            if (owner) *owner = s->owner.load(std::memory_order_relaxed);
            return {s->obj.load(std::memory_order_relaxed), s, e};
        }
        // The use published in an entry of this thread's record, then the
        // handle checked; nothing held (the entry given back) when it fails.
        static Held hold_in(std::atomic<const void *> *e, Slot *s, const void *h, NicEntry **owner) {
            e->store(s, std::memory_order_relaxed);
            std::atomic_signal_fence(std::memory_order_seq_cst); // close()'s membarrier orders it
            if (__builtin_expect(live(s, h), 1)) return held(s, e, owner);
            InCallRecord::give_back(e);
            return {};
        }
        // No record yet (enrol), none possible or the record full (count), or
        // the handle is stale or its object being destroyed: wait for the
        // outcome (the handle gone, or the destroy refused) and look again.
        __attribute__((noinline)) static Held slow(HandleTable &t, const void *h, NicEntry **owner) {
            for (;;) {
                Slot *s = t.slot_of(h);
                if (!s || s->gen.load(std::memory_order_acquire) != gen_of(h)) return {};
                while (s->closing.load(std::memory_order_acquire) &&
                       s->gen.load(std::memory_order_acquire) == gen_of(h))
                    sched_yield();
                InCallRecord *r = g_in_calls.enroll();
                if (std::atomic<const void *> *e = r ? r->take() : nullptr) {
                    if (Held u = hold_in(e, s, h, owner); u.slot) return u;
                    continue;
                }
                s->uses.fetch_add(1, std::memory_order_seq_cst);
                if (live(s, h)) return held(s, nullptr, owner);
                s->uses.fetch_sub(1, std::memory_order_release);
            }
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
        if (s.closing.exchange(true, std::memory_order_seq_cst)) return nullptr;
        if (s.gen.load(std::memory_order_seq_cst) != gen_of(h)) { // removed meanwhile
            s.closing.store(false, std::memory_order_release);
            return nullptr;
        }
        obj->closing_.store(true, std::memory_order_release); // Waits in the provider return
        // Every thread's record store before its check of `closing` is now
        // visible, or its check sees `closing`.
        if (common::membarrier_ready()) common::process_barrier();
        for (unsigned i = 0; s.uses.load(std::memory_order_seq_cst) != 0 || g_in_calls.named(&s); ++i)
            common::spin_pause(i);
        return obj;
    }
    // The destroy was refused: the object lives on, waiting calls go ahead.
    void reopen(const void *h, T *obj) {
        obj->closing_.store(false, std::memory_order_release);
        slots_[index_of(h)].closing.store(false, std::memory_order_release);
    }

    // Invalidates the handle (its generation moves on) and returns the object.
    T *remove(const void *h) {
        std::lock_guard<std::mutex> g(mu_);
        T *obj = lookup(h);
        if (!obj) return nullptr;
        const uint32_t idx = static_cast<uint32_t>(reinterpret_cast<uint64_t>(h) & 0xffffff);
        Slot &s = slots_[idx];
        // Even = free.  Stored before the fields change, and they are
        // release stores, so a lookup that read a changed field also sees the
        // new generation on its re-check.
        s.gen.store(s.gen.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        s.obj.store(nullptr, std::memory_order_release);
        s.owner.store(nullptr, std::memory_order_release);
        free_.push_back(idx);
        s.closing.store(false, std::memory_order_release); // waiting calls now find the handle gone
        return obj;
    }

    template <class F>
    void for_each(F &&f) {
        std::lock_guard<std::mutex> g(mu_);
        for (uint32_t i = 0; i < next_; ++i)
            if (slots_[i].gen.load() & 1u) f(slots_[i].obj.load(), slots_[i].owner.load());
    }

private:
    void *encode(uint32_t idx, uint32_t gen) const {
        return reinterpret_cast<void *>((static_cast<uint64_t>(kind_) << 56) | (static_cast<uint64_t>(gen) << 24) |
                                        idx);
    }

    Kind kind_;
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
