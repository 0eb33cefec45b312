// verbs_cq.cpp - a VIPL completion queue: one ibv_cq shared by the bound queues.
//
// VipCQDone returns (VI, queue) pairs in completion order; the descriptor itself
// is then taken with VipSendDone/VipRecvDone.  Each completion polled from the
// ibv_cq completes its descriptor and appends the queue to the CQ's FIFO
// (common::CqFifo).  The ibv_cq and the FIFO are sized to the larger of
// EntryCount and the total depth of the bound queues, so neither can overflow.
//
// Threads: pollers of the ibv_cq take its poll lock (one producer of FIFO
// entries at a time); takers of entries take the FIFO's consumer lock, under
// which an entry is turned into its VI's handle; destroying a VI drops its
// entries under both, so a taker never reads a VI being freed.  Sizes
// (bind, unbind, resize) change under the NIC's cm_mu.
#include <fcntl.h>

#include <algorithm>

#include "verbs_provider.hpp"

namespace vipl::verbs {

VerbsCq::~VerbsCq() {
    if (cq) ibv_destroy_cq(cq);
    if (channel) ibv_destroy_comp_channel(channel);
}

// Room for `entries` rounded up to a power of two, so that binding queues
// seldom resizes the CQ, but never past the device's limit: rxe's max_cqe is
// 32767, and a CQ of exactly that many entries must still be created.
uint32_t VerbsCq::rounded_capacity(uint64_t entries) const {
    return uint32_t(std::min<uint64_t>(common::CqFifo<Entry>::round_up(entries), uint64_t(nic_.dev_attr.max_cqe)));
}

VIP_RETURN VerbsCq::init(VIP_ULONG entries) {
    if (entries == 0 || entries > VIP_ULONG(nic_.dev_attr.max_cqe)) return VIP_INVALID_PARAMETER;
    channel = ibv_create_comp_channel(nic_.ctx);
    if (!channel) return VIP_ERROR_RESOURCE;
    fcntl(channel->fd, F_SETFL, fcntl(channel->fd, F_GETFL) | O_NONBLOCK);
    requested_ = uint32_t(entries);
    capacity_ = rounded_capacity(entries);
    cq = ibv_create_cq(nic_.ctx, int(capacity_), this, channel, 0);
    if (!cq) return VIP_ERROR_RESOURCE;
    fifo_.resize(capacity_);
    return VIP_SUCCESS;
}

VIP_RETURN VerbsCq::grow(uint32_t need) {
    if (need <= capacity_) return VIP_SUCCESS;
    if (need > uint32_t(nic_.dev_attr.max_cqe)) return VIP_ERROR_RESOURCE;
    uint32_t cap = rounded_capacity(need);
    common::SpinGuard g(poll_lock); // no completion is moved meanwhile
    if (ibv_resize_cq(cq, int(cap)) != 0) return VIP_ERROR_RESOURCE;
    fifo_.resize(cap); // keeps the entries not yet taken
    capacity_ = cap;
    return VIP_SUCCESS;
}

VIP_RETURN VerbsCq::bind(uint32_t depth) {
    VIP_RETURN rc = grow(std::max<uint64_t>(requested_, uint64_t(bound_depth_) + depth));
    if (rc != VIP_SUCCESS) return rc;
    bound_depth_ += depth;
    bound_queues++;
    return VIP_SUCCESS;
}

void VerbsCq::unbind(uint32_t depth) {
    bound_depth_ -= depth;
    bound_queues--;
}

VIP_RETURN VerbsCq::resize(VIP_ULONG entries) {
    if (entries == 0 || entries > VIP_ULONG(nic_.dev_attr.max_cqe)) return VIP_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(nic_.cm_mu);                // as bind and unbind
    if (entries < fifo_.size()) return VIP_INVALID_PARAMETER; // would drop entries not yet taken
    requested_ = uint32_t(entries);
    // Never below what the bound queues can have outstanding: that is what keeps
    // the ibv_cq from overflowing (an overflow is fatal for every bound QP).
    return grow(std::max<uint64_t>(requested_, bound_depth_));
}

VIP_RETURN VerbsCq::done(VIP_VI_HANDLE *vi, bool *recv_queue) {
    auto take = [&](const Entry &e) {
        *vi = e.queue->vi->api_handle; // under the consumer lock (see the top)
        *recv_queue = e.queue->is_recv;
        return true;
    };
    if (!fifo_.take(take)) {
        if (poll() == 0) nic_.idle_poll();
        if (!fifo_.take(take)) return VIP_NOT_DONE;
    }
    return VIP_SUCCESS;
}

VIP_RETURN VerbsCq::wait(VIP_ULONG timeout_ms, VIP_VI_HANDLE *vi, bool *recv_queue) {
    return block_on_cq(nic_, cq, channel, timeout_ms, [&] {
        VIP_RETURN rc = done(vi, recv_queue);
        if (rc == VIP_NOT_DONE && closing()) rc = VIP_INVALID_STATE; // another thread is destroying the CQ
        return rc;
    });
}

void VerbsCq::forget(VerbsVi *vi) {
    common::SpinGuard g(poll_lock); // remove_if needs the producer quiet
    fifo_.remove_if([vi](const Entry &e) { return e.queue->vi == vi; });
}

VIP_RETURN VerbsCq::notify(VIP_PVOID ctx, VIP_CQ_NOTIFY_HANDLER h) {
    {
        std::lock_guard<std::mutex> g(nic_.ctl_mu);
        if (notify_fn) return VIP_INVALID_STATE; // one notification at a time
        notify_ctx = ctx;
        notify_fn = h;
    }
    nic_.notify_armed();
    return VIP_SUCCESS;
}

} // namespace vipl::verbs
