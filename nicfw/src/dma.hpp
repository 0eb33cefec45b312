// dma.hpp - the NIC's bulk data movers: the single-copy path for large
// transfers (docs/nicfw.md, "Data path").
//
// A real NIC moves a large RDMA write with its DMA engines, host memory to host
// memory, and never stages the payload in its small SRAM.  The emulated
// equivalent: only a small control packet (the request) travels through the
// wire FIFO; the NIC that owns the *target* memory checks it against its own
// protection table, exactly as for a staged packet, and then moves the bytes
// itself, once, between the peer process's memory and its own:
//
//   * memory the library allocated (VipxAllocMem) is a memfd shared-memory
//     segment: the peer's NIC maps it once (open /proc/<pid>/fd/<fd>, mmap,
//     kept) and a transfer is one memcpy;
//   * any other registered memory: Linux cross-memory attach
//     (process_vm_readv / process_vm_writev), one kernel copy.
//
// Pull: for a send or RDMA write the target reads the initiator's gather list;
// for an RDMA read the target writes the initiator's scatter list.  Either way
// the initiator's descriptor completes on the target's answer (Ack / read
// response), sent after the bytes are in place.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace nicfw {

// ---- wire format of a bulk request (payload after the RdmaExt, if any) ----
// The initiator's side of the transfer: its pid and its segments (source of a
// send / RDMA write, destination of an RDMA read).
struct BulkExt {
    uint32_t pid;    // the initiator's process (cross-memory attach)
    uint32_t nseg;   // BulkSeg entries that follow
    uint32_t length; // bytes in all of them
    uint32_t pad;
};
struct BulkSeg {
    uint64_t addr;    // address in the initiator's process
    uint64_t shm_off; // shm_id != 0: offset in that shared-memory segment
    uint32_t len;
    uint32_t shm_id; // 0: plain memory (cross-memory attach)
    int32_t shm_fd;  // the segment's memfd in the initiator's process
    uint32_t pad;
};
static_assert(sizeof(BulkExt) == 16 && sizeof(BulkSeg) == 32);

// Where a registered region sits in a VipxAllocMem segment (id 0: it does not).
struct ShmRef {
    uint32_t id = 0;
    int32_t fd = -1;
    uintptr_t base = 0; // the segment's address in this process
};

// ---- host side: the shared-memory allocator behind VipxAllocMem ----
// Every segment is a memfd of its own, mapped MAP_SHARED; its id is never
// reused in this process, so a peer's cached mapping can never name new memory.
class SharedMemory {
public:
    SharedMemory() = default;
    ~SharedMemory();
    SharedMemory(const SharedMemory &) = delete;
    SharedMemory &operator=(const SharedMemory &) = delete;

    // A page-aligned, zeroed segment of at least `len` bytes, anywhere (at ==
    // nullptr) or exactly at `at` without replacing a mapping; nullptr (errno
    // set) if not.  Pages are committed as they are touched.
    void *alloc(size_t len, void *at = nullptr);
    // false if `p` is not the start of a live segment.
    bool free(void *p);
    // The segment holding [p, p+len), if any.
    ShmRef find(const void *p, size_t len) const;

private:
    struct Seg {
        uintptr_t base;
        size_t len;
        uint32_t id;
        int fd;
    };
    mutable std::mutex mu_;
    std::vector<Seg> segs_;
    uint32_t next_id_ = 1;
};

// The process's allocator (memory outlives any one NIC handle: VipxFreeMem or exit).
SharedMemory &shared_memory();

// ---- firmware side: the copy engine ----
class DmaEngine {
public:
    explicit DmaEngine(int my_rank);
    ~DmaEngine();
    DmaEngine(const DmaEngine &) = delete;
    DmaEngine &operator=(const DmaEngine &) = delete;

    uint32_t pid() const { return pid_; }
    // Whether cross-memory attach may work here (no Yama restriction that
    // forbids it): plain memory takes the bulk path only if so.
    bool cma_ok() const { return cma_ok_; }

    // Moves `total` bytes between the peer's segments `rs` and our `local`
    // pieces: pull = peer -> local (send, RDMA write), else local -> peer (RDMA
    // read).  Returns 0, or an errno (ESRCH: the peer is gone; EFAULT: its
    // memory is not there any more; others from open/mmap).
    int move(bool pull, int peer_rank, uint32_t pid, const BulkSeg *rs, uint32_t nr, const iovec *local, uint32_t nl,
             size_t total);

    // Where the peer's VipxAllocMem segment named by `s` (shm_id, shm_fd) is
    // mapped here, at s.shm_off, when [shm_off, shm_off + s.len) lies inside
    // it; nullptr (errno set) if not.  One-sided RDMA copies through it.
    unsigned char *peer_bytes(int peer_rank, uint32_t pid, const BulkSeg &s);

private:
    struct Mapping {
        unsigned char *base;
        size_t len;
    };
    // The peer's segment, mapped once (nullptr, errno set, if it cannot be).
    const Mapping *map_peer(int peer_rank, uint32_t pid, const BulkSeg &s);
    int flush_cma(bool pull, uint32_t pid);

    const int rank_;
    const uint32_t pid_;
    bool cma_ok_ = true;
    std::unordered_map<uint64_t, Mapping> maps_; // (rank << 32 | shm_id) -> mapping
    uint64_t last_key_ = 0;                      // the mapping used last (key 0 names none: ids start at 1)
    const Mapping *last_map_ = nullptr;
    // cross-memory-attach batch: matching local/remote pieces
    static constexpr uint32_t kBatch = 64;
    iovec lv_[kBatch], rv_[kBatch];
    uint32_t nb_ = 0;
    size_t batch_bytes_ = 0;
};

} // namespace nicfw
