// nic.hpp - the emulated LANai-style NIC: its tables (memory regions, ptags,
// VIs, CQs), its SRAM staging buffers, doorbells, and the firmware control
// program (MCP) that moves data between host memory and the wire.
//
// Everything here is process-local: the NIC of a process lives in that process,
// and only the wire FIFOs (wire.hpp) are shared between processes.  The firmware
// runs either on its own thread (the LANai's concurrency) or inline, stepped by
// the host thread from doorbell writes and completion polls.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstring>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "spsc.hpp"
#include "vipl.h"
#include "vipl_provider.hpp"
#include "wire.hpp"

namespace nicfw {

uint64_t now_ns();
class NicHw;
class ViImpl;
class CqImpl;

enum class Mode { Inline, Thread };
enum class Doorbell { Fifo, Emulated };

// Timing profile: delays the firmware adds to model a slower NIC (or a synthetic
// one with known LogP parameters for checking the LogP extraction).
struct Profile {
    std::string name = "none";
    uint32_t send_ns = 0;   // host send overhead added to each post (o_s)
    uint32_t recv_ns = 0;   // host receive overhead added to each receive completion (o_r)
    uint32_t wire_ns = 0;   // latency added between transmit and delivery (L)
    uint32_t gap_ns = 0;    // minimum interval between packet injections (g)
};

struct Config {
    Mode mode = Mode::Inline;
    Doorbell doorbell = Doorbell::Fifo;
    size_t ring_bytes = 1u << 20;
    bool crc = true;
    bool progress_thread = false; // inline mode: a sleeping agent serves the NIC while the host is away
    Profile profile;
    static Config from_env(); // throws std::runtime_error naming the bad variable
};

constexpr uint32_t kMaxVi = 1024;
constexpr uint32_t kMaxRegions = 65535;
constexpr uint32_t kMaxQueue = 4096;       // descriptors per work queue
constexpr uint32_t kMaxSegments = 252;     // data segments of an RDMA descriptor (SegCount <= 253 = MaxSegmentsPerDesc)
constexpr uint32_t kMaxTransfer = 64 * 1024;
constexpr uint32_t kFifoDoorbellDepth = 64;
constexpr uint32_t kMaxCq = 1024;
constexpr uint32_t kMaxCqEntries = 1u << 20;
constexpr uint32_t kMaxPtags = 4096;

// ---- memory regions (the NIC's translation and protection table) ----------
struct Region {
    std::atomic<uint32_t> handle{0}; // the VIP_MEM_HANDLE naming this entry, 0 = free
    uintptr_t base = 0;
    size_t len = 0;
    uint32_t ptag_id = 0;
    bool rdma_write = false;
    bool rdma_read = false;
    vipl::prov::Ptag *ptag = nullptr;
};

class PtagImpl : public vipl::prov::Ptag {
public:
    PtagImpl(NicHw *hw, uint32_t id) : hw(hw), id(id) {}
    NicHw *hw;
    uint32_t id;
    std::atomic<int> refs{0}; // VIs and regions using it
};

// A token the host writes into a doorbell: which descriptor was posted.
struct Token {
    VIP_DESCRIPTOR *desc;
    VIP_MEM_HANDLE mh;
};

// Firmware-side state of one posted send-queue descriptor.
struct TxEntry {
    VIP_DESCRIPTOR *desc;
    VIP_MEM_HANDLE mh;
    uint32_t status;   // status bits to write at completion
    uint32_t length;   // bytes transferred
    bool ready;        // may complete (once every earlier entry has)
    bool awaiting;     // waiting for an Ack / read response
};

struct CqEntry {
    uint32_t vi;
    bool recv;
};

enum class ViState : int { Idle = 0, Connected = 1, Pending = 2, Error = 3 };

// A notify handler armed on a queue (one-shot).
struct NotifySlot {
    std::atomic<bool> armed{false};
    VIP_PVOID ctx = nullptr;
    VIP_DESCRIPTOR_NOTIFY_HANDLER desc_handler = nullptr;
    VIP_CQ_NOTIFY_HANDLER cq_handler = nullptr;
};

class CqImpl : public vipl::prov::Cq {
public:
    CqImpl(NicHw *hw, size_t entries) : hw(hw), ring(entries) {}
    VIP_RETURN done(vipl::prov::Vi **vi, bool *recv) override;
    VIP_RETURN wait(VIP_ULONG timeout_ms, vipl::prov::Vi **vi, bool *recv) override;
    VIP_RETURN resize(VIP_ULONG entries) override;
    VIP_RETURN notify(VIP_PVOID ctx, VIP_CQ_NOTIFY_HANDLER h) override;

    NicHw *hw;
    SpscRing<CqEntry> ring;
    std::atomic<int> bound{0};      // VIs bound to it
    std::atomic<bool> overrun{false};
    NotifySlot notify_slot;
    vipl::prov::Nic *owner = nullptr;   // the NIC handle it was made through
};

class ViImpl : public vipl::prov::Vi {
public:
    ViImpl(NicHw *hw, uint32_t index, const vipl::prov::ViAttr &a, CqImpl *scq, CqImpl *rcq);
    ~ViImpl() override;

    VIP_RETURN post_send(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) override;
    VIP_RETURN send_done(VIP_DESCRIPTOR **d) override;
    VIP_RETURN post_recv(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) override;
    VIP_RETURN recv_done(VIP_DESCRIPTOR **d) override;
    VIP_RETURN send_wait(VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) override;
    VIP_RETURN recv_wait(VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) override;
    VIP_RETURN send_notify(VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) override;
    VIP_RETURN recv_notify(VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) override;
    VIP_RETURN query(VIP_VI_STATE *state, vipl::prov::ViAttr *attr, bool *sq_empty,
                     bool *rq_empty) override;
    VIP_RETURN set_attributes(const vipl::prov::ViAttr &attr) override;
    VIP_RETURN connect_request(const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote,
                               VIP_ULONG timeout_ms, VIP_VI_ATTRIBUTES *remote_attr) override;
    VIP_RETURN disconnect() override;
    VIP_RETURN peer_request(const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote,
                            VIP_ULONG timeout_ms) override;
    VIP_RETURN peer_done(VIP_VI_ATTRIBUTES *remote_attr) override;
    VIP_RETURN peer_wait(VIP_VI_ATTRIBUTES *remote_attr) override;

    VIP_RETURN post(SpscRing<VIP_DESCRIPTOR *> &hostq, SpscRing<Token> &bell, VIP_DESCRIPTOR *d,
                    VIP_MEM_HANDLE mh);
    VIP_RETURN done(SpscRing<VIP_DESCRIPTOR *> &hostq, VIP_DESCRIPTOR **d);
    VIP_RETURN wait(SpscRing<VIP_DESCRIPTOR *> &hostq, VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d);

    NicHw *hw;
    const uint32_t index;
    vipl::prov::Nic *owner = nullptr;   // the NIC handle it was made through (errors, notifies)
    vipl::prov::ViAttr attr;
    CqImpl *send_cq;
    CqImpl *recv_cq;

    // host side: descriptors posted and not yet reaped by Done/Wait, in order
    SpscRing<VIP_DESCRIPTOR *> host_sq{kMaxQueue};
    SpscRing<VIP_DESCRIPTOR *> host_rq{kMaxQueue};
    // doorbells: host -> firmware
    SpscRing<Token> bell_sq;
    SpscRing<Token> bell_rq;

    // firmware side (touched only by whoever runs the firmware)
    std::vector<TxEntry> txq;       // ring of kMaxQueue entries
    uint64_t tx_head = 0;           // oldest not yet completed
    uint64_t tx_next = 0;           // next to transmit
    uint64_t tx_tail = 0;           // one past the newest fetched from the doorbell
    uint64_t tx_await = 0;          // oldest awaiting an Ack / read response
    SpscRing<Token> rxq{kMaxQueue};  // receive descriptors the firmware holds
    uint32_t ptag_id = 0;           // the VI's protection tag, as the tables store it
    uint32_t send_seq = 0;
    uint32_t recv_seq = 0;

    // connection
    std::atomic<int> state{static_cast<int>(ViState::Idle)};
    uint16_t peer_nic = 0;
    uint16_t peer_vi = 0;
    VIP_VI_ATTRIBUTES peer_attr{};
    std::atomic<uint32_t> flush_req{0}; // host asks the firmware to flush (disconnect/error)
    std::atomic<uint32_t> flush_done{0};
    uint32_t cm_nonce = 0;              // our pending connection request
    std::atomic<int> cm_result{0};      // 0 pending, 1 connected, 2 rejected, 3 cancelled, 4 reliability mismatch

    void ring_doorbell();               // mark active (and wake a sleeping firmware thread)
    void request_flush();               // firmware completes all held descriptors as flushed

    NotifySlot notify_send, notify_recv;
};

class ConnImpl : public vipl::prov::Conn {
public:
    VIP_RETURN accept(vipl::prov::Vi *vi) override;
    VIP_RETURN reject() override;
    NicHw *hw = nullptr;
    uint16_t client_nic = 0;
    uint16_t client_vi = 0;
    uint32_t nonce = 0;
    VIP_VI_ATTRIBUTES client_attr{};
};

// Pending connection-management records (under NicHw::cm_mu).
struct ConnRequest {        // a ConnReq that arrived, waiting for VipConnectWait
    uint16_t src_nic, src_vi;
    uint32_t nonce;
    VIP_VI_ATTRIBUTES attr;
    std::vector<uint8_t> want_disc;   // discriminator the client asked for
    std::vector<uint8_t> client_disc; // the client's own discriminator
    bool claimed = false;
};
struct PeerRequest {        // a PeerReq that arrived before the local side asked
    uint16_t src_nic, src_vi;
    uint32_t nonce;
    VIP_VI_ATTRIBUTES attr;
    std::vector<uint8_t> their_disc, want_disc;
};
struct LocalPeer {          // a local VipConnectPeerRequest in progress
    ViImpl *vi;
    uint16_t remote_nic;
    std::vector<uint8_t> my_disc, their_disc;
    uint64_t deadline_ns;
    uint32_t nonce;
};

// The NIC of this process (one per device; shared by every VipOpenNic of it).
class NicHw {
public:
    NicHw(const Config &cfg, const std::string &job, int rank, int nprocs);
    ~NicHw();

    // ---- firmware ----
    void step();                     // one MCP iteration (inline mode)
    void host_poll() {               // what host calls do to make progress
        if (cfg.mode == Mode::Inline) {
            if (!shared_step.load(std::memory_order_relaxed)) step();
            else locked_step();
        }
        if (__builtin_expect(errors_pending.load(std::memory_order_relaxed), 0) &&
            !agent_running.load(std::memory_order_relaxed))
            deliver_errors();
    }
    // A poll found nothing.  With the firmware on its own thread, give the CPU
    // away now and then: on a machine with fewer cores than busy threads a
    // spinning host would otherwise starve the firmware it is waiting for.
    void idle_poll() {
        if (cfg.mode == Mode::Thread && (++idle_polls & 15) == 0) sched_yield();
    }
    uint32_t idle_polls = 0;
    void locked_step();
    // Stops the firmware from running until the guard goes (thread mode: parks
    // the firmware thread; inline with an agent: holds the step lock).
    struct Quiesce {
        NicHw *hw;
        bool held;
        ~Quiesce();
    };
    Quiesce quiesce();
    std::atomic<bool> pause_req{false};
    std::atomic<bool> paused{false};
    VIP_RETURN check_vi_attr(const vipl::prov::ViAttr &a) const;
    void start_thread();
    void stop_thread();
    // Starts the agent thread (lazily).  It delivers asynchronous errors to the
    // callback; with `step` it also runs the firmware (notifies, progress) and
    // host polls switch to the try-locked step.
    void ensure_agent(bool step);
    std::atomic<bool> agent_running{false};

    // data path pieces (firmware context)
    bool tx_one(ViImpl *vi, TxEntry &e);
    void complete_tx(ViImpl *vi);
    // Each rx_* returns false when it must answer but the peer's FIFO is full:
    // the packet then stays on the wire and is retried (nothing was changed).
    bool rx_packet_try(const PacketHeader *h);
    bool rx_send(ViImpl *vi, const PacketHeader *h, const unsigned char *payload);
    bool rx_rdma_write(ViImpl *vi, const PacketHeader *h, const unsigned char *payload);
    bool rx_read_req(ViImpl *vi, const PacketHeader *h, const unsigned char *payload);
    void rx_read_resp(ViImpl *vi, const PacketHeader *h, const unsigned char *payload);
    void rx_ack(ViImpl *vi, const PacketHeader *h);
    void rx_cm(const PacketHeader *h, const unsigned char *payload);
    bool validate_segments(ViImpl *vi, const VIP_DATA_SEGMENT *seg, uint32_t n, uint32_t *total);
    void vi_error(ViImpl *vi, VIP_ERROR_CODE code, VIP_DESCRIPTOR *d, bool tell_peer);
    void flush_vi(ViImpl *vi);
    void complete_desc(ViImpl *vi, VIP_DESCRIPTOR *d, uint32_t status, uint32_t length, bool recv);
    bool fetch_rx_desc(ViImpl *vi, Token *t);

    // sends a small control packet from any thread (the wire is multi-producer)
    bool send_ctl(uint16_t dst_nic, Op op, uint16_t dst_vi, uint16_t src_vi, uint32_t seq,
                  uint32_t imm, uint16_t aux, const void *payload, uint32_t len);

    // the same, kept and retried from step() while the peer's FIFO is full
    void send_ctl_reliably(uint16_t dst_nic, Op op, uint16_t dst_vi, uint16_t src_vi, uint32_t imm);
    void retry_backlog();
    struct PendingCtl {
        uint16_t dst_nic;
        Op op;
        uint16_t dst_vi, src_vi;
        uint32_t imm;
    };
    std::mutex backlog_mu;
    std::deque<PendingCtl> backlog;
    std::atomic<bool> backlog_pending{false};

    // region check: is [addr, addr+len) inside region `mh` under ptag `ptag_id`?
    const Region *region(VIP_MEM_HANDLE mh) const {
        const uint32_t idx = mh & 0xffff;
        if (idx == 0 || idx > kMaxRegions) return nullptr;
        const Region &r = regions[idx];
        return r.handle.load(std::memory_order_acquire) == mh ? &r : nullptr;
    }

    void report_error(ViImpl *vi, CqImpl *cq, VIP_DESCRIPTOR *d, VIP_RESOURCE_CODE rc,
                      VIP_ERROR_CODE ec);
    void deliver_errors();           // runs the error callback for queued errors (host side)

    // connection management (connect.cpp)
    VIP_RETURN parse_addr(const VIP_NET_ADDRESS *a, uint16_t *nic) const;
    VIP_RETURN connect_wait(const VIP_NET_ADDRESS *local, VIP_ULONG timeout_ms, VIP_NET_ADDRESS *remote,
                            VIP_VI_ATTRIBUTES *remote_attr, ConnImpl **out);
    void forget_request(uint16_t nic, uint32_t nonce);

    Config cfg;
    std::string job;
    int rank;
    int nprocs;
    uint8_t addr_bytes[2];
    Wire wire;
    uint64_t rx_head = 0;            // consumer position in our wire FIFO

    // SRAM: staging buffers for the host-DMA and link-DMA engines, and the
    // descriptor cache the firmware reads a fetched descriptor's segments from
    std::unique_ptr<unsigned char[]> sram_tx;
    std::unique_ptr<unsigned char[]> sram_rx;
    VIP_DESCRIPTOR_SEGMENT desc_cache[kMaxSegments + 1];

    // Wire-latency profile (L): data packets carry their send time after the payload.
    uint32_t stamp_bytes() const { return cfg.profile.wire_ns ? 8 : 0; }
    void stamp(unsigned char *p) const {
        if (cfg.profile.wire_ns) {
            const uint64_t t = now_ns();
            std::memcpy(p, &t, 8);
        }
    }

    // tables
    std::unique_ptr<Region[]> regions;             // index 1..kMaxRegions
    std::mutex table_mu;                           // host-side table updates
    uint32_t region_hint = 1;
    uint16_t region_gen = 1;
    std::atomic<ViImpl *> vis[kMaxVi] = {};
    std::atomic<uint64_t> active[kMaxVi / 64] = {}; // VIs with doorbell work
    uint32_t rr_cursor = 0;                        // round-robin position
    std::atomic<uint32_t> vi_words{1};             // words of `active` in use (highest VI / 64 + 1)
    uint32_t next_ptag = 1;

    // connection management
    std::mutex cm_mu;
    std::deque<ConnRequest> conn_requests;
    std::deque<PeerRequest> peer_requests;
    std::vector<LocalPeer> local_peers;
    std::atomic<uint32_t> nonce_gen{1};

    // execution
    std::atomic<bool> shared_step{false};          // someone besides the host steps (agent)
    std::atomic<bool> step_lock{false};
    std::atomic<bool> stop{false};
    std::thread fw_thread;
    std::thread agent_thread;
    std::atomic<uint64_t> epoch{0};                // firmware loop iterations (thread mode)
    uint64_t last_inject_ns = 0;

    // notifications and errors
    std::mutex notify_mu;
    std::vector<ViImpl *> notify_vis;
    std::vector<CqImpl *> notify_cqs;
    // Error callbacks belong to NIC handles: each open handle may register one,
    // and an error goes to the handle its VI (or CQ) was made through.
    struct ErrSink {
        vipl::prov::Nic *handle;
        VIP_ERROR_HANDLER h;
        VIP_PVOID ctx;
    };
    struct QueuedError {
        VIP_ERROR_DESCRIPTOR e;
        vipl::prov::Nic *handle;
    };
    std::mutex err_mu;
    std::vector<ErrSink> err_sinks;        // under err_mu
    std::vector<vipl::prov::Nic *> live_handles; // under err_mu
    std::vector<QueuedError> err_queue;
    std::atomic<bool> errors_pending{false};
    bool in_error_delivery = false;
    vipl::prov::Nic *owner = nullptr;   // first open handle: names the NIC in callbacks

    // counters (diagnostics)
    uint64_t dropped = 0, crc_errors = 0;

    bool ns_ready = false;
    int refs = 0;
};

uint64_t now_ns();
void spin_ns(uint32_t ns);
// Waits for a condition, stepping the firmware (inline) and backing off from
// spinning to yielding; returns false on timeout.
template <class F>
bool poll_until(NicHw *hw, VIP_ULONG timeout_ms, F &&cond);

} // namespace nicfw

#include "poll.hpp"
