// vi_table.hpp - the NIC's VI table: which VI a packet's destination index or
// a CQ entry names.  The firmware and CQ reaping look VIs up without a lock
// (acquire loads); the host adds and removes them under the table's mutex, and
// quiesces the firmware before removing one, so the firmware never holds a
// pointer to a VI that is gone.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "config.hpp"

namespace nicfw {

class ViImpl;

class ViTable {
public:
    ViImpl *get(uint32_t index) const { return slots_[index].load(std::memory_order_acquire); }
    // The VI at an index that came off the wire (untrusted), or nullptr.
    ViImpl *find(uint32_t index) const { return index < kMaxVi ? get(index) : nullptr; }

    // Host side: puts the VI that make(index) returns at the lowest free index;
    // nullptr when the table is full.
    template <class Make>
    ViImpl *add(Make &&make) {
        std::lock_guard<std::mutex> g(mu_);
        for (uint32_t i = 0; i < kMaxVi; ++i) {
            if (slots_[i].load(std::memory_order_relaxed)) continue;
            ViImpl *vi = make(i);
            slots_[i].store(vi, std::memory_order_release);
            return vi;
        }
        return nullptr;
    }
    // Host side, with the firmware quiesced.
    void remove(uint32_t index) {
        std::lock_guard<std::mutex> g(mu_);
        slots_[index].store(nullptr, std::memory_order_release);
    }

private:
    std::atomic<ViImpl *> slots_[kMaxVi] = {};
    std::mutex mu_;
};

} // namespace nicfw
