// onesided.cpp - one-sided RDMA: the initiator's DMA engine checks an RDMA
// write or read against the target NIC's published protection table
// (published.hpp) and moves the bytes itself, straight into or out of the
// target's registered memory, as a real NIC's hardware does with the target's
// CPU idle (docs/nicfw.md, "Data path").
//
// It runs only where it changes nothing the VI spec promises:
//  * ordering: every packet this VI sent before has been taken by the target
//    (the target VI's published recv_seq equals our send_seq), so the
//    transfer cannot overtake an earlier send or RDMA on the VI; later ones
//    are sent after it has landed;
//  * errors: only a transfer that passes every check is done here; anything
//    else (a bad handle, bounds, ptag, an RDMA enable of region or VI, a VI
//    not connected to us, memory that cannot be reached) goes to the target's
//    firmware as a packet, which checks again and reports exactly as it always
//    has (the initiator's RDMA_PROT_ERROR, the target's VI error state);
//  * deregistration: the owner retires the published entry, then waits for
//    every transfer that may have read it (RingCtl::dma_busy, wait_peer_dma).
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "firmware.hpp"
#include "host_dma.hpp"
#include "protection.hpp"
#include "published.hpp"
#include "region.hpp"

namespace nicfw {

namespace {
// A process that exited (or is a zombie): its DMA engine writes nothing more.
bool process_gone(uint32_t pid) {
    if (!pid) return true;
    if (kill(pid_t(pid), 0) != 0) return errno == ESRCH;
    char path[64], buf[256];
    std::snprintf(path, sizeof path, "/proc/%u/stat", pid);
    FILE *f = std::fopen(path, "r");
    if (!f) return true;
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = 0;
    const char *p = std::strrchr(buf, ')'); // the state follows the command name
    return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}
} // namespace

const PublishedTable *Firmware::peer_table(uint16_t nic) {
    if (nic == rank_) return &protection_.published();
    PeerTable &t = peer_tables_[nic];
    RingCtl &c = wire_.ctl(nic);
    const uint64_t word = c.table.load(std::memory_order_acquire);
    const uint32_t pid = c.pid.load(std::memory_order_acquire);
    if (!word || !pid) return nullptr;
    if (t.map && t.word == word && t.pid == pid) return t.map.get();
    if (t.failed_word == word && t.pid == pid) return nullptr; // tried: cannot map it
    t.pid = pid;
    t.map = std::make_unique<PublishedTable>(pid, int(uint32_t(word)) - 1);
    if (!t.map->valid()) {
        t.map.reset();
        t.failed_word = word;
        return nullptr;
    }
    t.word = word;
    return t.map.get();
}

TxResult Firmware::tx_onesided(ViImpl *vi, TxEntry &e, const TxRequest &q) {
    const PublishedTable *t = peer_table(vi->peer_nic);
    if (!t) return TxResult::Declined;
    const VIP_CONTROL_SEGMENT &cs = q.cs;
    const VIP_DATA_SEGMENT *segs = q.segs;
    const bool write = q.op == VIP_CONTROL_OP_RDMAWRITE;
    const uint32_t pid =
        vi->peer_nic == rank_ ? dma_.pid() : wire_.ctl(vi->peer_nic).pid.load(std::memory_order_relaxed);
    const uint64_t raddr = desc_cache_[0].Remote.Data.AddressBits;
    const uint32_t n = cs.Length;

    // Busy before the table is read: a deregistration that retired the entry
    // after this fence waits for us; one before it is what we read.
    const uint32_t b = dma_begin();
    bool done = false;
    const PubVi &pv = t->vi(vi->peer_vi);
    const uint64_t c = pv.conn.load(std::memory_order_acquire);
    RegionView r;
    // The checks of the target's firmware (rx_rdma_write, rx_read_req): a
    // connection to this VI, its RDMA enable, the region's handle, ptag,
    // enable and bounds; and nothing of ours still on the wire before it.
    if (conn_peer_is(c, uint16_t(rank_), uint16_t(vi->index)) && (c & (write ? kConnWrite : kConnRead)) &&
        pv.recv_seq.load(std::memory_order_acquire) == vi->fw.send_seq &&
        t->read_region(desc_cache_[0].Remote.Handle, &r) && r.ptag_id == conn_ptag(c) &&
        (r.flags & (write ? kPubWrite : kPubRead)) && vipl::common::range_covers(r.base, r.len, raddr, n) &&
        (r.shm_id || vi->peer_nic == rank_ || (cfg_.onesided == Config::OneSided::On && dma_.cma_ok()))) {
        const BulkSeg s{raddr, r.shm_off + (raddr - r.base), n, r.shm_id, r.shm_fd, 0};
        done = n == 0 || move_onesided(write, vi->peer_nic, pid, s, segs, q.nseg);
    }
    dma_end(b);
    if (!done) return TxResult::Declined; // the target's firmware decides (and reports) instead
    ++onesided_;
    e.length = n;
    e.status = q.ops;
    e.ready = true; // the data is in place: done, at every reliability level
    return TxResult::Done;
}

// The bytes of a checked one-sided transfer: one memcpy per local segment
// through the mapping of the target's VipxAllocMem segment, else the DMA
// engine's general mover (this process, or cross-memory attach).
bool Firmware::move_onesided(bool write, uint16_t nic, uint32_t pid, const BulkSeg &s, const VIP_DATA_SEGMENT *segs,
                             uint32_t nseg) {
    if (s.shm_id && nic != rank_) {
        unsigned char *rp = dma_.peer_bytes(nic, pid, s);
        if (!rp) return false;
        for (uint32_t i = 0; i < nseg; ++i) {
            if (!segs[i].Length) continue;
            if (write) dma_to_host(rp, segs[i].Data.Address, segs[i].Length);
            else dma_to_host(segs[i].Data.Address, rp, segs[i].Length);
            rp += segs[i].Length;
        }
        return true;
    }
    uint32_t nl = 0;
    for (uint32_t i = 0; i < nseg; ++i)
        if (segs[i].Length) iov_[nl++] = iovec{segs[i].Data.Address, segs[i].Length};
    return dma_.move(!write, nic, pid, &s, 1, iov_, nl, s.len) == 0;
}

void Firmware::wait_peer_dma() {
    std::atomic_thread_fence(std::memory_order_seq_cst); // the retired entry before the counters
    for (int p = 0; p < wire_.nprocs(); ++p) {
        RingCtl &c = wire_.ctl(p);
        const uint32_t b = c.dma_busy.load(std::memory_order_acquire);
        if (!(b & 1)) continue;
        for (uint32_t spins = 1; c.dma_busy.load(std::memory_order_acquire) == b; ++spins) {
            if (spins % 1024) {
                __builtin_ia32_pause();
                continue;
            }
            if (p != rank_ && process_gone(c.pid.load(std::memory_order_relaxed))) break;
            sched_yield();
        }
    }
}

} // namespace nicfw
