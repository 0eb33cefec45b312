// bulk_buffers.hpp - a layer's bulk source and destination, from the layer's
// own allocator of NIC memory when it has one (FM_alloc_mem, bip_alloc_mem:
// VipxAllocMem memory, which nicfw moves with one memcpy; as ucp_put_bw's
// ucp_mem_map'd buffers for UCX), heap memory when the allocator has none or
// the environment variable named asks for it ("1": the cross-memory-attach
// path on nicfw).  Freed before the layer shuts down: the destructor must
// run while the layer is initialised.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace logp {

class BulkBuffers {
public:
    using Alloc = void *(*)(std::size_t);
    using Free = int (*)(void *);

    BulkBuffers() = default;
    BulkBuffers(std::size_t bytes, Alloc alloc, Free release, const char *plain_env) : release_(release) {
        const char *plain = std::getenv(plain_env);
        if (!plain || std::strcmp(plain, "1") != 0) {
            src_ = static_cast<char *>(alloc(bytes));
            dst_ = src_ ? static_cast<char *>(alloc(bytes)) : nullptr;
            if (!dst_ && src_) release_(src_), src_ = nullptr;
        }
        if (!src_) {
            heap_.assign(2 * bytes, 0);
            src_ = heap_.data();
            dst_ = heap_.data() + bytes;
        }
        std::memset(src_, 'x', bytes);
    }
    ~BulkBuffers() { reset(); }
    BulkBuffers(const BulkBuffers &) = delete;
    BulkBuffers &operator=(BulkBuffers &&o) noexcept {
        reset();
        std::swap(src_, o.src_);
        std::swap(dst_, o.dst_);
        std::swap(release_, o.release_);
        heap_.swap(o.heap_);
        return *this;
    }
    // Frees NIC memory (before the layer's finalize).
    void reset() {
        if (src_ && heap_.empty()) release_(src_), release_(dst_);
        src_ = dst_ = nullptr;
        heap_.clear();
    }

    char *src() const { return src_; }
    char *dst() const { return dst_; }
    bool nic_memory() const { return src_ && heap_.empty(); }

private:
    char *src_ = nullptr, *dst_ = nullptr;
    Free release_ = nullptr;
    std::vector<char> heap_;
};

} // namespace logp
