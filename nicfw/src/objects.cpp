// objects.cpp - the host side of VIs and completion queues: posting
// descriptors (doorbells), reaping completions in order, waits and notifies.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nic.hpp"

namespace nicfw {

namespace {
inline bool is_done(const VIP_DESCRIPTOR *d) {
    return __atomic_load_n(&d->CS.Status, __ATOMIC_ACQUIRE) & VIP_STATUS_DONE;
}
} // namespace

ViImpl::ViImpl(NicHw *hw, uint32_t index, const vipl::prov::ViAttr &a, CqImpl *scq, CqImpl *rcq)
    : hw(hw), index(index), attr(a), send_cq(scq), recv_cq(rcq),
      bell_sq(hw->cfg.doorbell == Doorbell::Emulated ? 1 : kFifoDoorbellDepth),
      bell_rq(hw->cfg.doorbell == Doorbell::Emulated ? 1 : kFifoDoorbellDepth), txq(kMaxQueue) {
    ptag_id = static_cast<PtagImpl *>(a.ptag)->id;
}

ViImpl::~ViImpl() = default;

void ViImpl::ring_doorbell() {
    const uint32_t w = index / 64;
    const uint64_t bit = 1ull << (index % 64);
    if (hw->cfg.mode == Mode::Inline && !hw->shared_step.load(std::memory_order_relaxed)) {
        // Only this thread runs the firmware: a plain read-modify-write suffices.
        const uint64_t v = hw->active[w].load(std::memory_order_relaxed);
        if (!(v & bit)) hw->active[w].store(v | bit, std::memory_order_relaxed);
        return;
    }
    hw->active[w].fetch_or(bit, std::memory_order_seq_cst);
    if (hw->cfg.mode == Mode::Thread) {
        RingCtl &c = hw->wire.ctl(hw->rank);
        if (c.sleeping.load(std::memory_order_relaxed)) {
            c.sleeping.store(0, std::memory_order_relaxed);
            c.doorbell.fetch_add(1, std::memory_order_release);
            syscall(SYS_futex, reinterpret_cast<uint32_t *>(&c.doorbell), FUTEX_WAKE, 1, nullptr, nullptr, 0);
        }
    }
}

void ViImpl::request_flush() {
    const uint32_t want = flush_req.fetch_add(1) + 1;
    ring_doorbell();
    poll_until(hw, VIP_INFINITE, [&] { return flush_done.load(std::memory_order_acquire) == want; });
}

VIP_RETURN ViImpl::post(SpscRing<VIP_DESCRIPTOR *> &hostq, SpscRing<Token> &bell, VIP_DESCRIPTOR *d,
                        VIP_MEM_HANDLE mh) {
    d->CS.Status = 0;
    if (!hostq.push(d)) return VIP_ERROR_RESOURCE; // work queue full
    // Emulated doorbell (LANai 4): one token slot; wait until the firmware took the last.
    while (!bell.push(Token{d, mh})) {
        if (hw->cfg.mode == Mode::Inline) hw->host_poll();
        else __builtin_ia32_pause();
    }
    ring_doorbell();
    hw->host_poll();
    return VIP_SUCCESS;
}

VIP_RETURN ViImpl::post_send(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    const int st = state.load(std::memory_order_relaxed);
    if (st == static_cast<int>(ViState::Idle) || st == static_cast<int>(ViState::Pending)) return VIP_INVALID_STATE;
    if (hw->cfg.profile.send_ns) spin_ns(hw->cfg.profile.send_ns);
    return post(host_sq, bell_sq, d, mh);
}

VIP_RETURN ViImpl::post_recv(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) { return post(host_rq, bell_rq, d, mh); }

VIP_RETURN ViImpl::done(SpscRing<VIP_DESCRIPTOR *> &hostq, VIP_DESCRIPTOR **d) {
    for (int pass = 0; pass < 2; ++pass) {
        VIP_DESCRIPTOR *const *head = hostq.front();
        if (head && is_done(*head)) {
            hostq.pop(d);
            return VIP_SUCCESS;
        }
        if (pass == 0) hw->host_poll();
    }
    hw->idle_poll();
    return VIP_NOT_DONE;
}

VIP_RETURN ViImpl::send_done(VIP_DESCRIPTOR **d) { return done(host_sq, d); }

VIP_RETURN ViImpl::recv_done(VIP_DESCRIPTOR **d) {
    const VIP_RETURN rc = done(host_rq, d);
    if (rc == VIP_SUCCESS && hw->cfg.profile.recv_ns) spin_ns(hw->cfg.profile.recv_ns);
    return rc;
}

VIP_RETURN ViImpl::wait(SpscRing<VIP_DESCRIPTOR *> &hostq, VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) {
    const auto broken = [&] { return state.load(std::memory_order_relaxed) == static_cast<int>(ViState::Error); };
    if (hostq.empty()) {
        // Nothing posted: wait for a descriptor to be posted and complete, as the
        // cLAN and M-VIA libraries did (their programs block a receive thread in
        // VipRecvWait(VIP_INFINITE) and post from another).  Two host threads then
        // drive an inline firmware, so it is stepped under its lock from now on,
        // as when a notify handler is armed.  A broken VI with nothing posted
        // completes nothing: VIP_INVALID_STATE rather than a wait for ever.
        if (broken()) return VIP_INVALID_STATE;
        if (hw->cfg.mode == Mode::Inline && !hw->shared_step.load(std::memory_order_relaxed))
            hw->shared_step.store(true, std::memory_order_seq_cst);
    }
    bool gave_up = false;
    if (!poll_until(hw, timeout_ms, [&] {
            VIP_DESCRIPTOR *const *head = hostq.front();
            if (head) return is_done(*head);
            return gave_up = broken();
        }))
        return VIP_TIMEOUT;
    if (gave_up) return VIP_INVALID_STATE;
    hostq.pop(d);
    return VIP_SUCCESS;
}

VIP_RETURN ViImpl::send_wait(VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) { return wait(host_sq, timeout_ms, d); }
VIP_RETURN ViImpl::recv_wait(VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) {
    const VIP_RETURN rc = wait(host_rq, timeout_ms, d);
    if (rc == VIP_SUCCESS && hw->cfg.profile.recv_ns) spin_ns(hw->cfg.profile.recv_ns);
    return rc;
}

static VIP_RETURN arm(NicHw *hw, ViImpl *vi, NotifySlot &slot, VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) {
    if (!h) return VIP_INVALID_PARAMETER;
    {
        std::lock_guard<std::mutex> g(hw->notify_mu);
        if (slot.armed.load()) return VIP_INVALID_STATE; // one pending notify per queue
        slot.ctx = ctx;
        slot.desc_handler = h;
        slot.armed.store(true);
        hw->notify_vis.push_back(vi);
    }
    hw->ensure_agent(true);
    return VIP_SUCCESS;
}

VIP_RETURN ViImpl::send_notify(VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) { return arm(hw, this, notify_send, ctx, h); }
VIP_RETURN ViImpl::recv_notify(VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) { return arm(hw, this, notify_recv, ctx, h); }

VIP_RETURN ViImpl::query(VIP_VI_STATE *st, vipl::prov::ViAttr *a, bool *sq_empty, bool *rq_empty) {
    hw->host_poll();
    switch (static_cast<ViState>(state.load())) {
    case ViState::Idle: *st = VIP_STATE_IDLE; break;
    case ViState::Connected: *st = VIP_STATE_CONNECTED; break;
    case ViState::Pending: *st = VIP_STATE_CONNECT_PENDING; break;
    case ViState::Error: *st = VIP_STATE_ERROR; break;
    }
    *a = attr;
    *sq_empty = host_sq.empty();
    *rq_empty = host_rq.empty();
    return VIP_SUCCESS;
}

VIP_RETURN ViImpl::set_attributes(const vipl::prov::ViAttr &a) {
    if (state.load() != static_cast<int>(ViState::Idle)) return VIP_INVALID_STATE;
    if (VIP_RETURN rc = hw->check_vi_attr(a); rc != VIP_SUCCESS) return rc;
    auto *old_tag = static_cast<PtagImpl *>(attr.ptag);
    auto *new_tag = static_cast<PtagImpl *>(a.ptag);
    if (old_tag != new_tag) {
        new_tag->refs.fetch_add(1);
        old_tag->refs.fetch_sub(1);
    }
    attr = a;
    ptag_id = new_tag->id;
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- CQ
VIP_RETURN CqImpl::done(vipl::prov::Vi **vi, bool *recv) {
    for (int pass = 0; pass < 2; ++pass) {
        CqEntry e;
        while (ring.pop(&e)) {
            ViImpl *v = hw->vis[e.vi].load(std::memory_order_acquire);
            if (!v) continue; // the VI was destroyed after completing: skip its entry
            *vi = v;
            *recv = e.recv;
            return VIP_SUCCESS;
        }
        if (pass == 0) hw->host_poll();
    }
    hw->idle_poll();
    return VIP_NOT_DONE;
}

VIP_RETURN CqImpl::wait(VIP_ULONG timeout_ms, vipl::prov::Vi **vi, bool *recv) {
    VIP_RETURN rc = VIP_TIMEOUT;
    poll_until(hw, timeout_ms, [&] {
        CqEntry e;
        while (ring.pop(&e)) {
            ViImpl *v = hw->vis[e.vi].load(std::memory_order_acquire);
            if (!v) continue;
            *vi = v;
            *recv = e.recv;
            rc = VIP_SUCCESS;
            return true;
        }
        return false;
    });
    return rc;
}

VIP_RETURN CqImpl::resize(VIP_ULONG entries) {
    if (entries == 0 || entries > kMaxCqEntries) return VIP_INVALID_PARAMETER;
    // The firmware pushes into the ring: pause it (thread mode) by taking the step
    // lock in inline mode, or by quiescing the firmware thread.
    auto quiesced = hw->quiesce();
    if (ring.size() > entries) return VIP_INVALID_PARAMETER; // would lose completions
    std::vector<CqEntry> keep;
    CqEntry e;
    while (ring.pop(&e)) keep.push_back(e);
    ring.reset(entries);
    for (auto &k : keep) ring.push(k);
    return VIP_SUCCESS;
}

VIP_RETURN CqImpl::notify(VIP_PVOID ctx, VIP_CQ_NOTIFY_HANDLER h) {
    if (!h) return VIP_INVALID_PARAMETER;
    {
        std::lock_guard<std::mutex> g(hw->notify_mu);
        if (notify_slot.armed.load()) return VIP_INVALID_STATE;
        notify_slot.ctx = ctx;
        notify_slot.cq_handler = h;
        notify_slot.armed.store(true);
        hw->notify_cqs.push_back(this);
    }
    hw->ensure_agent(true);
    return VIP_SUCCESS;
}

} // namespace nicfw
