// verbs_cm.hpp - VIPL connection management over librdmacm (internal).
//
// Every process listens on its NIC's IP address and its own rdma_cm port (the
// last two bytes of its host address).  The discriminators travel in the REQ's
// private data (56 bytes on IB/RoCE, hence MaxDiscriminatorLen = 20).  QPs are
// managed by the provider (created with the VI, so receives can be posted before
// connecting) and moved INIT->RTR->RTS with rdma_init_qp_attr.
//
// A REQ carries 56 bytes of private data (rdma_cm's own header takes the rest
// of the IB CM's 92): a 13-byte header, then 43 bytes for the two
// discriminators and the requester's private data (VipxConnectRequestStart).
// A discriminator up to 20 bytes travels verbatim; a longer one (up to 64)
// travels as a 16-byte digest, and is matched by digest.  The requester's
// discriminator handed to VipConnectWait's RemoteAddr is exact when it travelled
// verbatim (the usual case) and the digest otherwise (docs/verbs.md).  A REP
// (196 bytes) or REJ (148) carries an 8-byte header and up to VIPX_CM_DATA_MAX
// bytes of private data.  rdma_cm hands private data back padded to the CM
// message's size, so each carries its length explicitly.
//
// Client/server: VipxConnectRequestStart -> rdma_connect, its progress made by
// VipxConnectRequestDone polling the event channel (VipConnectRequest waits
// for it); VipConnectWait returns a pending CONNECT_REQUEST whose
// discriminator matches; Accept -> rdma_accept (and waits for ESTABLISHED);
// Reject -> rdma_reject with a VIPL reason.
// Peer-to-peer: the side with the lower address (host bytes, then
// discriminator) waits for the other's request; the higher one connects.  A
// request that finds no listener yet (peer not started) is retried until the
// caller's timeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "connection_rules.hpp"
#include "verbs_provider.hpp"

namespace vipl::verbs {

constexpr uint8_t kPrivMagic = 0x56; // 'V': a VIPL peer, not some other rdma_cm user
enum : uint8_t { kKindClient = 1, kKindPeer = 2, kKindAccept = 3, kKindReject = 4 };
enum : uint8_t { kRejectByUser = 1, kRejectReliability = 2, kRejectResource = 3 };

// Private data of a connection request (fits the 56 bytes of an IB CM REQ).
struct __attribute__((packed)) RequestPriv {
    uint8_t magic;
    uint8_t kind;        // kKindClient or kKindPeer
    uint8_t reliability; // VIP_SERVICE_*
    uint8_t flags;       // kFlag* below
    uint32_t max_transfer;
    uint16_t src_port; // the requester's listening port (network order)
    uint8_t dst_disc_len;
    uint8_t src_disc_len;
    uint8_t data_len;  // the requester's private data
    uint8_t bytes[43]; // destination, then source discriminator (encoded), then the private data
    size_t used() const { return size_t(dst_disc_len) + src_disc_len + data_len; }
    const uint8_t *src_disc() const { return bytes + dst_disc_len; }
    const uint8_t *data() const { return bytes + dst_disc_len + src_disc_len; }
};
enum : uint8_t { kFlagRdmaWrite = 1, kFlagRdmaRead = 2, kFlagDstDigest = 4, kFlagSrcDigest = 8 };
constexpr unsigned kDigestLen = 16;

// A discriminator as it travels: verbatim, or its digest when it is too long.
struct EncodedDisc {
    std::vector<uint8_t> bytes;
    bool digest = false;
};
EncodedDisc encode_disc(const std::vector<uint8_t> &d, size_t room);
// Does the travelled form (p, n, digest) name discriminator d?
bool disc_matches(const uint8_t *p, size_t n, bool digest, const std::vector<uint8_t> &d);
static_assert(sizeof(RequestPriv) <= 56, "an IB CM REQ carries 56 bytes of rdma_cm private data");
// Room for a request's private data next to its discriminators: Len + both encoded
// discriminators must fit (docs/verbs.md).
constexpr size_t kRequestRoom = sizeof(RequestPriv::bytes);

// Private data of an accept (REP) or reject (REJ).
struct __attribute__((packed)) ReplyPriv {
    uint8_t magic;
    uint8_t kind; // kKindAccept or kKindReject
    uint8_t reliability_or_reason;
    uint8_t flags;
    uint32_t max_transfer;
    uint8_t data_len; // the accepter's or rejecter's private data
    uint8_t data[VIPX_CM_DATA_MAX];
    // A reply of `kind` with `len` bytes of private data; size() bytes travel.
    static ReplyPriv make(uint8_t kind, uint8_t a, uint8_t flags, uint32_t max_transfer, const void *d, size_t len);
    size_t size() const { return offsetof(ReplyPriv, data) + data_len; }
    // The private data of a reply as rdma_cm hands it back (n bytes, padded):
    // false if it is not a well-formed VIPL reply of that kind.
    static bool parse(const void *p, size_t n, uint8_t kind, const ReplyPriv **out);
};
static_assert(sizeof(ReplyPriv) <= 148, "an IB CM REJ carries 148 bytes of private data (a REP 196)");

VIP_VI_ATTRIBUTES attrs_from(uint8_t reliability, uint8_t flags, uint32_t max_transfer);

// An incoming request that no VipConnectWait/peer connection has taken yet.
struct PendingRequest final : prov::Conn, CmOwner {
    PendingRequest(VerbsNic &n, rdma_cm_id *i) : nic(n), id(i) {}
    VIP_RETURN accept(prov::Vi *vi, const void *data, VIP_ULONG len) override;
    VIP_RETURN reject(const void *data, VIP_ULONG len) override;
    void on_event(rdma_cm_event *e) override;

    VerbsNic &nic;
    rdma_cm_id *id; // nullptr once handed to a VI or rejected
    RequestPriv req{};
    HostAddr from;     // requester's IP + listening port
    bool gone = false; // the requester gave up
};

// A connection being set up on one VI (active side, or the passive peer side).
struct Connector final : CmOwner {
    enum class Role { Client, PeerActive, PeerPassive };
    enum class Phase { Start, Resolving, Connecting, Waiting, Accepting, Retry, Done };
    using Clock = std::chrono::steady_clock;

    Connector(VerbsVi &v, Role r) : vi(v), role(r) {}
    ~Connector() override;
    void on_event(rdma_cm_event *e) override;
    // Advances the state machine (timers, peer matching); caller holds nic.cm_mu.
    void tick();
    void retry_later();
    void finish(VIP_RETURN rc);

    VerbsVi &vi;
    Role role;
    Phase phase = Phase::Start;
    HostAddr remote;
    std::vector<uint8_t> local_disc, remote_disc;
    RequestPriv request{}; // what the REQ carries (built when the request starts)
    size_t request_len = 0;
    std::vector<uint8_t> reply_data; // the accept's or reject's private data
    rdma_cm_id *id = nullptr;
    VIP_RETURN result = VIP_NOT_DONE;
    Clock::time_point deadline = Clock::time_point::max();
    Clock::time_point retry_at;
    std::chrono::milliseconds backoff{5};
    VIP_VI_ATTRIBUTES peer_attr{};
};

// Helpers shared by verbs_cm.cpp and verbs_connect.cpp.
uint8_t flags_of(const prov::ViAttr &a); // kFlagRdmaWrite/Read
using common::disc_of;                   // the discriminator bytes
rdma_conn_param conn_param(VerbsVi &vi, const void *priv, size_t len);
VIP_RETURN check_local(VerbsNic &nic, const VIP_NET_ADDRESS *a); // "local" host part is ours
std::chrono::steady_clock::time_point deadline_of(VIP_ULONG timeout_ms);

// Accepts `req` on `vi` without waiting for ESTABLISHED, sending `len` bytes of
// private data; caller holds nic.cm_mu.
// VIP_NOT_DONE: the requester withdrew meanwhile; the VI is as it was (a QP
// brought up for it was renewed with what is posted kept).
VIP_RETURN start_accept(VerbsVi &vi, PendingRequest &req, const void *data = nullptr, size_t len = 0);
// Moves a VI's QP to the error state and drains its flushed completions.
void drain_after_error(VerbsVi &vi);
VIP_RETURN check_vi_attr(VerbsNic &nic, const prov::ViAttr &a);

} // namespace vipl::verbs
