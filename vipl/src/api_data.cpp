// api_data.cpp - the data path: post, done, wait, notify.  Each call is one
// handle lookup holding a use of the VI (handles.hpp: a VipDestroyVi on
// another thread waits for it), the spec's argument checks, and one provider call; the VIPL
// instrumentation times each (off, it costs one predictable branch: posts and
// Dones then take a copy of the body that has no clock in it).
#include <cstdint>

#include "handles.hpp"
#include "vipl_instr.h"

using namespace vipl::api;

VIPL_INSTR_DEFINE(c_post_send, "vipl.VipPostSend", VIPL_INSTR_BASE_VI);
VIPL_INSTR_DEFINE(c_post_recv, "vipl.VipPostRecv", VIPL_INSTR_BASE_VI);
VIPL_INSTR_DEFINE(c_send_done, "vipl.VipSendDone", VIPL_INSTR_BASE_VI);
VIPL_INSTR_DEFINE(c_recv_done, "vipl.VipRecvDone", VIPL_INSTR_BASE_VI);
VIPL_INSTR_DEFINE(c_send_wait, "vipl.VipSendWait", VIPL_INSTR_EVENT);
VIPL_INSTR_DEFINE(c_recv_wait, "vipl.VipRecvWait", VIPL_INSTR_EVENT);

namespace {
inline bool aligned(const VIP_DESCRIPTOR *d) {
    return d && (reinterpret_cast<uintptr_t>(d) & (VIP_DESCRIPTOR_ALIGNMENT - 1)) == 0;
}

// A descriptor on a work queue carries its own address in CS.Next (which the
// spec gives the provider while the descriptor is posted) from the post until
// it is handed back by VipSendDone/VipRecvDone/VipSendWait/VipRecvWait or a
// notify handler.  Posting it again in between is refused
// (VIP_INVALID_PARAMETER) instead of putting it on a queue twice.
inline bool mark_posted(VIP_DESCRIPTOR *d) {
    if (__builtin_expect(d->CS.Next.Address == d, 0)) return false; // still posted
    d->CS.Next.Address = d;
    return true;
}
inline void mark_returned(VIP_DESCRIPTOR *d) {
    if (d) d->CS.Next.Address = nullptr;
}

// The instrumentation's timing is on (the clock is read around each call).
inline bool timing() { return VIASTACK_INSTR_COMPILED && vipl_instr_timing; }

// A post and a Done are each written once, inline in two callers: the plain
// call, and the timed one (out of line, taken only while timing() holds).  So
// the plain call keeps across the provider's call only what it needs after it
// (the descriptor and where the use is held): it saves no register for the
// clock's start, and reads no timing flag after the call.
template <bool send>
[[gnu::always_inline]] inline VIP_RETURN post(VIP_VI_HANDLE h, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    const ViUse vi(vis(), h);
    if (__builtin_expect(!vi || !aligned(d), 0)) return VIP_INVALID_PARAMETER;
    if (__builtin_expect(!mark_posted(d), 0)) return VIP_INVALID_PARAMETER;
    const VIP_RETURN rc = send ? vi->post_send(d, mh) : vi->post_recv(d, mh);
    if (__builtin_expect(rc != VIP_SUCCESS, 0)) mark_returned(d);
    return rc;
}

template <bool send>
__attribute__((noinline)) VIP_RETURN post_timed(VIP_VI_HANDLE h, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh) {
    VIPL_INSTR_BEGIN(t);
    const VIP_RETURN rc = post<send>(h, d, mh);
    if (send) VIPL_INSTR_PROVIDER_END(c_post_send, t);
    else VIPL_INSTR_PROVIDER_END(c_post_recv, t);
    return rc;
}

// `t`, `t_off_`: the timed call's start (VIPL_INSTR_CALL_BEGIN), 0 in the plain call.
template <bool send>
[[gnu::always_inline]] inline VIP_RETURN done(VIP_VI_HANDLE h, VIP_DESCRIPTOR **dp, [[maybe_unused]] uint64_t t = 0,
                                              [[maybe_unused]] uint64_t t_off_ = 0) {
    const ViUse vi(vis(), h);
    if (__builtin_expect(!vi || !dp, 0)) return VIP_INVALID_PARAMETER;
    const VIP_RETURN rc = send ? vi->send_done(dp) : vi->recv_done(dp);
    VIPL_INSTR_CALL_WAITED(t, rc == VIP_SUCCESS ? *dp : nullptr, rc != VIP_NOT_DONE);
    if (rc == VIP_SUCCESS) mark_returned(*dp);
    return rc;
}

template <bool send>
__attribute__((noinline)) VIP_RETURN done_timed(VIP_VI_HANDLE h, VIP_DESCRIPTOR **dp) {
#if VIASTACK_INSTR_COMPILED
    VIPL_INSTR_CALL_BEGIN(t);
    const VIP_RETURN rc = done<send>(h, dp, t, t_off_);
    // An empty poll nests, uncounted.
    if (send) VIPL_INSTR_PROVIDER_END_IF(c_send_done, t, rc == VIP_SUCCESS);
    else VIPL_INSTR_PROVIDER_END_IF(c_recv_done, t, rc == VIP_SUCCESS);
    return rc;
#else
    return done<send>(h, dp);
#endif
}

template <int Q>
void notify_wrapper(VIP_PVOID ctx, VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi_handle, VIP_DESCRIPTOR *d) {
    const vipl::prov::Vi::UserNotify user = static_cast<vipl::prov::Vi *>(ctx)->api_notify[Q]; // may be re-armed inside
    mark_returned(d);
    user.h(user.ctx, nic, vi_handle, d);
}
} // namespace

extern "C" {

VIP_RETURN VipPostSend(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr, VIP_MEM_HANDLE MemoryHandle) {
    if (__builtin_expect(timing(), 0)) return post_timed<true>(ViHandle, DescriptorPtr, MemoryHandle);
    return post<true>(ViHandle, DescriptorPtr, MemoryHandle);
}

VIP_RETURN VipPostRecv(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr, VIP_MEM_HANDLE MemoryHandle) {
    if (__builtin_expect(timing(), 0)) return post_timed<false>(ViHandle, DescriptorPtr, MemoryHandle);
    return post<false>(ViHandle, DescriptorPtr, MemoryHandle);
}

VIP_RETURN VipSendDone(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr) {
    if (__builtin_expect(timing(), 0)) return done_timed<true>(ViHandle, DescriptorPtr);
    return done<true>(ViHandle, DescriptorPtr);
}

VIP_RETURN VipRecvDone(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr) {
    if (__builtin_expect(timing(), 0)) return done_timed<false>(ViHandle, DescriptorPtr);
    return done<false>(ViHandle, DescriptorPtr);
}

VIP_RETURN VipSendWait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout, VIP_DESCRIPTOR **DescriptorPtr) {
    VIPL_INSTR_CALL_BEGIN(t);
    const ViUse vi(vis(), ViHandle);
    if (!vi || !DescriptorPtr) return VIP_INVALID_PARAMETER;
    const VIP_RETURN rc = vi->send_wait(Timeout, DescriptorPtr);
    if (rc == VIP_SUCCESS) VIPL_INSTR_CALL_WAITED(t, *DescriptorPtr, 1); // the part before its arrival
    if (rc == VIP_SUCCESS) mark_returned(*DescriptorPtr);
    VIPL_INSTR_PROVIDER_END(c_send_wait, t);
    return rc;
}

VIP_RETURN VipRecvWait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout, VIP_DESCRIPTOR **DescriptorPtr) {
    VIPL_INSTR_CALL_BEGIN(t);
    const ViUse vi(vis(), ViHandle);
    if (!vi || !DescriptorPtr) return VIP_INVALID_PARAMETER;
    const VIP_RETURN rc = vi->recv_wait(Timeout, DescriptorPtr);
    if (rc == VIP_SUCCESS) VIPL_INSTR_CALL_WAITED(t, *DescriptorPtr, 1); // the part before its arrival
    if (rc == VIP_SUCCESS) mark_returned(*DescriptorPtr);
    VIPL_INSTR_PROVIDER_END(c_recv_wait, t);
    return rc;
}

VIP_RETURN VipSendNotify(VIP_VI_HANDLE ViHandle, VIP_PVOID Context, VIP_DESCRIPTOR_NOTIFY_HANDLER Handler) {
    const ViUse vi(vis(), ViHandle);
    if (!vi || !Handler) return VIP_INVALID_PARAMETER;
    const vipl::prov::Vi::UserNotify saved = vi->api_notify[0];
    vi->api_notify[0] = {Context, Handler}; // before arming: the handler may run at once
    const VIP_RETURN rc = vi->send_notify(vi.get(), notify_wrapper<0>);
    if (rc != VIP_SUCCESS) vi->api_notify[0] = saved;
    return rc;
}

VIP_RETURN VipRecvNotify(VIP_VI_HANDLE ViHandle, VIP_PVOID Context, VIP_DESCRIPTOR_NOTIFY_HANDLER Handler) {
    const ViUse vi(vis(), ViHandle);
    if (!vi || !Handler) return VIP_INVALID_PARAMETER;
    const vipl::prov::Vi::UserNotify saved = vi->api_notify[1];
    vi->api_notify[1] = {Context, Handler}; // before arming: the handler may run at once
    const VIP_RETURN rc = vi->recv_notify(vi.get(), notify_wrapper<1>);
    if (rc != VIP_SUCCESS) vi->api_notify[1] = saved;
    return rc;
}

} // extern "C"
