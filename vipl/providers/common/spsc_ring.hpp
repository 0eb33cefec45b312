// spsc_ring.hpp - a bounded ring with one producer and one consumer at a time:
// nicfw's doorbell FIFOs and the receive descriptors its firmware holds, and
// the entries of every provider's completion queue (cq_fifo.hpp puts its
// consumer lock on top).
//
// The slots are a power of two, so an index is a mask, not a division; the
// logical capacity (what push refuses beyond) may be any number, so a CQ
// holds exactly the entries it was created for and one more is the spec's
// overrun.  head and tail count up forever (2^64 entries do not wrap in
// practice) and their difference is the size.
//
// The producer publishes an entry by storing tail with release after writing
// the slot; the consumer reads tail with acquire before reading the slot, and
// gives the slot back by storing head with release, which the producer reads
// with acquire before writing the slot again.  Each side's own index is read
// relaxed: only that side moves it.  head and tail sit on cache lines of
// their own, so a producer on another core does not take the consumer's line
// away on every entry (and the other way round); what the consumers share
// beside head (ConsumerState: CqFifo's lock) sits on head's line, so a
// consumer touches one line of its own.  With an inline firmware both ends
// are the same thread and the atomics are plain moves.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace vipl::common {

// A ring whose consumers share nothing beyond head.
struct NoConsumerState {};

template <class T, class ConsumerState = NoConsumerState>
class SpscRing {
public:
    explicit SpscRing(size_t capacity = 1) { reset(capacity); }
    SpscRing(const SpscRing &) = delete;
    SpscRing &operator=(const SpscRing &) = delete;

    // The slots a ring of this capacity has: the smallest power of two >= it
    // (at least 1).
    static size_t slots_for(size_t capacity) {
        size_t slots = 1;
        while (slots < capacity) slots <<= 1;
        return slots;
    }

    // Control path, with both ends quiet: room for `capacity` entries (0
    // means 1), the ring emptied.
    void reset(size_t capacity) {
        replace_slots(capacity);
        head_.store(0, std::memory_order_relaxed);
        tail_.store(0, std::memory_order_relaxed);
    }

    // Control path, with both ends quiet: room for `capacity` entries (0
    // means 1), the entries held kept in order.  False (nothing changed) if
    // they would not fit.
    bool resize(size_t capacity) {
        const uint64_t h = head_.load(std::memory_order_relaxed), t = tail_.load(std::memory_order_relaxed);
        if (t - h > (capacity ? capacity : 1)) return false;
        std::unique_ptr<T[]> old = std::move(buf_);
        const size_t old_mask = mask_;
        replace_slots(capacity);
        uint64_t n = 0;
        for (uint64_t i = h; i != t; i++) buf_[n++] = old[i & old_mask];
        head_.store(0, std::memory_order_relaxed);
        tail_.store(n, std::memory_order_release);
        return true;
    }

    size_t capacity() const { return cap_; }
    size_t size() const { return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire); }
    bool empty() const { return size() == 0; }

    // Producer: false (nothing written) when the ring holds capacity() entries.
    bool push(const T &v) {
        const uint64_t t = tail_.load(std::memory_order_relaxed);
        if (t - head_.load(std::memory_order_acquire) >= cap_) return false;
        buf_[t & mask_] = v;
        tail_.store(t + 1, std::memory_order_release);
        return true;
    }

    // Consumer: the oldest entry, or false when there is none.
    bool pop(T *out) {
        const uint64_t h = head_.load(std::memory_order_relaxed);
        if (h == tail_.load(std::memory_order_acquire)) return false;
        *out = buf_[h & mask_];
        head_.store(h + 1, std::memory_order_release);
        return true;
    }

    // Consumer: the oldest entry, left in place (nullptr when there is none).
    const T *front() const {
        const uint64_t h = head_.load(std::memory_order_relaxed);
        if (h == tail_.load(std::memory_order_acquire)) return nullptr;
        return &buf_[h & mask_];
    }

    // Consumer: whether there is nothing to pop, as pop would see it (its
    // own head relaxed, the producer's tail acquire), without taking it.
    bool consumer_empty() const {
        return head_.load(std::memory_order_relaxed) == tail_.load(std::memory_order_acquire);
    }

    ConsumerState &consumer_state() { return consumer_; }

private:
    void replace_slots(size_t capacity) {
        cap_ = capacity ? capacity : 1;
        const size_t slots = slots_for(cap_);
        mask_ = slots - 1;
        buf_ = std::make_unique<T[]>(slots);
    }

    // Read by both ends, written only on the control path.
    std::unique_ptr<T[]> buf_;
    size_t cap_ = 1;  // logical capacity (what push refuses beyond)
    size_t mask_ = 0; // slots - 1
    alignas(64) std::atomic<uint64_t> head_{0};
    [[no_unique_address]] ConsumerState consumer_;
    alignas(64) std::atomic<uint64_t> tail_{0};
};

} // namespace vipl::common
