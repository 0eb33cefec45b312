// fake_wire.cpp - what happens to a message between two fake NICs: the fault
// rules of the hooks, held (delayed, reordered) messages, and delivery at the
// target with the VI Architecture's checks and the consequences its
// reliability level gives them (broken connections, flushes, async errors).
#include <algorithm>
#include <cstring>

#include "fake_provider.hpp"

namespace vipl::fake {

namespace {
uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Unreliable VIs deliver at most once: a 64-message window of sequence numbers
// seen.  True if seq was seen (or is too old to tell).
bool seen_before(FakeVi *v, uint64_t seq) {
    if (seq < v->seen_base) return true;
    if (seq >= v->seen_base + 64) {
        const uint64_t shift = seq - (v->seen_base + 63);
        v->seen_bits = shift >= 64 ? 0 : v->seen_bits >> shift;
        v->seen_base += shift;
    }
    const uint64_t bit = 1ull << (seq - v->seen_base);
    if (v->seen_bits & bit) return true;
    v->seen_bits |= bit;
    return false;
}

// Scatters bytes into data segments [first, SegCount) of d.
void scatter(VIP_DESCRIPTOR *d, uint32_t first, const uint8_t *p, size_t len) {
    for (uint32_t i = first; i < d->CS.SegCount && len; ++i) {
        const VIP_DATA_SEGMENT &s = d->DS[i].Local;
        const size_t n = std::min<size_t>(s.Length, len);
        std::memcpy(s.Data.Address, p, n);
        p += n;
        len -= n;
    }
}
} // namespace

// ---------------------------------------------------------------- faults
void Switchboard::send_message(Message &&m) {
    ++stats.messages;
    const bool reliable = m.src->reliable();
    vipl_fake_fault fault{};
    unsigned delay = 1;
    for (auto it = rules.begin(); it != rules.end(); ++it) {
        if (it->vi && it->vi != m.src) continue;
        const bool hit = it->random ? double(splitmix(&it->rng) >> 11) * 0x1.0p-53 < it->probability : true;
        if (!hit) continue;
        fault = it->fault;
        delay = it->delay_posts;
        if (!it->random && --it->count == 0) rules.erase(it);
        break;
    }
    switch (fault) {
    case VIPL_FAKE_DROP:
        ++stats.dropped;
        if (reliable) { // the transport's retries fail: the connection breaks
            if (m.rr_send) m.src->complete_send(m.rr_send, common::op_status(m.op) | VIP_STATUS_TRANSPORT_ERROR);
            break_connection(m.src, VIP_ERROR_RDMA_TRANSPORT, m.rr_send, VIP_ERROR_CONN_LOST);
        }
        return; // unreliable: lost, nobody is told
    case VIPL_FAKE_DUPLICATE: {
        Message copy = m;
        copy.rr_send = nullptr;
        deliver(m);
        deliver(copy); // recognised by its sequence number and discarded
        release_after(m.src);
        release_ready();
        return;
    }
    case VIPL_FAKE_REORDER:
        ++stats.reordered;
        if (reliable) break; // resequenced by the transport: delivered in order
        held.push_back(Held{std::move(m), 0, true});
        return;
    case VIPL_FAKE_DELAY:
        ++stats.delayed;
        // +1: the post that sent it counts down once when it returns.
        held.push_back(Held{std::move(m), delay + 1, false});
        return;
    case VIPL_FAKE_CORRUPT:
        if (m.payload.empty()) m.checksum ^= 1; // the header is damaged instead
        else m.payload[m.payload.size() / 2] ^= 0x5a;
        break;
    default: break;
    }
    // A reliable VI's later messages queue behind a held one (in order).
    if (reliable && std::any_of(held.begin(), held.end(), [&](const Held &x) { return x.m.src == m.src; })) {
        held.push_back(Held{std::move(m), 0, false});
        return;
    }
    FakeVi *src = m.src;
    deliver(m);
    release_after(src);
    release_ready();
}

void Switchboard::count_post() {
    for (Held &h : held)
        if (h.posts_left > 0) --h.posts_left;
    release_ready();
}

void Switchboard::release_after(FakeVi *src) {
    for (Held &h : held)
        if (h.after_next && h.m.src == src) h.after_next = false;
}

void Switchboard::release_ready() {
    for (bool again = true; again;) {
        again = false;
        for (size_t i = 0; i < held.size(); ++i) {
            const Held &h = held[i];
            if (h.after_next || h.posts_left > 0) continue;
            const bool blocked = h.m.src->reliable() &&
                std::any_of(held.begin(), held.begin() + long(i), [&](const Held &x) { return x.m.src == h.m.src; });
            if (blocked) continue;
            Message m = std::move(held[i].m);
            held.erase(held.begin() + long(i));
            deliver(m);
            release_after(m.src);
            again = true;
            break;
        }
    }
}

void Switchboard::forget_held(FakeVi *vi) {
    std::erase_if(held, [vi](const Held &h) { return h.m.src == vi || h.m.dst == vi; });
}

// ---------------------------------------------------------------- delivery
void Switchboard::deliver(Message &m) {
    FakeVi *src = m.src, *dst = m.dst;
    const uint32_t op = common::op_status(m.op);
    // Reliable Reception: the initiator learns the outcome at the target.
    auto finish_rr = [&](uint32_t status) {
        if (m.rr_send && !common::descriptor_done(m.rr_send)) src->complete_send(m.rr_send, op | status);
        m.rr_send = nullptr;
    };
    if (!dst || dst->state != ViState::Connected || dst->peer != src) { // the connection went away
        finish_rr(VIP_STATUS_TRANSPORT_ERROR);
        return;
    }
    const bool reliable = dst->reliable();
    if (checksum(m.payload) != m.checksum) {
        ++stats.checksum_failures;
        if (reliable) {
            finish_rr(VIP_STATUS_TRANSPORT_ERROR);
            break_connection(dst, VIP_ERROR_RDMA_TRANSPORT, nullptr, VIP_ERROR_CONN_LOST);
        }
        return; // unreliable: dropped, never delivered
    }
    if (reliable ? m.seq < dst->recv_seq : seen_before(dst, m.seq)) {
        ++stats.duplicates_discarded;
        return;
    }
    if (reliable) dst->recv_seq = m.seq + 1;
    const size_t len = m.payload.size();
    VIP_DESCRIPTOR *rd = nullptr;
    uint64_t capacity = 0;
    if (m.op == VIP_CONTROL_OP_RDMAWRITE) {
        const Region *r = dst->region(m.rhandle);
        if (!r || !r->rdma_write || !dst->attr.rdma_write || !common::range_covers(r->base, r->len, m.raddr, len)) {
            finish_rr(VIP_STATUS_RDMA_PROT_ERROR);
            if (reliable)
                break_connection(dst, VIP_ERROR_RDMAW_PROT, nullptr,
                                 dst->rr() ? VIP_ERROR_RDMAW_PROT : VIP_ERROR_CONN_LOST);
            else report(dst, nullptr, nullptr, VIP_RESOURCE_VI, VIP_ERROR_RDMAW_PROT); // dropped, VI kept
            return;
        }
        if (len) std::memcpy(reinterpret_cast<void *>(m.raddr), m.payload.data(), len);
        if (!m.imm) {
            ++stats.delivered;
            finish_rr(0);
            return;
        }
    }
    // A send, or an RDMA write with immediate data: both consume a receive.
    rd = dst->take_recv(&capacity);
    if (!rd) {
        ++stats.no_receive;
        if (reliable) {
            finish_rr(VIP_STATUS_REMOTE_DESC_ERROR);
            break_connection(dst, VIP_ERROR_RECVQ_EMPTY, nullptr, VIP_ERROR_CONN_LOST);
        }
        return; // unreliable: the message is lost
    }
    if (m.op == VIP_CONTROL_OP_RDMAWRITE) {
        rd->CS.ImmediateData = m.imm_data;
        rd->CS.Length = uint32_t(len);
        dst->complete_recv(rd, VIP_STATUS_OP_REMOTE_RDMA_WRITE | VIP_STATUS_IMMEDIATE);
    } else {
        if (uint32_t err = common::receive_fits(len, capacity)) {
            rd->CS.Length = 0;
            dst->complete_recv(rd, VIP_STATUS_OP_RECEIVE | err);
            finish_rr(VIP_STATUS_REMOTE_DESC_ERROR);
            if (reliable) break_connection(dst, VIP_ERROR_POST_DESC, rd, VIP_ERROR_CONN_LOST);
            return;
        }
        scatter(rd, 0, m.payload.data(), len);
        rd->CS.Length = uint32_t(len);
        uint32_t st = VIP_STATUS_OP_RECEIVE;
        if (m.imm) {
            rd->CS.ImmediateData = m.imm_data;
            st |= VIP_STATUS_IMMEDIATE;
        }
        dst->complete_recv(rd, st);
    }
    ++stats.delivered;
    finish_rr(0);
}

// RDMA read: request and response at once (reliable VIs only: the descriptor
// checks refused it on an unreliable one).  Not subject to the fault rules.
void FakeVi::do_rdma_read(VIP_DESCRIPTOR *d) {
    Switchboard &b = board();
    FakeVi *p = peer;
    const uintptr_t raddr = uintptr_t(d->DS[0].Remote.Data.AddressBits);
    const Region *r = p ? p->region(d->DS[0].Remote.Handle) : nullptr;
    const size_t len = d->CS.Length;
    if (!r || !r->rdma_read || !p->attr.rdma_read || !common::range_covers(r->base, r->len, raddr, len)) {
        complete_send(d, VIP_STATUS_OP_RDMA_READ | VIP_STATUS_RDMA_PROT_ERROR);
        b.break_connection(this, VIP_ERROR_RDMAR_PROT, d, VIP_ERROR_RDMAR_PROT);
        return;
    }
    scatter(d, 1, reinterpret_cast<const uint8_t *>(raddr), len);
    complete_send(d, VIP_STATUS_OP_RDMA_READ);
    ++b.stats.delivered;
}

// ---------------------------------------------------------------- broken connections
void Switchboard::set_error(FakeVi *vi, VIP_ERROR_CODE code, VIP_DESCRIPTOR *d) {
    if (vi->state == ViState::Error) return;
    vi->state = ViState::Error;
    vi->flush();
    report(vi, nullptr, d, d ? VIP_RESOURCE_DESCRIPTOR : VIP_RESOURCE_VI, code);
}

void Switchboard::break_connection(FakeVi *vi, VIP_ERROR_CODE mine, VIP_DESCRIPTOR *d, VIP_ERROR_CODE theirs) {
    FakeVi *p = vi->peer;
    if (vi->state != ViState::Connected && !(p && p->state == ViState::Connected)) return;
    ++stats.connections_broken;
    set_error(vi, mine, d);
    if (p && p->peer == vi && p->state == ViState::Connected) set_error(p, theirs, nullptr);
    std::erase_if(held, [vi, p](const Held &h) { return h.m.src == vi || h.m.src == p; });
}

} // namespace vipl::fake
