// connect.cpp - connection management over the wire (ConnectionManager,
// connection.hpp): client/server (ConnectRequest / ConnectWait / Accept /
// Reject, and their private data) and peer-to-peer (ConnectPeerRequest / Done
// / Wait), matched by discriminators, plus orderly disconnect, and the
// firmware's handling of the connection-management packets.
#include <cstring>

#include "connection.hpp"
#include "connection_rules.hpp"
#include "firmware.hpp"
#include "nic.hpp"
#include "vi_table.hpp"

namespace nicfw {

using vipl::common::disc_of;

namespace {
struct WireAttr {
    uint16_t reliability;
    uint8_t rdma_write;
    uint8_t rdma_read;
    uint32_t mtu;
};

struct CmHeader { // payload of ConnReq / ConnAck / PeerReq / ConnRej / cancels
    uint32_t nonce;
    WireAttr attr;
    uint16_t len_a;    // ConnReq: wanted discriminator; PeerReq: sender's own
    uint16_t len_b;    // ConnReq: client's own;          PeerReq: wanted
    uint16_t len_data; // ConnReq / ConnAck / ConnRej: private data, after the discriminators
    uint16_t reserved;
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

// A CmHeader followed by up to two discriminators and the private data, as one
// payload (the header's lengths are set here).
struct CmPayload {
    unsigned char buf[sizeof(CmHeader) + 2 * VIP_MAX_DISCRIMINATOR_LEN + VIPX_CM_DATA_MAX];
    uint32_t len;
    CmPayload(CmHeader ch, const std::vector<uint8_t> &a, const std::vector<uint8_t> &b, const void *data,
              VIP_ULONG data_len) {
        ch.len_a = static_cast<uint16_t>(a.size());
        ch.len_b = static_cast<uint16_t>(b.size());
        ch.len_data = static_cast<uint16_t>(data_len);
        std::memcpy(buf, &ch, sizeof ch);
        unsigned char *p = buf + sizeof ch;
        if (!a.empty()) std::memcpy(p, a.data(), a.size());
        p += a.size();
        if (!b.empty()) std::memcpy(p, b.data(), b.size());
        p += b.size();
        if (data_len) std::memcpy(p, data, data_len);
        len = static_cast<uint32_t>(sizeof ch + a.size() + b.size() + data_len);
    }
};

// Makes `vi` the end of a connection to (nic, vi); the caller holds the mutex and the
// VI is not Connected, so the firmware is not touching its sequence numbers.
// With the reliable transport, each connection starts its sequence numbers at a
// value both ends derive from the connection's nonces (`mine` from this end's
// request, `theirs` from the peer's; client/server: both the client's), so a
// packet of an earlier connection between the same VIs (a retransmission, a
// late duplicate) cannot pass for one of this connection.
uint32_t initial_seq(uint32_t from, uint32_t to) {
    uint64_t z = (uint64_t(from) << 32 | to) + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return static_cast<uint32_t>(z ^ (z >> 31));
}

void make_connected(ViImpl *vi, uint16_t nic, uint16_t rvi, const VIP_VI_ATTRIBUTES &rattr, uint32_t mine,
                    uint32_t theirs) {
    vi->peer_nic = nic;
    vi->peer_vi = rvi;
    vi->peer_attr = rattr;
    vi->peer_nonce = theirs;
    vi->own_nonce = mine;
    const bool transport = vi->hw->cfg.transport;
    vi->fw.send_seq = transport ? initial_seq(mine, theirs) : 0;
    vi->fw.recv_seq = transport ? initial_seq(theirs, mine) : 0;
    vi->hw->fw.link_connected(vi); // the reliable transport's window, when it is on
    vi->cm_result.store(ConnResult::Connected, std::memory_order_relaxed);
    vi->set_state(ViState::Connected);
}
} // namespace

// Sends a connection-management packet, waiting (and stepping) while the FIFO is full.
void ConnectionManager::send_cm(uint16_t dst, Op op, uint16_t dst_vi, uint16_t src_vi, const void *payload,
                                uint32_t len) {
    while (!fw_.send_ctl(dst, op, dst_vi, src_vi, 0, payload, len)) nic_.host_poll();
}

VIP_RETURN ConnectionManager::parse_addr(const VIP_NET_ADDRESS *a, uint16_t *nic) const {
    if (!a || a->HostAddressLen != 2 || a->DiscriminatorLen > VIP_MAX_DISCRIMINATOR_LEN) return VIP_INVALID_PARAMETER;
    const uint16_t r = static_cast<uint16_t>(a->HostAddress[0] | (a->HostAddress[1] << 8));
    if (r >= nprocs_) return VIP_INVALID_PARAMETER;
    *nic = r;
    return VIP_SUCCESS;
}
// ---------------------------------------------------------------- client side
VIP_RETURN ConnectionManager::connect_start(ViImpl *vi, const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote,
                                            VIP_ULONG timeout_ms, const void *data, VIP_ULONG len) {
    uint16_t dst;
    if (VIP_RETURN rc = parse_addr(remote, &dst); rc != VIP_SUCCESS) return rc;
    if (local && local->DiscriminatorLen > VIP_MAX_DISCRIMINATOR_LEN) return VIP_INVALID_PARAMETER;
    {
        std::lock_guard<std::mutex> g(mu_);
        if (vi->state.load() != ViState::Idle) return VIP_INVALID_STATE;
        vi->cm_nonce = nonce_gen_.fetch_add(1);
        vi->cm_result.store(ConnResult::Pending);
        vi->cm_client = true;
        vi->cm_server = dst;
        vi->cm_deadline_ns = timeout_ms == VIP_INFINITE ? UINT64_MAX : now_ns() + uint64_t(timeout_ms) * 1000000ull;
        vi->cm_data_len = 0;
        vi->set_state(ViState::Pending);
    }
    CmHeader ch{};
    ch.nonce = vi->cm_nonce;
    ch.attr = to_wire(vi->attr);
    const CmPayload req(ch, disc_of(remote), disc_of(local), data, len);
    send_cm(dst, Op::ConnReq, 0, static_cast<uint16_t>(vi->index), req.buf, req.len);
    return VIP_SUCCESS;
}

// The client gives up: the VI is idle again, and the server drops the request
// (or, if a VipConnectWait has it already, its accept answers VIP_TIMEOUT; an
// accept already on its way is answered by a Disc, on_packet).
void ConnectionManager::cancel_client_request(ViImpl *vi) {
    vi->cm_result.store(ConnResult::Cancelled);
    vi->cm_client = false;
    vi->set_state(ViState::Idle);
    CmHeader c{};
    c.nonce = vi->cm_nonce;
    fw_.send_ctl(vi->cm_server, Op::ConnCancel, 0, static_cast<uint16_t>(vi->index), 0, &c, sizeof c);
}

VIP_RETURN ConnectionManager::client_result(ViImpl *vi, VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len) {
    std::lock_guard<std::mutex> g(mu_);
    if (!vi->cm_client) return VIP_INVALID_STATE;
    switch (vi->cm_result.load()) {
    case ConnResult::Pending:
        if (now_ns() < vi->cm_deadline_ns) return VIP_NOT_DONE;
        cancel_client_request(vi);
        return VIP_TIMEOUT;
    case ConnResult::Rejected:
        vi->cm_client = false;
        vi->set_state(ViState::Idle);
        vipl::prov::copy_cm_data(vi->cm_data, vi->cm_data_len, data, len);
        return VIP_REJECT;
    case ConnResult::Connected: // (the VI may have broken since: VipQueryVi says so)
        vi->cm_client = false;
        if (remote_attr) *remote_attr = vi->peer_attr;
        vipl::prov::copy_cm_data(vi->cm_data, vi->cm_data_len, data, len);
        return VIP_SUCCESS;
    case ConnResult::ServerGone: // nobody will answer (fail_requests_to_dead)
        vi->cm_client = false;
        vi->set_state(ViState::Idle);
        return VIP_NO_MATCH;
    default: // Cancelled: disconnect abandoned it (and cleared cm_client)
        vi->cm_client = false;
        return VIP_INVALID_STATE;
    }
}

VIP_RETURN ConnectionManager::connect_done(ViImpl *vi, VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len) {
    nic_.host_poll(); // an inline firmware takes in the answer
    return client_result(vi, remote_attr, data, len);
}

VIP_RETURN ConnectionManager::connect_wait_done(ViImpl *vi, VIP_VI_ATTRIBUTES *remote_attr, void *data,
                                                VIP_ULONG *len) {
    VIP_RETURN rc = VIP_NOT_DONE;
    // The request's deadline ends the wait (client_result gives up then).
    poll_until(nic_, VIP_INFINITE, [&] {
        rc = client_result(vi, remote_attr, data, len);
        return rc != VIP_NOT_DONE;
    });
    return rc;
}

// ---------------------------------------------------------------- server side
VIP_RETURN ConnectionManager::connect_wait(const VIP_NET_ADDRESS *local, VIP_ULONG timeout_ms, VIP_NET_ADDRESS *remote,
                                           VIP_VI_ATTRIBUTES *remote_attr, ConnImpl **out) {
    if (!local || local->DiscriminatorLen > VIP_MAX_DISCRIMINATOR_LEN) return VIP_INVALID_PARAMETER;
    const auto want = disc_of(local);
    ConnRequest got{};
    auto take = [&] {
        std::lock_guard<std::mutex> g(mu_);
        for (auto &r : conn_requests_) {
            if (!r.claimed && r.want_disc == want) {
                r.claimed = true;
                got = r;
                return true;
            }
        }
        return false;
    };
    // Timeout 0 polls: one step of an inline firmware, no spinning.
    const bool found = timeout_ms == 0 ? take() || (nic_.host_poll(), take()) : poll_until(nic_, timeout_ms, take);
    if (!found) return VIP_TIMEOUT;
    remote->HostAddressLen = 2;
    remote->DiscriminatorLen = static_cast<VIP_UINT16>(got.client_disc.size());
    remote->HostAddress[0] = static_cast<VIP_UINT8>(got.src_nic & 0xff);
    remote->HostAddress[1] = static_cast<VIP_UINT8>(got.src_nic >> 8);
    if (!got.client_disc.empty()) std::memcpy(remote->HostAddress + 2, got.client_disc.data(), got.client_disc.size());
    if (remote_attr) *remote_attr = got.attr;
    auto *c = new ConnImpl;
    c->hw = &nic_;
    c->client_nic = got.src_nic;
    c->client_vi = got.src_vi;
    c->nonce = got.nonce;
    c->client_attr = got.attr;
    c->data_len = got.data.size();
    if (!got.data.empty()) std::memcpy(c->data, got.data.data(), got.data.size());
    *out = c;
    return VIP_SUCCESS;
}

void ConnectionManager::forget_request(uint16_t nic, uint32_t nonce) {
    for (auto it = conn_requests_.begin(); it != conn_requests_.end(); ++it)
        if (it->src_nic == nic && it->nonce == nonce) {
            conn_requests_.erase(it);
            return;
        }
}

VIP_RETURN ConnectionManager::accept(const ConnImpl &c, ViImpl *vi, const void *data, VIP_ULONG len) {
    if (vi->hw != c.hw) return VIP_INVALID_PARAMETER;
    if (VIP_RETURN rc = vipl::common::check_accept(vi->attr, c.client_attr); rc != VIP_SUCCESS) return rc;
    nic_.host_poll(); // an inline firmware takes in a ConnCancel that has arrived
    {
        std::lock_guard<std::mutex> g(mu_);
        if (vi->state.load() != ViState::Idle) return VIP_INVALID_STATE;
        // The client's VipConnectRequest timed out: there is nobody to connect
        // to.  The request stays (accepting again says the same) until
        // VipConnectReject drops it.  A cancel still on the wire is caught later:
        // the client answers the ConnAck with a Disc, which breaks this VI.
        for (const auto &r : conn_requests_)
            if (r.src_nic == c.client_nic && r.nonce == c.nonce && r.cancelled) return VIP_TIMEOUT;
        make_connected(vi, c.client_nic, c.client_vi, c.client_attr, c.nonce, c.nonce);
        forget_request(c.client_nic, c.nonce);
    }
    CmHeader ch{};
    ch.nonce = c.nonce;
    ch.attr = to_wire(vi->attr);
    const CmPayload ack(ch, {}, {}, data, len);
    send_cm(c.client_nic, Op::ConnAck, c.client_vi, static_cast<uint16_t>(vi->index), ack.buf, ack.len);
    return VIP_SUCCESS;
}

VIP_RETURN ConnectionManager::reject(const ConnImpl &c, const void *data, VIP_ULONG len) {
    {
        std::lock_guard<std::mutex> g(mu_);
        forget_request(c.client_nic, c.nonce);
    }
    CmHeader ch{};
    ch.nonce = c.nonce;
    const CmPayload rej(ch, {}, {}, data, len);
    send_cm(c.client_nic, Op::ConnRej, c.client_vi, 0, rej.buf, rej.len);
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- peer-to-peer
VIP_RETURN ConnectionManager::peer_request(ViImpl *vi, const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote,
                                           VIP_ULONG timeout_ms) {
    uint16_t dst;
    if (VIP_RETURN rc = parse_addr(remote, &dst); rc != VIP_SUCCESS) return rc;
    if (local && local->DiscriminatorLen > VIP_MAX_DISCRIMINATOR_LEN) return VIP_INVALID_PARAMETER;
    const auto mine = disc_of(local);
    const auto theirs = disc_of(remote);
    {
        std::lock_guard<std::mutex> g(mu_);
        if (vi->state.load() != ViState::Idle) return VIP_INVALID_STATE;
        vi->cm_nonce = nonce_gen_.fetch_add(1);
        vi->cm_result.store(ConnResult::Pending);
        vi->set_state(ViState::Pending);
        bool matched = false;
        for (auto it = peer_requests_.begin(); it != peer_requests_.end(); ++it) {
            if (it->src_nic == dst && it->their_disc == theirs && it->want_disc == mine) {
                if (it->attr.ReliabilityLevel != vi->attr.reliability) {
                    vi->cm_result.store(ConnResult::ReliabilityMismatch);
                } else {
                    make_connected(vi, it->src_nic, it->src_vi, it->attr, vi->cm_nonce, it->nonce);
                }
                peer_requests_.erase(it);
                matched = true;
                break;
            }
        }
        if (!matched) {
            const uint64_t deadline =
                timeout_ms == VIP_INFINITE ? UINT64_MAX : now_ns() + uint64_t(timeout_ms) * 1000000ull;
            local_peers_.push_back(LocalPeer{vi, dst, mine, theirs, deadline, vi->cm_nonce});
        }
    }
    CmHeader ch{};
    ch.nonce = vi->cm_nonce;
    ch.attr = to_wire(vi->attr);
    const CmPayload req(ch, mine, theirs, nullptr, 0);
    send_cm(dst, Op::PeerReq, 0, static_cast<uint16_t>(vi->index), req.buf, req.len);
    return VIP_SUCCESS;
}

VIP_RETURN ConnectionManager::peer_done(ViImpl *vi, VIP_VI_ATTRIBUTES *remote_attr) {
    for (int pass = 0; pass < 2; ++pass) {
        const ViState st = vi->state.load(std::memory_order_acquire);
        if (st == ViState::Connected) {
            if (remote_attr) *remote_attr = vi->peer_attr;
            return VIP_SUCCESS;
        }
        if (st != ViState::Pending) return VIP_INVALID_STATE;
        {
            std::lock_guard<std::mutex> g(mu_);
            if (vi->cm_client) return VIP_INVALID_STATE; // a client request: VipxConnectRequestDone's
            if (vi->cm_result.load() == ConnResult::ReliabilityMismatch) {
                vi->set_state(ViState::Idle);
                return VIP_INVALID_RELIABILITY_LEVEL;
            }
            for (auto it = local_peers_.begin(); it != local_peers_.end(); ++it) {
                if (it->vi == vi && now_ns() >= it->deadline_ns) {
                    CmHeader c{};
                    c.nonce = it->nonce;
                    fw_.send_ctl(it->remote_nic, Op::PeerCancel, 0, static_cast<uint16_t>(vi->index), 0, &c, sizeof c);
                    local_peers_.erase(it);
                    vi->set_state(ViState::Idle);
                    return VIP_TIMEOUT;
                }
            }
        }
        if (pass == 0) nic_.host_poll();
    }
    return VIP_NOT_DONE;
}

VIP_RETURN ConnectionManager::peer_wait(ViImpl *vi, VIP_VI_ATTRIBUTES *remote_attr) {
    VIP_RETURN rc = VIP_NOT_DONE;
    poll_until(nic_, VIP_INFINITE, [&] {
        rc = peer_done(vi, remote_attr);
        return rc != VIP_NOT_DONE;
    });
    return rc;
}

// ---------------------------------------------------------------- disconnect
VIP_RETURN ConnectionManager::disconnect(ViImpl *vi) {
    ViState st = vi->state.load();
    if (st == ViState::Idle) {
        // Nothing to tear down, but receives posted while idle are flushed so the
        // application can reclaim them (and then destroy the VI).
        vi->request_flush();
        return VIP_SUCCESS;
    }
    {
        std::lock_guard<std::mutex> g(mu_);
        st = vi->state.load();
        if (st == ViState::Pending && vi->cm_client) { // abandon a client request
            cancel_client_request(vi);
        } else if (st == ViState::Pending) { // abandon a peer request
            for (auto it = local_peers_.begin(); it != local_peers_.end(); ++it)
                if (it->vi == vi) {
                    local_peers_.erase(it);
                    break;
                }
            vi->set_state(ViState::Idle);
        }
        if (st == ViState::Connected) {
            // Error first: the firmware stops transmitting and flushes this VI.
            vi->set_state(ViState::Error);
            fw_.send_ctl_reliably(vi->peer_nic, Op::Disc, vi->peer_vi, static_cast<uint16_t>(vi->index), vi->own_nonce);
        }
    }
    vi->request_flush();
    vi->set_state(ViState::Idle);
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- firmware side
void ConnectionManager::fail_requests_to_dead(const std::function<bool(uint16_t)> &dead) {
    std::lock_guard<std::mutex> g(mu_);
    for (uint32_t i = 0; i < kMaxVi; ++i) {
        ViImpl *vi = vis_.find(i);
        if (vi && vi->cm_client && vi->cm_result.load() == ConnResult::Pending && dead(vi->cm_server))
            vi->cm_result.store(ConnResult::ServerGone, std::memory_order_release);
    }
}

void ConnectionManager::on_packet(const PacketHeader *h, const unsigned char *p) {
    CmHeader ch{};
    if (h->length >= sizeof ch) std::memcpy(&ch, p, sizeof ch);
    const unsigned char *a = p + sizeof ch;
    const bool lens_ok = h->length >= sizeof ch && ch.len_data <= VIPX_CM_DATA_MAX &&
        sizeof ch + ch.len_a + ch.len_b + ch.len_data <= h->length;
    const unsigned char *data = a + ch.len_a + ch.len_b; // private data (ConnReq / ConnAck / ConnRej)
    ViImpl *vi = vis_.find(h->dst_vi);
    std::unique_lock<std::mutex> g(mu_);
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
        r.data.assign(data, data + ch.len_data);
        conn_requests_.push_back(std::move(r));
        return;
    }
    case Op::ConnCancel:
        for (auto it = conn_requests_.begin(); it != conn_requests_.end(); ++it)
            if (it->src_nic == h->src_nic && it->nonce == ch.nonce) {
                // Claimed: a VipConnectWait handed it out; its VipConnectAccept
                // answers VIP_TIMEOUT instead of connecting to a VI that left.
                if (it->claimed) it->cancelled = true;
                else conn_requests_.erase(it);
                break;
            }
        return;
    case Op::ConnAck:
        if (lens_ok && vi && vi->state.load() == ViState::Pending && vi->cm_nonce == ch.nonce &&
            vi->cm_result.load() == ConnResult::Pending) {
            std::memcpy(vi->cm_data, data, ch.len_data);
            vi->cm_data_len = ch.len_data;
            make_connected(vi, h->src_nic, h->src_vi, from_wire(ch.attr), ch.nonce, ch.nonce);
        } else { // the client gave up meanwhile: tear the server's end down (its peer_nonce: the request's)
            fw_.send_ctl_reliably(h->src_nic, Op::Disc, h->src_vi, h->dst_vi, ch.nonce);
        }
        return;
    case Op::ConnRej:
        if (lens_ok && vi && vi->cm_nonce == ch.nonce && vi->cm_result.load() == ConnResult::Pending) {
            std::memcpy(vi->cm_data, data, ch.len_data);
            vi->cm_data_len = ch.len_data;
            vi->cm_result.store(ConnResult::Rejected, std::memory_order_release);
        }
        return;
    case Op::PeerReq: {
        if (!lens_ok) return;
        std::vector<uint8_t> theirs(a, a + ch.len_a), want(a + ch.len_a, a + ch.len_a + ch.len_b);
        const VIP_VI_ATTRIBUTES rattr = from_wire(ch.attr);
        for (auto it = local_peers_.begin(); it != local_peers_.end(); ++it) {
            if (it->remote_nic == h->src_nic && it->my_disc == want && it->their_disc == theirs) {
                ViImpl *lv = it->vi;
                if (lv->attr.reliability != rattr.ReliabilityLevel)
                    lv->cm_result.store(ConnResult::ReliabilityMismatch);
                else make_connected(lv, h->src_nic, h->src_vi, rattr, it->nonce, ch.nonce);
                local_peers_.erase(it);
                return;
            }
        }
        for (auto &r : peer_requests_) // a repeated request replaces the older one
            if (r.src_nic == h->src_nic && r.their_disc == theirs && r.want_disc == want) {
                r.src_vi = h->src_vi;
                r.nonce = ch.nonce;
                r.attr = rattr;
                return;
            }
        peer_requests_.push_back(PeerRequest{h->src_nic, h->src_vi, ch.nonce, rattr, theirs, want});
        return;
    }
    case Op::PeerCancel:
        for (auto it = peer_requests_.begin(); it != peer_requests_.end(); ++it)
            if (it->src_nic == h->src_nic && it->nonce == ch.nonce) {
                peer_requests_.erase(it);
                return;
            }
        // Matched already: a local VI connected to the request before its cancel
        // was taken in (an inline NIC that was not polled holds both, request
        // first).  The peer's VI is idle, so ours must not stay Connected to it:
        // it breaks (VIP_ERROR_CONN_LOST), and our own request, which the peer
        // keeps as unanswered, is cancelled too.
        for (uint32_t i = 0; i < kMaxVi; ++i) {
            ViImpl *lv = vis_.find(i);
            if (!lv || lv->state.load() != ViState::Connected || lv->peer_nic != h->src_nic ||
                lv->peer_vi != h->src_vi || lv->peer_nonce != ch.nonce)
                continue;
            CmHeader c{};
            c.nonce = lv->cm_nonce;
            g.unlock();
            fw_.send_ctl(h->src_nic, Op::PeerCancel, 0, static_cast<uint16_t>(i), 0, &c, sizeof c);
            fw_.vi_error(lv, VIP_ERROR_CONN_LOST, nullptr, false);
            return;
        }
        return;
    case Op::Disc:
    case Op::ConnErr: // imm: the sender's own_nonce, naming the connection that ends
        if (vi && vi->state.load() == ViState::Connected && vi->peer_nic == h->src_nic && vi->peer_vi == h->src_vi &&
            vi->peer_nonce == h->imm) {
            g.unlock(); // vi_error may call back into connection management
            fw_.vi_error(vi, VIP_ERROR_CONN_LOST, nullptr, false);
        }
        return;
    default: return;
    }
}

} // namespace nicfw
