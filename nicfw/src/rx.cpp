// rx.cpp - the receive side of the firmware: take a packet off the wire FIFO
// (link DMA into SRAM), check CRC, connection and sequence, then place the data
// into a posted receive descriptor or an RDMA target region: from the packet
// (staged) or, for a pull request (kFlagBulk, protocol.hpp), by the DMA engine
// from the initiator's memory (dma.hpp).
#include <cstring>

#include "host_dma.hpp"
#include "connection.hpp"
#include "descriptor_check.hpp"
#include "firmware.hpp"
#include "packet_check.hpp"
#include "protection.hpp"
#include "vi_table.hpp"

namespace nicfw {

namespace {
inline bool reliable(const ViImpl *vi) { return vi->attr.reliability != VIP_SERVICE_UNRELIABLE; }

TxEntry *next_awaiting(ViImpl *vi) {
    auto &c = vi->fw;
    while (c.tx_await < c.tx_next) {
        TxEntry &e = c.txq[c.tx_await % kMaxQueue];
        if (e.awaiting) return &e;
        ++c.tx_await;
    }
    return nullptr;
}
} // namespace

bool Firmware::reserve_reply(ViImpl *vi, uint32_t len, Reply *r) {
    if (rel_on(vi) && !rel_room(vi, len, true)) { // no window room: drop the request, the peer resends
        drop_instead_ = true;
        return r->held = false;
    }
    r->held = wire_reserve(wire_, vi->peer_nic, len, &r->tx, true);
    return r->held;
}

void Firmware::publish_reply(ViImpl *vi, Reply *r, Op op, uint32_t status, uint32_t len) {
    write_header(r->tx.hdr, static_cast<uint16_t>(rank_),
                 {.op = op,
                  .dst_vi = vi->peer_vi,
                  .src_vi = static_cast<uint16_t>(vi->index),
                  .seq = vi->fw.send_seq++,
                  .length = len,
                  .imm = status});
    if (rel_on(vi)) rel_record(vi, r->tx, true);
    wire_publish(wire_, vi->peer_nic, r->tx, cfg_.crc);
    r->held = false;
}

bool Firmware::rx_packet_try(const PacketHeader *wire_h) {
    const auto *payload = reinterpret_cast<const unsigned char *>(wire_h) + kHeaderBytes;
    const PacketHeader hdr = snapshot_header(wire_h); // checked and used once (packet_check.hpp)
    const PacketHeader *h = &hdr;
    const uint32_t len = h->length;
    if (!packet_fits(hdr, wire_.max_payload())) { // malformed: cannot trust it
        ++dropped_;
        return true;
    }
    // A plain staged send (immediate data allowed, nothing else flagged) on a
    // NIC configured without faults, transport or cost model: the short
    // message's straight line first (rx_fast).
    if (fast_rx_ && (h->flags & ~kFlagImm) == 0 && h->op == Op::Send) {
        ViImpl *fv = vis_.find(h->dst_vi);
        if (fv && rx_fast(fv, hdr, payload)) return true;
    }
    if (h->flags & kFlagStamp) { // wire-latency profile: not delivered before send time + L
        uint64_t t;
        std::memcpy(&t, payload + len, 8);
        if (now_ns() < t + cfg_.profile.wire_ns) return false;
    }
    ViImpl *vi = vis_.find(h->dst_vi);
    if (__builtin_expect(!packet_crc_ok(h, payload), 0) ||
        (faults_ && !(h->flags & kFlagCrc))) { // on a faulty wire every packet must carry its CRC
        ++crc_errors_;
        // With the transport the packet is simply lost (and resent); without it a
        // reliable connection cannot recover.
        if (!cfg_.transport && vi && h->op < Op::ConnReq && reliable(vi) && vi->state.load() == ViState::Connected)
            vi_error(vi, VIP_ERROR_RDMA_TRANSPORT, nullptr, true);
        return true;
    }
    // link DMA: wire -> SRAM.  A send's or a staged RDMA write's bytes are only
    // ever copied once more (to host memory, after the header and the RDMA
    // address were checked on copies), so without a CRC they are placed from
    // the FIFO slot itself, which stays ours until the packet is consumed: the
    // staging copy would move the same bytes twice for nothing.  With a CRC the
    // bytes checked must be the bytes placed, and a bulk request's fields are
    // read several times: those go through SRAM.
    const unsigned char *p = payload;
    if (len && ((h->flags & (kFlagCrc | kFlagBulk)) || (h->op != Op::Send && h->op != Op::RdmaWrite))) {
        std::memcpy(sram_rx_.get(), payload, len);
        p = sram_rx_.get();
    }
    if (h->op >= Op::ConnReq && h->op != Op::LinkAck) {
        cm_.on_packet(h, p);
        return true;
    }
    if (!vi || vi->state.load(std::memory_order_acquire) != ViState::Connected || vi->peer_nic != h->src_nic ||
        vi->peer_vi != h->src_vi) {
        ++dropped_; // not for a live connection (stale, or the VI went away)
        return true;
    }
    if (h->flags & kFlagRel) { // reliable transport: acks, duplicates, gaps (transport.cpp)
        if (!rel_on(vi) || !rel_rx(vi, h)) {
            if (!rel_on(vi)) ++dropped_; // the ranks disagree on VIPL_NICFW_RETRANSMIT
            return true;
        }
    } else if (h->seq != vi->fw.recv_seq) {
        if (reliable(vi)) {
            vi_error(vi, VIP_ERROR_RDMA_TRANSPORT, nullptr, true);
            return true;
        }
        if (seq_before(h->seq, vi->fw.recv_seq)) { // unreliable: at most once (a duplicate or a late packet)
            ++dropped_;
            return true;
        }
        vi->fw.recv_seq = h->seq; // unreliable: accept and resynchronise
    }
    bool consumed = true;
    switch (h->op) {
    case Op::Send: consumed = rx_send(vi, h, p); break;
    case Op::RdmaWrite: consumed = rx_rdma_write(vi, h, p); break;
    case Op::ReadReq: consumed = rx_read_req(vi, h, p); break;
    case Op::ReadResp: rx_read_resp(vi, h, p); break;
    case Op::Ack: rx_ack(vi, h); break;
    default: ++dropped_; break;
    }
    if (consumed) {
        vi->fw.recv_seq = h->seq + 1;
        // Published: a peer's one-sided RDMA waits for nothing of its own on the wire.
        pub_vis_[vi->index].recv_seq.store(h->seq + 1, std::memory_order_release);
        if (h->flags & kFlagRel) rel_delivered(vi);
    }
    return consumed;
}

// The short message's receive: every check rx_packet_try and rx_send_as
// make, on the same private copies, but only for the shape that passes them
// all - a staged send without an acknowledgement request, in sequence, on a
// live connection, into the oldest posted receive (fetch_rx_desc's choice,
// looked at in place), a receive of one data segment with no reserved control
// bits, its descriptor and segment in registered memory of the VI's ptag,
// room for the message - so the result is theirs: the same bytes placed, the
// same completion, the same sequence state.  Anything else
// returns false before anything changed (the token is only looked at until
// every check passed), and the general path then runs its checks in the
// spec's order and produces the status.  rx_packet_try has checked the
// configuration (fast_rx_), the packet's size and its flags.
inline bool Firmware::rx_fast(ViImpl *vi, const PacketHeader &h, const unsigned char *p) {
    if (vi->state.load(std::memory_order_acquire) != ViState::Connected || vi->peer_nic != h.src_nic ||
        vi->peer_vi != h.src_vi || h.seq != vi->fw.recv_seq)
        return false;
    const Token *t = peek_rx_desc(vi);
    if (!t) return false;
    VIP_DESCRIPTOR *d = t->desc;
    // The control segment and one data segment in one region of the VI's ptag
    // (read only once that holds), as check_rx_desc's covers and contains.
    const Region *dr = protection_.covers(t->mh, vi->ptag_id, d, vipl::common::descriptor_bytes(1));
    if (!dr) return false;
    // Each field the checks use is read from host memory once (the SRAM copy).
    const uint16_t control = d->CS.Control, segs = d->CS.SegCount;
    const VIP_DATA_SEGMENT sg = d->DS[0].Local;
    if (segs != 1 || (control & VIP_CONTROL_RESERVED) || h.length > sg.Length) return false;
    if (sg.Length) {          // check_segments' rule: a non-empty segment lies in a region of the ptag
        const Region *r = dr; // usually the descriptor's own region, whose ptag was checked
        if (sg.Handle != t->mh) {
            r = protection_.lookup(sg.Handle);
            if (!r || r->ptag_id != vi->ptag_id) return false;
        }
        if (!r->contains(sg.Data.Address, sg.Length)) return false;
    }
    Token taken; // the token looked at, now taken
    fetch_rx_desc(vi, &taken);
    dma_to_host(sg.Data.Address, p, h.length); // host DMA from the FIFO slot (no CRC: see rx_packet_try)
    uint32_t st = VIP_STATUS_OP_RECEIVE;
    if (h.flags & kFlagImm) {
        d->CS.ImmediateData = h.imm;
        st |= VIP_STATUS_IMMEDIATE;
    }
    complete_desc(vi, d, st, h.length, true);
    vi->fw.recv_seq = h.seq + 1;
    pub_vis_[vi->index].recv_seq.store(h.seq + 1, std::memory_order_release);
    return true;
}

// Inline in rx_send_as, its one caller: a short message's receive is
// checked in the same function that places it.
inline uint32_t Firmware::check_rx_desc(const ViImpl *vi, const Token &t, uint32_t length, uint32_t *nseg) {
    VIP_DESCRIPTOR *d = t.desc;
    *nseg = 0;
    const Region *dr = protection_.covers(t.mh, vi->ptag_id, d, sizeof(VIP_CONTROL_SEGMENT));
    if (!dr) return VIP_STATUS_PROTECTION_ERROR;
    VIP_CONTROL_SEGMENT cs; // the SRAM copy the common receive rules are applied to
    std::memcpy(&cs, &d->CS, sizeof cs);
    if (const uint32_t e =
            vipl::common::check_recv_control(cs, {kMaxSegments + 1, kMaxSegments + 1, kMaxTransfer, true}))
        return e;
    if (!dr->contains(d, vipl::common::descriptor_bytes(cs.SegCount))) return VIP_STATUS_PROTECTION_ERROR;
    // One or two segments (a receive slot's usual shape) copied as whole
    // structs: a copy of variable length costs more than the segment.
    if (cs.SegCount <= 2) {
        for (uint32_t i = 0; i < cs.SegCount; ++i) desc_cache_[i] = d->DS[i];
    } else {
        std::memcpy(desc_cache_, d->DS, cs.SegCount * sizeof(VIP_DESCRIPTOR_SEGMENT));
    }
    uint64_t cap = 0;
    if (!protection_.check_segments(vi->ptag_id, desc_cache_, cs.SegCount, &cap, dr, t.mh))
        return VIP_STATUS_PROTECTION_ERROR;
    *nseg = cs.SegCount;
    return vipl::common::receive_fits(length, cap);
}

// A send, staged (its bytes in the packet) or pull (kFlagBulk: the packet
// names the initiator's memory, which our DMA engine reads), into the next
// posted receive, checked as the common receive rules say.  A pull request is
// answered at every level: the initiator's buffer is ours until then.
bool Firmware::rx_send(ViImpl *vi, const PacketHeader *h, const unsigned char *p) {
    return h->flags & kFlagBulk ? rx_send_as<true>(vi, h, p) : rx_send_as<false>(vi, h, p);
}
template <bool pull>
bool Firmware::rx_send_as(ViImpl *vi, const PacketHeader *h, const unsigned char *p) {
    BulkRequest q;
    if (pull && !parse_bulk_request(h->length, p, false, &q)) {
        vi_error(vi, VIP_ERROR_RDMA_TRANSPORT, nullptr, true); // malformed: the initiator would wait for ever
        return true;
    }
    const uint32_t len = pull ? q.b.length : h->length;
    const bool ackreq = h->flags & kFlagAckReq;
    const bool answer = ackreq || pull;
    Reply ack;
    if (answer && !reserve_reply(vi, 0, &ack)) return false;
    Token t;
    if (!fetch_rx_desc(vi, &t)) {
        if (answer) publish_reply(vi, &ack, Op::Ack, ackreq ? VIP_STATUS_REMOTE_DESC_ERROR : 0, 0);
        if (reliable(vi)) vi_error(vi, VIP_ERROR_RECVQ_EMPTY, nullptr, !ackreq);
        else ++dropped_; // unreliable: no receive posted, the message is lost
        return true;
    }
    VIP_DESCRIPTOR *d = t.desc;
    uint32_t nseg = 0;
    uint32_t err = check_rx_desc(vi, t, len, &nseg);
    bool copy_failed = false;
    if (!err) { // host DMA: the bytes -> the descriptor's scatter list
        // (pull: the scatter list as the DMA engine's pieces, cut at the length)
        uint32_t left = len, n = 0;
        const unsigned char *s = p;
        for (uint32_t i = 0; i < nseg && left; ++i) {
            const VIP_DATA_SEGMENT &sg = desc_cache_[i].Local;
            const uint32_t k = sg.Length < left ? sg.Length : left;
            if (pull) iov_[n++] = iovec{sg.Data.Address, k};
            else dma_to_host(sg.Data.Address, s, k);
            s += k;
            left -= k;
        }
        if (pull && dma_.move(true, h->src_nic, q.b.pid, q.segs, q.b.nseg, iov_, n, len) != 0) {
            err = VIP_STATUS_TRANSPORT_ERROR;
            copy_failed = true;
        }
    }
    uint32_t st = VIP_STATUS_OP_RECEIVE | err;
    if (h->flags & kFlagImm) {
        d->CS.ImmediateData = h->imm;
        st |= VIP_STATUS_IMMEDIATE;
    }
    complete_desc(vi, d, st, err ? 0 : len, true);
    if (answer)
        publish_reply(vi, &ack, Op::Ack,
                      ackreq && err ? (copy_failed ? VIP_STATUS_TRANSPORT_ERROR : VIP_STATUS_REMOTE_DESC_ERROR) : 0, 0);
    if (copy_failed) bulk_copy_failed(vi, d);
    else if (err && reliable(vi)) vi_error(vi, VIP_ERROR_POST_DESC, d, !ackreq);
    return true;
}

// An RDMA write, staged or pull: the protection check of the NIC that owns the
// target memory, the bytes placed, and with immediate data a receive consumed.
bool Firmware::rx_rdma_write(ViImpl *vi, const PacketHeader *h, const unsigned char *p) {
    return h->flags & kFlagBulk ? rx_rdma_write_as<true>(vi, h, p) : rx_rdma_write_as<false>(vi, h, p);
}
template <bool pull>
bool Firmware::rx_rdma_write_as(ViImpl *vi, const PacketHeader *h, const unsigned char *p) {
    BulkRequest q;
    RdmaExt x;
    uint32_t n;
    if constexpr (pull) {
        if (!parse_bulk_request(h->length, p, true, &q)) {
            vi_error(vi, VIP_ERROR_RDMA_TRANSPORT, nullptr, true);
            return true;
        }
        x = q.x;
        n = q.b.length;
    } else {
        if (h->length < sizeof(RdmaExt)) {
            ++dropped_;
            return true;
        }
        std::memcpy(&x, p, sizeof x);
        n = h->length - static_cast<uint32_t>(sizeof x);
    }
    const bool ackreq = h->flags & kFlagAckReq;
    const bool answer = ackreq || pull;
    Reply ack;
    if (answer && !reserve_reply(vi, 0, &ack)) return false;
    auto reply = [&](uint32_t status) {
        if (answer) publish_reply(vi, &ack, Op::Ack, ackreq ? status : 0, 0);
    };
    // Checked and placed inside one DMA bracket: a deregistration racing us
    // returns only after the bytes are in (or were refused).
    const uint32_t busy = dma_begin();
    const Region *r = protection_.lookup(x.rhandle);
    const bool ok = r && r->ptag_id == vi->ptag_id && r->rdma_write && vi->attr.rdma_write && r->contains(x.raddr, n);
    int moved = 0;
    if (ok && n && !pull) {
        dma_to_host(reinterpret_cast<void *>(x.raddr), p + sizeof x, n); // SRAM -> host
    } else if (ok && n) {
        const iovec dst{reinterpret_cast<void *>(x.raddr), n};
        moved = dma_.move(true, h->src_nic, q.b.pid, q.segs, q.b.nseg, &dst, 1, n);
    }
    dma_end(busy);
    if (!ok) {
        reply(VIP_STATUS_RDMA_PROT_ERROR);
        if (reliable(vi)) {
            vi_error(vi, VIP_ERROR_RDMAW_PROT, nullptr, !ackreq);
        } else { // unreliable: dropped, reported at the target, connection kept
            ++dropped_;
            report_error(vi, nullptr, nullptr, VIP_RESOURCE_VI, VIP_ERROR_RDMAW_PROT);
        }
        return true;
    }
    if (moved != 0) {
        reply(VIP_STATUS_TRANSPORT_ERROR);
        bulk_copy_failed(vi, nullptr);
        return true;
    }
    uint32_t status = 0;
    if (h->flags & kFlagImm) { // consumes a receive descriptor that carries the immediate
        Token t;
        if (!fetch_rx_desc(vi, &t)) {
            reply(VIP_STATUS_REMOTE_DESC_ERROR);
            if (reliable(vi)) vi_error(vi, VIP_ERROR_RECVQ_EMPTY, nullptr, !ackreq);
            else ++dropped_;
            return true;
        }
        if (!protection_.covers(t.mh, vi->ptag_id, t.desc, sizeof(VIP_CONTROL_SEGMENT)))
            status = VIP_STATUS_PROTECTION_ERROR;
        else t.desc->CS.ImmediateData = h->imm;
        complete_desc(vi, t.desc, VIP_STATUS_OP_REMOTE_RDMA_WRITE | VIP_STATUS_IMMEDIATE | status, status ? 0 : n,
                      true);
    }
    reply(status ? VIP_STATUS_REMOTE_DESC_ERROR : 0);
    if (status && reliable(vi)) vi_error(vi, VIP_ERROR_POST_DESC, nullptr, !ackreq);
    return true;
}

// An RDMA read request: staged, the response carries the bytes (at most what
// the FIFO's share holds); pull (kFlagBulk), our DMA engine pushes them into
// the initiator's scatter list and the response carries none.
bool Firmware::rx_read_req(ViImpl *vi, const PacketHeader *h, const unsigned char *p) {
    return h->flags & kFlagBulk ? rx_read_req_as<true>(vi, h, p) : rx_read_req_as<false>(vi, h, p);
}
template <bool pull>
bool Firmware::rx_read_req_as(ViImpl *vi, const PacketHeader *h, const unsigned char *p) {
    BulkRequest q;
    RdmaExt x;
    if constexpr (pull) {
        if (!parse_bulk_request(h->length, p, true, &q)) {
            vi_error(vi, VIP_ERROR_RDMA_TRANSPORT, nullptr, true);
            return true;
        }
        x = q.x;
    } else {
        if (h->length < sizeof(RdmaExt)) {
            ++dropped_;
            return true;
        }
        std::memcpy(&x, p, sizeof x);
    }
    const uint32_t busy = dma_begin(); // the check and the copy, as for a write
    const Region *r = protection_.lookup(x.rhandle);
    const bool ok = r && r->ptag_id == vi->ptag_id && r->rdma_read && vi->attr.rdma_read &&
        x.rlen <= (pull ? kMaxTransfer : kMaxStagedTransfer) && (!pull || x.rlen == q.b.length) &&
        r->contains(x.raddr, x.rlen);
    const uint32_t carried = ok && !pull ? x.rlen : 0;
    Reply resp;
    if (!reserve_reply(vi, carried, &resp)) {
        dma_end(busy);
        return false;
    }
    uint32_t st = ok ? 0 : VIP_STATUS_RDMA_PROT_ERROR;
    if (carried) { // host -> SRAM -> wire
        std::memcpy(sram_tx_.get(), reinterpret_cast<const void *>(x.raddr), x.rlen);
        std::memcpy(resp.tx.payload, sram_tx_.get(), x.rlen);
    } else if (ok && x.rlen) { // the one copy: our region -> the initiator's scatter list
        const iovec src{reinterpret_cast<void *>(x.raddr), x.rlen};
        if (dma_.move(false, h->src_nic, q.b.pid, q.segs, q.b.nseg, &src, 1, x.rlen) != 0)
            st = VIP_STATUS_TRANSPORT_ERROR;
    }
    dma_end(busy);
    publish_reply(vi, &resp, Op::ReadResp, st, carried);
    if (!ok) vi_error(vi, VIP_ERROR_RDMAR_PROT, nullptr, false); // the response tells the initiator
    else if (st) bulk_copy_failed(vi, nullptr);
    return true;
}

void Firmware::rx_read_resp(ViImpl *vi, const PacketHeader *h, const unsigned char *p) {
    TxEntry *e = next_awaiting(vi);
    if (!e || (e->status & VIP_STATUS_OP_MASK) != VIP_STATUS_OP_RDMA_READ) {
        vi_error(vi, VIP_ERROR_RDMA_TRANSPORT, nullptr, true);
        return;
    }
    const uint32_t err = h->imm;
    if (!err) {
        // Scatter into the descriptor's local segments (checked when it was sent).
        VIP_DESCRIPTOR *d = e->desc;
        const uint32_t nseg = d->CS.SegCount - 1u;
        uint32_t left = h->length;
        for (uint32_t i = 0; i < nseg && left; ++i) {
            const VIP_DATA_SEGMENT &sg = d->DS[1 + i].Local;
            const uint32_t n = sg.Length < left ? sg.Length : left;
            dma_to_host(sg.Data.Address, p, n);
            p += n;
            left -= n;
        }
    }
    e->status |= err;
    e->awaiting = false;
    e->ready = true;
    ++vi->fw.tx_await;
    VIP_DESCRIPTOR *d = e->desc;
    complete_tx(vi);
    if (err)
        vi_error(vi, (err & VIP_STATUS_RDMA_PROT_ERROR) ? VIP_ERROR_RDMAR_PROT : VIP_ERROR_RDMA_TRANSPORT, d, false);
}

void Firmware::rx_ack(ViImpl *vi, const PacketHeader *h) {
    TxEntry *e = next_awaiting(vi);
    if (!e) {
        vi_error(vi, VIP_ERROR_RDMA_TRANSPORT, nullptr, true);
        return;
    }
    e->status |= h->imm;
    e->awaiting = false;
    e->ready = true;
    ++vi->fw.tx_await;
    VIP_DESCRIPTOR *d = e->desc;
    complete_tx(vi);
    if (h->imm)
        vi_error(vi, (h->imm & VIP_STATUS_RDMA_PROT_ERROR) ? VIP_ERROR_RDMAW_PROT : VIP_ERROR_POST_DESC, d, false);
}

} // namespace nicfw
