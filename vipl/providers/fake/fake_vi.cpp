// fake_vi.cpp - VIs and CQs of the fake provider: posting (checked with the
// shared descriptor rules, then carried out at once by the switchboard),
// reaping in posting order, waits, notifies, completion queues.
#include <chrono>

#include "fake_provider.hpp"

namespace vipl::fake {

namespace {
// Waits on the switchboard's condition until pred() or the timeout; false on timeout.
template <class Pred>
bool wait_for(std::unique_lock<std::mutex> &lk, VIP_ULONG timeout_ms, Pred &&pred) {
    Switchboard &b = board();
    if (timeout_ms == VIP_INFINITE) {
        b.cv.wait(lk, pred);
        return true;
    }
    return b.cv.wait_for(lk, std::chrono::milliseconds(timeout_ms), pred);
}
} // namespace

FakeVi::FakeVi(Device *d, NicHandle *o, const prov::ViAttr &a, FakeCq *s, FakeCq *r)
    : dev(d), owner(o), attr(a), send_cq(s), recv_cq(r) {
    sq.reset(kQueueDepth);
    rq.reset(kQueueDepth);
}

common::DescriptorRules FakeVi::rules() const {
    common::DescriptorRules r;
    r.max_seg_count = kMaxSegments + 1;
    r.max_data_segments = kMaxSegments + 1;
    r.max_transfer = std::min<uint64_t>(attr.max_transfer, kMaxTransfer);
    r.reliable = reliable();
    return r;
}

const Region *FakeVi::region(VIP_MEM_HANDLE h) const {
    const Region *r = dev->region(h);
    return r && r->ptag == attr.ptag ? r : nullptr;
}

// ---------------------------------------------------------------- completion
void FakeVi::complete_send(VIP_DESCRIPTOR *d, uint32_t status) {
    common::complete_descriptor(d, status);
    if (send_cq) send_cq->push(this, false);
}

void FakeVi::complete_recv(VIP_DESCRIPTOR *d, uint32_t status) {
    common::complete_descriptor(d, status);
    if (recv_cq) recv_cq->push(this, true);
}

VIP_DESCRIPTOR *FakeVi::take_recv(uint64_t *capacity) {
    while (rq_taken < rq_posted) {
        auto &s = rq.slot(uint32_t(rq_taken++));
        if (common::descriptor_done(s.desc)) continue; // failed its checks when posted
        *capacity = s.info.capacity;
        return s.desc;
    }
    return nullptr;
}

void FakeVi::flush() {
    for (uint64_t i = sq_posted - sq.posted(); i < sq_posted; ++i) {
        VIP_DESCRIPTOR *d = sq.slot(uint32_t(i)).desc;
        if (!common::descriptor_done(d))
            complete_send(d, common::op_status(d->CS.Control) | VIP_STATUS_DESC_FLUSHED_ERROR);
    }
    for (uint64_t i = rq_posted - rq.posted(); i < rq_posted; ++i) {
        VIP_DESCRIPTOR *d = rq.slot(uint32_t(i)).desc;
        if (!common::descriptor_done(d)) complete_recv(d, VIP_STATUS_OP_RECEIVE | VIP_STATUS_DESC_FLUSHED_ERROR);
    }
    rq_taken = rq_posted;
}

// ---------------------------------------------------------------- posting
VIP_RETURN FakeVi::post_send(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    if (state == ViState::Idle || state == ViState::Pending) return VIP_INVALID_STATE;
    if (sq.full()) return VIP_ERROR_RESOURCE;
    sq.claim(d);
    sq.publish();
    ++sq_posted;
    const uint32_t op = common::op_status(d->CS.Control);
    if (state == ViState::Error) {
        complete_send(d, op | VIP_STATUS_DESC_FLUSHED_ERROR);
    } else if (uint32_t err = common::check_send(d, mh, rules(), [this](VIP_MEM_HANDLE h) { return region(h); })) {
        complete_send(d, op | err);
        if (reliable()) b.break_connection(this, VIP_ERROR_POST_DESC, d, VIP_ERROR_CONN_LOST);
    } else if ((d->CS.Control & VIP_CONTROL_OP_MASK) == VIP_CONTROL_OP_RDMAREAD) {
        do_rdma_read(d);
    } else {
        // Gather the message now: the wire has it once the post returns.
        Message m;
        m.src = this;
        m.dst = peer;
        m.seq = send_seq++;
        m.op = d->CS.Control & VIP_CONTROL_OP_MASK;
        m.imm = d->CS.Control & VIP_CONTROL_IMMEDIATE;
        m.imm_data = d->CS.ImmediateData;
        const uint32_t first = common::first_data_segment(d->CS.Control);
        if (m.op == VIP_CONTROL_OP_RDMAWRITE) {
            m.raddr = uintptr_t(d->DS[0].Remote.Data.AddressBits);
            m.rhandle = d->DS[0].Remote.Handle;
        }
        m.payload.reserve(d->CS.Length);
        for (uint32_t i = first; i < d->CS.SegCount; ++i) {
            const VIP_DATA_SEGMENT &s = d->DS[i].Local;
            const auto *p = static_cast<const uint8_t *>(s.Data.Address);
            m.payload.insert(m.payload.end(), p, p + s.Length);
        }
        m.checksum = checksum(m.payload);
        // Reliable Reception completes the send once the data is placed;
        // the other levels once it is on the wire.
        if (rr()) m.rr_send = d;
        else complete_send(d, op);
        b.send_message(std::move(m));
    }
    b.count_post();
    b.settle();
    return VIP_SUCCESS;
}

VIP_RETURN FakeVi::post_recv(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    if (rq.full()) return VIP_ERROR_RESOURCE;
    auto &s = rq.claim(d);
    rq.publish();
    ++rq_posted;
    uint64_t capacity = 0;
    const uint32_t err = common::check_recv(
        d, mh, rules(), [this](VIP_MEM_HANDLE h) { return region(h); }, common::NoSegmentSink{}, &capacity);
    s.info.capacity = capacity;
    if (err) {
        complete_recv(d, VIP_STATUS_OP_RECEIVE | err);
        if (reliable() && state == ViState::Connected)
            b.break_connection(this, VIP_ERROR_POST_DESC, d, VIP_ERROR_CONN_LOST);
    } else if (state == ViState::Error) {
        complete_recv(d, VIP_STATUS_OP_RECEIVE | VIP_STATUS_DESC_FLUSHED_ERROR);
    }
    b.count_post();
    b.settle();
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- reaping
VIP_RETURN FakeVi::send_done(VIP_DESCRIPTOR **d) {
    std::lock_guard<std::mutex> g(board().mu);
    return sq.reap(d, [] {});
}

VIP_RETURN FakeVi::recv_done(VIP_DESCRIPTOR **d) {
    std::lock_guard<std::mutex> g(board().mu);
    return rq.reap(d, [] {});
}

// A Wait on an empty queue waits for a descriptor to be posted (by another
// thread) and complete; a broken VI with nothing posted returns
// VIP_INVALID_STATE instead of waiting for ever.
VIP_RETURN FakeVi::wait(common::WorkRing<> *sring, common::WorkRing<RecvInfo> *rring, VIP_ULONG timeout_ms,
                        VIP_DESCRIPTOR **d) {
    std::unique_lock<std::mutex> lk(board().mu);
    VIP_RETURN rc = VIP_NOT_DONE;
    const bool ended = wait_for(lk, timeout_ms, [&] {
        rc = sring ? sring->reap(d, [] {}) : rring->reap(d, [] {});
        if (rc == VIP_SUCCESS) return true;
        const bool empty = sring ? sring->empty() : rring->empty();
        if (empty && state == ViState::Error) rc = VIP_INVALID_STATE;
        return rc == VIP_INVALID_STATE;
    });
    return ended ? rc : VIP_TIMEOUT;
}

VIP_RETURN FakeVi::send_wait(VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) { return wait(&sq, nullptr, timeout_ms, d); }
VIP_RETURN FakeVi::recv_wait(VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) { return wait(nullptr, &rq, timeout_ms, d); }

namespace {
VIP_RETURN arm(FakeVi *vi, DescNotify &n, VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) {
    if (!h) return VIP_INVALID_PARAMETER;
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    if (n.armed) return VIP_INVALID_STATE; // one pending notify per queue
    n = DescNotify{true, ctx, h};
    if (std::find(b.notify_vis.begin(), b.notify_vis.end(), vi) == b.notify_vis.end()) b.notify_vis.push_back(vi);
    b.settle(); // a descriptor already complete fires it at once
    return VIP_SUCCESS;
}
} // namespace

VIP_RETURN FakeVi::send_notify(VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) {
    return arm(this, notify_send, ctx, h);
}
VIP_RETURN FakeVi::recv_notify(VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) {
    return arm(this, notify_recv, ctx, h);
}

VIP_RETURN FakeVi::query(VIP_VI_STATE *st, prov::ViAttr *a, bool *sq_empty, bool *rq_empty) {
    std::lock_guard<std::mutex> g(board().mu);
    switch (state) {
    case ViState::Idle: *st = VIP_STATE_IDLE; break;
    case ViState::Connected: *st = VIP_STATE_CONNECTED; break;
    case ViState::Pending: *st = VIP_STATE_CONNECT_PENDING; break;
    case ViState::Error: *st = VIP_STATE_ERROR; break;
    }
    *a = attr;
    *sq_empty = sq.empty();
    *rq_empty = rq.empty();
    return VIP_SUCCESS;
}

VIP_RETURN FakeVi::set_attributes(const prov::ViAttr &a) {
    std::lock_guard<std::mutex> g(board().mu);
    if (state != ViState::Idle) return VIP_INVALID_STATE;
    if (VIP_RETURN rc = dev->check_vi_attr(a); rc != VIP_SUCCESS) return rc;
    --static_cast<FakePtag *>(attr.ptag)->refs;
    ++static_cast<FakePtag *>(a.ptag)->refs;
    attr = a;
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- CQ
FakeCq::FakeCq(Device *d, NicHandle *o, VIP_ULONG entries) : dev(d), owner(o) { fifo.resize(entries); }

void FakeCq::push(FakeVi *vi, bool recv) {
    if (!fifo.push(CqEntry{vi, recv})) // the spec's CQ overrun: catastrophic
        board().report(nullptr, this, nullptr, VIP_RESOURCE_CQ, VIP_ERROR_CATASTROPHIC);
}

VIP_RETURN FakeCq::done(VIP_VI_HANDLE *vi, bool *recv) {
    std::lock_guard<std::mutex> g(board().mu);
    CqEntry e;
    if (!fifo.pop(&e)) return VIP_NOT_DONE;
    *vi = e.vi->api_handle; // under the board's lock, which VI destroy holds
    *recv = e.recv;
    return VIP_SUCCESS;
}

VIP_RETURN FakeCq::wait(VIP_ULONG timeout_ms, VIP_VI_HANDLE *vi, bool *recv) {
    std::unique_lock<std::mutex> lk(board().mu);
    CqEntry e;
    if (!wait_for(lk, timeout_ms, [&] { return fifo.pop(&e); })) return VIP_TIMEOUT;
    *vi = e.vi->api_handle; // under the board's lock, which VI destroy holds
    *recv = e.recv;
    return VIP_SUCCESS;
}

VIP_RETURN FakeCq::resize(VIP_ULONG entries) {
    if (entries == 0 || entries > kMaxCqEntries) return VIP_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(board().mu);
    return fifo.resize(entries) ? VIP_SUCCESS : VIP_INVALID_PARAMETER; // would lose completions
}

VIP_RETURN FakeCq::notify(VIP_PVOID ctx, VIP_CQ_NOTIFY_HANDLER h) {
    if (!h) return VIP_INVALID_PARAMETER;
    Switchboard &b = board();
    std::lock_guard<std::mutex> g(b.mu);
    if (armed) return VIP_INVALID_STATE;
    armed = true;
    notify_ctx = ctx;
    notify_h = h;
    b.notify_cqs.push_back(this);
    b.settle();
    return VIP_SUCCESS;
}

} // namespace vipl::fake
