// bulk.cpp - the single-copy bulk path of the firmware (dma.hpp): transfers of
// at least VIPL_NICFW_DMA_MIN bytes send only a request through the wire FIFO;
// the NIC that owns the target memory checks it against its protection table,
// exactly as for a staged packet, moves the bytes once (DmaEngine) and answers.
//
//   send        initiator: Send|Bulk (its gather list)   target: pulls into the posted receive, Ack
//   RDMA write  initiator: RdmaWrite|Bulk (gather list)  target: pulls into its region, Ack
//   RDMA read   initiator: ReadReq|Bulk (scatter list)   target: pushes its region, ReadResp (no data)
//
// The initiator's buffer belongs to the transfer until the answer comes, so a
// bulk descriptor always completes on it, at every reliability level (staged:
// reliable delivery and unreliable complete once on the wire).  The answer's
// status is what the staged path reports: the target's errors at reliable
// reception, success otherwise (a reliable-delivery error then breaks the
// connection after the answer, as it does after a staged packet).
#include <cstring>

#include "firmware.hpp"
#include "packet_check.hpp"
#include "protection.hpp"

namespace nicfw {

namespace {
inline bool reliable(const ViImpl *vi) { return vi->attr.reliability != VIP_SERVICE_UNRELIABLE; }
} // namespace

bool Firmware::bulk_eligible(const ViImpl *vi, uint32_t len, const VIP_DATA_SEGMENT *segs, uint32_t nseg) const {
    if (!cfg_.dma_min || len < cfg_.shm_crossover()) return false;
    // Unreliable VIs complete staged messages at transmit; they take the bulk
    // path (completion on the target's answer) only for what cannot be staged.
    // On a faulty wire not at all: an unreliable request or answer is not resent,
    // and a lost one would leave the descriptor waiting for ever (the transfer
    // then fails with LENGTH_ERROR instead, docs/nicfw.md "Faults and recovery").
    if (!reliable(vi) && (len <= kMaxStagedTransfer || faults_)) return false;
    // From dma_min on, any memory (cross-memory attach where it is not shared);
    // between the shared-memory crossover and dma_min, and wherever cross-memory
    // attach is not allowed, only memory the target's NIC can memcpy from.
    if (len >= cfg_.dma_min && dma_.cma_ok()) return true;
    for (uint32_t i = 0; i < nseg; ++i) {
        const Region *r = segs[i].Length ? protection_.lookup(segs[i].Handle) : nullptr;
        if (segs[i].Length && !(r && r->shm.id)) return false;
    }
    return true;
}

bool Firmware::tx_bulk(ViImpl *vi, TxEntry &e, const VIP_CONTROL_SEGMENT &cs, uint32_t ops,
                       const VIP_DATA_SEGMENT *segs, uint32_t nseg) {
    const uint16_t op = cs.Control & VIP_CONTROL_OP_MASK;
    const bool rdma = op != VIP_CONTROL_OP_SENDRECV;
    const bool imm = cs.Control & VIP_CONTROL_IMMEDIATE;
    const uint32_t payload =
        static_cast<uint32_t>((rdma ? sizeof(RdmaExt) : 0) + sizeof(BulkExt) + nseg * sizeof(BulkSeg));
    const bool rel = rel_on(vi);
    if (rel && !rel_room(vi, payload + stamp_bytes(), false)) return false; // back-pressure
    TxSlot tx;
    if (!wire_reserve(wire_, vi->peer_nic, payload + stamp_bytes(), &tx)) return false; // back-pressure
    if (__builtin_expect(cost_.on(), 0)) cost_tx(vi, e, cs.Length);
    // kFlagAckReq keeps its staged meaning (reliable reception: the Ack carries
    // the target's errors); every bulk request is answered regardless.
    const bool ack = vi->attr.reliability == VIP_SERVICE_RELIABLE_RECEPTION && op != VIP_CONTROL_OP_RDMAREAD;
    write_header(tx.hdr, static_cast<uint16_t>(rank_),
                 {.op = op == VIP_CONTROL_OP_SENDRECV    ? Op::Send
                        : op == VIP_CONTROL_OP_RDMAWRITE ? Op::RdmaWrite
                                                         : Op::ReadReq,
                  .flags = static_cast<uint8_t>(kFlagBulk | (imm ? kFlagImm : 0) | (ack ? kFlagAckReq : 0) |
                                                (stamping() ? kFlagStamp : 0)),
                  .dst_vi = vi->peer_vi,
                  .src_vi = static_cast<uint16_t>(vi->index),
                  .seq = vi->fw.send_seq++,
                  .length = payload,
                  .imm = imm ? cs.ImmediateData : 0});
    unsigned char *out = tx.payload;
    if (rdma) {
        const RdmaExt x{desc_cache_[0].Remote.Data.AddressBits, desc_cache_[0].Remote.Handle,
                        op == VIP_CONTROL_OP_RDMAREAD ? cs.Length : 0};
        std::memcpy(out, &x, sizeof x);
        out += sizeof x;
    }
    const BulkExt b{dma_.pid(), nseg, cs.Length, 0};
    std::memcpy(out, &b, sizeof b);
    out += sizeof b;
    for (uint32_t i = 0; i < nseg; ++i) {
        // Name each segment so the target can reach it: by address (cross-memory
        // attach), and by shared-memory segment when it lies in one.
        BulkSeg s{reinterpret_cast<uintptr_t>(segs[i].Data.Address), 0, segs[i].Length, 0, -1, 0};
        if (s.len) {
            const Region *r = protection_.lookup(segs[i].Handle); // checked by the caller
            if (r && r->shm.id) {
                s.shm_id = r->shm.id;
                s.shm_fd = r->shm.fd;
                s.shm_off = s.addr - r->shm.base;
            }
        }
        std::memcpy(out, &s, sizeof s);
        out += sizeof s;
    }
    stamp(tx.payload + payload);
    if (rel) rel_record(vi, tx, false); // retransmitted until acked; the target pulls once
    wire_publish(wire_, vi->peer_nic, tx, cfg_.crc);
    if (cfg_.profile.gap_ns) last_inject_ns_ = now_ns();
    e.length = cs.Length;
    e.status = ops;
    e.awaiting = true; // the buffer is the target's until it answers
    return true;
}

// The target could not move the bytes (the initiator died or unmapped them):
// the connection is broken, as after a transport error on a staged packet.
void Firmware::bulk_copy_failed(ViImpl *vi, VIP_DESCRIPTOR *d) {
    if (reliable(vi)) vi_error(vi, VIP_ERROR_RDMA_TRANSPORT, d, true);
    else report_error(vi, nullptr, d, d ? VIP_RESOURCE_DESCRIPTOR : VIP_RESOURCE_VI, VIP_ERROR_RDMA_TRANSPORT);
}

bool Firmware::rx_bulk_send(ViImpl *vi, const PacketHeader *h, const unsigned char *p) {
    BulkRequest q;
    if (!parse_bulk_request(h->length, p, false, &q)) {
        vi_error(vi, VIP_ERROR_RDMA_TRANSPORT, nullptr, true); // malformed: the initiator would wait for ever
        return true;
    }
    const bool ackreq = h->flags & kFlagAckReq;
    Reply ack;
    if (!reserve_reply(vi, 0, &ack)) return false;
    Token t;
    if (!fetch_rx_desc(vi, &t)) {
        publish_reply(vi, &ack, Op::Ack, ackreq ? VIP_STATUS_REMOTE_DESC_ERROR : 0, 0);
        if (reliable(vi)) vi_error(vi, VIP_ERROR_RECVQ_EMPTY, nullptr, !ackreq);
        else ++dropped_; // unreliable: no receive posted, the message is lost
        return true;
    }
    // The receive descriptor, checked as for a staged message (rx_send).
    VIP_DESCRIPTOR *d = t.desc;
    uint32_t nseg = 0;
    uint32_t err = check_rx_desc(vi, t, q.b.length, &nseg);
    bool copy_failed = false;
    if (!err) { // the one copy: initiator's gather list -> this descriptor's scatter list
        uint32_t left = q.b.length, n = 0;
        for (uint32_t i = 0; i < nseg && left; ++i) {
            const VIP_DATA_SEGMENT &sg = desc_cache_[i].Local;
            const uint32_t k = sg.Length < left ? sg.Length : left;
            iov_[n++] = iovec{sg.Data.Address, k};
            left -= k;
        }
        if (dma_.move(true, h->src_nic, q.b.pid, q.segs, q.b.nseg, iov_, n, q.b.length) != 0) {
            err = VIP_STATUS_TRANSPORT_ERROR;
            copy_failed = true;
        }
    }
    uint32_t st = VIP_STATUS_OP_RECEIVE | err;
    if (h->flags & kFlagImm) {
        d->CS.ImmediateData = h->imm;
        st |= VIP_STATUS_IMMEDIATE;
    }
    complete_desc(vi, d, st, err ? 0 : q.b.length, true);
    publish_reply(vi, &ack, Op::Ack,
                  ackreq && err ? (copy_failed ? VIP_STATUS_TRANSPORT_ERROR : VIP_STATUS_REMOTE_DESC_ERROR) : 0, 0);
    if (copy_failed) bulk_copy_failed(vi, d);
    else if (err && reliable(vi)) vi_error(vi, VIP_ERROR_POST_DESC, d, !ackreq);
    return true;
}

bool Firmware::rx_bulk_write(ViImpl *vi, const PacketHeader *h, const unsigned char *p) {
    BulkRequest q;
    if (!parse_bulk_request(h->length, p, true, &q)) {
        vi_error(vi, VIP_ERROR_RDMA_TRANSPORT, nullptr, true);
        return true;
    }
    const bool ackreq = h->flags & kFlagAckReq;
    Reply ack;
    if (!reserve_reply(vi, 0, &ack)) return false;
    const uint32_t n = q.b.length;
    // The protection check of the NIC that owns the target memory.
    const Region *r = protection_.lookup(q.x.rhandle);
    const bool ok = r && r->ptag_id == vi->ptag_id && r->rdma_write && vi->attr.rdma_write && r->contains(q.x.raddr, n);
    if (!ok) {
        publish_reply(vi, &ack, Op::Ack, ackreq ? VIP_STATUS_RDMA_PROT_ERROR : 0, 0);
        if (reliable(vi)) {
            vi_error(vi, VIP_ERROR_RDMAW_PROT, nullptr, !ackreq);
        } else { // unreliable: dropped, reported at the target, connection kept
            ++dropped_;
            report_error(vi, nullptr, nullptr, VIP_RESOURCE_VI, VIP_ERROR_RDMAW_PROT);
        }
        return true;
    }
    const iovec dst{reinterpret_cast<void *>(q.x.raddr), n};
    if (n && dma_.move(true, h->src_nic, q.b.pid, q.segs, q.b.nseg, &dst, 1, n) != 0) {
        publish_reply(vi, &ack, Op::Ack, ackreq ? VIP_STATUS_TRANSPORT_ERROR : 0, 0);
        bulk_copy_failed(vi, nullptr);
        return true;
    }
    uint32_t status = 0;
    if (h->flags & kFlagImm) { // consumes a receive descriptor that carries the immediate
        Token t;
        if (!fetch_rx_desc(vi, &t)) {
            publish_reply(vi, &ack, Op::Ack, ackreq ? VIP_STATUS_REMOTE_DESC_ERROR : 0, 0);
            if (reliable(vi)) vi_error(vi, VIP_ERROR_RECVQ_EMPTY, nullptr, !ackreq);
            else ++dropped_;
            return true;
        }
        if (!protection_.covers(t.mh, vi->ptag_id, t.desc, sizeof(VIP_CONTROL_SEGMENT)))
            status = VIP_STATUS_PROTECTION_ERROR;
        else
            t.desc->CS.ImmediateData = h->imm;
        complete_desc(vi, t.desc, VIP_STATUS_OP_REMOTE_RDMA_WRITE | VIP_STATUS_IMMEDIATE | status, status ? 0 : n,
                      true);
    }
    publish_reply(vi, &ack, Op::Ack, ackreq && status ? VIP_STATUS_REMOTE_DESC_ERROR : 0, 0);
    if (status && reliable(vi)) vi_error(vi, VIP_ERROR_POST_DESC, nullptr, !ackreq);
    return true;
}

bool Firmware::rx_bulk_read_req(ViImpl *vi, const PacketHeader *h, const unsigned char *p) {
    BulkRequest q;
    if (!parse_bulk_request(h->length, p, true, &q)) {
        vi_error(vi, VIP_ERROR_RDMA_TRANSPORT, nullptr, true);
        return true;
    }
    const Region *r = protection_.lookup(q.x.rhandle);
    const bool ok = r && r->ptag_id == vi->ptag_id && r->rdma_read && vi->attr.rdma_read &&
                    q.x.rlen <= kMaxTransfer && q.x.rlen == q.b.length && r->contains(q.x.raddr, q.x.rlen);
    Reply resp;
    if (!reserve_reply(vi, 0, &resp)) return false;
    uint32_t st = ok ? 0 : VIP_STATUS_RDMA_PROT_ERROR;
    if (ok && q.x.rlen) { // the one copy: our region -> the initiator's scatter list
        const iovec src{reinterpret_cast<void *>(q.x.raddr), q.x.rlen};
        if (dma_.move(false, h->src_nic, q.b.pid, q.segs, q.b.nseg, &src, 1, q.x.rlen) != 0)
            st = VIP_STATUS_TRANSPORT_ERROR;
    }
    // No data in the response: the bytes are already in place.
    publish_reply(vi, &resp, Op::ReadResp, st, 0);
    if (!ok) vi_error(vi, VIP_ERROR_RDMAR_PROT, nullptr, false); // the response tells the initiator
    else if (st) bulk_copy_failed(vi, nullptr);
    return true;
}

} // namespace nicfw
