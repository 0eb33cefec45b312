// cq_fifo.hpp - the entries of a VI completion queue, in completion order.
//
// A VIPL CQ reports which work queue (VI, send or receive) has a completed
// descriptor; the descriptor itself is then taken from that queue's WorkRing.
// The FIFO holds whatever entry the provider needs (a queue pointer, a VI
// index and a direction) and is a power-of-two ring that accepts exactly the
// number of entries it was sized for (one more is the spec's CQ overrun).
//
// How a provider uses it:
//
//   common::CqFifo<MyEntry> fifo;
//   fifo.resize(entries);                 // control path (create, VipResizeCQ, binding a VI)
//   completion:  fifo.push(entry);        // false only if full: size the FIFO so it cannot be
//   VipCQDone:   fifo.take([&](const MyEntry &e) { *handle = (VI of e)->api_handle; return true; })
//                (else poll the device once and take again, else VIP_NOT_DONE)
//   destroying a VI: fifo.remove_if([&](const MyEntry &e) { return e.vi == vi; });
//
// push and pop may run on different threads (one producer at a time, e.g. a
// firmware thread; any number of consumers, serialised by the consumer lock so
// each entry is taken by one of them): the ring underneath (spsc_ring.hpp)
// publishes its indices with release and reads them with acquire, each on its
// own cache line, and keeps the consumer lock on the consumers' line.  resize
// and remove_if hold the consumer lock but need the producer quiet (the
// provider stops or locks its completion source for them).
//
// Why take() translates the entry under the consumer lock: the entry names a
// VI that another thread may be destroying.  Its destroy drops the VI's
// entries with remove_if (or, for a provider that looks VIs up by index,
// passes through the consumer lock with quiesce_consumers() after unpublishing
// the VI), so a consumer either finished reading the VI before the destroy
// got the lock or finds its entry gone: it never reads a freed VI.
#pragma once

#include <cstdint>

#include "spin_lock.hpp"
#include "spsc_ring.hpp"

namespace vipl::common {

template <class Entry>
class CqFifo {
public:
    // Smallest power of two >= n (at least 1, at most 2^31).
    static uint32_t round_up(uint64_t n) {
        return uint32_t(SpscRing<Entry>::slots_for(size_t(n < kMaxEntries ? n : kMaxEntries)));
    }

    uint32_t capacity() const { return uint32_t(ring_.capacity()); }
    uint64_t size() const { return ring_.size(); }
    bool empty() const { return ring_.empty(); }

    // Control path: room for exactly `entries` (1 .. 2^31), keeping the
    // entries held.  False (nothing changed) if they would not fit.
    bool resize(uint64_t entries) {
        SpinGuard g(pop_lock());
        if (entries == 0 || entries > kMaxEntries) return false;
        return ring_.resize(size_t(entries));
    }

    // Producer.
    bool push(const Entry &e) { return ring_.push(e); }

    // Consumer (any thread): takes the oldest entry and returns true if
    // accept(entry), run under the consumer lock, returns true; an entry it
    // refuses (its VI is gone) is dropped and the next one tried.
    template <class Accept>
    bool take(Accept &&accept) {
        if (__builtin_expect(ring_.consumer_empty(), 0)) return false; // nothing to take: no lock
        SpinGuard g(pop_lock());
        Entry e;
        while (ring_.pop(&e))
            if (accept(e)) return true;
        return false;
    }

    bool pop(Entry *out) {
        return take([out](const Entry &e) {
            *out = e;
            return true;
        });
    }

    // Waits for the consumers inside take() to leave (see the top of the file).
    void quiesce_consumers() { SpinGuard g(pop_lock()); }

    // Control path: drops the entries `drop` selects, keeping the others in
    // order (each held entry is popped once and pushed back unless dropped:
    // the producer is quiet, so popping one always leaves room for it).
    template <class Pred>
    void remove_if(Pred &&drop) {
        SpinGuard g(pop_lock());
        Entry e;
        for (uint64_t n = ring_.size(); n > 0 && ring_.pop(&e); n--)
            if (!drop(e)) ring_.push(e);
    }

private:
    static constexpr uint64_t kMaxEntries = uint64_t(1) << 31;
    SpinLock &pop_lock() { return ring_.consumer_state(); }
    SpscRing<Entry, SpinLock> ring_;
};

} // namespace vipl::common
