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
// each entry is taken by one of them): the indices are published with release and read with
// acquire, each on its own cache line so a producer on another core does not
// take the consumer's line away on every entry.  resize and remove_if hold the
// consumer lock but need the producer quiet (the provider stops or locks its
// completion source for them).
//
// Why take() translates the entry under the consumer lock: the entry names a
// VI that another thread may be destroying.  Its destroy drops the VI's
// entries with remove_if (or, for a provider that looks VIs up by index,
// passes through the consumer lock with quiesce_consumers() after unpublishing
// the VI), so a consumer either finished reading the VI before the destroy
// got the lock or finds its entry gone: it never reads a freed VI.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "spin_lock.hpp"

namespace vipl::common {

template <class Entry>
class CqFifo {
public:
    // Smallest power of two >= n (at least 1, at most 2^31).
    static uint32_t round_up(uint64_t n) {
        uint32_t p = 1;
        while (p < n && p < (1u << 31)) p <<= 1;
        return p;
    }

    uint32_t capacity() const { return limit_; }
    uint64_t size() const { return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire); }
    bool empty() const { return size() == 0; }

    // Control path: room for exactly `entries` (1 .. 2^31), keeping the
    // entries held.  False (nothing changed) if they would not fit.
    bool resize(uint64_t entries) {
        SpinGuard g(pop_lock_);
        if (entries < size() || entries == 0 || entries > (1u << 31)) return false;
        const uint32_t cap = round_up(entries);
        std::unique_ptr<Entry[]> next(new Entry[cap]);
        uint64_t n = 0;
        for (uint64_t i = head_.load(std::memory_order_relaxed); i != tail_.load(std::memory_order_relaxed); i++)
            next[n++] = ring_[i & mask_];
        ring_ = std::move(next);
        mask_ = cap - 1;
        limit_ = uint32_t(entries);
        head_.store(0, std::memory_order_relaxed);
        tail_.store(n, std::memory_order_release);
        return true;
    }

    // Producer.
    bool push(const Entry &e) {
        const uint64_t t = tail_.load(std::memory_order_relaxed);
        if (t - head_.load(std::memory_order_acquire) >= limit_) return false;
        ring_[t & mask_] = e;
        tail_.store(t + 1, std::memory_order_release);
        return true;
    }

    // Consumer (any thread): takes the oldest entry and returns true if
    // accept(entry), run under the consumer lock, returns true; an entry it
    // refuses (its VI is gone) is dropped and the next one tried.
    template <class Accept>
    bool take(Accept &&accept) {
        if (__builtin_expect(empty_hint(), 0)) return false; // nothing to take: no lock
        SpinGuard g(pop_lock_);
        for (uint64_t h = head_.load(std::memory_order_relaxed); h != tail_.load(std::memory_order_acquire);) {
            const Entry e = ring_[h & mask_];
            head_.store(++h, std::memory_order_release);
            if (accept(e)) return true;
        }
        return false;
    }

    bool pop(Entry *out) {
        return take([out](const Entry &e) {
            *out = e;
            return true;
        });
    }

    // Waits for the consumers inside take() to leave (see the top of the file).
    void quiesce_consumers() { SpinGuard g(pop_lock_); }

    // Control path: drops the entries `drop` selects, keeping the others in order.
    template <class Pred>
    void remove_if(Pred &&drop) {
        SpinGuard g(pop_lock_);
        const uint64_t h = head_.load(std::memory_order_relaxed), t = tail_.load(std::memory_order_relaxed);
        uint64_t out = h;
        for (uint64_t i = h; i != t; i++) {
            const Entry e = ring_[i & mask_];
            if (!drop(e)) ring_[out++ & mask_] = e;
        }
        tail_.store(out, std::memory_order_release);
    }

private:
    bool empty_hint() const { return head_.load(std::memory_order_relaxed) == tail_.load(std::memory_order_acquire); }
    std::unique_ptr<Entry[]> ring_{new Entry[1]};
    uint32_t mask_ = 0;
    uint32_t limit_ = 1;
    alignas(64) std::atomic<uint64_t> head_{0};
    SpinLock pop_lock_;
    alignas(64) std::atomic<uint64_t> tail_{0};
};

} // namespace vipl::common
