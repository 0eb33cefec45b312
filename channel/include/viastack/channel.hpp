// channel.hpp - messages over one VI with credits: the part of Active Messages
// (am/) and the Split-C runtime (compiler-rt/) that is the same in both.
//
// A Channel is one reliable VI and its registered slots: nsend send slots
// (descriptor + message buffer), nrecv receive slots pre-posted before the VI
// connects, and the request credits of the protocol of Begel, Buonadonna,
// Culler and Gay (section 5/6): a request costs one of k credits at the
// sender, a reply gives credits back, so with 2k+1 receives posted the peer's
// receive queue is never empty.  Each layer keeps its own wire header,
// dispatch and semantics on top; the channel only moves slots between the
// NIC and the free lists, and times each step with the layer's own counters
// (Instr) so the overhead-breakdown categories keep their meaning per layer.
//
// Set-up and tear-down are out of line (channel.cpp); everything a message
// goes through (take a credit, take a send slot, post, reap, recycle a
// receive) is inline here: the layers' hot paths make no extra call.
// Only vipl.h / vipl_instr.h: the layer below's public headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "vipl.h"
#include "vipl_instr.h"

namespace viastack::channel {

// The layer's counters for the steps the channel performs (Table 3/4 rows of
// Begel et al.): each layer has its own ("am.VipPostSend",
// "splitc.VipPostSend", ...).  A null entry is not timed.
struct Instr {
    vipl_instr_counter *post_send;    // VipPostSend
    vipl_instr_counter *send_done;    // VipSendDone
    vipl_instr_counter *cq_send;      // VipCQDone on the send CQ
    vipl_instr_counter *recycle_send; // reaped send slot back on the free list
    vipl_instr_counter *recv_done;    // VipRecvDone
    vipl_instr_counter *cq_recv;      // VipCQDone on the receive CQ
    vipl_instr_counter *recycle_recv; // receive descriptor reset for reposting
    vipl_instr_counter *post_recv;    // VipPostRecv
};

// The one way a layer declares its channel counters: named "<layer>.VipPostSend",
// "<layer>.Recycle send descriptor" and so on (the names docs/logp.md's
// breakdown and the layers' overhead tables look for), in the categories of
// Begel et al.'s Table 3, and the Instr over them.  `send_cq` false leaves
// VipCQDone (Send) untimed, for a layer that reaps sends from the send queue.
//   VIASTACK_CHANNEL_INSTR(kInstr, "fm", false);   (in the layer's namespace;
// inline variables, so a header may hold it and every file shares the counters)
#define VIASTACK_CHANNEL_INSTR(instr, layer, send_cq)                                                                  \
    namespace instr##_counters {                                                                                       \
        inline vipl_instr_counter post_send = {layer ".VipPostSend", VIPL_INSTR_BASE_VI, 0, 0, 0, 0};                  \
        inline vipl_instr_counter send_done = {layer ".VipSendDone", VIPL_INSTR_BASE_VI, 0, 0, 0, 0};                  \
        inline vipl_instr_counter cq_send = {layer ".VipCQDone (Send)", VIPL_INSTR_EVENT, 0, 0, 0, 0};                 \
        inline vipl_instr_counter recycle_send = {layer ".Recycle send descriptor", VIPL_INSTR_BASE_VI, 0, 0, 0, 0};   \
        inline vipl_instr_counter recv_done = {layer ".VipRecvDone", VIPL_INSTR_BASE_VI, 0, 0, 0, 0};                  \
        inline vipl_instr_counter cq_recv = {layer ".VipCQDone (Receive)", VIPL_INSTR_EVENT, 0, 0, 0, 0};              \
        inline vipl_instr_counter recycle_recv = {                                                                     \
            layer ".Recycle receive descriptor", VIPL_INSTR_BASE_VI, 0, 0, 0, 0};                                      \
        inline vipl_instr_counter post_recv = {layer ".VipPostRecv", VIPL_INSTR_BASE_VI, 0, 0, 0, 0};                  \
    }                                                                                                                  \
    inline constexpr ::viastack::channel::Instr instr = {&instr##_counters::post_send,                                 \
                                                         &instr##_counters::send_done,                                 \
                                                         (send_cq) ? &instr##_counters::cq_send : nullptr,             \
                                                         &instr##_counters::recycle_send,                              \
                                                         &instr##_counters::recv_done,                                 \
                                                         &instr##_counters::cq_recv,                                   \
                                                         &instr##_counters::recycle_recv,                              \
                                                         &instr##_counters::post_recv}

// Times a step on one of the Instr counters (a null one is not counted); free
// when instrumentation and the host-CPU model are off.  The _IF form counts the
// step only if `counted` (a poll that found nothing), but always closes the
// scope, so that the host-CPU model (vipl_instr.h) sees its time as nested.
#if VIASTACK_INSTR_COMPILED
#define VIASTACK_CHANNEL_TIME_END_IF(ctr, t, counted)                                                                  \
    do {                                                                                                               \
        if (__builtin_expect(vipl_instr_timing, 0)) vipl_instr_end_((ctr), (t), (counted), VIPL_SCOPE_LAYER);          \
    } while (0)
#else
#define VIASTACK_CHANNEL_TIME_END_IF(ctr, t, counted)                                                                  \
    do {                                                                                                               \
    } while (0)
#endif
#define VIASTACK_CHANNEL_TIME_END(ctr, t) VIASTACK_CHANNEL_TIME_END_IF(ctr, t, 1)

// How many slots of which size a channel with k credits has.
//   nsend = 2k + extra_send: k requests and k replies in flight, plus what the
//           layer sends without a credit of its own (Split-C's store
//           acknowledgements).
//   nrecv = 2k + 1: k requests and k replies from the peer, + 1 because a
//           request handler's reply returns a credit before its own receive
//           is reposted.
struct Layout {
    uint32_t credits = 8;
    uint32_t nsend = 16;
    uint32_t nrecv = 17;
    uint32_t bufsize = 4096; // bytes per message buffer
};
constexpr Layout layout_for(uint32_t credits, uint32_t bufsize, uint32_t extra_send = 0) {
    return Layout{credits, 2 * credits + extra_send, 2 * credits + 1, bufsize};
}

class Channel;

// The one way an RDMA write (op VIP_CONTROL_OP_RDMAWRITE) or read
// (VIP_CONTROL_OP_RDMAREAD) descriptor of len bytes to or from the peer's
// raddr (its handle rmh) is built, in whatever memory holds the descriptor
// (a channel's slot, the libfabric provider's descriptor ring): segment 0 is
// the remote address (it counts in SegCount, VI spec; every provider
// agrees), then nlocal local data segments, returned for the caller to fill
// (the gather list of a write, the scatter list of a read).  Immediate data
// and a fence are the caller's to add to CS.Control.
inline VIP_DATA_SEGMENT *rdma_descriptor(VIP_DESCRIPTOR *d, VIP_UINT32 op, uint64_t raddr, VIP_MEM_HANDLE rmh,
                                         uint32_t len, uint16_t nlocal) {
    d->CS.Control = op;
    d->CS.SegCount = uint16_t(1 + nlocal);
    d->CS.Length = len;
    d->CS.Status = 0;
    d->DS[0].Remote.Data.AddressBits = raddr;
    d->DS[0].Remote.Handle = rmh;
    d->DS[0].Remote.Reserved = 0;
    return &(&d->DS[0])[1].Local;
}

// One descriptor and its bookkeeping, then (elsewhere in the region) its
// buffer.  The descriptor comes first: the VIP_DESCRIPTOR* VIPL hands back is
// the Slot*.
struct alignas(64) Slot {
    VIP_DESCRIPTOR desc;
    Channel *ch;  // the channel owning the slot
    uint8_t *buf; // its message buffer (in the registered region)
    int32_t pin;  // a registration the layer holds while the descriptor is out, or -1
    uint8_t rdma; // posted as something other than a plain send (reset when reaped)
};
static_assert(offsetof(Slot, desc) == 0, "the descriptor is the slot");

inline Slot *slot_of(VIP_DESCRIPTOR *d) { return reinterpret_cast<Slot *>(d); }

// Registered memory holding the slots of one or more channels.
class Region {
public:
    // Allocates and registers `bytes` (page-aligned, zeroed; the peer may
    // not RDMA into it).  On failure returns false and *why says why.
    bool allocate(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE ptag, size_t bytes, std::string *why);
    // Deregisters and frees; keep = true leaks the memory instead (the NIC
    // may still own descriptors in it after a failed VipDestroyVi).
    void release(bool keep = false);
    uint8_t *base() const { return base_; }
    size_t size() const { return len_; }
    VIP_MEM_HANDLE handle() const { return mh_; }
    bool allocated() const { return base_ != nullptr; }

private:
    VIP_NIC_HANDLE nic_ = nullptr;
    uint8_t *base_ = nullptr;
    size_t len_ = 0;
    VIP_MEM_HANDLE mh_ = 0;
};

class Channel {
public:
    // ---- set-up and tear-down (channel.cpp) ------------------------------------
    // Bytes of region a channel of this layout needs (a multiple of 64).
    static size_t region_bytes(const Layout &l);
    // Lays the slots out in [mem, mem + region_bytes(l)) of a region
    // registered as mh: descriptors pointing at their buffers, every send
    // slot free, k credits.
    void attach(const Layout &l, uint8_t *mem, VIP_MEM_HANDLE mh);
    // Pre-posts every receive slot on vi (before connecting: the peer can
    // never find the receive queue empty) and keeps vi as the channel's VI.
    VIP_RETURN prepost(VIP_VI_HANDLE vi);
    // After VipDisconnect: takes back every send and receive descriptor the
    // VI still holds.  on_send(Slot*) runs for each send slot taken back
    // (the layer releases what it pinned for it).
    template <class F>
    void drain(F &&on_send);
    void drain() {
        drain([](Slot *) {});
    }
    void detach() { *this = Channel{}; }

    // ---- credits ---------------------------------------------------------------
    bool has_credit() const { return credits_ > 0; }
    int credits() const { return credits_; }
    int credits_max() const { return int(layout_.credits); }
    void take_credit() { --credits_; }
    void return_credits(int n) { credits_ += n; }
    // Requests that get no reply (Split-C stores, collectives, AM requests
    // whose handler did not reply) are credited back in batches: owe_one()
    // counts one and says whether `every` are due; take_owed() hands the count
    // over (to piggy-back on any message going back, or in a credit message)
    // and resets it; take_owed(max) takes at most what a message's credit field
    // holds and leaves the rest owed.
    bool owe_one(uint32_t every) { return ++owed_ >= every; }
    uint32_t owed() const { return owed_; }
    uint32_t take_owed() {
        uint32_t n = owed_;
        owed_ = 0;
        return n;
    }
    uint32_t take_owed(uint32_t max) {
        const uint32_t n = owed_ < max ? owed_ : max;
        owed_ -= n;
        return n;
    }
    // The batch a receiver with k credits per peer should return credits in:
    // half of k (so the sender still holds k/2 while a batch travels back and a
    // stream never stalls on credits), at least 1, at most what one message
    // can carry (carry_max).  One credit message per batch instead of one per
    // request: the cross-core traffic of a request stream is then the requests.
    static constexpr uint32_t credit_batch(uint32_t k, uint32_t carry_max) {
        const uint32_t half = k / 2 ? k / 2 : 1;
        return half < carry_max ? half : carry_max;
    }

    // ---- send slots ------------------------------------------------------------
    bool has_free_send() const { return nfree_send_ > 0; }
    uint32_t free_sends() const { return nfree_send_; }
    uint32_t in_flight() const { return layout_.nsend - nfree_send_; }
    Slot *take_send() { return free_send_[--nfree_send_]; }
    // A taken slot that was not posted after all.
    void untake_send(Slot *s) { free_send_[nfree_send_++] = s; }

    // The slot's own buffer as the message, len bytes.
    static void set_message(Slot *s, uint32_t len) {
        s->desc.CS.Control = VIP_CONTROL_OP_SENDRECV;
        s->desc.CS.SegCount = 1;
        s->desc.CS.Length = len;
        s->desc.CS.Status = 0;
        s->desc.DS[0].Local.Length = len;
    }
    // hdr_len bytes of the slot's buffer, then len bytes gathered from
    // registered memory (handle mh) without a copy.
    static void set_gather(Slot *s, uint32_t hdr_len, const void *payload, VIP_MEM_HANDLE mh, uint32_t len) {
        s->desc.CS.Control = VIP_CONTROL_OP_SENDRECV;
        s->desc.CS.SegCount = 2;
        s->desc.CS.Length = hdr_len + len;
        s->desc.CS.Status = 0;
        s->desc.DS[0].Local.Length = hdr_len;
        s->desc.DS[1].Local.Data.Address = const_cast<void *>(payload);
        s->desc.DS[1].Local.Handle = mh;
        s->desc.DS[1].Local.Length = len;
        s->rdma = 1; // DS[1] must not outlive the send: reset when reaped
    }
    // Hands a built send descriptor to the NIC.  Timed = false: a layer that
    // already knows instrumentation is off (vipl_instr_timing) skips its checks.
    template <bool Timed = true>
    VIP_RETURN post_send(Slot *s, const Instr &in) {
        if constexpr (!Timed) return VipPostSend(vi_, &s->desc, mh_);
        VIPL_INSTR_BEGIN(t);
        VIP_RETURN rc = VipPostSend(vi_, &s->desc, mh_);
        VIASTACK_CHANNEL_TIME_END(in.post_send, t);
        return rc;
    }

    // ---- RDMA ------------------------------------------------------------------
    // The descriptor of an RDMA write (op VIP_CONTROL_OP_RDMAWRITE) or read
    // (VIP_CONTROL_OP_RDMAREAD) of len bytes between registered local memory
    // (handle lmh) and the peer's raddr (its handle rmh), in a taken send
    // slot (rdma_descriptor with one local segment).  `kind` goes to
    // s->rdma (non-zero: the slot is made a plain send again when reaped; a
    // layer may use distinct kinds to tell its RDMA operations apart).
    static void set_rdma(Slot *s, VIP_UINT32 op, uint64_t raddr, VIP_MEM_HANDLE rmh, const void *local,
                         VIP_MEM_HANDLE lmh, uint32_t len, uint8_t kind = 1) {
        VIP_DATA_SEGMENT *seg = rdma_descriptor(&s->desc, op, raddr, rmh, len, 1);
        seg[0].Data.Address = const_cast<void *>(local);
        seg[0].Handle = lmh;
        seg[0].Length = len;
        s->rdma = kind;
    }
    // Builds an RDMA write (or read) in a taken send slot and posts it.  If
    // the NIC refuses it, the slot is a plain send again and back on the free
    // list (what it pinned, s->pin, stays for the layer to release) and the
    // VIPL error is returned.
    VIP_RETURN post_rdma(Slot *s, VIP_UINT32 op, uint64_t raddr, VIP_MEM_HANDLE rmh, const void *local,
                         VIP_MEM_HANDLE lmh, uint32_t len, const Instr &in) {
        set_rdma(s, op, raddr, rmh, local, lmh, len);
        const VIP_RETURN rc = post_send(s, in);
        if (__builtin_expect(rc != VIP_SUCCESS, 0)) {
            restore_plain(s);
            untake_send(s);
        }
        return rc;
    }
    VIP_RETURN post_rdma_write(Slot *s, uint64_t raddr, VIP_MEM_HANDLE rmh, const void *local, VIP_MEM_HANDLE lmh,
                               uint32_t len, const Instr &in) {
        return post_rdma(s, VIP_CONTROL_OP_RDMAWRITE, raddr, rmh, local, lmh, len, in);
    }
    VIP_RETURN post_rdma_read(Slot *s, uint64_t raddr, VIP_MEM_HANDLE rmh, void *local, VIP_MEM_HANDLE lmh,
                              uint32_t len, const Instr &in) {
        return post_rdma(s, VIP_CONTROL_OP_RDMAREAD, raddr, rmh, local, lmh, len, in);
    }

    // ---- reaping sends ---------------------------------------------------------
    // One completed send of vi (a channel's VI, or the one a send CQ
    // named), or VIP_NOT_DONE.
    static VIP_RETURN send_done(VIP_VI_HANDLE vi, VIP_DESCRIPTOR **d, const Instr &in) {
        VIPL_INSTR_BEGIN(t);
        VIP_RETURN rc = VipSendDone(vi, d);
        VIASTACK_CHANNEL_TIME_END_IF(in.send_done, t, rc != VIP_NOT_DONE);
        return rc;
    }
    // Puts a completed send slot back on the free list, timed as "recycle
    // send descriptor".  check(Slot*) runs first, inside the timing: the
    // layer's status check and release of what it pinned.  A slot that
    // carried an RDMA write or a gather is made a plain send again.
    template <class F>
    void recycle_send(Slot *s, const Instr &in, F &&check) {
        VIPL_INSTR_BEGIN(t);
        check(s);
        if (s->rdma) restore_plain(s);
        free_send_[nfree_send_++] = s;
        VIASTACK_CHANNEL_TIME_END(in.recycle_send, t);
    }
    // The next entry of a completion queue, or VIP_NOT_DONE (timed on ctr).
    static VIP_RETURN cq_done(VIP_CQ_HANDLE cq, VIP_VI_HANDLE *vi, vipl_instr_counter *ctr) {
        VIP_BOOLEAN is_recv;
        VIPL_INSTR_BEGIN(t);
        VIP_RETURN rc = VipCQDone(cq, vi, &is_recv);
        VIASTACK_CHANNEL_TIME_END_IF(ctr, t, rc != VIP_NOT_DONE);
        return rc;
    }

    // ---- receives --------------------------------------------------------------
    // One completed receive of vi, or VIP_NOT_DONE.
    static VIP_RETURN recv_done(VIP_VI_HANDLE vi, VIP_DESCRIPTOR **d, const Instr &in) {
        VIPL_INSTR_BEGIN(t);
        VIP_RETURN rc = VipRecvDone(vi, d);
        VIASTACK_CHANNEL_TIME_END_IF(in.recv_done, t, rc != VIP_NOT_DONE);
        return rc;
    }
    // Gives a received slot back to the NIC once the layer is done with its
    // buffer: reset (status and length; the buffer segment is never changed
    // on a receive slot), then VipPostRecv.  Timed as post_send.
    template <bool Timed = true>
    VIP_RETURN repost_recv(Slot *s, const Instr &in) {
        if constexpr (!Timed) {
            reset_recv(s);
            return VipPostRecv(vi_, &s->desc, mh_);
        }
        VIPL_INSTR_BEGIN(t0);
        reset_recv(s);
        VIASTACK_CHANNEL_TIME_END(in.recycle_recv, t0);
        VIPL_INSTR_BEGIN(t1);
        VIP_RETURN rc = VipPostRecv(vi_, &s->desc, mh_);
        VIASTACK_CHANNEL_TIME_END(in.post_recv, t1);
        return rc;
    }

    // A received slot made ready for the NIC again: status and length (its
    // buffer segment is never changed on a receive slot).
    void reset_recv(Slot *s) const {
        s->desc.CS.Status = 0;
        s->desc.CS.Length = layout_.bufsize;
    }

    // ---- what it is ------------------------------------------------------------
    VIP_VI_HANDLE vi() const { return vi_; }
    VIP_MEM_HANDLE mem_handle() const { return mh_; }
    const Layout &layout() const { return layout_; }
    uint32_t bufsize() const { return layout_.bufsize; }
    uint32_t nsend() const { return layout_.nsend; }
    uint32_t nrecv() const { return layout_.nrecv; }
    Slot *send_slot(uint32_t i) const { return &slots_[i]; }
    Slot *recv_slot(uint32_t i) const { return &slots_[layout_.nsend + i]; }
    bool attached() const { return slots_ != nullptr; }
    // Forgets the VI (destroyed by the layer).
    void forget_vi() { vi_ = nullptr; }

    // Back to the shape attach() gave a send slot (a plain send of its own
    // buffer), e.g. for an RDMA write the NIC refused.
    void restore_plain(Slot *s) {
        s->desc.CS.Control = VIP_CONTROL_OP_SENDRECV;
        s->desc.CS.SegCount = 1;
        s->desc.DS[0].Local.Data.Address = s->buf;
        s->desc.DS[0].Local.Handle = mh_;
        s->desc.DS[0].Local.Length = layout_.bufsize;
        s->rdma = 0;
    }

private:
    VIP_VI_HANDLE vi_ = nullptr;
    VIP_MEM_HANDLE mh_ = 0;
    Layout layout_{};
    int credits_ = 0;
    uint32_t owed_ = 0;
    uint32_t nfree_send_ = 0;
    Slot **free_send_ = nullptr; // stack of free send slots (in the region)
    Slot *slots_ = nullptr;      // nsend send slots, then nrecv receive slots
};

template <class F>
void Channel::drain(F &&on_send) {
    if (!vi_) return;
    VIP_DESCRIPTOR *d;
    while (VipSendDone(vi_, &d) == VIP_SUCCESS) {
        Slot *s = slot_of(d);
        on_send(s);
        if (s->rdma) restore_plain(s);
        free_send_[nfree_send_++] = s;
    }
    while (VipRecvDone(vi_, &d) == VIP_SUCCESS) {}
}

} // namespace viastack::channel
