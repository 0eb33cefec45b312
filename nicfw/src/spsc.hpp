// spsc.hpp - a bounded single-producer/single-consumer ring: the doorbell FIFO
// (host -> firmware tokens, of any depth: the emulated LANai 4 doorbell has
// one slot) and the receive descriptors the firmware holds.  The host's work
// queues and the CQ ring are the providers' common ones (work_ring.hpp,
// cq_fifo.hpp).  With an inline firmware both ends are the same thread and the
// atomics are plain moves.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace nicfw {

template <class T>
class SpscRing {
public:
    explicit SpscRing(size_t capacity = 1) { reset(capacity); }

    // Not concurrent with push/pop: used while the ring is idle (create, resize).
    void reset(size_t capacity) {
        cap_ = capacity ? capacity : 1;
        size_t slots = 1;
        while (slots < cap_) slots <<= 1; // power of two: index with a mask, not a division
        mask_ = slots - 1;
        buf_ = std::make_unique<T[]>(slots);
        head_.store(0, std::memory_order_relaxed);
        tail_.store(0, std::memory_order_relaxed);
    }

    size_t capacity() const { return cap_; }
    size_t size() const { return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire); }
    bool empty() const { return size() == 0; }

    bool push(const T &v) {
        const uint64_t t = tail_.load(std::memory_order_relaxed);
        if (t - head_.load(std::memory_order_acquire) >= cap_) return false;
        buf_[t & mask_] = v;
        tail_.store(t + 1, std::memory_order_release);
        return true;
    }
    bool pop(T *out) {
        const uint64_t h = head_.load(std::memory_order_relaxed);
        if (h == tail_.load(std::memory_order_acquire)) return false;
        *out = buf_[h & mask_];
        head_.store(h + 1, std::memory_order_release);
        return true;
    }
    const T *front() const {
        const uint64_t h = head_.load(std::memory_order_relaxed);
        if (h == tail_.load(std::memory_order_acquire)) return nullptr;
        return &buf_[h & mask_];
    }

private:
    size_t cap_ = 1;  // logical capacity (what push refuses beyond)
    size_t mask_ = 0; // slots - 1
    std::unique_ptr<T[]> buf_;
    alignas(64) std::atomic<uint64_t> head_{0};
    alignas(64) std::atomic<uint64_t> tail_{0};
};

} // namespace nicfw
