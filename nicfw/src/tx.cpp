// tx.cpp - the send side of the firmware: fetch a descriptor from host memory
// into the descriptor cache, check it against the NIC's protection table,
// choose its protocol (protocol.cpp) and send it.  The packet protocols are
// here: staged, whose data the host DMA gathers straight from the host's
// segments into the reserved wire FIFO slot (one copy: the slot is the
// firmware's until published, so nothing needs staging in SRAM first), and
// pull, a request naming the initiator's memory for the target's DMA engine.
// One-sided RDMA is in onesided.cpp, the short send's fast path (tx_fast) in
// firmware.cpp beside send_direct.
#include <cstring>

#include "descriptor_check.hpp"
#include "firmware.hpp"
#include "host_dma.hpp"
#include "protection.hpp"

namespace nicfw {

// One packet per descriptor, staged or pull:
//
//   staged  header | RdmaExt (RDMA) | the data (not for a read)   the target places the bytes from the slot
//   pull    header | RdmaExt (RDMA) | BulkExt | BulkSeg per segment   the target's DMA engine moves them (dma.hpp)
//
// A staged send or write of reliable delivery (or unreliable) completes once on
// the wire; reliable reception, an RDMA read and every pull request complete
// on the target's answer (a pull request's buffer is the target's until then).
template <bool pull>
[[gnu::always_inline]] inline TxResult Firmware::tx_packet(ViImpl *vi, TxEntry &e, const TxRequest &t) {
    const VIP_CONTROL_SEGMENT &cs = t.cs;
    const bool rdma = t.op != VIP_CONTROL_OP_SENDRECV;
    const bool read = t.op == VIP_CONTROL_OP_RDMAREAD;
    const uint32_t data_len = pull || read ? 0 : cs.Length; // bytes carried in the packet
    const uint32_t payload = static_cast<uint32_t>((rdma ? sizeof(RdmaExt) : 0) +
                                                   (pull ? sizeof(BulkExt) + t.nseg * sizeof(BulkSeg) : data_len));
    // Reliable transport: the packet's copy must fit the retransmit window.
    const bool rel = rel_on(vi);
    if (rel && !rel_room(vi, payload + stamp_bytes(), false)) return TxResult::Full; // back-pressure
    TxSlot tx;
    if (!wire_reserve(wire_, vi->peer_nic, payload + stamp_bytes(), &tx)) return TxResult::Full; // back-pressure
    if (__builtin_expect(cost_.on(), 0)) cost_tx(vi, e, pull ? cs.Length : data_len);

    const uint32_t seq = vi->fw.send_seq;
    // kFlagAckReq: reliable reception (the Ack carries the target's errors).
    const bool ack = vi->attr.reliability == VIP_SERVICE_RELIABLE_RECEPTION && !read;
    write_header(tx.hdr, static_cast<uint16_t>(rank_),
                 {.op = !rdma ? Op::Send
                      : read  ? Op::ReadReq
                              : Op::RdmaWrite,
                  .flags = static_cast<uint8_t>((pull ? kFlagBulk : 0) | (t.imm ? kFlagImm : 0) |
                                                (ack ? kFlagAckReq : 0) | (stamping() ? kFlagStamp : 0)),
                  .dst_vi = vi->peer_vi,
                  .src_vi = static_cast<uint16_t>(vi->index),
                  .seq = vi->fw.send_seq++,
                  .length = payload,
                  .imm = t.imm ? cs.ImmediateData : 0});
    unsigned char *out = tx.payload;
    if (rdma) {
        const RdmaExt x{desc_cache_[0].Remote.Data.AddressBits, desc_cache_[0].Remote.Handle, read ? cs.Length : 0};
        std::memcpy(out, &x, sizeof x);
        out += sizeof x;
    }
    if constexpr (pull) {
        write_pull_request(out, t);
    } else if (data_len) {
        // host DMA and link DMA in one: the segments are gathered straight into
        // the reserved FIFO slot (ours until published), not staged in SRAM
        // first - the same bytes moved once instead of twice.
        for (uint32_t i = 0; i < t.nseg; ++i) {
            dma_copy(out, t.segs[i].Data.Address, t.segs[i].Length);
            out += t.segs[i].Length;
        }
    }
    stamp(tx.payload + payload);
    if (rel) rel_record(vi, tx, false); // retransmitted until acked; a pull request is served once
    wire_publish(wire_, vi->peer_nic, tx, cfg_.crc);
    if (cfg_.profile.gap_ns) last_inject_ns_ = now_ns();

    e.length = cs.Length;
    e.status = t.ops;
    if (pull || read || ack) {
        e.awaiting = true; // completes on the answer (Ack / read response)
    } else if (rel) {
        e.awaiting_transport_ack = true; // reliable delivery over the transport: once the peer NIC has it
        e.seq = seq;
    } else {
        e.ready = true; // unreliable and reliable delivery: done once on the wire
    }
    return TxResult::Done;
}

[[gnu::always_inline]] inline TxResult Firmware::tx_staged(ViImpl *vi, TxEntry &e, const TxRequest &t) {
    if (t.cs.Length > kMaxStagedTransfer) { // more than the FIFO's share can hold
        e.status = t.ops | VIP_STATUS_LENGTH_ERROR;
        e.ready = true;
        return TxResult::Done;
    }
    return tx_packet<false>(vi, e, t);
}

TxResult Firmware::tx_pull(ViImpl *vi, TxEntry &e, const TxRequest &t) { return tx_packet<true>(vi, e, t); }

// The protocols' table (protocol.hpp): what each does at the initiator.
const Firmware::TxOp Firmware::kTxOps[kProtocols] = {
    &Firmware::tx_staged,   // Protocol::Staged
    &Firmware::tx_pull,     // Protocol::Pull
    &Firmware::tx_onesided, // Protocol::OneSided
};

bool Firmware::tx_one(ViImpl *vi, TxEntry &e) {
    VIP_DESCRIPTOR *d = e.desc;
    auto fail = [&](uint32_t st) {
        e.status = st;
        e.ready = true;
        return true;
    };
    if (vi->state.load(std::memory_order_relaxed) != ViState::Connected) return fail(VIP_STATUS_DESC_FLUSHED_ERROR);

    // Host DMA of the descriptor: it must lie in registered memory under our ptag.
    const Region *dr = protection_.covers(e.mh, vi->ptag_id, d, sizeof(VIP_CONTROL_SEGMENT));
    if (!dr) return fail(VIP_STATUS_PROTECTION_ERROR);
    TxRequest t;
    std::memcpy(&t.cs, &d->CS, sizeof t.cs);
    const VIP_CONTROL_SEGMENT &cs = t.cs;
    t.op = cs.Control & VIP_CONTROL_OP_MASK;
    t.imm = cs.Control & VIP_CONTROL_IMMEDIATE;
    t.ops = vipl::common::op_status(cs.Control);
    // The providers' common descriptor rules, phase by phase on the SRAM copies.
    const vipl::common::DescriptorRules rules{kMaxSegments + 1, kMaxSegments + 1,
                                              std::min<uint64_t>(vi->attr.max_transfer, cfg_.max_transfer()),
                                              vi->attr.reliability != VIP_SERVICE_UNRELIABLE};
    if (const uint32_t err = vipl::common::check_send_control(cs, rules)) return fail(t.ops | err);
    const uint32_t first = vipl::common::first_data_segment(cs.Control);
    if (!dr->contains(d, vipl::common::descriptor_bytes(cs.SegCount))) return fail(t.ops | VIP_STATUS_PROTECTION_ERROR);
    std::memcpy(desc_cache_, d->DS, sizeof(VIP_DESCRIPTOR_SEGMENT) * cs.SegCount);
    t.segs = &desc_cache_[first].Local;
    t.nseg = cs.SegCount - first;
    uint64_t total = 0;
    if (!protection_.check_segments(vi->ptag_id, &desc_cache_[first], t.nseg, &total, dr, e.mh))
        return fail(t.ops | VIP_STATUS_PROTECTION_ERROR);
    if (std::min<uint64_t>(total, UINT32_MAX) != cs.Length) return fail(t.ops | VIP_STATUS_FORMAT_ERROR);
    if (cs.Length > rules.max_transfer) return fail(t.ops | VIP_STATUS_LENGTH_ERROR);

    // Injection gap of the timing profile (g).
    if (cfg_.profile.gap_ns) {
        const uint64_t next = last_inject_ns_ + cfg_.profile.gap_ns;
        while (now_ns() < next) __builtin_ia32_pause();
    }
    // The protocol (protocol.hpp), one row of kTxOps; a one-sided transfer the
    // initiator cannot do is left to the target's firmware as a packet.  The
    // staged row, every short message's, is called directly so that the
    // compiler keeps the request in registers.
    const Protocol p = choose_protocol(vi, t, true);
    if (p == Protocol::Staged) return tx_staged(vi, e, t) == TxResult::Done;
    TxResult r = (this->*kTxOps[size_t(p)])(vi, e, t);
    if (r == TxResult::Declined) r = (this->*kTxOps[size_t(choose_protocol(vi, t, false))])(vi, e, t);
    return r == TxResult::Done;
}

// A pull request's body: the initiator's pid and segments, each named so the
// target can reach it: by address (cross-memory attach), and by shared-memory
// segment when it lies in one.
void Firmware::write_pull_request(unsigned char *out, const TxRequest &t) const {
    const BulkExt b{dma_.pid(), t.nseg, t.cs.Length, 0};
    std::memcpy(out, &b, sizeof b);
    out += sizeof b;
    for (uint32_t i = 0; i < t.nseg; ++i) {
        BulkSeg s{reinterpret_cast<uintptr_t>(t.segs[i].Data.Address), 0, t.segs[i].Length, 0, -1, 0};
        if (s.len) {
            const Region *r = protection_.lookup(t.segs[i].Handle); // checked by tx_one
            if (r && r->shm.id) {
                s.shm_id = r->shm.id;
                s.shm_fd = r->shm.fd;
                s.shm_off = s.addr - r->shm.base;
            }
        }
        std::memcpy(out, &s, sizeof s);
        out += sizeof s;
    }
}

bool Firmware::send_ctl(uint16_t dst_nic, Op op, uint16_t dst_vi, uint16_t src_vi, uint32_t imm, const void *payload,
                        uint32_t len) {
    if (__builtin_expect(dead_, 0)) return true; // a NIC killed by the fault injector says nothing
    TxSlot tx;
    if (!wire_reserve(wire_, dst_nic, len, &tx, true)) return false;
    write_header(tx.hdr, static_cast<uint16_t>(rank_),
                 {.op = op, .dst_vi = dst_vi, .src_vi = src_vi, .length = len, .imm = imm});
    if (len) std::memcpy(tx.payload, payload, len);
    wire_publish(wire_, dst_nic, tx, cfg_.crc);
    return true;
}

} // namespace nicfw
