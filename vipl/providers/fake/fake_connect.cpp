// fake_connect.cpp - connection management through the switchboard:
// client/server (ConnectRequest / ConnectWait / Accept / Reject) and
// peer-to-peer (ConnectPeerRequest / Done / Wait), matched by device and
// discriminators as on a wire, plus disconnect.
#include <chrono>
#include <cstring>

#include "connection_rules.hpp"
#include "fake_provider.hpp"

namespace vipl::fake {

using common::disc_of;

namespace {
VIP_VI_ATTRIBUTES public_attr(const prov::ViAttr &a) {
    VIP_VI_ATTRIBUTES r{};
    r.ReliabilityLevel = a.reliability;
    r.MaxTransferSize = a.max_transfer;
    r.EnableRdmaWrite = a.rdma_write;
    r.EnableRdmaRead = a.rdma_read;
    return r;
}

uint64_t deadline_of(VIP_ULONG timeout_ms) {
    return timeout_ms == VIP_INFINITE ? UINT64_MAX : now_ns() + uint64_t(timeout_ms) * 1000000ull;
}

// Waits on the switchboard condition until pred() or the deadline; false at the deadline.
template <class Pred>
bool wait_until_ns(std::unique_lock<std::mutex> &lk, uint64_t deadline, Pred &&pred) {
    while (!pred()) {
        const uint64_t now = now_ns();
        if (now >= deadline) return false;
        if (deadline == UINT64_MAX) board().cv.wait(lk);
        else board().cv.wait_for(lk, std::chrono::nanoseconds(deadline - now));
    }
    return true;
}
} // namespace

void FakeVi::make_connected(FakeVi *p) {
    peer = p;
    peer_attr = public_attr(p->attr);
    send_seq = recv_seq = 0;
    seen_base = seen_bits = 0;
    cm = CmResult::Connected;
    state = ViState::Connected;
}

// ---------------------------------------------------------------- client/server
VIP_RETURN FakeVi::connect_start(const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote, VIP_ULONG timeout_ms,
                                 const void *data, VIP_ULONG len) {
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    Device *server = nullptr;
    if (VIP_RETURN rc = parse_address(remote, &server); rc != VIP_SUCCESS) return rc;
    if (state != ViState::Idle) return VIP_INVALID_STATE;
    const uint64_t id = b.next_request_id++;
    const auto *bytes = static_cast<const uint8_t *>(data);
    b.conn_requests.push_back(ConnRequest{id, this, server, disc_of(remote), disc_of(local), public_attr(attr), false,
                                          std::vector<uint8_t>(bytes, bytes + len)});
    state = ViState::Pending;
    cm = CmResult::Pending;
    cm_client = true;
    cm_request = id;
    cm_deadline_ns = deadline_of(timeout_ms);
    cm_data.clear();
    b.cv.notify_all();
    return VIP_SUCCESS;
}

void FakeVi::end_client_request() {
    std::erase_if(board().conn_requests, [id = cm_request](const ConnRequest &r) { return r.id == id; });
    cm_client = false;
}

VIP_RETURN FakeVi::client_result(VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len) {
    if (!cm_client) return VIP_INVALID_STATE;
    if (cm == CmResult::Pending && now_ns() < cm_deadline_ns) return VIP_NOT_DONE;
    end_client_request();
    switch (cm) {
    case CmResult::Connected: // (the VI may have broken since: VipQueryVi says so)
        if (remote_attr) *remote_attr = peer_attr;
        prov::copy_cm_data(cm_data.data(), cm_data.size(), data, len);
        return VIP_SUCCESS;
    case CmResult::Rejected:
        state = ViState::Idle;
        prov::copy_cm_data(cm_data.data(), cm_data.size(), data, len);
        return VIP_REJECT;
    case CmResult::Mismatch: state = ViState::Idle; return VIP_INVALID_RELIABILITY_LEVEL;
    default: // no answer by the deadline
        state = ViState::Idle;
        cm = CmResult::None;
        return VIP_TIMEOUT;
    }
}

VIP_RETURN FakeVi::connect_done(VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len) {
    std::lock_guard<std::mutex> g(board().mu);
    return client_result(remote_attr, data, len);
}

VIP_RETURN FakeVi::connect_wait(VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len) {
    std::unique_lock<std::mutex> lk(board().mu);
    if (cm_client) wait_until_ns(lk, cm_deadline_ns, [&] { return cm != CmResult::Pending; });
    return client_result(remote_attr, data, len);
}

VIP_RETURN NicHandle::connect_wait(const VIP_NET_ADDRESS *local, VIP_ULONG timeout_ms, VIP_NET_ADDRESS *remote,
                                   VIP_VI_ATTRIBUTES *remote_attr, prov::Conn **out) {
    if (!local) return VIP_INVALID_PARAMETER;
    const auto want = disc_of(local);
    Switchboard &b = board();
    std::unique_lock<std::mutex> lk(b.mu);
    ConnRequest *got = nullptr;
    const bool found = wait_until_ns(lk, deadline_of(timeout_ms), [&] {
        for (auto &r : b.conn_requests)
            if (r.server == dev && !r.claimed && r.want_disc == want) {
                got = &r;
                return true;
            }
        return false;
    });
    if (!found) return VIP_TIMEOUT;
    got->claimed = true;
    remote->HostAddressLen = 2;
    remote->DiscriminatorLen = VIP_UINT16(got->client_disc.size());
    remote->HostAddress[0] = got->client->dev->addr[0];
    remote->HostAddress[1] = got->client->dev->addr[1];
    if (!got->client_disc.empty())
        std::memcpy(remote->HostAddress + 2, got->client_disc.data(), got->client_disc.size());
    if (remote_attr) *remote_attr = got->attr;
    auto *c = new FakeConn;
    c->data_len = got->data.size();
    if (!got->data.empty()) std::memcpy(c->data, got->data.data(), got->data.size());
    c->request_id = got->id;
    c->dev = dev;
    *out = c;
    return VIP_SUCCESS;
}

namespace {
ConnRequest *find_request(uint64_t id) {
    for (auto &r : board().conn_requests)
        if (r.id == id) return &r;
    return nullptr;
}
} // namespace

VIP_RETURN FakeConn::accept(prov::Vi *pv, const void *data, VIP_ULONG len) {
    auto *vi = static_cast<FakeVi *>(pv);
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    if (vi->dev != dev) return VIP_INVALID_PARAMETER;
    ConnRequest *r = find_request(request_id);
    if (r) {
        if (VIP_RETURN rc = common::check_accept(vi->attr, r->attr); rc != VIP_SUCCESS) return rc;
    }
    if (vi->state != ViState::Idle) return VIP_INVALID_STATE;
    // The client gave up meanwhile: there is nobody to connect to.  The VI
    // stays Idle and the request stays until rejected (docs/vipl.md, one
    // behaviour on every provider).
    if (!r || r->client->cm != CmResult::Pending) return VIP_TIMEOUT;
    vi->make_connected(r->client);
    r->client->make_connected(vi);
    const auto *bytes = static_cast<const uint8_t *>(data);
    r->client->cm_data.assign(bytes, bytes + len);
    b.settle();
    return VIP_SUCCESS;
}

VIP_RETURN FakeConn::reject(const void *data, VIP_ULONG len) {
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    if (ConnRequest *r = find_request(request_id); r && r->client->cm == CmResult::Pending) {
        r->client->cm = CmResult::Rejected;
        const auto *bytes = static_cast<const uint8_t *>(data);
        r->client->cm_data.assign(bytes, bytes + len);
        b.settle();
    }
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- peer-to-peer
VIP_RETURN FakeVi::peer_request(const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote, VIP_ULONG timeout_ms) {
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    Device *there = nullptr;
    if (VIP_RETURN rc = parse_address(remote, &there); rc != VIP_SUCCESS) return rc;
    if (state != ViState::Idle) return VIP_INVALID_STATE;
    const auto mine = disc_of(local), theirs = disc_of(remote);
    state = ViState::Pending;
    cm = CmResult::Pending;
    // The other side's request, if it came first: it was sent from `there`,
    // to this device, naming our discriminator and its own.
    for (auto it = b.peer_requests.begin(); it != b.peer_requests.end(); ++it) {
        if (it->vi->dev != there || it->remote != dev || it->mine != theirs || it->theirs != mine) continue;
        FakeVi *other = it->vi;
        b.peer_requests.erase(it);
        if (other->attr.reliability != attr.reliability) {
            cm = other->cm = CmResult::Mismatch;
        } else {
            make_connected(other);
            other->make_connected(this);
        }
        b.settle();
        return VIP_SUCCESS;
    }
    b.peer_requests.push_back(PeerRequest{this, there, mine, theirs, deadline_of(timeout_ms)});
    b.settle();
    return VIP_SUCCESS;
}

VIP_RETURN FakeVi::peer_done(VIP_VI_ATTRIBUTES *remote_attr) {
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    if (state == ViState::Connected) {
        if (remote_attr) *remote_attr = peer_attr;
        return VIP_SUCCESS;
    }
    if (state != ViState::Pending || cm_client) return VIP_INVALID_STATE;
    if (cm == CmResult::Mismatch) {
        state = ViState::Idle;
        cm = CmResult::None;
        return VIP_INVALID_RELIABILITY_LEVEL;
    }
    for (auto it = b.peer_requests.begin(); it != b.peer_requests.end(); ++it)
        if (it->vi == this && now_ns() >= it->deadline_ns) {
            b.peer_requests.erase(it);
            state = ViState::Idle;
            cm = CmResult::None;
            return VIP_TIMEOUT;
        }
    return VIP_NOT_DONE;
}

VIP_RETURN FakeVi::peer_wait(VIP_VI_ATTRIBUTES *remote_attr) {
    uint64_t deadline = UINT64_MAX;
    {
        std::lock_guard<std::mutex> g(board().mu);
        for (auto &r : board().peer_requests)
            if (r.vi == this) deadline = r.deadline_ns;
    }
    for (;;) {
        const VIP_RETURN rc = peer_done(remote_attr);
        if (rc != VIP_NOT_DONE) return rc;
        std::unique_lock<std::mutex> lk(board().mu);
        // Woken by any change; the request's own deadline ends the wait.
        wait_until_ns(lk, deadline, [&] { return state != ViState::Pending || cm != CmResult::Pending; });
    }
}

// ---------------------------------------------------------------- disconnect
VIP_RETURN FakeVi::disconnect() {
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    if (state == ViState::Pending)
        std::erase_if(b.peer_requests, [this](const PeerRequest &r) { return r.vi == this; });
    if (cm_client) end_client_request(); // a client request abandoned: its server sees it no more
    if (state == ViState::Connected) {
        FakeVi *p = peer;
        b.forget_held(this);
        // The peer learns of it as a lost connection; this end's descriptors
        // are flushed so the application can reclaim them.
        if (p && p->peer == this && p->state == ViState::Connected) b.set_error(p, VIP_ERROR_CONN_LOST, nullptr);
    }
    flush(); // also receives posted while idle
    if (peer && peer->peer == this) peer->peer = nullptr;
    peer = nullptr;
    state = ViState::Idle;
    cm = CmResult::None;
    b.settle();
    return VIP_SUCCESS;
}

} // namespace vipl::fake
