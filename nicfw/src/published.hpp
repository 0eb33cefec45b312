// published.hpp - the part of a NIC's protection table its peers read: what a
// peer's DMA engine needs to check a one-sided RDMA write or read against this
// NIC's table without this NIC's firmware (onesided.cpp; docs/nicfw.md, "Data
// path").
//
// A memfd of this process, mapped read-write here and read-only by peers (they
// open it through /proc/<pid>/fd/<fd>, the fd published in this NIC's RingCtl):
//
//   header | one PubVi per VI | one PubRegion per protection-table entry
//
// * A region entry is a seqlock: the owner (the host, under the protection
//   table's mutex: one writer) makes `seq` odd, writes the fields, makes it even
//   again; a reader copies the fields and retries if `seq` was odd or changed,
//   so it never acts on a torn entry.
// * A VI entry is one 64-bit word (connected, the VI's RDMA enables, its ptag,
//   its peer) written atomically, and the sequence number the VI expects next
//   from its peer (rx: a peer whose packets on the VI are all taken sends a
//   one-sided transfer without overtaking any of them).
// * Deregistration and attribute changes wait, after publishing, for every
//   one-sided transfer that may have read the old entry (RingCtl::dma_busy,
//   Firmware::wait_peer_dma): nothing lands after VipDeregisterMem returns.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "config.hpp"

namespace nicfw {

struct Region;

constexpr uint32_t kPubWrite = 1, kPubRead = 2;

struct PubRegion {
    std::atomic<uint32_t> seq; // odd while the owner changes the entry
    uint32_t handle;           // the VIP_MEM_HANDLE naming it, 0 = free
    uint64_t base;
    uint64_t len;
    uint32_t ptag_id;
    uint32_t flags;   // kPubWrite | kPubRead
    uint64_t shm_off; // shm_id != 0: base's offset in that VipxAllocMem segment
    uint32_t shm_id;  // 0: plain memory (cross-memory attach)
    int32_t shm_fd;   // the segment's memfd in the owner's process
    uint32_t pad[4];
};
static_assert(sizeof(PubRegion) == 64);

// A consistent copy of a region entry (read_region).
struct RegionView {
    uint32_t handle, ptag_id, flags, shm_id;
    int32_t shm_fd;
    uint64_t base, len, shm_off;
};

struct PubVi {
    std::atomic<uint64_t> conn;     // pub_conn(): 0 unless Connected
    std::atomic<uint32_t> recv_seq; // the next sequence number the VI takes from its peer
    uint32_t pad;
};
static_assert(sizeof(PubVi) == 16);

// The VI word: bit 63 connected, 62 RDMA write, 61 RDMA read, 60..32 the ptag
// id, 31..16 the peer NIC, 15..0 the peer VI.  A ptag id that does not fit
// publishes "not connected": peers then use the firmware's path.
constexpr uint64_t kConnUp = 1ull << 63, kConnWrite = 1ull << 62, kConnRead = 1ull << 61;
constexpr uint32_t kConnPtagBits = 29;
inline uint64_t pub_conn(bool up, bool w, bool r, uint32_t ptag_id, uint16_t peer_nic, uint16_t peer_vi) {
    if (!up || ptag_id >= (1u << kConnPtagBits)) return 0;
    return kConnUp | (w ? kConnWrite : 0) | (r ? kConnRead : 0) | (uint64_t(ptag_id) << 32) |
        (uint64_t(peer_nic) << 16) | peer_vi;
}
inline uint32_t conn_ptag(uint64_t c) { return uint32_t(c >> 32) & ((1u << kConnPtagBits) - 1); }
inline bool conn_peer_is(uint64_t c, uint16_t nic, uint16_t vi) {
    return (c & kConnUp) && uint32_t(c) == ((uint32_t(nic) << 16) | vi);
}

struct PubHeader {
    uint64_t magic;
    uint32_t nvis, nregions;
    uint32_t pad[12];
};
static_assert(sizeof(PubHeader) == 64);
constexpr uint64_t kPubMagic = 0x31627550'6369696eull; // "nicfwPub1"-ish: a version mark

// One table of a NIC, as its owner or a peer maps it.
class PublishedTable {
public:
    // The owner's table: a new memfd (throws std::runtime_error if it cannot be made).
    PublishedTable();
    // A peer's table, mapped read-only from /proc/<pid>/fd/<fd>; valid() says
    // whether that worked (the peer may have gone).
    PublishedTable(uint32_t pid, int fd);
    ~PublishedTable();
    PublishedTable(const PublishedTable &) = delete;
    PublishedTable &operator=(const PublishedTable &) = delete;

    bool valid() const { return base_ != nullptr; }
    int fd() const { return fd_; }

    // ---- owner ----
    void publish_region(uint32_t idx, const Region &r); // r.handle set
    void retire_region(uint32_t idx);
    PubVi &vi(uint32_t idx) { return vis_[idx]; }

    // ---- reader ----
    // The entry named by handle `mh`: false when it is free, names another
    // handle or was changing on every try.
    bool read_region(uint32_t mh, RegionView *out) const;
    const PubVi &vi(uint32_t idx) const { return vis_[idx]; }

private:
    static size_t bytes();
    unsigned char *base_ = nullptr;
    PubVi *vis_ = nullptr;
    PubRegion *regions_ = nullptr;
    int fd_ = -1;
    bool owner_ = false;
};

} // namespace nicfw
