// fake_provider.hpp - the fake VIPL provider: NICs of one process joined by an
// in-memory switchboard; every operation completes synchronously at post time.
//
// One mutex (Switchboard::mu) guards everything: the fake is a test double, so
// it is simple and deterministic rather than fast.  Handlers (notify, error
// callback) run on one agent thread, outside the mutex, as the spec has them
// run on a provider thread.  The VI rules (descriptor checks, work-queue order,
// CQ FIFO) are the shared ones of vipl/providers/common.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "clock.hpp"
#include "cq_fifo.hpp"
#include "descriptor_check.hpp"
#include "fake_hooks.h"
#include "vi_overrides.hpp"
#include "vipl_provider.hpp"
#include "work_ring.hpp"

namespace vipl::fake {

constexpr int kMaxDevices = 64; // fake0 .. fake63
constexpr uint32_t kMaxVi = 1024;
constexpr uint32_t kMaxRegions = 65535;
constexpr uint32_t kQueueDepth = 1024; // descriptors per work queue (a power of two)
constexpr uint32_t kMaxSegments = 252; // data segments (SegCount <= 253 with the address segment)
constexpr uint32_t kMaxTransfer = 64 * 1024;
constexpr uint32_t kMaxCq = 1024;
constexpr uint32_t kMaxCqEntries = 1u << 20;
constexpr uint32_t kMaxPtags = 4096;

class Device;
class FakeVi;
class FakeCq;
class NicHandle;

struct FakePtag : prov::Ptag {
    Device *dev = nullptr;
    int refs = 0; // VIs and regions using it
};

struct Region {
    uintptr_t base = 0;
    size_t len = 0;
    FakePtag *ptag = nullptr;
    bool rdma_write = false, rdma_read = false;
    uint32_t handle = 0; // 0: free slot
    bool moved = false;  // its tag was changed (common::check_tag_change)
};

// What a send or an RDMA write puts on the wire.
struct Message {
    FakeVi *src = nullptr, *dst = nullptr;
    uint64_t seq = 0;
    uint16_t op = VIP_CONTROL_OP_SENDRECV;
    bool imm = false;
    uint32_t imm_data = 0;
    uintptr_t raddr = 0;
    VIP_MEM_HANDLE rhandle = 0;
    std::vector<uint8_t> payload;
    uint64_t checksum = 0;
    VIP_DESCRIPTOR *rr_send = nullptr; // Reliable Reception: completed at delivery
};

struct DescNotify {
    bool armed = false;
    VIP_PVOID ctx = nullptr;
    VIP_DESCRIPTOR_NOTIFY_HANDLER h = nullptr;
};

enum class ViState { Idle, Pending, Connected, Error };
enum class CmResult { None, Pending, Connected, Rejected, Mismatch };

struct RecvInfo {
    uint64_t capacity = 0;
};

class FakeVi : public prov::Vi {
public:
    FakeVi(Device *d, NicHandle *owner, const prov::ViAttr &a, FakeCq *s, FakeCq *r);

    VIPL_PROV_VI_OVERRIDES; // the provider interface (vipl_provider.hpp)

    bool reliable() const { return attr.reliability != VIP_SERVICE_UNRELIABLE; }
    bool rr() const { return attr.reliability == VIP_SERVICE_RELIABLE_RECEPTION; }
    common::DescriptorRules rules() const;
    // A region of this VI's device and protection tag, or nullptr (the lookup
    // callback of the common descriptor checks).
    const Region *region(VIP_MEM_HANDLE h) const;

    // Caller holds the switchboard mutex for all of these.
    void complete_send(VIP_DESCRIPTOR *d, uint32_t status);
    void complete_recv(VIP_DESCRIPTOR *d, uint32_t status);
    VIP_DESCRIPTOR *take_recv(uint64_t *capacity); // the next posted receive not yet complete
    void flush();                                  // completes everything posted with DESC_FLUSHED_ERROR
    void make_connected(FakeVi *peer_vi);
    void do_rdma_read(VIP_DESCRIPTOR *d);

    Device *dev;
    NicHandle *owner;
    prov::ViAttr attr;
    FakeCq *send_cq, *recv_cq;
    ViState state = ViState::Idle;
    FakeVi *peer = nullptr;
    VIP_VI_ATTRIBUTES peer_attr{};
    common::WorkRing<> sq;
    common::WorkRing<RecvInfo> rq;
    uint64_t sq_posted = 0, rq_posted = 0, rq_taken = 0; // ring positions
    uint64_t send_seq = 0, recv_seq = 0;                 // reliable: next to send / expected
    uint64_t seen_base = 0, seen_bits = 0;               // unreliable: at-most-once window
    DescNotify notify_send, notify_recv;
    CmResult cm = CmResult::None;
    // A client request (VipxConnectRequestStart) whose result
    // VipxConnectRequestDone has not handed back: its ConnRequest, deadline,
    // and the private data of the answer (accept or reject).
    bool cm_client = false;
    uint64_t cm_request = 0;
    uint64_t cm_deadline_ns = 0;
    std::vector<uint8_t> cm_data;

private:
    // VipxConnectRequestDone's result; caller holds the mutex.
    VIP_RETURN client_result(VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len);
    void end_client_request(); // drops the request from the switchboard
    VIP_RETURN wait(common::WorkRing<> *sring, common::WorkRing<RecvInfo> *rring, VIP_ULONG timeout_ms,
                    VIP_DESCRIPTOR **d);
};

struct CqEntry {
    FakeVi *vi = nullptr;
    bool recv = false;
};

class FakeCq : public prov::Cq {
public:
    FakeCq(Device *d, NicHandle *owner, VIP_ULONG entries);
    VIP_RETURN done(VIP_VI_HANDLE *vi, bool *recv_queue) override;
    VIP_RETURN wait(VIP_ULONG timeout_ms, VIP_VI_HANDLE *vi, bool *recv_queue) override;
    VIP_RETURN resize(VIP_ULONG entries) override;
    VIP_RETURN notify(VIP_PVOID ctx, VIP_CQ_NOTIFY_HANDLER h) override;

    void push(FakeVi *vi, bool recv); // caller holds the mutex

    Device *dev;
    NicHandle *owner;
    common::CqFifo<CqEntry> fifo;
    int bound = 0;
    bool armed = false;
    VIP_PVOID notify_ctx = nullptr;
    VIP_CQ_NOTIFY_HANDLER notify_h = nullptr;
};

// A connection request waiting at the server's device (VipConnectRequest).
struct ConnRequest {
    uint64_t id = 0;
    FakeVi *client = nullptr;
    Device *server = nullptr;
    std::vector<uint8_t> want_disc, client_disc;
    VIP_VI_ATTRIBUTES attr{};
    bool claimed = false;
    std::vector<uint8_t> data; // private data
};

class FakeConn : public prov::Conn {
public:
    VIP_RETURN accept(prov::Vi *vi, const void *data, VIP_ULONG len) override;
    VIP_RETURN reject(const void *data, VIP_ULONG len) override;
    uint64_t request_id = 0;
    Device *dev = nullptr;
};

// A peer-to-peer request not yet matched (VipConnectPeerRequest).
struct PeerRequest {
    FakeVi *vi = nullptr;
    Device *remote = nullptr;
    std::vector<uint8_t> mine, theirs;
    uint64_t deadline_ns = 0;
};

// One fake NIC ("fakeN").  Opening the same name again gives another handle to it.
class Device {
public:
    Device(int index);
    VIP_RETURN check_vi_attr(const prov::ViAttr &a) const;
    const Region *region(VIP_MEM_HANDLE h) const {
        const uint32_t idx = h & 0xffff;
        if (idx == 0 || idx > kMaxRegions || regions[idx].handle != h) return nullptr;
        return &regions[idx];
    }

    int index;
    std::string name;
    uint8_t addr[2];
    int handles = 0;
    std::vector<Region> regions; // index 1..kMaxRegions
    uint32_t region_gen = 0, region_hint = 1;
    int ptags = 0, cqs = 0;
    std::vector<FakeVi *> vis;
    std::vector<NicHandle *> live_handles;
};

// A fault rule of the hooks (fake_hooks.h).
struct FaultRule {
    FakeVi *vi = nullptr; // nullptr: every VI
    vipl_fake_fault fault = VIPL_FAKE_DROP;
    unsigned count = 0; // next-N rule: messages left; 0 with random
    bool random = false;
    double probability = 0;
    uint64_t rng = 0;
    unsigned delay_posts = 1;
};

// A message a delay or a reorder holds back.
struct Held {
    Message m;
    unsigned posts_left = 0; // delay: posts until it is released
    bool after_next = false; // reorder: released after the next message of its VI
};

// The process-wide switchboard: the devices, connection requests, held
// messages, fault rules, the agent thread that runs handlers.
class Switchboard {
public:
    std::mutex mu;
    std::condition_variable cv; // any completion, state change or request

    Device *devices[kMaxDevices] = {};
    std::list<ConnRequest> conn_requests;
    std::list<PeerRequest> peer_requests;
    uint64_t next_request_id = 1;

    std::deque<Held> held;
    std::vector<FaultRule> rules;
    vipl_fake_stats stats{};

    std::vector<FakeVi *> notify_vis;
    std::vector<FakeCq *> notify_cqs;

    // ---- transfer (fake_wire.cpp); caller holds mu --------------------------
    void send_message(Message &&m); // applies faults, then delivers or holds
    void deliver(Message &m);
    void count_post();               // a post happened: delays count down
    void release_after(FakeVi *src); // a message of src arrived: reorders behind it go
    void release_ready();
    void break_connection(FakeVi *vi, VIP_ERROR_CODE mine, VIP_DESCRIPTOR *d, VIP_ERROR_CODE theirs);
    void set_error(FakeVi *vi, VIP_ERROR_CODE code, VIP_DESCRIPTOR *d);
    void forget_held(FakeVi *vi);

    // ---- handlers (fake_switchboard.cpp) -------------------------------------
    // Reports an asynchronous error to the owner's error callback (agent thread).
    void report(FakeVi *vi, FakeCq *cq, VIP_DESCRIPTOR *d, VIP_RESOURCE_CODE rc, VIP_ERROR_CODE ec);
    // After any change: wakes waiters and fires armed notifies whose queue is ready.
    void settle();
    void run_on_agent(std::function<void()> job); // caller holds mu
    void stop_agent();

    FakeVi *find_vi(VIP_VI_HANDLE h); // the live VI with that API handle

private:
    std::deque<std::function<void()>> jobs_;
    std::condition_variable jobs_cv_;
    std::thread agent_;
    bool stopping_ = false;
};

Switchboard &board();
using common::now_ns;
uint64_t checksum(const std::vector<uint8_t> &bytes);
// The device a 2-byte host address names, or nullptr; INVALID_PARAMETER on a malformed address.
VIP_RETURN parse_address(const VIP_NET_ADDRESS *a, Device **out);

class NicHandle : public prov::Nic {
public:
    explicit NicHandle(Device *d);
    ~NicHandle() override;
    VIP_RETURN query(VIP_NIC_ATTRIBUTES *attr) override;
    VIP_RETURN create_ptag(prov::Ptag **out) override;
    VIP_RETURN destroy_ptag(prov::Ptag *p) override;
    VIP_RETURN register_mem(void *addr, VIP_ULONG len, const prov::MemAttr &a, VIP_MEM_HANDLE *out) override;
    VIP_RETURN deregister_mem(void *addr, VIP_MEM_HANDLE mh) override;
    VIP_RETURN query_mem(void *addr, VIP_MEM_HANDLE mh, prov::MemAttr *out) override;
    VIP_RETURN set_mem_attributes(void *addr, VIP_MEM_HANDLE mh, const prov::MemAttr &a) override;
    VIP_RETURN create_vi(const prov::ViAttr &a, prov::Cq *send_cq, prov::Cq *recv_cq, prov::Vi **out) override;
    VIP_RETURN destroy_vi(prov::Vi *vi) override;
    VIP_RETURN create_cq(VIP_ULONG entries, prov::Cq **out) override;
    VIP_RETURN destroy_cq(prov::Cq *cq) override;
    VIP_RETURN connect_wait(const VIP_NET_ADDRESS *local, VIP_ULONG timeout_ms, VIP_NET_ADDRESS *remote,
                            VIP_VI_ATTRIBUTES *remote_attr, prov::Conn **out) override;
    VIP_RETURN error_callback(VIP_PVOID ctx, VIP_ERROR_HANDLER h) override;
    VIP_RETURN ns_init(VIP_PVOID info) override;
    VIP_RETURN ns_shutdown() override;
    int job_size() const override { return 1; }
    VIP_RETURN rank_address(int rank, VIP_NET_ADDRESS *out) override;
    int address_rank(const VIP_NET_ADDRESS *addr) override;
    VIP_RETURN ns_other_name(const char *name, VIP_NET_ADDRESS *out, VIP_ULONG index) override;
    bool ns_other_addr(const VIP_NET_ADDRESS *addr, std::string *name) override;
    VIP_RETURN query_system_management(VIP_ULONG info_type, VIP_PVOID out) override;
    int rank() const override { return dev->index == 0 ? 0 : -1; }
    // The fake NIC stands in for a real one: layers over it take the defaults
    // they take where registration pins (its table itself pins nothing).
    bool registration_pins() const override { return true; }
    void progress() override {}

    Device *dev;
    VIP_ERROR_HANDLER err_h = nullptr;
    VIP_PVOID err_ctx = nullptr;
};

} // namespace vipl::fake
