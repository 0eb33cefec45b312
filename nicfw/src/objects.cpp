// objects.cpp - the host side of VIs and completion queues (objects.hpp):
// posting descriptors (doorbells), reaping completions in order, waits and
// notifies; the VI's connection calls go to the connection manager.
#include "nic.hpp"
#include "reliable.hpp"
#include "vipl_instr.h"

namespace nicfw {

using vipl::common::WorkRing;

ViImpl::ViImpl(NicHw *hw, uint32_t index, const vipl::prov::ViAttr &a, CqImpl *scq, CqImpl *rcq)
    : hw(hw), index(index), attr(a), ptag_id(static_cast<PtagImpl *>(a.ptag)->id), send_cq(scq), recv_cq(rcq),
      bell_sq(hw->cfg.doorbell == Doorbell::Emulated ? 1 : kFifoDoorbellDepth),
      bell_rq(hw->cfg.doorbell == Doorbell::Emulated ? 1 : kFifoDoorbellDepth) {
    static_assert((kMaxQueue & (kMaxQueue - 1)) == 0, "WorkRing depth is a power of two");
    host_sq.reset(kMaxQueue);
    host_rq.reset(kMaxQueue);
    // The reliable transport's state exists for the VI's whole life, so the
    // firmware (another thread with the agent or in thread mode) never sees
    // the pointer change; a connection only resets it (link_connected), before
    // the VI is published Connected.  (Made at every level: VipSetViAttributes
    // may still change it; rel_on() looks at the level the VI has then.)
    if (hw->cfg.transport) fw.link = std::make_unique<LinkState>();
}

ViImpl::~ViImpl() = default;

VIP_RETURN check_vi_attr(const NicHw &hw, const vipl::prov::ViAttr &a) {
    if (a.reliability != VIP_SERVICE_UNRELIABLE && a.reliability != VIP_SERVICE_RELIABLE_DELIVERY &&
        a.reliability != VIP_SERVICE_RELIABLE_RECEPTION)
        return VIP_INVALID_RELIABILITY_LEVEL;
    if (a.max_transfer == 0 || a.max_transfer > hw.cfg.max_transfer()) return VIP_INVALID_MTU;
    if (a.qos != nullptr) return VIP_INVALID_QOS;
    if (!hw.protection.owns(a.ptag)) return VIP_INVALID_PTAG;
    if (a.rdma_read && a.reliability == VIP_SERVICE_UNRELIABLE) return VIP_INVALID_RDMAREAD;
    return VIP_SUCCESS;
}

void ViImpl::request_flush() {
    const uint32_t want = flush_req.fetch_add(1) + 1;
    hw->fw.ring(index);
    poll_until(*hw, VIP_INFINITE, [&] { return flush_done.load(std::memory_order_acquire) == want; });
}

// Posting: the queue's post lock is held from the ring slot through the
// doorbell token (or the direct send), so the ring, the doorbell and the
// firmware see one order; the firmware step that follows runs outside it.
VIP_RETURN ViImpl::post(WorkRing<> &hostq, SpscRing<Token> &bell, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    {
        vipl::common::SpinGuard g(hostq.post_lock);
        if (!hostq.post(d)) return VIP_ERROR_RESOURCE; // work queue full (post clears Status)
        push_token(bell, d, mh);
    }
    hw->host_poll();
    return VIP_SUCCESS;
}

// The token into the doorbell FIFO, and the VI marked active.  Under the
// queue's post lock.
void ViImpl::push_token(SpscRing<Token> &bell, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    if (__builtin_expect(hw->fw.cost().on(), 0)) hw->fw.cost().host_doorbell(hw->cfg.doorbell == Doorbell::Emulated);
    // Emulated doorbell (LANai 4): one token slot; wait until the firmware took the last.
    while (!bell.push(Token{d, mh})) {
        if (hw->cfg.mode == Mode::Inline) hw->fw.host_step();
        else __builtin_ia32_pause();
    }
    hw->fw.ring(index);
}

// The common case, a VI whose fixed conditions allow the fast transmit
// (send_fast) posted to by the thread that alone drives an inline firmware,
// is one owner section in the firmware (send_alone): queued, transmitted and
// completed with no post lock, doorbell or repeated check of what the VI's
// connection fixed.  Everything else is post_send_general's (send_alone's
// too when it declines).  Both are tail calls: this saves no registers.
VIP_RETURN ViImpl::post_send(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    if (__builtin_expect(send_fast.load(std::memory_order_relaxed) && hw->fw.alone_on_owner_thread(), 1))
        return hw->fw.send_alone(this, d, mh, &ViImpl::post_send_general);
    return post_send_general(d, mh);
}

// A send is queued as post() does, then transmitted at once when the inline
// firmware allows it (send_direct: one call into the firmware), else the
// doorbell is rung.  A thread other than the firmware's owner shares stepping
// first (note_host_thread), so that it never posts beside a send_alone.
VIP_RETURN ViImpl::post_send_general(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    hw->fw.note_host_thread();
    const ViState st = state.load(std::memory_order_relaxed);
    if (st == ViState::Idle || st == ViState::Pending) return VIP_INVALID_STATE;
    if (hw->cfg.profile.send_ns) spin_ns(hw->cfg.profile.send_ns);
    if (__builtin_expect(hw->fw.cost().on(), 0)) hw->fw.cost().host_send_data(d->CS.Length); // hybrid path
    bool direct;
    {
        vipl::common::SpinGuard g(host_sq.post_lock);
        if (!host_sq.post(d)) return VIP_ERROR_RESOURCE; // work queue full (post clears Status)
        direct = hw->fw.send_direct(this, d, mh);
        if (!direct) push_token(bell_sq, d, mh);
    }
    if (direct) hw->deliver_errors();
    else hw->host_poll();
    return VIP_SUCCESS;
}

// One thread alone drives the NIC (note_host_thread saw no other): the owner
// section keeps a thread that appears meanwhile out until the receive is queued
// (its switch to shared stepping waits for it).  The section ends before
// anything else steps the firmware (sections do not nest).  `cost`: whether
// the cost model may be on.
template <bool cost>
[[gnu::always_inline]] inline VIP_RETURN ViImpl::post_recv_alone(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    bool pushed;
    {
        const Firmware::OwnerSection owner = hw->fw.owner_section();
        if (!owner.alone()) goto shared;
        if (!host_rq.post(d)) return VIP_ERROR_RESOURCE; // work queue full (post clears Status)
        if (cost && __builtin_expect(hw->fw.cost().on(), 0))
            hw->fw.cost().host_doorbell(hw->cfg.doorbell == Doorbell::Emulated);
        pushed = bell_rq.push(Token{d, mh});
    }
    if (__builtin_expect(!pushed || state.load(std::memory_order_relaxed) == ViState::Error, 0))
        return post_recv_kick(d, mh, pushed);
    return VIP_SUCCESS;
shared:
    return post(host_rq, bell_rq, d, mh);
}

// With an inline firmware only this thread runs (the default), a receive rings
// no doorbell and runs no firmware step: the firmware takes receive tokens only
// when a packet needs one (fetch_rx_desc drains the doorbell FIFO then), so a
// receiver reposting a buffer after each message pays no MCP iteration for it.
// The firmware must see the token at once only when the VI is broken (it
// completes the receive as flushed) or the doorbell FIFO is full (64 tokens; 1
// with the emulated doorbell).  With another thread stepping the firmware, the
// doorbell is rung as for a send: the VI may break between our state check and
// our token, and only a doorbell would then have the firmware flush it.
//
// The common case (this thread alone drives an inline firmware, no cost model)
// makes no call but tail calls, so it saves no registers; the rest is
// post_recv_general's.
VIP_RETURN ViImpl::post_recv(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    if (__builtin_expect(!hw->fw.alone_on_owner_thread() || hw->fw.cost().on(), 0)) return post_recv_general(d, mh);
    return post_recv_alone<false>(d, mh);
}

VIP_RETURN ViImpl::post_recv_general(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    hw->fw.note_host_thread();
    if (hw->cfg.mode != Mode::Inline || hw->fw.stepping_shared()) return post(host_rq, bell_rq, d, mh);
    return post_recv_alone<true>(d, mh);
}

// The firmware must see this receive now: the VI is broken, or the doorbell
// FIFO was full and the token (when !pushed) still has to go in.
VIP_RETURN ViImpl::post_recv_kick(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh, bool pushed) {
    hw->fw.ring(index);
    hw->host_poll();
    while (!pushed) {
        // Stepping may have turned shared meanwhile: the push under the post lock.
        {
            vipl::common::SpinGuard g(host_rq.post_lock);
            pushed = bell_rq.push(Token{d, mh});
        }
        hw->fw.ring(index);
        hw->host_poll();
    }
    return VIP_SUCCESS;
}

// A descriptor the host already sees complete, on a queue whose reap lock is
// biased to this thread, is taken inline, in a leaf; the rest (the shared
// lock, stepping the NIC) is one tail call, with the registers it needs.
VIP_RETURN ViImpl::done(WorkRing<> &hostq, VIP_DESCRIPTOR **d) {
    if (__builtin_expect(hw->fw.cost().on(), 0)) return done_poll(hostq, d, true);
    const WorkRing<>::Take t = hostq.try_take(d);
    if (__builtin_expect(t == WorkRing<>::Take::Taken, 1)) return VIP_SUCCESS;
    return done_poll(hostq, d, t == WorkRing<>::Take::Locked);
}

// `take`: try the queue first (the cost model is on, or try_take could not).
VIP_RETURN ViImpl::done_poll(WorkRing<> &hostq, VIP_DESCRIPTOR **d, bool take) {
    if (take) {
        if (__builtin_expect(hw->fw.cost().on(), 0)) hw->fw.cost().host_desc_status(); // an uncached status read
        if (hostq.take(d)) return VIP_SUCCESS;
    }
    hw->host_poll(); // a Done drives the NIC even with nothing posted here
    if (hostq.take(d)) return VIP_SUCCESS;
    hw->idle_poll();
    return VIP_NOT_DONE;
}

VIP_RETURN ViImpl::send_done(VIP_DESCRIPTOR **d) { return done(host_sq, d); }

VIP_RETURN ViImpl::recv_done(VIP_DESCRIPTOR **d) {
    const VIP_RETURN rc = done(host_rq, d);
    if (rc == VIP_SUCCESS && hw->cfg.profile.recv_ns) spin_ns(hw->cfg.profile.recv_ns);
    // The message is the host's now: the layer reads its lines, uncached (vipl_instr.h).
    if (rc == VIP_SUCCESS && __builtin_expect(hw->fw.cost().on(), 0)) vipl_host_received((*d)->CS.Length);
    return rc;
}

VIP_RETURN ViImpl::wait(WorkRing<> &hostq, VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) {
    const auto broken = [&] { return state.load(std::memory_order_relaxed) == ViState::Error; };
    if (hostq.empty()) {
        // Nothing posted: wait for a descriptor to be posted and complete, as the
        // cLAN and M-VIA libraries did (their programs block a receive thread in
        // VipRecvWait(VIP_INFINITE) and post from another).  Two host threads then
        // drive an inline firmware, so it is stepped under its lock from now on,
        // as when a notify handler is armed.  A broken VI with nothing posted
        // completes nothing: VIP_INVALID_STATE rather than a wait for ever.
        if (broken()) return VIP_INVALID_STATE;
        if (!hw->fw.stepping_shared()) hw->fw.share_stepping();
    }
    // The condition takes the oldest descriptor when it is complete (under the
    // queue's reap lock): with several threads waiting on one queue, each
    // completion ends exactly one wait.  The queue empty and the VI broken
    // ends it too; a VI being destroyed by another thread ends it at once.
    bool gave_up = false;
    if (!poll_until(*hw, timeout_ms, [&] {
            if (hostq.take(d)) return true;
            if (!hostq.empty()) return gave_up = closing();
            return gave_up = broken() || closing();
        }))
        return VIP_TIMEOUT;
    if (gave_up) return VIP_INVALID_STATE;
    if (__builtin_expect(hw->fw.cost().on(), 0)) hw->fw.cost().host_desc_status();
    return VIP_SUCCESS;
}

VIP_RETURN ViImpl::send_wait(VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) { return wait(host_sq, timeout_ms, d); }
VIP_RETURN ViImpl::recv_wait(VIP_ULONG timeout_ms, VIP_DESCRIPTOR **d) {
    const VIP_RETURN rc = wait(host_rq, timeout_ms, d);
    if (rc == VIP_SUCCESS && hw->cfg.profile.recv_ns) spin_ns(hw->cfg.profile.recv_ns);
    if (rc == VIP_SUCCESS && __builtin_expect(hw->fw.cost().on(), 0)) vipl_host_received((*d)->CS.Length);
    return rc;
}

VIP_RETURN ViImpl::send_notify(VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) {
    return hw->agent.arm(this, notify_send, ctx, h);
}
VIP_RETURN ViImpl::recv_notify(VIP_PVOID ctx, VIP_DESCRIPTOR_NOTIFY_HANDLER h) {
    return hw->agent.arm(this, notify_recv, ctx, h);
}

VIP_RETURN ViImpl::query(VIP_VI_STATE *st, vipl::prov::ViAttr *a, bool *sq_empty, bool *rq_empty) {
    hw->host_poll();
    switch (state.load()) {
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

void ViImpl::set_state(ViState s) {
    PubVi &pub = hw->protection.published().vi(index);
    if (s != ViState::Connected) send_fast.store(false, std::memory_order_relaxed);
    if (s == ViState::Connected) pub.recv_seq.store(fw.recv_seq, std::memory_order_relaxed);
    state.store(s);
    pub.conn.store(pub_conn(s == ViState::Connected, attr.rdma_write, attr.rdma_read, ptag_id, peer_nic, peer_vi),
                   std::memory_order_release);
    // Fixed while Connected (VipSetViAttributes needs an Idle VI; the
    // configuration never changes): the NIC takes the fast transmit, this VI's
    // sends complete on the wire, and no send profile adds host time.
    if (s == ViState::Connected)
        send_fast.store(hw->fw.fast_tx() && attr.reliability != VIP_SERVICE_RELIABLE_RECEPTION &&
                            !hw->cfg.profile.send_ns,
                        std::memory_order_relaxed);
}

VIP_RETURN ViImpl::set_attributes(const vipl::prov::ViAttr &a) {
    if (state.load() != ViState::Idle) return VIP_INVALID_STATE;
    if (VIP_RETURN rc = check_vi_attr(*hw, a); rc != VIP_SUCCESS) return rc;
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
// The oldest entry whose VI still exists (a VI destroyed after completing
// leaves entries behind: they are skipped).  The VI is looked up and its
// handle read under the consumer lock: VI destroy unpublishes the VI, then
// passes through that lock before freeing it (destroy_vi, provider.cpp).
inline bool CqImpl::pop_live(VIP_VI_HANDLE *vi, bool *recv) {
    return ring.take([&](const CqEntry &e) {
        const ViImpl *v = hw->vis.get(e.vi);
        if (!v) return false;
        *vi = v->api_handle;
        *recv = e.recv;
        return true;
    });
}

VIP_RETURN CqImpl::done(VIP_VI_HANDLE *vi, bool *recv) {
    for (int pass = 0; pass < 2; ++pass) {
        if (pop_live(vi, recv)) {
            if (__builtin_expect(hw->fw.cost().on(), 0)) hw->fw.cost().host_cq_check(true); // read and clear
            return VIP_SUCCESS;
        }
        if (pass == 0) hw->host_poll();
    }
    if (__builtin_expect(hw->fw.cost().on(), 0)) hw->fw.cost().host_cq_check(false); // the head read: empty
    hw->idle_poll();
    return VIP_NOT_DONE;
}

VIP_RETURN CqImpl::wait(VIP_ULONG timeout_ms, VIP_VI_HANDLE *vi, bool *recv) {
    bool gave_up = false;
    if (!poll_until(*hw, timeout_ms, [&] { return pop_live(vi, recv) || (gave_up = closing()); })) return VIP_TIMEOUT;
    if (gave_up) return VIP_INVALID_STATE; // another thread is destroying the CQ
    if (__builtin_expect(hw->fw.cost().on(), 0)) hw->fw.cost().host_cq_check(true);
    return VIP_SUCCESS;
}

VIP_RETURN CqImpl::resize(VIP_ULONG entries) {
    if (entries == 0 || entries > kMaxCqEntries) return VIP_INVALID_PARAMETER;
    // The firmware pushes into the ring: pause it (thread mode) by taking the step
    // lock in inline mode, or by quiescing the firmware thread.
    auto quiesced = hw->fw.quiesce();
    return ring.resize(entries) ? VIP_SUCCESS : VIP_INVALID_PARAMETER; // refused if it would lose completions
}

VIP_RETURN CqImpl::notify(VIP_PVOID ctx, VIP_CQ_NOTIFY_HANDLER h) { return hw->agent.arm(this, ctx, h); }

// ---------------------------------------------------------------- connections
VIP_RETURN ViImpl::connect_start(const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote, VIP_ULONG timeout_ms,
                                 const void *data, VIP_ULONG len) {
    return hw->cm.connect_start(this, local, remote, timeout_ms, data, len);
}
VIP_RETURN ViImpl::connect_done(VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len) {
    return hw->cm.connect_done(this, remote_attr, data, len);
}
VIP_RETURN ViImpl::connect_wait(VIP_VI_ATTRIBUTES *remote_attr, void *data, VIP_ULONG *len) {
    return hw->cm.connect_wait_done(this, remote_attr, data, len);
}
VIP_RETURN ViImpl::peer_request(const VIP_NET_ADDRESS *local, const VIP_NET_ADDRESS *remote, VIP_ULONG timeout_ms) {
    return hw->cm.peer_request(this, local, remote, timeout_ms);
}
VIP_RETURN ViImpl::peer_done(VIP_VI_ATTRIBUTES *remote_attr) { return hw->cm.peer_done(this, remote_attr); }
VIP_RETURN ViImpl::peer_wait(VIP_VI_ATTRIBUTES *remote_attr) { return hw->cm.peer_wait(this, remote_attr); }
VIP_RETURN ViImpl::disconnect() { return hw->cm.disconnect(this); }
VIP_RETURN ConnImpl::accept(vipl::prov::Vi *vi, const void *data, VIP_ULONG len) {
    return hw->cm.accept(*this, static_cast<ViImpl *>(vi), data, len);
}
VIP_RETURN ConnImpl::reject(const void *data, VIP_ULONG len) { return hw->cm.reject(*this, data, len); }

} // namespace nicfw
