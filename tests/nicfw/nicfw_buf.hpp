// nicfw_buf.hpp - registered memory for the nicfw multi-process tests, from
// VipxAllocMem (shared memory the peers' NICs map) or from the heap (reached
// by cross-memory attach).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "vipl_test_util.hpp"

namespace vt {

// A byte count from the environment (CMake sets the firmware's crossovers for
// each test run), or dflt when unset.
inline uint32_t env_bytes(const char *var, uint32_t dflt) {
    const char *v = std::getenv(var);
    return v && *v ? uint32_t(std::strtoul(v, nullptr, 10)) : dflt;
}
// The DMA crossover for memory reached by cross-memory attach, and for
// VipxAllocMem memory (VIPL_NICFW_DMA_MIN_SHM, never above the first).
inline uint32_t dma_min(uint32_t dflt) { return env_bytes("VIPL_NICFW_DMA_MIN", dflt); }
inline uint32_t dma_min_shm(uint32_t dflt, uint32_t dflt_shm) {
    return std::min(dma_min(dflt), env_bytes("VIPL_NICFW_DMA_MIN_SHM", dflt_shm));
}

// Registered memory from VipxAllocMem (shared memory on nicfw) or the heap.
class Buf {
public:
    Buf(size_t len, VIP_PROTECTION_HANDLE tag, bool shm, bool w = false, bool r = false) : shm_(shm) {
        if (!shm) {
            heap_ = std::make_unique<Mem>(len, tag, w, r);
            rc = heap_->rc;
            return;
        }
        if ((rc = VipxAllocMem(nic(), len, &p_)) != VIP_SUCCESS) return;
        VIP_MEM_ATTRIBUTES a{tag, w ? VIP_TRUE : VIP_FALSE, r ? VIP_TRUE : VIP_FALSE};
        rc = VipRegisterMem(nic(), p_, len, &a, &mh_);
    }
    ~Buf() {
        if (shm_ && p_) {
            if (mh_) VipDeregisterMem(nic(), p_, mh_);
            EXPECT_EQ(VipxFreeMem(nic(), p_), VIP_SUCCESS);
        }
    }
    uint8_t *p() const { return heap_ ? heap_->p() : static_cast<uint8_t *>(p_); }
    VIP_MEM_HANDLE mh() const { return heap_ ? heap_->mh() : mh_; }
    // Deregisters now (the destructor then only frees the memory).
    VIP_RETURN deregister() {
        const VIP_RETURN r = VipDeregisterMem(nic(), p(), mh());
        if (r == VIP_SUCCESS) {
            if (heap_) heap_->forget();
            else mh_ = 0;
        }
        return r;
    }
    VIP_RETURN rc = VIP_ERROR_RESOURCE;

private:
    bool shm_;
    std::unique_ptr<Mem> heap_;
    void *p_ = nullptr;
    VIP_MEM_HANDLE mh_ = 0;
};

} // namespace vt
