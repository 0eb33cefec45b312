// verbs_connect.cpp - the active side of a connection (VipxConnectRequestStart /
// Done, VipConnectRequest), peer-to-peer connections on either side, and
// VipDisconnect (see verbs_cm.hpp).
#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "verbs_cm.hpp"
#include "viastack_log.hpp"

namespace vipl::verbs {

namespace {
using Clock = std::chrono::steady_clock;
constexpr int kResolveMs = 2000; // address and route resolution
} // namespace

// ---- active side and peer-to-peer -----------------------------------------------------

Connector::~Connector() {
    if (id) rdma_destroy_id(id);
}

void Connector::finish(VIP_RETURN rc) {
    result = rc;
    phase = Phase::Done;
}

void Connector::retry_later() {
    if (id) {
        id->context = nullptr;
        vi.nic.doom(id);
        id = nullptr;
    }
    phase = Phase::Retry;
    retry_at = Clock::now() + backoff;
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
}

void Connector::tick() {
    VerbsNic &nic = vi.nic;
    if (phase == Phase::Done) return;
    if (Clock::now() >= deadline) {
        finish(VIP_TIMEOUT);
        return;
    }
    if (phase == Phase::Retry && Clock::now() >= retry_at) phase = Phase::Start;
    if (phase == Phase::Start && role != Role::PeerPassive) {
        if (rdma_create_id(nic.cm_channel, &id, this, RDMA_PS_TCP) != 0) {
            finish(VIP_ERROR_RESOURCE);
            return;
        }
        HostAddr src = nic.local_addr;
        src.port = 0;
        sockaddr_storage s = src.sockaddr_of(), d = remote.sockaddr_of();
        phase = Phase::Resolving;
        if (rdma_resolve_addr(id, reinterpret_cast<sockaddr *>(&s), reinterpret_cast<sockaddr *>(&d), kResolveMs) != 0)
            retry_later();
        return;
    }
    if (phase == Phase::Start && role == Role::PeerPassive) phase = Phase::Waiting;
    if (phase == Phase::Waiting) {
        for (auto it = nic.pending.begin(); it != nic.pending.end(); ++it) {
            PendingRequest &r = **it;
            const RequestPriv &q = r.req;
            if (r.gone || q.kind != kKindPeer || !(r.from == remote) ||
                !disc_matches(q.bytes, q.dst_disc_len, q.flags & kFlagDstDigest, local_disc) ||
                !disc_matches(q.src_disc(), q.src_disc_len, q.flags & kFlagSrcDigest, remote_disc))
                continue;
            nic.pending.erase(it);
            VIP_RETURN rc = start_accept(vi, r);
            if (r.id) // refused before it reached the VI
                nic.doom(r.id);
            delete &r;
            if (rc == VIP_SUCCESS) {
                phase = Phase::Accepting;
                peer_attr = vi.remote_attr;
            } else if (rc != VIP_NOT_DONE) { // (NOT_DONE: withdrawn, wait for the retry)
                finish(rc);
            }
            return;
        }
    }
    if (phase == Phase::Accepting) {
        if (vi.established) {
            finish(VIP_SUCCESS);
        } else if (vi.link_failed) { // the requester went away: wait for its retry
            nic.doom(vi.cm_id);
            vi.cm_id = nullptr;
            vi.accepted = false;
            vi.state = VIP_STATE_CONNECT_PENDING;
            if (vi.renew_qp() != VIP_SUCCESS) finish(VIP_ERROR_RESOURCE); // (receives kept for the retry)
            else phase = Phase::Waiting;
        }
    }
}

void Connector::on_event(rdma_cm_event *e) {
    VerbsNic &nic = vi.nic;
    switch (e->event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (rdma_resolve_route(id, kResolveMs) != 0) retry_later();
        return;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: {
        if (id->verbs != nic.ctx) { // the route leaves through another RDMA device
            finish(VIP_INVALID_PARAMETER);
            return;
        }
        if (vi.qp_needs_reset && vi.reset_qp() != VIP_SUCCESS) {
            finish(VIP_ERROR_RESOURCE);
            return;
        }
        rdma_conn_param p = conn_param(vi, &request, request_len);
        phase = Phase::Connecting;
        if (rdma_connect(id, &p) != 0) retry_later();
        return;
    }
    case RDMA_CM_EVENT_CONNECT_RESPONSE: {
        const ReplyPriv *r = nullptr;
        if (!ReplyPriv::parse(e->param.conn.private_data, e->param.conn.private_data_len, kKindAccept, &r)) {
            rdma_reject(id, nullptr, 0);
            finish(VIP_REJECT);
            return;
        }
        peer_attr = attrs_from(r->reliability_or_reason, r->flags, ntohl(r->max_transfer));
        reply_data.assign(r->data, r->data + r->data_len);
        if (vi.bring_up(id) != VIP_SUCCESS) {
            rdma_reject(id, nullptr, 0);
            vi.renew_qp(); // the VI goes back to Idle with its receives kept
            finish(VIP_ERROR_RESOURCE);
            return;
        }
        if (rdma_establish(id) != 0) {
            vi.renew_qp();
            finish(VIP_ERROR_RESOURCE);
            return;
        }
        // The connection now belongs to the VI.
        vi.cm_id = id;
        id->context = &vi.link;
        id = nullptr;
        vi.remote_attr = peer_attr;
        vi.state = VIP_STATE_CONNECTED;
        finish(VIP_SUCCESS);
        return;
    }
    case RDMA_CM_EVENT_REJECTED: {
        const ReplyPriv *r = nullptr;
        if (ReplyPriv::parse(e->param.conn.private_data, e->param.conn.private_data_len, kKindReject, &r)) {
            reply_data.assign(r->data, r->data + r->data_len);
            if (r->reliability_or_reason == kRejectReliability) finish(VIP_INVALID_RELIABILITY_LEVEL);
            else if (r->reliability_or_reason == kRejectResource) finish(VIP_ERROR_RESOURCE);
            else finish(VIP_REJECT);
            return;
        }
        retry_later(); // no listener on that port (yet): the peer may still be starting
        return;
    }
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_DISCONNECTED: retry_later(); return;
    default: return;
    }
}

namespace {

// The REQ's private data: the header, both discriminators and `len` bytes of the
// requester's; false if they do not fit together (kRequestRoom).
bool build_request(Connector &c, const prov::ViAttr &attr, uint16_t port, const void *data, size_t len) {
    RequestPriv &q = c.request;
    q = RequestPriv{};
    q.magic = kPrivMagic;
    q.kind = c.role == Connector::Role::Client ? kKindClient : kKindPeer;
    q.reliability = uint8_t(attr.reliability);
    q.flags = flags_of(attr);
    q.max_transfer = htonl(uint32_t(attr.max_transfer));
    q.src_port = htons(port);
    EncodedDisc dst = encode_disc(c.remote_disc, kRequestRoom);
    EncodedDisc src = encode_disc(c.local_disc, kRequestRoom - dst.bytes.size());
    if (dst.bytes.size() + src.bytes.size() + len > kRequestRoom) return false;
    q.flags |= uint8_t((dst.digest ? kFlagDstDigest : 0) | (src.digest ? kFlagSrcDigest : 0));
    q.dst_disc_len = uint8_t(dst.bytes.size());
    q.src_disc_len = uint8_t(src.bytes.size());
    q.data_len = uint8_t(len);
    std::copy(dst.bytes.begin(), dst.bytes.end(), q.bytes);
    std::copy(src.bytes.begin(), src.bytes.end(), q.bytes + dst.bytes.size());
    if (len) std::memcpy(q.bytes + dst.bytes.size() + src.bytes.size(), data, len);
    c.request_len = offsetof(RequestPriv, bytes) + q.used();
    return true;
}

VIP_RETURN begin_connect(VerbsVi &vi, Connector::Role role, const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote,
                         VIP_ULONG timeout_ms, const void *data = nullptr, size_t len = 0) {
    VerbsNic &nic = vi.nic;
    if (check_local(nic, local) != VIP_SUCCESS || remote->DiscriminatorLen > kMaxDiscriminator)
        return VIP_INVALID_PARAMETER;
    HostAddr to;
    if (!HostAddr::from_bytes(remote->HostAddress, remote->HostAddressLen, &to)) return VIP_INVALID_PARAMETER;
    auto c = std::make_unique<Connector>(vi, role);
    c->remote = to;
    c->local_disc = disc_of(local);
    c->remote_disc = disc_of(remote);
    c->deadline = deadline_of(timeout_ms);
    if (!build_request(*c, vi.attr, nic.local_addr.port, data, len)) {
        viastack_log(VIASTACK_LOG_VERBS, VIASTACK_LOG_ERROR,
                     "a connection request carries at most %zu bytes of private data and discriminators "
                     "together on verbs (rdma_cm's 56-byte REQ); %zu bytes of data do not fit with these "
                     "discriminators",
                     kRequestRoom, len);
        return VIP_INVALID_PARAMETER;
    }
    std::lock_guard<std::mutex> g(nic.cm_mu);
    if (vi.state.load() != VIP_STATE_IDLE || vi.connector) return VIP_INVALID_STATE;
    if (vi.qp_needs_reset && (!vi.sq.empty() || !vi.rq.empty()))
        return VIP_INVALID_STATE; // reap the descriptors of the last connection first
    vi.connector = std::move(c);
    vi.state = VIP_STATE_CONNECT_PENDING;
    vi.link_failed = false;
    vi.connector->tick();
    return VIP_SUCCESS;
}

// Polls a connection attempt once; VIP_NOT_DONE while it is in progress.  `client`:
// the attempt is VipxConnectRequestStart's (else a peer-to-peer one); the
// accept's or reject's private data goes to data/len.
VIP_RETURN poll_connect(VerbsVi &vi, bool client, VIP_VI_ATTRIBUTES *remote_attr, int wait_ms, void *data = nullptr,
                        VIP_ULONG *len = nullptr) {
    VerbsNic &nic = vi.nic;
    nic.pump_cm(wait_ms);
    std::lock_guard<std::mutex> g(nic.cm_mu);
    if (!vi.connector || (vi.connector->role == Connector::Role::Client) != client) return VIP_INVALID_STATE;
    vi.connector->tick();
    VIP_RETURN rc = vi.connector->result;
    if (rc == VIP_NOT_DONE) return rc;
    if (client) prov::copy_cm_data(vi.connector->reply_data.data(), vi.connector->reply_data.size(), data, len);
    if (rc == VIP_SUCCESS) {
        if (remote_attr) *remote_attr = vi.connector->peer_attr;
    } else {
        if (vi.cm_id) {
            rdma_destroy_id(vi.cm_id);
            vi.cm_id = nullptr;
        }
        vi.state = VIP_STATE_IDLE;
    }
    vi.connector.reset();
    return rc;
}

} // namespace

VIP_RETURN VerbsVi::connect_start(const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote, VIP_ULONG timeout_ms,
                                  const void *data, VIP_ULONG len) {
    return begin_connect(*this, Connector::Role::Client, local, remote, timeout_ms, data, len);
}

VIP_RETURN VerbsVi::connect_done(VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len) {
    return poll_connect(*this, true, remote_attr, 0, data, len);
}

VIP_RETURN VerbsVi::connect_wait(VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len) {
    VIP_RETURN rc;
    while ((rc = poll_connect(*this, true, remote_attr, 10, data, len)) == VIP_NOT_DONE) {}
    return rc;
}

VIP_RETURN VerbsVi::peer_request(const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote, VIP_ULONG timeout_ms) {
    int order = compare_net_addr(local, remote);
    if (order == 0) return VIP_INVALID_PARAMETER; // a VI cannot connect to itself
    // The lower address waits for the higher one's request.
    return begin_connect(*this, order < 0 ? Connector::Role::PeerPassive : Connector::Role::PeerActive, local, remote,
                         timeout_ms);
}

VIP_RETURN VerbsVi::peer_done(VIP_VI_ATTRIBUTES *remote_attr) { return poll_connect(*this, false, remote_attr, 0); }

VIP_RETURN VerbsVi::peer_wait(VIP_VI_ATTRIBUTES *remote_attr) {
    VIP_RETURN rc;
    while ((rc = poll_connect(*this, false, remote_attr, 10)) == VIP_NOT_DONE) {}
    return rc;
}

VIP_RETURN VerbsVi::disconnect() {
    {
        std::lock_guard<std::mutex> g(nic.cm_mu);
        VIP_VI_STATE st = state.load();
        // An idle VI has no connection: nothing to do (docs/vipl.md).  With
        // receives posted (before connecting) it still flushes them, below, so
        // the VI can be destroyed.
        if (st == VIP_STATE_IDLE && !connector && sq.empty() && rq.empty()) return VIP_SUCCESS;
        connector.reset(); // an attempt in progress is abandoned (its id destroyed)
        if (cm_id) {
            rdma_disconnect(cm_id);
            rdma_destroy_id(cm_id);
            cm_id = nullptr;
        }
        ibv_qp_attr qa{};
        qa.qp_state = IBV_QPS_ERR;
        ibv_modify_qp(qp, &qa, IBV_QP_STATE);
        qp_needs_reset = true;
        accepted = false;
        state = VIP_STATE_IDLE;
    }
    drain_after_error(*this);
    return VIP_SUCCESS;
}

} // namespace vipl::verbs
