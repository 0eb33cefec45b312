// verbs_cm.cpp - connection management over librdmacm (see verbs_cm.hpp).
#include "verbs_cm.hpp"
#include "connection_rules.hpp"
#include "viastack_log.hpp"
#include "viastack_env.hpp"

#include <arpa/inet.h>
#include <poll.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace vipl::verbs {

namespace {

using Clock = std::chrono::steady_clock;

// How long an accepting side waits for the requester's RTU (ESTABLISHED).
constexpr auto kEstablishTimeout = std::chrono::seconds(30);
// How long an accept whose requester withdrew waits for that requester's retry
// before it answers VIP_TIMEOUT as for a request given up (docs/vipl.md).
constexpr auto kRetryWait = std::chrono::seconds(2);

// 128-bit digest of a long discriminator: two 64-bit FNV-1a lanes with different
// offsets, each finished with a murmur3 mix.  Not cryptographic: it only has to
// keep distinct discriminators of cooperating programs apart.
std::vector<uint8_t> digest_of(const std::vector<uint8_t> &d) {
    uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull ^ d.size();
    for (uint8_t b : d) {
        h1 = (h1 ^ b) * 0x100000001b3ull;
        h2 = (h2 ^ uint8_t(b + 0x5b)) * 0x100000001b3ull;
    }
    auto mix = [](uint64_t k) {
        k ^= k >> 33;
        k *= 0xff51afd7ed558ccdull;
        k ^= k >> 33;
        k *= 0xc4ceb9fe1a85ec53ull;
        return k ^ (k >> 33);
    };
    h1 = mix(h1 ^ h2);
    h2 = mix(h2 + h1);
    std::vector<uint8_t> out(kDigestLen);
    for (int i = 0; i < 8; i++) {
        out[i] = uint8_t(h1 >> (8 * i));
        out[8 + i] = uint8_t(h2 >> (8 * i));
    }
    return out;
}

// Waits (pumping connection events) until pred() or the deadline.  The events
// are pumped at least once, so a deadline already past (Timeout 0) polls.
template <class Pred>
bool pump_until(VerbsNic &nic, Clock::time_point deadline, Pred pred) {
    for (;;) {
        if (pred()) return true;
        auto now = Clock::now();
        if (now >= deadline) {
            nic.pump_cm(0);
            return pred();
        }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
        nic.pump_cm(int(std::min<long>(10, left)));
    }
}

} // namespace

// ---- shared with verbs_connect.cpp ------------------------------------------------
uint8_t flags_of(const prov::ViAttr &a) {
    return uint8_t((a.rdma_write ? kFlagRdmaWrite : 0) | (a.rdma_read ? kFlagRdmaRead : 0));
}

static uint8_t rd_atomic(const VerbsNic &nic) {
    return uint8_t(std::min({nic.dev_attr.max_qp_rd_atom, nic.dev_attr.max_qp_init_rd_atom, 16}));
}

rdma_conn_param conn_param(VerbsVi &vi, const void *priv, size_t len) {
    rdma_conn_param p{};
    p.private_data = priv;
    p.private_data_len = uint8_t(len);
    p.responder_resources = vi.reliable() ? rd_atomic(vi.nic) : 0;
    p.initiator_depth = vi.reliable() ? rd_atomic(vi.nic) : 0;
    // 6, not 7: rxe reads a transport retry count of 7 as "retry forever" (as IB
    // does only for RNR), and a send whose NAK the responder dropped would then
    // never complete.  6 retries of the path's ACK timeout bound it.
    p.retry_count = 6;
    p.rnr_retry_count = vi.nic.rnr_retry;
    p.qp_num = vi.qp->qp_num;
    return p;
}

// Checks a VIP_NET_ADDRESS given as "local": the host part (if any) must be ours.
VIP_RETURN check_local(VerbsNic &nic, const VIP_NET_ADDRESS *a) {
    if (a->DiscriminatorLen > kMaxDiscriminator) return VIP_INVALID_PARAMETER;
    if (a->HostAddressLen != 0 &&
        (a->HostAddressLen != nic.local_addr_bytes.size() ||
         std::memcmp(a->HostAddress, nic.local_addr_bytes.data(), a->HostAddressLen) != 0))
        return VIP_INVALID_PARAMETER;
    return VIP_SUCCESS;
}

Clock::time_point deadline_of(VIP_ULONG timeout_ms) {
    if (timeout_ms == VIP_INFINITE) return Clock::time_point::max();
    return Clock::now() + std::chrono::milliseconds(timeout_ms);
}

EncodedDisc encode_disc(const std::vector<uint8_t> &d, size_t room) {
    if (d.size() <= kRawDiscriminator && d.size() <= room) return {d, false};
    return {digest_of(d), true};
}

bool disc_matches(const uint8_t *p, size_t n, bool digest, const std::vector<uint8_t> &d) {
    if (digest) return n == kDigestLen && digest_of(d) == std::vector<uint8_t>(p, p + n);
    return n == d.size() && std::equal(d.begin(), d.end(), p);
}

ReplyPriv ReplyPriv::make(uint8_t kind, uint8_t a, uint8_t flags, uint32_t max_transfer, const void *d, size_t len) {
    ReplyPriv r{};
    r.magic = kPrivMagic;
    r.kind = kind;
    r.reliability_or_reason = a;
    r.flags = flags;
    r.max_transfer = max_transfer;
    r.data_len = uint8_t(len);
    if (len) std::memcpy(r.data, d, len);
    return r;
}

bool ReplyPriv::parse(const void *p, size_t n, uint8_t kind, const ReplyPriv **out) {
    const auto *r = static_cast<const ReplyPriv *>(p);
    if (!r || n < offsetof(ReplyPriv, data) || r->magic != kPrivMagic || r->kind != kind ||
        r->data_len > VIPX_CM_DATA_MAX || n < r->size())
        return false;
    *out = r;
    return true;
}

VIP_VI_ATTRIBUTES attrs_from(uint8_t reliability, uint8_t flags, uint32_t max_transfer) {
    VIP_VI_ATTRIBUTES a{};
    a.ReliabilityLevel = reliability;
    a.MaxTransferSize = max_transfer;
    a.QoS = nullptr;
    a.Ptag = nullptr;
    a.EnableRdmaWrite = (flags & kFlagRdmaWrite) ? VIP_TRUE : VIP_FALSE;
    a.EnableRdmaRead = (flags & kFlagRdmaRead) ? VIP_TRUE : VIP_FALSE;
    return a;
}

// ---- the NIC's event pump -------------------------------------------------------

void VerbsNic::pump_cm(int wait_ms) {
    std::lock_guard<std::mutex> g(cm_mu);
    if (wait_ms > 0) {
        pollfd pfd{cm_channel->fd, POLLIN, 0};
        ::poll(&pfd, 1, wait_ms);
    }
    dispatch_cm_locked();
}

// A peer's disconnect arrives only as a connection event, and only that event
// stops the VI's queue pair: the device may never complete what was posted to
// the gone peer.  A program that only polls (VipRecvDone, VipCQDone: AM's
// spinning wait) would then never see its VI break as it does on nicfw, so
// empty polls read the events now and then: one in 1024 on each thread (a
// read that finds nothing, most times), skipped while another thread holds
// the event channel (it is reading them).
void VerbsNic::idle_poll() {
    static thread_local uint32_t polls;
    if ((++polls & 1023) != 0) return;
    std::unique_lock<std::mutex> g(cm_mu, std::try_to_lock);
    if (g.owns_lock()) dispatch_cm_locked();
}

void VerbsNic::dispatch_cm_locked() {
    for (rdma_cm_id *id : doomed_) // no event of theirs is unacked here
        rdma_destroy_id(id);
    doomed_.clear();
    // VIPL_VERBS_DEBUG=1 (any value but 0/no/off/false), read once.
    static const bool debug = viastack::env::flag("VIPL_VERBS_DEBUG");
    rdma_cm_event *e = nullptr;
    while (rdma_get_cm_event(cm_channel, &e) == 0) {
        // Control path only: connection events, for diagnosing setups
        // (VIASTACK_LOG=verbs=debug, or VIPL_VERBS_DEBUG=1 at the default level).
        viastack::log::log(viastack::log::Layer::verbs,
                           debug ? viastack::log::Level::warn : viastack::log::Level::debug,
                           "{} on id {} (ctx {}) status {} (pid {})", rdma_event_str(e->event), (void *)e->id,
                           e->id->context, e->status, int(getpid()));
        if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
            auto *req = new PendingRequest(*this, e->id);
            e->id->context = req;
            const auto *p = static_cast<const RequestPriv *>(e->param.conn.private_data);
            size_t n = e->param.conn.private_data_len;
            if (p && n >= offsetof(RequestPriv, bytes) && p->magic == kPrivMagic &&
                (p->kind == kKindClient || p->kind == kKindPeer) && p->used() <= kRequestRoom &&
                n >= offsetof(RequestPriv, bytes) + p->used()) {
                std::memcpy(&req->req, p, std::min(n, sizeof(RequestPriv)));
                req->from = HostAddr::from_sockaddr(rdma_get_peer_addr(e->id));
                req->from.port = ntohs(p->src_port);
                pending.push_back(req);
            } else {
                // Not a VIPL peer: refuse it rather than leave it hanging.
                rdma_reject(e->id, nullptr, 0);
                req->id = nullptr;
                doom(e->id);
                delete req;
            }
        } else if (auto *owner = static_cast<CmOwner *>(e->id->context)) {
            owner->on_event(e);
        }
        rdma_ack_cm_event(e);
        for (rdma_cm_id *id : doomed_) rdma_destroy_id(id);
        doomed_.clear();
    }
    // Requests whose requester gave up are dropped.
    for (auto it = pending.begin(); it != pending.end();) {
        if ((*it)->gone) {
            if ((*it)->id) rdma_destroy_id((*it)->id);
            delete *it;
            it = pending.erase(it);
        } else {
            ++it;
        }
    }
}

// ---- incoming requests ------------------------------------------------------------

void PendingRequest::on_event(rdma_cm_event *e) {
    // Before it is accepted, any event on the request means the requester left.
    if (e->event == RDMA_CM_EVENT_REJECTED || e->event == RDMA_CM_EVENT_DISCONNECTED ||
        e->event == RDMA_CM_EVENT_CONNECT_ERROR || e->event == RDMA_CM_EVENT_UNREACHABLE ||
        e->event == RDMA_CM_EVENT_TIMEWAIT_EXIT || e->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
        gone = true;
}

VIP_RETURN start_accept(VerbsVi &vi, PendingRequest &req, const void *data, size_t len) {
    VerbsNic &nic = vi.nic;
    auto refuse = [&](uint8_t reason) {
        ReplyPriv r = ReplyPriv::make(kKindReject, reason, 0, 0, nullptr, 0);
        rdma_reject(req.id, &r, uint8_t(r.size()));
        nic.doom(req.id);
        req.id = nullptr;
    };
    if (req.id->verbs != nic.ctx) {
        viastack_log(VIASTACK_LOG_VERBS, VIASTACK_LOG_ERROR,
                     "a connection request arrived through another RDMA "
                     "device than %s; refused",
                     nic.name.c_str());
        refuse(kRejectResource);
        return VIP_ERROR_RESOURCE;
    }
    if (req.req.reliability != vi.attr.reliability) {
        refuse(kRejectReliability);
        return VIP_INVALID_RELIABILITY_LEVEL;
    }
    if (vi.qp_needs_reset) {
        if (!vi.sq.empty() || !vi.rq.empty()) return VIP_INVALID_STATE;
        if (vi.reset_qp() != VIP_SUCCESS) return VIP_ERROR_RESOURCE;
    }
    bool peer_gone = false;
    if (vi.bring_up(req.id, &peer_gone) != VIP_SUCCESS) {
        refuse(kRejectResource);
        // The QP may have left INIT: a new one keeps what is posted.
        if (vi.renew_qp() != VIP_SUCCESS || !peer_gone) return VIP_ERROR_RESOURCE;
        return VIP_NOT_DONE; // the requester withdrew; the VI is as it was
    }
    ReplyPriv r = ReplyPriv::make(kKindAccept, uint8_t(vi.attr.reliability), flags_of(vi.attr),
                                  htonl(uint32_t(vi.attr.max_transfer)), data, len);
    rdma_conn_param p = conn_param(vi, &r, r.size());
    vi.remote_attr = attrs_from(req.req.reliability, req.req.flags, ntohl(req.req.max_transfer));
    const VIP_VI_STATE before = vi.state.load(); // (Idle, or connect-pending for a passive peer)
    vi.link_failed = false;
    vi.established = false;
    vi.accepted = true;
    vi.state = VIP_STATE_CONNECT_PENDING;
    vi.cm_id = req.id;
    req.id->context = &vi.link;
    req.id = nullptr;
    if (rdma_accept(vi.cm_id, &p) != 0) {
        // EINVAL: the request is no longer there to accept (its requester
        // withdrew it since bring_up read it); accepting then follows the retry.
        const int err = errno;
        vi.accepted = false;
        vi.state = before;
        nic.doom(vi.cm_id);
        vi.cm_id = nullptr;
        if (vi.renew_qp() == VIP_SUCCESS && err == EINVAL) return VIP_NOT_DONE;
        viastack_log(VIASTACK_LOG_VERBS, VIASTACK_LOG_ERROR, "rdma_accept: %s", std::strerror(err));
        return VIP_ERROR_RESOURCE;
    }
    return VIP_SUCCESS;
}

namespace {
// A retry of `req` (same requester address, kind and discriminators) waiting in
// the NIC: a requester whose timeout expired during the handshake sends a new
// request, and the accepting side takes that one instead.
PendingRequest *take_retry_of(VerbsNic &nic, const PendingRequest &req) {
    for (auto it = nic.pending.begin(); it != nic.pending.end(); ++it) {
        const RequestPriv &a = (*it)->req, &b = req.req;
        if (!(*it)->gone && (*it)->from == req.from && a.kind == b.kind && a.dst_disc_len == b.dst_disc_len &&
            a.src_disc_len == b.src_disc_len &&
            std::memcmp(a.bytes, b.bytes, size_t(a.dst_disc_len) + a.src_disc_len) == 0) {
            PendingRequest *r = *it;
            nic.pending.erase(it);
            return r;
        }
    }
    return nullptr;
}
} // namespace

VIP_RETURN PendingRequest::accept(prov::Vi *pvi, const void *data, VIP_ULONG len) {
    auto &vi = *static_cast<VerbsVi *>(pvi);
    if (&vi.nic != &nic) return VIP_INVALID_PARAMETER;
    {
        std::lock_guard<std::mutex> g(nic.cm_mu);
        if (VIP_RETURN rc =
                common::check_accept(vi.attr, attrs_from(req.reliability, req.flags, ntohl(req.max_transfer)));
            rc != VIP_SUCCESS)
            return rc; // the request stays: accept it with another VI or reject it
        if (vi.state.load() != VIP_STATE_IDLE || vi.connector) return VIP_INVALID_STATE;
    }
    // Under emulation a handshake can outlast a short requester timeout: the
    // requester withdraws and retries.  Accepting follows it to its retry, up to
    // kEstablishTimeout, or kRetryWait for a retry that has not come yet; a QP
    // the withdrawn attempt moved on is renewed with its receives kept.
    const auto deadline = Clock::now() + kEstablishTimeout;
    PendingRequest *cur = this;
    std::unique_ptr<PendingRequest> retry; // a retry we took from the NIC's list
    for (;;) {
        VIP_RETURN rc = VIP_NOT_DONE;
        nic.pump_cm(0); // learn about a withdrawal before touching the QP
        {
            std::lock_guard<std::mutex> g(nic.cm_mu);
            if (cur->id && !cur->gone) rc = start_accept(vi, *cur, data, len);
        }
        if (rc == VIP_SUCCESS) {
            bool ok = pump_until(nic, deadline, [&] { return vi.established || vi.link_failed; });
            if (ok && vi.established) return VIP_SUCCESS; // (the VI may be in the error state already if the peer left)
            std::lock_guard<std::mutex> g(nic.cm_mu);
            if (vi.cm_id) {
                rdma_destroy_id(vi.cm_id);
                vi.cm_id = nullptr;
            }
            vi.accepted = false;
            vi.state = VIP_STATE_IDLE;
            // The QP is in RTS for a requester that left: the VI goes back to
            // Idle with its receives kept, ready for the retry (docs/vipl.md).
            if (vi.renew_qp() != VIP_SUCCESS) return VIP_ERROR_RESOURCE;
            if (!ok) return VIP_TIMEOUT;
        } else if (rc != VIP_NOT_DONE) {
            return rc;
        }
        // Withdrawn: wait a little for the requester's retry.
        PendingRequest *next = nullptr;
        pump_until(nic, std::min(deadline, Clock::now() + kRetryWait), [&] {
            std::lock_guard<std::mutex> g(nic.cm_mu);
            return (next = take_retry_of(nic, *cur)) != nullptr;
        });
        if (!next) return VIP_TIMEOUT; // the requester gave up (the request stays until rejected)
        retry.reset(next);
        cur = next;
    }
}

VIP_RETURN PendingRequest::reject(const void *data, VIP_ULONG len) {
    std::lock_guard<std::mutex> g(nic.cm_mu);
    if (!id) return VIP_SUCCESS; // the requester withdrew: nobody to tell, the handle is freed
    ReplyPriv r = ReplyPriv::make(kKindReject, kRejectByUser, 0, 0, data, len);
    rdma_reject(id, &r, uint8_t(r.size()));
    rdma_destroy_id(id);
    id = nullptr;
    return VIP_SUCCESS;
}

VIP_RETURN VerbsNic::connect_wait(const VIP_NET_ADDRESS *local, VIP_ULONG timeout_ms, VIP_NET_ADDRESS *remote,
                                  VIP_VI_ATTRIBUTES *remote_attr, prov::Conn **out) {
    VIP_RETURN rc = check_local(*this, local);
    if (rc != VIP_SUCCESS) return rc;
    const std::vector<uint8_t> want = disc_of(local);
    PendingRequest *found = nullptr;
    pump_until(*this, deadline_of(timeout_ms), [&] {
        std::lock_guard<std::mutex> g(cm_mu);
        for (auto it = pending.begin(); it != pending.end(); ++it) {
            const RequestPriv &q = (*it)->req;
            if (!(*it)->gone && q.kind == kKindClient &&
                disc_matches(q.bytes, q.dst_disc_len, q.flags & kFlagDstDigest, want)) {
                found = *it;
                pending.erase(it);
                return true;
            }
        }
        return false;
    });
    if (!found) return VIP_TIMEOUT;
    const RequestPriv &q = found->req;
    if (remote) {
        std::vector<uint8_t> h = found->from.bytes();
        remote->HostAddressLen = uint16_t(h.size());
        remote->DiscriminatorLen = q.src_disc_len;
        std::memcpy(remote->HostAddress, h.data(), h.size());
        std::memcpy(remote->HostAddress + h.size(), q.src_disc(), q.src_disc_len);
    }
    found->data_len = q.data_len;
    std::memcpy(found->data, q.data(), q.data_len);
    if (remote_attr) *remote_attr = attrs_from(q.reliability, q.flags, ntohl(q.max_transfer));
    *out = found;
    return VIP_SUCCESS;
}

// ---- a VI's own connection ----------------------------------------------------------

void ViLink::on_event(rdma_cm_event *e) {
    switch (e->event) {
    case RDMA_CM_EVENT_ESTABLISHED: {
        VIP_VI_STATE pending = VIP_STATE_CONNECT_PENDING;
        if (vi->state.compare_exchange_strong(pending, VIP_STATE_CONNECTED)) vi->established = true;
        vi->accepted = false;
        break;
    }
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
        if (vi->state.load() == VIP_STATE_CONNECTED) {
            // The peer went away: stop the QP (posted descriptors are flushed).
            ibv_qp_attr qa{};
            qa.qp_state = IBV_QPS_ERR;
            ibv_modify_qp(vi->qp, &qa, IBV_QP_STATE);
            vi->qp_needs_reset = true;
            vi->state = VIP_STATE_ERROR;
            vi->nic.report_error(VIP_ERROR_CONN_LOST, VIP_RESOURCE_VI, vi, nullptr, 0);
            break;
        }
        [[fallthrough]];
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
        if (vi->state.load() == VIP_STATE_CONNECT_PENDING) {
            vi->accepted = false;
            vi->link_failed = true;
        }
        break;
    default: break;
    }
}

} // namespace vipl::verbs
