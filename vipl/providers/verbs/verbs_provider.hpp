// verbs_provider.hpp - the VIPL provider over libibverbs + librdmacm (internal).
//
// Mapping (details and the status table in docs/verbs.md):
//   NIC          ibv_context of one RDMA device (rxe0, mlx5_0, ...) + one port,
//                a listening rdma_cm_id on the device's IP address
//   Ptag         ibv_pd
//   memory       ibv_mr, reached by peers through a type-1 memory window whose
//                rkey is the VIPL handle (so a peer can put it in an address
//                segment, and VipSetMemAttributes re-binds it in place); without
//                windows the MR's rkey, or its lkey when RDMA is off; a table
//                maps handle -> region, and local SGEs always use mr->lkey
//   VI           RC QP (reliable delivery / reliable reception) or UC QP (unreliable)
//   CQ           one ibv_cq per VIPL CQ; queues not bound to a CQ get a private ibv_cq
//   descriptor   work request; wr_id = the queue slot that remembers the descriptor
//   connections  librdmacm with user-managed QPs; discriminators in private data
//
// Threading (docs/verbs.md "Threads"): any thread may use any object.  The
// data path takes only per-queue spin locks (common::SpinLock): a work queue's
// post lock (ring slot and ibv_post_* under one hold, so ring order is device
// order) and reap lock (inside WorkRing), and a poll lock per ibv_cq that
// makes its poller the one producer of the completions it moves (the CQ
// FIFO's push, descriptor status).  NIC-wide control state (connections,
// registration table writes, notify registrations) is guarded by mutexes.
//
// What is VI semantics rather than verbs -- descriptor checks and status bits,
// the in-order work ring, the CQ FIFO, the name service's rank directory, the
// job through vipl_boot -- comes from vipl/providers/common, shared with the
// other providers; this provider keeps the translation to verbs.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cq_fifo.hpp"
#include "descriptor_check.hpp"
#include "job.hpp"
#include "name_service.hpp"
#include "vipl_provider.hpp"
#include "verbs_addr.hpp"
#include "verbs_mem.hpp"
#include "work_ring.hpp"

namespace vipl::verbs {

class VerbsNic;
class VerbsVi;
class VerbsCq;
struct WorkQueue;
struct Connector;

// Discriminators up to kRawDiscriminator bytes travel verbatim in the REQ's 56
// bytes of rdma_cm private data; longer ones (up to kMaxDiscriminator) as a
// 16-byte digest (verbs_cm.hpp).
constexpr unsigned kMaxDiscriminator = VIP_MAX_DISCRIMINATOR_LEN;
constexpr unsigned kRawDiscriminator = 20;
// Upper bound on data segments per descriptor (further limited by the device).
constexpr unsigned kMaxSegments = 16;

// Something that receives the rdma_cm events of an rdma_cm_id (id->context).
struct CmOwner {
    virtual void on_event(rdma_cm_event *e) = 0;
    virtual ~CmOwner() = default;
};

// Receives the events of a VI's own connection (established, disconnected, ...).
struct ViLink final : CmOwner {
    explicit ViLink(VerbsVi *v) : vi(v) {}
    void on_event(rdma_cm_event *e) override;
    VerbsVi *vi;
};

struct VerbsPtag final : prov::Ptag {
    ibv_pd *pd = nullptr;
    WindowBinder windows;      // binds the windows of this tag's regions
    std::atomic<int> users{0}; // regions + VIs using this tag
};

// What the provider keeps with one posted descriptor.  Slots live in the
// queue's work ring; a work request's wr_id is the slot's address, so a
// completion finds its descriptor and queue without search.
struct SlotInfo {
    WorkQueue *queue = nullptr;
    uint32_t op_status = 0; // VIP_STATUS_OP_* of the posted operation
};
using Slot = common::WorkRing<SlotInfo>::Slot;

// A send or receive work queue of one VI: the ring of posted descriptors, in
// posting order, and the ibv_cq its completions arrive on.
struct WorkQueue {
    VerbsVi *vi = nullptr;
    bool is_recv = false;
    common::WorkRing<SlotInfo> ring;
    ibv_cq *cq = nullptr;                // private ibv_cq or the bound VerbsCq's
    ibv_comp_channel *channel = nullptr; // of a private ibv_cq
    VerbsCq *bound = nullptr;            // the VIPL CQ this queue reports to, if any
    common::SpinLock own_poll_lock;      // of a private ibv_cq
    // One-shot notify (VipSendNotify/VipRecvNotify), run by the notify thread.
    VIP_DESCRIPTOR_NOTIFY_HANDLER notify_fn = nullptr;
    VIP_PVOID notify_ctx = nullptr;

    uint32_t depth() const { return ring.depth(); }
    bool empty() const { return ring.empty(); }
    // Polls this queue's ibv_cq once (a batch); returns the number of completions.
    int poll();
    // The lock of whoever completes this queue's descriptors: its own for a
    // private ibv_cq, the bound CQ's otherwise.
    common::SpinLock &poll_lock();
    // Hands back the oldest descriptor if it is complete.
    VIP_RETURN done(VIP_DESCRIPTOR **d);
    VIP_RETURN wait(VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d);
};

// Polls an ibv_cq once (a batch of up to 16) and completes the descriptors
// under `lock`; failures are handled after it is released (VerbsVi::fail may
// run the error callback, which may call VIPL).  Returns the number polled.
int poll_cq(ibv_cq *cq, common::SpinLock &lock);
// Calls try_once until it returns something other than VIP_NOT_DONE: spinning
// briefly, then sleeping on the CQ's completion channel and the NIC's connection
// events (a peer's disconnect must break the VI, whose descriptors then complete
// as flushed); VIP_TIMEOUT after timeout_ms.
VIP_RETURN block_on_cq(VerbsNic &nic, ibv_cq *cq, ibv_comp_channel *ch, VIP_ULONG timeout_ms,
                       const std::function<VIP_RETURN()> &try_once);

class VerbsCq final : public prov::Cq {
public:
    VerbsCq(VerbsNic &nic) : nic_(nic) {}
    ~VerbsCq() override;
    VIP_RETURN init(VIP_ULONG entries);

    VIP_RETURN done(VIP_VI_HANDLE *vi, bool *recv_queue) override;
    VIP_RETURN wait(VIP_ULONG timeout_ms, VIP_VI_HANDLE *vi, bool *recv_queue) override;
    VIP_RETURN resize(VIP_ULONG entries) override;
    VIP_RETURN notify(VIP_PVOID ctx, VIP_CQ_NOTIFY_HANDLER h) override;

    // Called for every completion of a bound queue (in completion order),
    // with poll_lock held.  The FIFO is sized to everything the bound queues
    // can have outstanding.
    void push(WorkQueue *q) { (void)fifo_.push(Entry{q}); }
    void push_locked(WorkQueue *q) {
        common::SpinGuard g(poll_lock);
        push(q);
    }
    int poll() { return poll_cq(cq, poll_lock); } // polls the ibv_cq once
    void forget(VerbsVi *vi);                     // drops entries of a VI being destroyed
    // Held by the one thread moving completions from the ibv_cq to the FIFO
    // (the FIFO has one producer at a time) or changing the FIFO's size.
    common::SpinLock poll_lock;
    // Binding a queue grows the ibv_cq so it can never overflow.
    VIP_RETURN bind(uint32_t depth);
    void unbind(uint32_t depth);

    ibv_cq *cq = nullptr;
    ibv_comp_channel *channel = nullptr;
    std::atomic<int> bound_queues{0};
    VIP_CQ_NOTIFY_HANDLER notify_fn = nullptr;
    VIP_PVOID notify_ctx = nullptr;

private:
    struct Entry {
        WorkQueue *queue = nullptr;
    };
    VIP_RETURN grow(uint32_t need);
    uint32_t rounded_capacity(uint64_t entries) const;
    VerbsNic &nic_;
    common::CqFifo<Entry> fifo_;
    uint32_t requested_ = 0;   // EntryCount asked for
    uint32_t bound_depth_ = 0; // sum of the depths of bound queues
    uint32_t capacity_ = 0;    // entries of cq and fifo_
};

class VerbsVi final : public prov::Vi {
public:
    explicit VerbsVi(VerbsNic &n); // out of line: Connector is incomplete here
    ~VerbsVi() override;
    VIP_RETURN init(const prov::ViAttr &a, VerbsCq *send_cq, VerbsCq *recv_cq);

    VIP_RETURN post_send(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) override;
    VIP_RETURN send_done(VIP_DESCRIPTOR **d) override { return sq.done(d); }
    VIP_RETURN post_recv(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) override;
    VIP_RETURN recv_done(VIP_DESCRIPTOR **d) override { return rq.done(d); }
    VIP_RETURN send_wait(VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) override { return sq.wait(timeout_ms, d); }
    VIP_RETURN recv_wait(VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) override { return rq.wait(timeout_ms, d); }
    VIP_RETURN send_notify(VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) override;
    VIP_RETURN recv_notify(VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) override;

    VIP_RETURN query(VIP_VI_STATE *state, prov::ViAttr *attr, bool *sendq_empty, bool *recvq_empty) override;
    VIP_RETURN set_attributes(const prov::ViAttr &attr) override;

    VIP_RETURN connect_start(const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote, VIP_ULONG timeout_ms,
                             const void *data, VIP_ULONG len) override;
    VIP_RETURN connect_done(VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len) override;
    VIP_RETURN connect_wait(VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len) override;
    VIP_RETURN disconnect() override;
    VIP_RETURN peer_request(const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote, VIP_ULONG timeout_ms) override;
    VIP_RETURN peer_done(VIP_VI_ATTRIBUTES *remote_attr) override;
    VIP_RETURN peer_wait(VIP_VI_ATTRIBUTES *remote_attr) override;

    // Waits until no thread is inside a post or a completion of this VI that
    // may have looked up a region (deregistration, before freeing it).
    void quiesce_region_readers();
    // A completion failed with status s: a reliable VI's connection breaks (error
    // state, QP flushed); an unreliable VI stays connected (its QP is restored
    // before the next post if the device stopped it).
    void fail(ibv_wc_status s, VIP_DESCRIPTOR *d, bool recv_queue);
    // Error state: the QP is stopped, posted descriptors complete as flushed.
    // True for the one call that broke it (the others found it broken).
    bool break_connection();
    // The VI of this NIC at the other end of the connection, if there is one.
    VerbsVi *local_peer();
    // Unreliable VIs: restarts a QP the device moved to the error state.
    void recover();
    // Called by VipQueryVi: notices a QP the device stopped (e.g. a remote
    // access violation at this target) and moves the VI to the error state.
    void check_qp_state();
    // INIT -> RTR -> RTS with the attributes rdma_cm computed for `id`.  On failure
    // *peer_gone says whether rdma_cm no longer had them (the peer withdrew).
    VIP_RETURN bring_up(rdma_cm_id *id, bool *peer_gone = nullptr);
    // Back to INIT for a new connection (queues must be empty).
    VIP_RETURN reset_qp();
    // A connection attempt failed after the QP may have left INIT: a new QP in
    // INIT replaces it, with every receive not complete yet posted on it again
    // (in posting order, in its own slot) and every send not complete yet
    // completed flushed, so the VI is Idle with its receives kept (docs/vipl.md,
    // "One behaviour on every provider").  Caller holds nic.cm_mu.
    // VIP_ERROR_RESOURCE: no new QP; the old one was stopped and everything
    // posted completed flushed instead (nothing is lost either way).
    VIP_RETURN renew_qp();
    VIP_RETURN create_qp(); // (re)creates the QP for the current attributes
    bool reliable() const { return attr.reliability != VIP_SERVICE_UNRELIABLE; }
    // A region of this NIC registered under the VI's protection tag, or nullptr.
    const Region *region(VIP_MEM_HANDLE h) const;
    // What a descriptor posted on this VI may be (the device's SGE limit, the
    // VI's transfer size and reliability).
    common::DescriptorRules rules() const { return {max_sge + 1, max_sge, attr.max_transfer, reliable()}; }

    VerbsNic &nic;
    prov::ViAttr attr;
    ibv_qp *qp = nullptr;
    WorkQueue sq, rq;
    std::atomic<VIP_VI_STATE> state{VIP_STATE_IDLE};
    rdma_cm_id *cm_id = nullptr;          // of the current connection
    std::unique_ptr<Connector> connector; // a connection being set up
    ViLink link{this};
    std::atomic<bool> link_failed{false}; // set by ViLink when a pending connection died
    // Set when the pending connection reached ESTABLISHED: the peer may already
    // have disconnected again by the time the accepting side looks.
    std::atomic<bool> established{false};
    // Passive side between rdma_accept and ESTABLISHED: the QP is already in RTS.
    std::atomic<bool> accepted{false};
    VIP_VI_ATTRIBUTES remote_attr{};
    uint32_t max_inline = 0;
    uint32_t max_sge = 0;
    std::atomic<bool> qp_needs_reset{false};
    std::atomic<bool> needs_recovery{false}; // unreliable VI whose QP the device stopped
    std::mutex recovery_mu;                  // one thread recovers; posters on the other queue wait for it
};

class VerbsNic final : public prov::Nic {
public:
    ~VerbsNic() override;
    static VIP_RETURN open(const char *device, prov::Nic **out);

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
    int job_size() const override { return job_.size; }
    VIP_RETURN rank_address(int rank, VIP_NET_ADDRESS *out) override;
    int address_rank(const VIP_NET_ADDRESS *addr) override;
    VIP_RETURN ns_other_name(const char *name, VIP_NET_ADDRESS *out, VIP_ULONG index) override;
    bool ns_other_addr(const VIP_NET_ADDRESS *addr, std::string *out) override;
    VIP_RETURN query_system_management(VIP_ULONG info_type, VIP_PVOID out) override;
    int rank() const override { return job_.rank; }
    bool registration_pins() const override { return true; } // ibv_reg_mr pins the pages
    void progress() override;

    // ---- shared with VIs, CQs and the connection code ----
    void report_error(VIP_ERROR_CODE code, VIP_RESOURCE_CODE res, VerbsVi *vi, VIP_DESCRIPTOR *d, VIP_ULONG opcode);
    void deliver_error(const VIP_ERROR_DESCRIPTOR &ed); // a report held back (verbs_notify.cpp)
    // Reads and dispatches pending rdma_cm events, waiting up to wait_ms for the first.
    void pump_cm(int wait_ms);
    // A poll of a work queue or CQ found nothing: now and then, pump_cm(0).
    void idle_poll();
    void notify_armed(); // starts/wakes the notify thread after a handler was set
    // An rdma_cm_id to destroy once the event being dispatched has been acked.
    void doom(rdma_cm_id *id) { doomed_.push_back(id); }

private:
    void dispatch_cm_locked(); // pump_cm's work, cm_mu held

public:
    ibv_context *ctx = nullptr;
    uint8_t port = 1;
    ibv_device_attr dev_attr{};
    ibv_port_attr port_attr{};
    MemTable mem;
    std::mutex ctl_mu; // control-path state below
    std::mutex cm_mu;  // the rdma_cm event channel and connection bookkeeping
    rdma_event_channel *cm_channel = nullptr;
    rdma_cm_id *listen_id = nullptr;
    HostAddr local_addr; // IP + listening port
    std::vector<uint8_t> local_addr_bytes;
    std::deque<struct PendingRequest *> pending; // incoming requests nobody took yet
    std::vector<VerbsVi *> vis;
    std::vector<VerbsCq *> cqs;
    std::vector<VerbsPtag *> ptags;
    uint32_t queue_depth = 0;
    uint32_t max_sge = 0;
    uint8_t rnr_retry = 7;
    uint8_t min_rnr_timer = 6;
    std::string name;

private:
    friend struct Notifier;
    VIP_RETURN init(ibv_context *c, const char *device);
    VIP_RETURN start_listener();
    std::mutex err_mu_;
    VIP_ERROR_HANDLER err_fn_ = nullptr;
    VIP_PVOID err_ctx_ = nullptr;
    common::Job job_;                                  // through vipl_boot (a job of one outside a launcher)
    std::unique_ptr<common::RankDirectory> directory_; // the job's NIC addresses
    struct NotifierDeleter {
        void operator()(struct Notifier *n) const; // in verbs_notify.cpp
    };
    std::unique_ptr<struct Notifier, NotifierDeleter> notifier_;
    std::vector<rdma_cm_id *> doomed_;
};

// Set on the notify thread while it polls under the NIC's control lock.
extern thread_local std::vector<std::pair<VerbsNic *, VIP_ERROR_DESCRIPTOR>> *deferred_errors;

// Status bits for a work completion status (the table in docs/verbs.md).
uint32_t status_bits(ibv_wc_status s);

} // namespace vipl::verbs
