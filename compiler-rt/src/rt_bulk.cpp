// rt_bulk.cpp - bulk transfers by RDMA: from SPLITC_RDMA_MIN bytes (default
// 4 KiB) bulk_put/bulk_write/bulk_store are RDMA writes straight from the
// caller's buffer into the target's heap or static data, and bulk_get/
// bulk_read RDMA reads straight into the caller's buffer, instead of 4 KiB
// request/reply messages each copied through the channel's buffers.  On the
// emulated NIC a large transfer is then moved once, NIC to host memory
// (docs/splitc.md, "Bulk transfers").
//
// Completion keeps the Split-C semantics:
//   put: the RDMA writes alone; the next sync sends one zero-length put
//     request on the same VI behind all of a peer's puts since the last sync
//     (confirm_puts) and waits for its acknowledgement.  VI delivers in order,
//     so when the target serves that request every earlier RDMA write is in its
//     memory and its source was read.  The acknowledgement is needed: the VIs
//     are Reliable Delivery, where an RDMA write's own completion only says the
//     NIC took it (on a staged path, that it is on the wire), not that
//     the data is in the target's memory ([Begel01] section 6: detecting that
//     needs Reliable Reception, or a request behind the write); and a third
//     processor that learns of the sync through another VI (a barrier) has no
//     order with this one.  One round trip per sync and peer instead of one
//     request and reply per put: a stream of puts is not bounded by credits.
//   write: the RDMA writes, then the zero-length write request, awaited at once
//     (the call is blocking).
//   store: the RDMA writes, then a kStoreRdma notice (no reply) that counts
//     the bytes at the target, as a store message would; the call returns once
//     its sends completed, so the caller may reuse the source (as for a
//     store gathered from registered memory).
//   get/read: each RDMA read descriptor counts as one outstanding get (read)
//     until it completes, i.e. until the data is in the caller's buffer.
// The peer's memory is named by its registration of the heap or the static
// data (handles exchanged at start-up); the caller's buffer is the heap's or
// static data's registration, or one from the registration cache (channel/).
#include "rt_internal.hpp"
#include "viastack/regcache.hpp"
#include "vipl_boot.h"

namespace splitc::rt {

namespace {

viastack::channel::RegCache cache;

// The registration of local memory [p, p+n): the heap's or static data's
// (entry -1), else a pinned registration-cache entry; false if the memory
// cannot be registered (the caller then uses the message path).
bool local_handle(const void *p, size_t n, VIP_MEM_HANDLE *mh, int *entry) {
    *entry = -1;
    if (registered_handle(p, n, mh)) return true;
    // Every entry pinned by descriptors in flight: reap them.
    *entry = cache.acquire(p, n, mh, [] {
        if (!reap_all_sends()) VipxProgress(g.nic);
    });
    return *entry >= 0;
}

// check() (rt_ops.cpp) has established the range is in the heap or the static data.
VIP_MEM_HANDLE remote_handle(const Peer &p, uint64_t addr, size_t n) {
    return g.heap.contains(uintptr_t(addr), n) ? p.heap_mh : p.statics_mh;
}

void post_piece(int proc, VIP_UINT32 op, uint64_t raddr, VIP_MEM_HANDLE rmh, const uint8_t *local, VIP_MEM_HANDLE lmh,
                uint32_t len, int entry, uint8_t kind) {
    Peer &p = g.peers[size_t(proc)];
    Slot *s = take_send_slot(proc);
    chan::Channel::set_rdma(s, op, raddr, rmh, local, lmh, len, kind);
    cache.pin(entry); // one pin per descriptor in flight
    s->pin = entry;
    post_built(p, s);
}

} // namespace

bool bulk_setup() {
    struct Handles {
        VIP_MEM_HANDLE heap, statics;
    } mine{g.heap.mh, g.statics.lo ? g.statics.mh : 0}, *all = new Handles[size_t(g.procs)];
    bool ok = vipl_boot_allgather(&mine, sizeof mine, all) == VIPL_BOOT_OK;
    for (int r = 0; ok && r < g.procs; ++r) {
        g.peers[size_t(r)].heap_mh = all[r].heap;
        g.peers[size_t(r)].statics_mh = all[r].statics;
    }
    delete[] all;
    if (!ok) report(SPLITC_ERR_INIT, "exchanging the heap's memory handles failed (vipl_boot_allgather)");
    cache.init(g.nic, g.ptag);
    return ok;
}

void bulk_shutdown() { cache.clear(); }

void confirm_puts() {
    for (int r = 0; g.unconfirmed_peers && r < g.procs; ++r) {
        Peer &p = g.peers[size_t(r)];
        if (!p.unconfirmed_put) continue;
        const uint64_t addr = p.unconfirmed_put;
        p.unconfirmed_put = 0;
        --g.unconfirmed_peers;
        ++g.splitphase_pending;
        send_notice(r, kPutReq, addr, 0);
    }
}

bool rdma_write(int proc, uint64_t addr, const void *src, size_t n) {
    VIP_MEM_HANDLE lmh;
    int entry;
    if (!local_handle(src, n, &lmh, &entry)) return false;
    const VIP_MEM_HANDLE rmh = remote_handle(g.peers[size_t(proc)], addr, n);
    const auto *b = static_cast<const uint8_t *>(src);
    for (size_t off = 0; off < n; off += g.rdma_chunk) {
        const uint32_t len = uint32_t(n - off < g.rdma_chunk ? n - off : g.rdma_chunk);
        post_piece(proc, VIP_CONTROL_OP_RDMAWRITE, addr + off, rmh, b + off, lmh, len, entry, 1);
    }
    cache.release(entry); // the descriptors hold their own pins
    return true;
}

bool rdma_read(int proc, void *dst, uint64_t addr, size_t n, bool split_phase) {
    VIP_MEM_HANDLE lmh;
    int entry;
    if (!local_handle(dst, n, &lmh, &entry)) return false;
    const VIP_MEM_HANDLE rmh = remote_handle(g.peers[size_t(proc)], addr, n);
    auto *b = static_cast<uint8_t *>(dst);
    for (size_t off = 0; off < n; off += g.rdma_chunk) {
        const uint32_t len = uint32_t(n - off < g.rdma_chunk ? n - off : g.rdma_chunk);
        if (split_phase) ++g.splitphase_pending;
        else ++g.blocking_pending;
        ++g.rdma_reads;
        post_piece(proc, VIP_CONTROL_OP_RDMAREAD, addr + off, rmh, b + off, lmh, len, entry,
                   split_phase ? kSlotRdmaReadSplit : kSlotRdmaReadBlocking);
    }
    cache.release(entry);
    return true;
}

void rdma_retired(Slot *s) {
    if (s->pin >= 0) cache.release(s->pin);
    s->pin = -1;
    if (s->rdma == kSlotRdmaReadSplit || s->rdma == kSlotRdmaReadBlocking) {
        --g.rdma_reads;
        if (s->rdma == kSlotRdmaReadSplit) --g.splitphase_pending;
        else --g.blocking_pending;
    }
}

} // namespace splitc::rt
