// transport.cpp - the firmware's reliable transport (reliable.hpp): the window
// of unacknowledged packets, acknowledgements (piggybacked in every packet's
// `aux`, or a LinkAck), in-order acceptance, retransmission on timeout, and the
// link timeout that breaks a connection nobody answers.  Used only when
// Config::transport is on (faults configured, or VIPL_NICFW_RETRANSMIT=1), and
// only by reliable VIs; the firmware calls it from tx_one, tx_bulk,
// publish_reply (sending), rx_packet_try (receiving) and step (timers).
#include <cstddef>
#include <cstring>

#include "firmware.hpp"
#include "vi_table.hpp"
#include "viastack_log.hpp"

namespace nicfw {

bool Firmware::rel_room(ViImpl *vi, uint32_t payload, bool reply) {
    return vi->fw.link->win.room(static_cast<uint32_t>(kHeaderBytes) + payload, reply);
}

void Firmware::rel_record(ViImpl *vi, const TxSlot &tx, bool reply) {
    LinkState &l = *vi->fw.link;
    tx.hdr->flags |= kFlagRel;
    tx.hdr->aux = static_cast<uint16_t>(vi->fw.recv_seq); // piggybacked ack
    l.owed = 0;
    l.ack_now = l.gap; // a gap is told by a LinkAck (it asks for a fast retransmit)
    const uint32_t bytes =
        static_cast<uint32_t>(kHeaderBytes) + tx.hdr->length + ((tx.hdr->flags & kFlagStamp) ? 8u : 0u);
    const uint64_t now = now_ns();
    if (l.win.empty()) {
        l.timer_ns = now + l.rto;
        l.progress_ns = now;
    }
    // Header and payload are contiguous in the FIFO (a packet never wraps).
    std::memcpy(l.win.push(tx.hdr->seq, bytes, reply, now), tx.hdr, bytes);
}

// The peer acknowledged everything before the sequence number whose low 16
// bits are `ack16` (the window is far smaller than 2^15, so that is unambiguous).
void Firmware::rel_acked(ViImpl *vi, uint16_t ack16) {
    LinkState &l = *vi->fw.link;
    const uint16_t d = static_cast<uint16_t>(ack16 - static_cast<uint16_t>(l.una));
    if (d == 0 || d > vi->fw.send_seq - l.una) return; // nothing new, or stale
    const uint32_t ack = l.una + d;
    const uint64_t now = now_ns();
    bool sampled = false;
    while (!l.win.empty() && seq_before(l.win.oldest().seq, ack)) {
        const RetransmitWindow::Entry &e = l.win.oldest();
        if (!sampled && !e.retransmitted) { // Karn: only packets sent once time the round trip
            l.rtt_sample(now - e.sent_ns);
            sampled = true;
        }
        l.win.pop();
    }
    l.una = ack;
    l.progress_ns = now;
    l.timer_ns = now + l.rto;
    // Reliable delivery completes when the peer NIC has the data.
    auto &c = vi->fw;
    bool any = false;
    for (uint64_t i = c.tx_head; i < c.tx_next; ++i) {
        TxEntry &e = c.txq[i % kMaxQueue];
        if (!e.awaiting_transport_ack) continue;
        if (!seq_before(e.seq, ack)) break;
        e.awaiting_transport_ack = false;
        e.ready = true;
        any = true;
    }
    if (any) complete_tx(vi);
}

// Ack and sequence checks of a packet for a connected reliable VI: false when it
// must be dropped (a LinkAck has nothing more; a duplicate; a packet after a gap).
bool Firmware::rel_rx(ViImpl *vi, const PacketHeader *h) {
    LinkState &l = *vi->fw.link;
    rel_acked(vi, h->aux);
    if (h->op == Op::LinkAck) {
        // Fast retransmit: the peer saw a gap, so what follows our oldest
        // unacknowledged packet is being dropped: resend from there now rather
        // than at the timeout (once per round trip; reordering makes a
        // needless resend, which the peer drops as duplicates).
        if (h->imm && !l.win.empty()) {
            const uint64_t now = now_ns();
            if (now - l.fast_rtx_ns > (l.srtt ? l.srtt : LinkState::kMinRto)) {
                l.fast_rtx_ns = now;
                ++l.fast_retransmits;
                retransmit(vi, now);
                l.timer_ns = now + l.rto;
            }
        }
        return false;
    }
    if (h->seq != vi->fw.recv_seq) {
        if (seq_before(h->seq, vi->fw.recv_seq)) {
            ++l.dups_dropped; // our ack was lost or late: say it again
        } else {
            ++l.gaps_dropped; // go-back-N: the peer resends from the gap
            l.gap = true;
        }
        ++rel_drops_;
        rel_owe_now(vi);
        return false;
    }
    return true;
}

void Firmware::rel_delivered(ViImpl *vi) {
    LinkState &l = *vi->fw.link;
    ++l.owed;
    if (!l.in_ack_list) {
        l.in_ack_list = true;
        l.owed_since = 0; // stamped by the next tick (no clock read per packet)
        ack_list_.push_back(vi->index);
    }
}

void Firmware::rel_owe_now(ViImpl *vi) {
    LinkState &l = *vi->fw.link;
    l.ack_now = true;
    if (!l.in_ack_list) {
        l.in_ack_list = true;
        l.owed_since = 0;
        ack_list_.push_back(vi->index);
    }
}

bool Firmware::send_link_ack(ViImpl *vi) {
    TxSlot tx;
    if (!wire_reserve(wire_, vi->peer_nic, 0, &tx, true)) return false;
    LinkState &l = *vi->fw.link;
    write_header(tx.hdr, static_cast<uint16_t>(rank_),
                 {.op = Op::LinkAck,
                  .flags = kFlagRel,
                  .dst_vi = vi->peer_vi,
                  .src_vi = static_cast<uint16_t>(vi->index),
                  .imm = l.gap ? 1u : 0u});
    tx.hdr->aux = static_cast<uint16_t>(vi->fw.recv_seq);
    wire_publish(wire_, vi->peer_nic, tx, cfg_.crc);
    l.owed = 0;
    l.ack_now = false;
    l.gap = false;
    ++link_acks_;
    return true;
}

// Go-back-N: every packet of the window again, oldest first, as far as the
// peer's FIFO has room (the rest at the next timeout).  Each carries our
// current ack.
void Firmware::retransmit(ViImpl *vi, uint64_t now) {
    LinkState &l = *vi->fw.link;
    const uint32_t n = l.win.count();
    for (uint32_t i = 0; i < n; ++i) {
        RetransmitWindow::Entry &e = l.win.at(i);
        const unsigned char *p = l.win.data(e);
        TxSlot tx;
        if (!wire_reserve(wire_, vi->peer_nic, e.bytes - static_cast<uint32_t>(kHeaderBytes), &tx, e.reply)) break;
        // Everything but the FIFO's own fields (tag, nslots), then the payload.
        constexpr size_t kFrom = offsetof(PacketHeader, op);
        std::memcpy(reinterpret_cast<unsigned char *>(tx.hdr) + kFrom, p + kFrom, kHeaderBytes - kFrom);
        std::memcpy(tx.payload, p + kHeaderBytes, e.bytes - kHeaderBytes);
        tx.hdr->aux = static_cast<uint16_t>(vi->fw.recv_seq);
        wire_publish(wire_, vi->peer_nic, tx, cfg_.crc);
        e.retransmitted = true;
        e.sent_ns = now;
        ++l.retransmits;
        ++retransmits_;
    }
    l.owed = 0;
    l.ack_now = l.gap;
}

// End of every step (transport on): acknowledgements owed, then (every 100 us)
// the retransmission timers and the link timeout.
void Firmware::transport_tick() {
    if (dead_) return;
    const uint64_t now = now_ns();
    for (size_t i = 0; i < ack_list_.size();) {
        ViImpl *vi = vis_.find(ack_list_[i]);
        bool done = true;
        if (vi && vi->state.load(std::memory_order_acquire) == ViState::Connected && vi->fw.link) {
            LinkState &l = *vi->fw.link;
            if (l.owed || l.ack_now) {
                if (!l.owed_since) l.owed_since = now;
                if (l.ack_now || l.owed >= LinkState::kAckEvery || now - l.owed_since >= LinkState::kAckDelay)
                    done = send_link_ack(vi); // FIFO full: try again next step
                else done = false;
            }
            if (done) l.in_ack_list = false;
        }
        // (A VI no longer connected just leaves the list: its link is reset,
        // in_ack_list included, by the next connection, on a host thread.)
        if (done) {
            ack_list_[i] = ack_list_.back();
            ack_list_.pop_back();
        } else {
            ++i;
        }
    }
    if (now < next_tick_ns_) return;
    next_tick_ns_ = now + 100'000;
    const uint64_t link_timeout = uint64_t(cfg_.link_timeout_ms) * 1000000ull;
    const uint32_t n = vi_words_.load(std::memory_order_relaxed) * 64;
    for (uint32_t i = 0; i < n; ++i) {
        ViImpl *vi = vis_.get(i);
        if (!vi || vi->state.load(std::memory_order_acquire) != ViState::Connected || !vi->fw.link) continue;
        LinkState &l = *vi->fw.link;
        if (l.win.empty()) continue;
        if (now - l.progress_ns > link_timeout) {
            ++links_broken_;
            viastack::log::warn(viastack::log::Layer::nicfw,
                                "a connection to rank {} broke: nothing acknowledged for {} ms ({} retransmissions)",
                                vi->peer_nic, cfg_.link_timeout_ms, l.retransmits);
            vi_error(vi, VIP_ERROR_RDMA_TRANSPORT, nullptr, true);
            continue;
        }
        if (now >= l.timer_ns) {
            ++l.timeouts;
            l.backoff();
            retransmit(vi, now);
            l.timer_ns = now + l.rto;
        }
    }
}

} // namespace nicfw
