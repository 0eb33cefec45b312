// connect.cpp - connection management over the wire: client/server
// (ConnectRequest / ConnectWait / Accept / Reject) and peer-to-peer
// (ConnectPeerRequest / Done / Wait), matched by discriminators, plus
// orderly disconnect.  Host calls and the firmware share the pending-request
// lists under NicHw::cm_mu; connection management is rare, so a mutex is fine.
#include <cstring>

#include "nic.hpp"

namespace nicfw {

namespace {
struct WireAttr {
    uint16_t reliability;
    uint8_t rdma_write;
    uint8_t rdma_read;
    uint32_t mtu;
};

struct CmHeader {      // payload of ConnReq / ConnAck / PeerReq / ConnRej / cancels
    uint32_t nonce;
    WireAttr attr;
    uint16_t len_a;    // ConnReq: wanted discriminator; PeerReq: sender's own
    uint16_t len_b;    // ConnReq: client's own;          PeerReq: wanted
};

WireAttr to_wire(const vipl::prov::ViAttr &a) {
    return WireAttr{a.reliability, a.rdma_write ? uint8_t(1) : uint8_t(0), a.rdma_read ? uint8_t(1) : uint8_t(0),
                    static_cast<uint32_t>(a.max_transfer)};
}
VIP_VI_ATTRIBUTES from_wire(const WireAttr &w) {
    VIP_VI_ATTRIBUTES a{};
    a.ReliabilityLevel = w.reliability;
    a.MaxTransferSize = w.mtu;
    a.EnableRdmaWrite = w.rdma_write;
    a.EnableRdmaRead = w.rdma_read;
    return a;
}

std::vector<uint8_t> disc_of(const VIP_NET_ADDRESS *a) {
    return std::vector<uint8_t>(a->HostAddress + a->HostAddressLen,
                                a->HostAddress + a->HostAddressLen + a->DiscriminatorLen);
}

// Sends a connection-management packet, waiting (and stepping) while the FIFO is full.
void send_cm(NicHw *hw, uint16_t dst, Op op, uint16_t dst_vi, uint16_t src_vi, const CmHeader &ch,
             const std::vector<uint8_t> &a = {}, const std::vector<uint8_t> &b = {}) {
    unsigned char buf[sizeof(CmHeader) + 2 * VIP_MAX_DISCRIMINATOR_LEN];
    std::memcpy(buf, &ch, sizeof ch);
    if (!a.empty()) std::memcpy(buf + sizeof ch, a.data(), a.size());
    if (!b.empty()) std::memcpy(buf + sizeof ch + a.size(), b.data(), b.size());
    const uint32_t len = static_cast<uint32_t>(sizeof ch + a.size() + b.size());
    while (!hw->send_ctl(dst, op, dst_vi, src_vi, 0, 0, 0, buf, len)) hw->host_poll();
}

// Makes `vi` the end of a connection to (nic, vi); caller holds cm_mu and the
// VI is not Connected, so the firmware is not touching its sequence numbers.
void make_connected(ViImpl *vi, uint16_t nic, uint16_t rvi, const VIP_VI_ATTRIBUTES &rattr) {
    vi->peer_nic = nic;
    vi->peer_vi = rvi;
    vi->peer_attr = rattr;
    vi->send_seq = 0;
    vi->recv_seq = 0;
    vi->cm_result.store(1, std::memory_order_relaxed);
    vi->state.store(static_cast<int>(ViState::Connected), std::memory_order_release);
}
} // namespace

// Parses a remote address into a NIC rank (2-byte little-endian host address).
VIP_RETURN NicHw::parse_addr(const VIP_NET_ADDRESS *a, uint16_t *nic) const {
    if (!a || a->HostAddressLen != 2 || a->DiscriminatorLen > VIP_MAX_DISCRIMINATOR_LEN)
        return VIP_INVALID_PARAMETER;
    const uint16_t r = static_cast<uint16_t>(a->HostAddress[0] | (a->HostAddress[1] << 8));
    if (r >= nprocs) return VIP_INVALID_PARAMETER;
    *nic = r;
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- client side
VIP_RETURN ViImpl::connect_request(const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote,
                                   VIP_ULONG timeout_ms, VIP_VI_ATTRIBUTES *remote_attr) {
    uint16_t dst;
    if (VIP_RETURN rc = hw->parse_addr(remote, &dst); rc != VIP_SUCCESS) return rc;
    if (local && local->DiscriminatorLen > VIP_MAX_DISCRIMINATOR_LEN) return VIP_INVALID_PARAMETER;
    CmHeader ch{};
    {
        std::lock_guard<std::mutex> g(hw->cm_mu);
        if (state.load() != static_cast<int>(ViState::Idle)) return VIP_INVALID_STATE;
        cm_nonce = hw->nonce_gen.fetch_add(1);
        cm_result.store(0);
        state.store(static_cast<int>(ViState::Pending));
    }
    const auto want = disc_of(remote);
    const auto mine = local ? disc_of(local) : std::vector<uint8_t>{};
    ch.nonce = cm_nonce;
    ch.attr = to_wire(attr);
    ch.len_a = static_cast<uint16_t>(want.size());
    ch.len_b = static_cast<uint16_t>(mine.size());
    send_cm(hw, dst, Op::ConnReq, 0, static_cast<uint16_t>(index), ch, want, mine);

    const bool answered = poll_until(hw, timeout_ms, [&] { return cm_result.load(std::memory_order_acquire) != 0; });
    std::lock_guard<std::mutex> g(hw->cm_mu);
    if (!answered && cm_result.load() == 0) {
        cm_result.store(3);
        state.store(static_cast<int>(ViState::Idle));
        CmHeader c{};
        c.nonce = cm_nonce;
        hw->send_ctl(dst, Op::ConnCancel, 0, static_cast<uint16_t>(index), 0, 0, 0, &c, sizeof c);
        return VIP_TIMEOUT;
    }
    if (cm_result.load() == 2) {
        state.store(static_cast<int>(ViState::Idle));
        return VIP_REJECT;
    }
    if (remote_attr) *remote_attr = peer_attr;
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- server side
VIP_RETURN NicHw::connect_wait(const VIP_NET_ADDRESS *local, VIP_ULONG timeout_ms, VIP_NET_ADDRESS *remote,
                               VIP_VI_ATTRIBUTES *remote_attr, ConnImpl **out) {
    if (!local || local->DiscriminatorLen > VIP_MAX_DISCRIMINATOR_LEN) return VIP_INVALID_PARAMETER;
    const auto want = disc_of(local);
    ConnRequest got{};
    const bool found = poll_until(this, timeout_ms, [&] {
        std::lock_guard<std::mutex> g(cm_mu);
        for (auto &r : conn_requests) {
            if (!r.claimed && r.want_disc == want) {
                r.claimed = true;
                got = r;
                return true;
            }
        }
        return false;
    });
    if (!found) return VIP_TIMEOUT;
    remote->HostAddressLen = 2;
    remote->DiscriminatorLen = static_cast<VIP_UINT16>(got.client_disc.size());
    remote->HostAddress[0] = static_cast<VIP_UINT8>(got.src_nic & 0xff);
    remote->HostAddress[1] = static_cast<VIP_UINT8>(got.src_nic >> 8);
    if (!got.client_disc.empty()) std::memcpy(remote->HostAddress + 2, got.client_disc.data(), got.client_disc.size());
    if (remote_attr) *remote_attr = got.attr;
    auto *c = new ConnImpl;
    c->hw = this;
    c->client_nic = got.src_nic;
    c->client_vi = got.src_vi;
    c->nonce = got.nonce;
    c->client_attr = got.attr;
    *out = c;
    return VIP_SUCCESS;
}

void NicHw::forget_request(uint16_t nic, uint32_t nonce) {
    for (auto it = conn_requests.begin(); it != conn_requests.end(); ++it)
        if (it->src_nic == nic && it->nonce == nonce) {
            conn_requests.erase(it);
            return;
        }
}

VIP_RETURN ConnImpl::accept(vipl::prov::Vi *pv) {
    auto *vi = static_cast<ViImpl *>(pv);
    if (vi->hw != hw) return VIP_INVALID_PARAMETER;
    if (vi->attr.reliability != client_attr.ReliabilityLevel) return VIP_INVALID_RELIABILITY_LEVEL;
    {
        std::lock_guard<std::mutex> g(hw->cm_mu);
        if (vi->state.load() != static_cast<int>(ViState::Idle)) return VIP_INVALID_STATE;
        make_connected(vi, client_nic, client_vi, client_attr);
        hw->forget_request(client_nic, nonce);
    }
    CmHeader ch{};
    ch.nonce = nonce;
    ch.attr = to_wire(vi->attr);
    send_cm(hw, client_nic, Op::ConnAck, client_vi, static_cast<uint16_t>(vi->index), ch);
    return VIP_SUCCESS;
}

VIP_RETURN ConnImpl::reject() {
    {
        std::lock_guard<std::mutex> g(hw->cm_mu);
        hw->forget_request(client_nic, nonce);
    }
    CmHeader ch{};
    ch.nonce = nonce;
    send_cm(hw, client_nic, Op::ConnRej, client_vi, 0, ch);
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- peer-to-peer
VIP_RETURN ViImpl::peer_request(const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote, VIP_ULONG timeout_ms) {
    uint16_t dst;
    if (VIP_RETURN rc = hw->parse_addr(remote, &dst); rc != VIP_SUCCESS) return rc;
    if (local && local->DiscriminatorLen > VIP_MAX_DISCRIMINATOR_LEN) return VIP_INVALID_PARAMETER;
    const auto mine = local ? disc_of(local) : std::vector<uint8_t>{};
    const auto theirs = disc_of(remote);
    CmHeader ch{};
    {
        std::lock_guard<std::mutex> g(hw->cm_mu);
        if (state.load() != static_cast<int>(ViState::Idle)) return VIP_INVALID_STATE;
        cm_nonce = hw->nonce_gen.fetch_add(1);
        cm_result.store(0);
        state.store(static_cast<int>(ViState::Pending));
        bool matched = false;
        for (auto it = hw->peer_requests.begin(); it != hw->peer_requests.end(); ++it) {
            if (it->src_nic == dst && it->their_disc == theirs && it->want_disc == mine) {
                if (it->attr.ReliabilityLevel != attr.reliability) {
                    cm_result.store(4);
                } else {
                    make_connected(this, it->src_nic, it->src_vi, it->attr);
                }
                hw->peer_requests.erase(it);
                matched = true;
                break;
            }
        }
        if (!matched) {
            const uint64_t deadline = timeout_ms == VIP_INFINITE ? UINT64_MAX : now_ns() + uint64_t(timeout_ms) * 1000000ull;
            hw->local_peers.push_back(LocalPeer{this, dst, mine, theirs, deadline, cm_nonce});
        }
    }
    ch.nonce = cm_nonce;
    ch.attr = to_wire(attr);
    ch.len_a = static_cast<uint16_t>(mine.size());
    ch.len_b = static_cast<uint16_t>(theirs.size());
    send_cm(hw, dst, Op::PeerReq, 0, static_cast<uint16_t>(index), ch, mine, theirs);
    return VIP_SUCCESS;
}

VIP_RETURN ViImpl::peer_done(VIP_VI_ATTRIBUTES *remote_attr) {
    for (int pass = 0; pass < 2; ++pass) {
        const int st = state.load(std::memory_order_acquire);
        if (st == static_cast<int>(ViState::Connected)) {
            if (remote_attr) *remote_attr = peer_attr;
            return VIP_SUCCESS;
        }
        if (st != static_cast<int>(ViState::Pending)) return VIP_INVALID_STATE;
        {
            std::lock_guard<std::mutex> g(hw->cm_mu);
            if (cm_result.load() == 4) {
                state.store(static_cast<int>(ViState::Idle));
                return VIP_INVALID_RELIABILITY_LEVEL;
            }
            for (auto it = hw->local_peers.begin(); it != hw->local_peers.end(); ++it) {
                if (it->vi == this && now_ns() >= it->deadline_ns) {
                    CmHeader c{};
                    c.nonce = it->nonce;
                    hw->send_ctl(it->remote_nic, Op::PeerCancel, 0, static_cast<uint16_t>(index), 0, 0, 0, &c, sizeof c);
                    hw->local_peers.erase(it);
                    state.store(static_cast<int>(ViState::Idle));
                    return VIP_TIMEOUT;
                }
            }
        }
        if (pass == 0) hw->host_poll();
    }
    return VIP_NOT_DONE;
}

VIP_RETURN ViImpl::peer_wait(VIP_VI_ATTRIBUTES *remote_attr) {
    VIP_RETURN rc = VIP_NOT_DONE;
    poll_until(hw, VIP_INFINITE, [&] {
        rc = peer_done(remote_attr);
        return rc != VIP_NOT_DONE;
    });
    return rc;
}

// ---------------------------------------------------------------- disconnect
VIP_RETURN ViImpl::disconnect() {
    int st = state.load();
    if (st == static_cast<int>(ViState::Idle)) {
        // Nothing to tear down, but receives posted while idle are flushed so the
        // application can reclaim them (and then destroy the VI).
        request_flush();
        return VIP_SUCCESS;
    }
    {
        std::lock_guard<std::mutex> g(hw->cm_mu);
        st = state.load();
        if (st == static_cast<int>(ViState::Pending)) { // abandon a peer request
            for (auto it = hw->local_peers.begin(); it != hw->local_peers.end(); ++it)
                if (it->vi == this) {
                    hw->local_peers.erase(it);
                    break;
                }
            state.store(static_cast<int>(ViState::Idle));
        }
        if (st == static_cast<int>(ViState::Connected)) {
            // Error first: the firmware stops transmitting and flushes this VI.
            state.store(static_cast<int>(ViState::Error), std::memory_order_release);
            hw->send_ctl_reliably(peer_nic, Op::Disc, peer_vi, static_cast<uint16_t>(index), 0);
        }
    }
    request_flush();
    state.store(static_cast<int>(ViState::Idle), std::memory_order_release);
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- firmware side
void NicHw::rx_cm(const PacketHeader *h, const unsigned char *p) {
    CmHeader ch{};
    if (h->length >= sizeof ch) std::memcpy(&ch, p, sizeof ch);
    const unsigned char *a = p + sizeof ch;
    const bool lens_ok = h->length >= sizeof ch && sizeof ch + ch.len_a + ch.len_b <= h->length;
    ViImpl *vi = h->dst_vi < kMaxVi ? vis[h->dst_vi].load(std::memory_order_acquire) : nullptr;
    std::lock_guard<std::mutex> g(cm_mu);
    switch (h->op) {
    case Op::ConnReq: {
        if (!lens_ok) return;
        ConnRequest r;
        r.src_nic = h->src_nic;
        r.src_vi = h->src_vi;
        r.nonce = ch.nonce;
        r.attr = from_wire(ch.attr);
        r.want_disc.assign(a, a + ch.len_a);
        r.client_disc.assign(a + ch.len_a, a + ch.len_a + ch.len_b);
        conn_requests.push_back(std::move(r));
        return;
    }
    case Op::ConnCancel:
        for (auto it = conn_requests.begin(); it != conn_requests.end(); ++it)
            if (it->src_nic == h->src_nic && it->nonce == ch.nonce && !it->claimed) {
                conn_requests.erase(it);
                break;
            }
        return;
    case Op::ConnAck:
        if (vi && vi->state.load() == static_cast<int>(ViState::Pending) && vi->cm_nonce == ch.nonce &&
            vi->cm_result.load() == 0) {
            make_connected(vi, h->src_nic, h->src_vi, from_wire(ch.attr));
        } else { // the client gave up meanwhile: tear the server's end down
            send_ctl_reliably(h->src_nic, Op::Disc, h->src_vi, h->dst_vi, 0);
        }
        return;
    case Op::ConnRej:
        if (vi && vi->cm_nonce == ch.nonce && vi->cm_result.load() == 0) vi->cm_result.store(2, std::memory_order_release);
        return;
    case Op::PeerReq: {
        if (!lens_ok) return;
        std::vector<uint8_t> theirs(a, a + ch.len_a), want(a + ch.len_a, a + ch.len_a + ch.len_b);
        const VIP_VI_ATTRIBUTES rattr = from_wire(ch.attr);
        for (auto it = local_peers.begin(); it != local_peers.end(); ++it) {
            if (it->remote_nic == h->src_nic && it->my_disc == want && it->their_disc == theirs) {
                ViImpl *lv = it->vi;
                if (lv->attr.reliability != rattr.ReliabilityLevel) lv->cm_result.store(4);
                else make_connected(lv, h->src_nic, h->src_vi, rattr);
                local_peers.erase(it);
                return;
            }
        }
        for (auto &r : peer_requests) // a repeated request replaces the older one
            if (r.src_nic == h->src_nic && r.their_disc == theirs && r.want_disc == want) {
                r.src_vi = h->src_vi;
                r.nonce = ch.nonce;
                r.attr = rattr;
                return;
            }
        peer_requests.push_back(PeerRequest{h->src_nic, h->src_vi, ch.nonce, rattr, theirs, want});
        return;
    }
    case Op::PeerCancel:
        for (auto it = peer_requests.begin(); it != peer_requests.end(); ++it)
            if (it->src_nic == h->src_nic && it->nonce == ch.nonce) {
                peer_requests.erase(it);
                break;
            }
        return;
    case Op::Disc:
    case Op::ConnErr:
        if (vi && vi->state.load() == static_cast<int>(ViState::Connected) && vi->peer_nic == h->src_nic &&
            vi->peer_vi == h->src_vi) {
            cm_mu.unlock(); // vi_error may call back into connection management
            vi_error(vi, VIP_ERROR_CONN_LOST, nullptr, false);
            cm_mu.lock();
        }
        return;
    default:
        return;
    }
}

} // namespace nicfw
