// objects.hpp - the VIPL objects of the nicfw provider: a VI (its host-side
// work queues, doorbells, and the context the firmware keeps for it), a
// completion queue, and a connection request handed to VipConnectAccept.
//
// A VI is shared by the host and the firmware the way a VI's context in NIC
// memory is: the host writes doorbells and reaps descriptors (objects.cpp),
// the firmware owns the `fw` part (firmware.cpp, tx.cpp, rx.cpp), connection
// management sets the peer (connect.cpp); `state` is read by all of them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "config.hpp"
#include "cq_fifo.hpp"
#include "spsc_ring.hpp"
#include "vi_overrides.hpp"
#include "vipl.h"
#include "vipl_provider.hpp"
#include "work_ring.hpp"

namespace nicfw {

// The doorbell FIFOs and the receive descriptors the firmware holds: the
// providers' common ring.
using vipl::common::SpscRing;

class NicHw;
class ViImpl;
struct LinkState;
class CqImpl;

// Connection state of a VI (VIP_VI_STATE as the firmware keeps it).  Written by
// host calls (connect, disconnect) and the firmware (errors), read by both.
enum class ViState : uint8_t { Idle, Connected, Pending, Error };
static_assert(std::atomic<ViState>::is_always_lock_free);

// The answer to a VI's pending connection request (VipConnectRequest,
// VipConnectPeerRequest), set by the firmware when the peer replies.
enum class ConnResult : uint8_t {
    Pending,             // no answer yet
    Connected,           // accepted / matched
    Rejected,            // the server called VipConnectReject
    Cancelled,           // we gave up (timeout) and told the server
    ReliabilityMismatch, // peer-to-peer: the two VIs asked for different reliability levels
    ServerGone,          // client/server: the server's process exited before it answered
};

// A token the host writes into a doorbell: which descriptor was posted.
struct Token {
    VIP_DESCRIPTOR *desc;
    VIP_MEM_HANDLE mh;
};

// Firmware-side state of one posted send-queue descriptor.
struct TxEntry {
    VIP_DESCRIPTOR *desc = nullptr;
    VIP_MEM_HANDLE mh = 0;
    uint32_t status = 0;                 // status bits to write at completion
    uint32_t length = 0;                 // bytes transferred
    bool ready = false;                  // may complete (once every earlier entry has)
    bool awaiting = false;               // waiting for an Ack / read response
    bool awaiting_transport_ack = false; // reliable transport: waiting for the peer NIC's acknowledgement of `seq`
    uint32_t seq = 0;
    uint64_t due = 0; // cost model: the NIC has sent it (and written its status) at this time
};

struct CqEntry {
    uint32_t vi;
    bool recv;
};

// A notify handler armed on a queue (one-shot).
struct NotifySlot {
    std::atomic<bool> armed{false};
    VIP_PVOID ctx = nullptr;
    VIP_DESCRIPTOR_NOTIFY_HANDLER desc_handler = nullptr;
    VIP_CQ_NOTIFY_HANDLER cq_handler = nullptr;
};

class CqImpl : public vipl::prov::Cq {
public:
    CqImpl(NicHw *hw, size_t entries) : hw(hw) { ring.resize(entries); }
    VIP_RETURN done(VIP_VI_HANDLE *vi, bool *recv) override;
    VIP_RETURN wait(VIP_ULONG timeout_ms, VIP_VI_HANDLE *vi, bool *recv) override;
    VIP_RETURN resize(VIP_ULONG entries) override;
    VIP_RETURN notify(VIP_PVOID ctx, VIP_CQ_NOTIFY_HANDLER h) override;

    NicHw *const hw;
    vipl::common::CqFifo<CqEntry> ring; // pushed by the firmware, popped by the host
    std::atomic<int> bound{0};          // VIs bound to it
    std::atomic<bool> overrun{false};
    NotifySlot notify_slot;
    vipl::prov::Nic *owner = nullptr; // the NIC handle it was made through

private:
    bool pop_live(VIP_VI_HANDLE *vi, bool *recv);
};

class ViImpl : public vipl::prov::Vi {
public:
    ViImpl(NicHw *hw, uint32_t index, const vipl::prov::ViAttr &a, CqImpl *scq, CqImpl *rcq);
    ~ViImpl() override;

    VIPL_PROV_VI_OVERRIDES; // the provider interface (vipl_provider.hpp)

    // Changes the connection state (release order) and publishes the VI's part
    // of the protection table peers read for one-sided RDMA (published.hpp):
    // its peer, ptag and RDMA enables while Connected, nothing otherwise.
    void set_state(ViState s);

    // Host asks the firmware to complete everything it holds for this VI as
    // flushed (disconnect), and waits until it has.
    void request_flush();

    NicHw *const hw;
    const uint32_t index;
    vipl::prov::Nic *owner = nullptr; // the NIC handle it was made through (errors, notifies)
    vipl::prov::ViAttr attr;
    uint32_t ptag_id = 0; // the VI's protection tag, as the tables store it
    CqImpl *const send_cq;
    CqImpl *const recv_cq;

    // host side: descriptors posted and not yet reaped by Done/Wait, in order
    // (the work queues every provider shares, vipl/providers/common)
    vipl::common::WorkRing<> host_sq;
    vipl::common::WorkRing<> host_rq;
    // doorbells: host -> firmware
    SpscRing<Token> bell_sq;
    SpscRing<Token> bell_rq;
    std::atomic<uint32_t> flush_req{0}; // host asks the firmware to flush (disconnect/error)
    std::atomic<uint32_t> flush_done{0};

    // The firmware's context for this VI (touched only by whoever runs the firmware).
    struct FirmwareContext {
        std::vector<TxEntry> txq = std::vector<TxEntry>(kMaxQueue); // ring of kMaxQueue entries
        uint64_t tx_head = 0;                                       // oldest not yet completed
        uint64_t tx_next = 0;                                       // next to transmit
        uint64_t tx_tail = 0;                                       // one past the newest fetched from the doorbell
        uint64_t tx_await = 0;                                      // oldest awaiting an Ack / read response
        SpscRing<Token> rxq{kMaxQueue};                             // receive descriptors the firmware holds
        uint32_t send_seq = 0;
        uint32_t recv_seq = 0;
        std::unique_ptr<LinkState> link; // reliable transport (reliable.hpp), when on
    } fw;

    // connection (connect.cpp; the firmware reads the peer of a Connected VI)
    std::atomic<ViState> state{ViState::Idle};
    // Set by set_state(Connected) when nothing fixed for the connection keeps
    // a send off the firmware's fast transmit (post_send's common case),
    // cleared by every other state (error, disconnect); the state itself is
    // still checked on each send, under the firmware's owner section.
    std::atomic<bool> send_fast{false};
    uint16_t peer_nic = 0;
    uint16_t peer_vi = 0;
    VIP_VI_ATTRIBUTES peer_attr{};
    uint32_t cm_nonce = 0;   // our pending connection request
    uint32_t peer_nonce = 0; // the peer's request this connection answered
    // This end's request of the connection (the peer's peer_nonce).  Disc and
    // ConnErr carry it, and a VI takes a notice only for its own connection: a
    // notice that waited in the backlog can arrive after a newer connection
    // of the same two VIs was made (connect.cpp, on_packet).
    uint32_t own_nonce = 0;
    std::atomic<ConnResult> cm_result{ConnResult::Pending};
    // A client request (VipxConnectRequestStart) whose result VipxConnectRequestDone
    // has not handed back yet: its server, when it gives up, and the private
    // data of the answer (accept or reject).  Under the connection manager's mutex.
    bool cm_client = false;
    uint16_t cm_server = 0;
    uint64_t cm_deadline_ns = 0;
    unsigned char cm_data[VIPX_CM_DATA_MAX] = {};
    uint32_t cm_data_len = 0;

    NotifySlot notify_send, notify_recv;

private:
    // Queues d on hostq and rings the doorbell (the firmware takes the token).
    VIP_RETURN post(vipl::common::WorkRing<> &hostq, SpscRing<Token> &bell, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh);
    void push_token(SpscRing<Token> &bell, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh);
    // post_send and post_recv beyond their common case (objects.cpp).
    __attribute__((noinline)) VIP_RETURN post_send_general(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh);
    __attribute__((noinline)) VIP_RETURN post_recv_general(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh);
    template <bool cost>
    VIP_RETURN post_recv_alone(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh);
    __attribute__((noinline)) VIP_RETURN post_recv_kick(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh, bool pushed);
    VIP_RETURN done(vipl::common::WorkRing<> &hostq, VIP_DESCRIPTOR **d);
    [[gnu::noinline]] VIP_RETURN done_poll(vipl::common::WorkRing<> &hostq, VIP_DESCRIPTOR **d, bool take);
    VIP_RETURN wait(vipl::common::WorkRing<> &hostq, VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d);
    friend class Agent; // reaps a completed descriptor for an armed notify
};

// A connection request taken by VipConnectWait, answered by Accept or Reject.
class ConnImpl : public vipl::prov::Conn {
public:
    VIP_RETURN accept(vipl::prov::Vi *vi, const void *data, VIP_ULONG len) override;
    VIP_RETURN reject(const void *data, VIP_ULONG len) override;
    NicHw *hw = nullptr;
    uint16_t client_nic = 0;
    uint16_t client_vi = 0;
    uint32_t nonce = 0;
    VIP_VI_ATTRIBUTES client_attr{};
};

// The attributes a VI may be created (or changed) with on this NIC.
VIP_RETURN check_vi_attr(const NicHw &hw, const vipl::prov::ViAttr &a);

} // namespace nicfw
