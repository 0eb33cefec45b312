// tx.cpp - the send side of the firmware: fetch a descriptor from host memory
// into the SRAM descriptor cache, check it against the NIC's protection table,
// move the data host -> SRAM (host DMA) -> wire (link DMA).
#include <cstring>

#include "descriptor_check.hpp"
#include "firmware.hpp"
#include "protection.hpp"

namespace nicfw {

// Checks n data segments (in the SRAM descriptor cache) against the protection
// table under the VI's ptag (the providers' common rule); sums their lengths.
bool Firmware::validate_segments(const ViImpl *vi, const VIP_DESCRIPTOR_SEGMENT *ds, uint32_t n,
                                 uint32_t *total) const {
    const auto lookup = [&](VIP_MEM_HANDLE h) -> const Region * {
        const Region *r = protection_.lookup(h);
        return r && r->ptag_id == vi->ptag_id ? r : nullptr;
    };
    uint64_t sum = 0;
    if (vipl::common::check_data_segments(ds, n, lookup, vipl::common::NoSegmentSink{}, &sum)) return false;
    *total = sum > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(sum);
    return true;
}

bool Firmware::tx_one(ViImpl *vi, TxEntry &e) {
    VIP_DESCRIPTOR *d = e.desc;
    auto fail = [&](uint32_t st) {
        e.status = st;
        e.ready = true;
        return true;
    };
    if (vi->state.load(std::memory_order_relaxed) != ViState::Connected)
        return fail(VIP_STATUS_DESC_FLUSHED_ERROR);

    // Host DMA of the descriptor: it must lie in registered memory under our ptag.
    const Region *dr = protection_.covers(e.mh, vi->ptag_id, d, sizeof(VIP_CONTROL_SEGMENT));
    if (!dr) return fail(VIP_STATUS_PROTECTION_ERROR);
    VIP_CONTROL_SEGMENT cs;
    std::memcpy(&cs, &d->CS, sizeof cs);
    const uint16_t op = cs.Control & VIP_CONTROL_OP_MASK;
    const uint32_t ops = vipl::common::op_status(cs.Control);
    // The providers' common descriptor rules, phase by phase on the SRAM copies.
    const vipl::common::DescriptorRules rules{kMaxSegments + 1, kMaxSegments + 1,
                                              std::min<uint64_t>(vi->attr.max_transfer, cfg_.max_transfer()),
                                              vi->attr.reliability != VIP_SERVICE_UNRELIABLE};
    if (const uint32_t err = vipl::common::check_send_control(cs, rules)) return fail(ops | err);
    const bool rdma = op != VIP_CONTROL_OP_SENDRECV;
    const uint32_t first = vipl::common::first_data_segment(cs.Control);
    if (!dr->contains(d, vipl::common::descriptor_bytes(cs.SegCount))) return fail(ops | VIP_STATUS_PROTECTION_ERROR);
    std::memcpy(desc_cache_, d->DS, sizeof(VIP_DESCRIPTOR_SEGMENT) * cs.SegCount);
    const VIP_DATA_SEGMENT *segs = &desc_cache_[first].Local;
    const uint32_t nseg = cs.SegCount - first;
    uint32_t total = 0;
    if (!validate_segments(vi, &desc_cache_[first], nseg, &total)) return fail(ops | VIP_STATUS_PROTECTION_ERROR);
    if (total != cs.Length) return fail(ops | VIP_STATUS_FORMAT_ERROR);
    if (cs.Length > rules.max_transfer) return fail(ops | VIP_STATUS_LENGTH_ERROR);
    const bool imm = cs.Control & VIP_CONTROL_IMMEDIATE;

    // Injection gap of the timing profile (g).
    if (cfg_.profile.gap_ns) {
        const uint64_t next = last_inject_ns_ + cfg_.profile.gap_ns;
        while (now_ns() < next) __builtin_ia32_pause();
    }
    // RDMA the initiator's DMA engine can do against the target's published
    // table: nothing goes through the FIFO (onesided.cpp).
    if (onesided_eligible(vi, op, imm) && tx_onesided(vi, e, cs, ops, segs, nseg)) return true;
    // Large transfers: only a request goes through the FIFO, the bytes move once (bulk.cpp).
    if (bulk_eligible(vi, cs.Length, segs, nseg)) return tx_bulk(vi, e, cs, ops, segs, nseg);
    if (cs.Length > kMaxStagedTransfer) return fail(ops | VIP_STATUS_LENGTH_ERROR);
    const uint32_t data_len = op == VIP_CONTROL_OP_RDMAREAD ? 0 : cs.Length;
    const uint32_t payload = (rdma ? sizeof(RdmaExt) : 0) + data_len;
    // Reliable transport: the packet's copy must fit the retransmit window.
    const bool rel = rel_on(vi);
    if (rel && !rel_room(vi, payload + stamp_bytes(), false)) return false; // back-pressure
    TxSlot tx;
    if (!wire_reserve(wire_, vi->peer_nic, payload + stamp_bytes(), &tx)) return false; // back-pressure
    if (__builtin_expect(cost_.on(), 0)) cost_tx(vi, e, data_len);

    const uint32_t seq = vi->fw.send_seq;
    const bool ack = vi->attr.reliability == VIP_SERVICE_RELIABLE_RECEPTION && op != VIP_CONTROL_OP_RDMAREAD;
    write_header(tx.hdr, static_cast<uint16_t>(rank_),
                 {.op = op == VIP_CONTROL_OP_SENDRECV    ? Op::Send
                        : op == VIP_CONTROL_OP_RDMAWRITE ? Op::RdmaWrite
                                                         : Op::ReadReq,
                  .flags = static_cast<uint8_t>((imm ? kFlagImm : 0) | (ack ? kFlagAckReq : 0) |
                                                (stamping() ? kFlagStamp : 0)),
                  .dst_vi = vi->peer_vi,
                  .src_vi = static_cast<uint16_t>(vi->index),
                  .seq = vi->fw.send_seq++,
                  .length = payload,
                  .imm = imm ? cs.ImmediateData : 0});
    unsigned char *out = tx.payload;
    if (rdma) {
        RdmaExt x{desc_cache_[0].Remote.Data.AddressBits, desc_cache_[0].Remote.Handle,
                  op == VIP_CONTROL_OP_RDMAREAD ? cs.Length : 0};
        std::memcpy(out, &x, sizeof x);
        out += sizeof x;
    }
    if (data_len) {
        // host DMA and link DMA in one: the segments are gathered straight into
        // the reserved FIFO slot (ours until published), not staged in SRAM
        // first - the same bytes moved once instead of twice.
        for (uint32_t i = 0; i < nseg; ++i) {
            std::memcpy(out, segs[i].Data.Address, segs[i].Length);
            out += segs[i].Length;
        }
    }
    stamp(tx.payload + payload);
    if (rel) rel_record(vi, tx, false);
    wire_publish(wire_, vi->peer_nic, tx, cfg_.crc);
    if (cfg_.profile.gap_ns) last_inject_ns_ = now_ns();

    e.length = cs.Length;
    e.status = ops;
    if (op == VIP_CONTROL_OP_RDMAREAD || ack) {
        e.awaiting = true;   // completes on the read response / the Ack
    } else if (rel) {
        e.tack = true;       // reliable delivery over the transport: once the peer NIC has it
        e.seq = seq;
    } else {
        e.ready = true;      // unreliable and reliable delivery: done once on the wire
    }
    return true;
}

bool Firmware::send_ctl(uint16_t dst_nic, Op op, uint16_t dst_vi, uint16_t src_vi, uint32_t imm,
                        const void *payload, uint32_t len) {
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
