// api_data.cpp - the data path: post, done, wait, notify.  Each call is one
// handle lookup, the spec's argument checks, and one provider call; the VIPL
// instrumentation times each (it costs one predictable branch when off).
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
} // namespace

extern "C" {

VIP_RETURN VipPostSend(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr, VIP_MEM_HANDLE MemoryHandle) {
    VIPL_INSTR_BEGIN(t);
    vipl::prov::Vi *vi = vis().lookup(ViHandle);
    if (__builtin_expect(!vi || !aligned(DescriptorPtr), 0)) return VIP_INVALID_PARAMETER;
    const VIP_RETURN rc = vi->post_send(DescriptorPtr, MemoryHandle);
    VIPL_INSTR_END(c_post_send, t);
    return rc;
}

VIP_RETURN VipPostRecv(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr, VIP_MEM_HANDLE MemoryHandle) {
    VIPL_INSTR_BEGIN(t);
    vipl::prov::Vi *vi = vis().lookup(ViHandle);
    if (__builtin_expect(!vi || !aligned(DescriptorPtr), 0)) return VIP_INVALID_PARAMETER;
    const VIP_RETURN rc = vi->post_recv(DescriptorPtr, MemoryHandle);
    VIPL_INSTR_END(c_post_recv, t);
    return rc;
}

VIP_RETURN VipSendDone(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr) {
    VIPL_INSTR_BEGIN(t);
    vipl::prov::Vi *vi = vis().lookup(ViHandle);
    if (__builtin_expect(!vi || !DescriptorPtr, 0)) return VIP_INVALID_PARAMETER;
    const VIP_RETURN rc = vi->send_done(DescriptorPtr);
    if (rc == VIP_SUCCESS) VIPL_INSTR_END(c_send_done, t);
    return rc;
}

VIP_RETURN VipRecvDone(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr) {
    VIPL_INSTR_BEGIN(t);
    vipl::prov::Vi *vi = vis().lookup(ViHandle);
    if (__builtin_expect(!vi || !DescriptorPtr, 0)) return VIP_INVALID_PARAMETER;
    const VIP_RETURN rc = vi->recv_done(DescriptorPtr);
    if (rc == VIP_SUCCESS) VIPL_INSTR_END(c_recv_done, t);
    return rc;
}

VIP_RETURN VipSendWait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout, VIP_DESCRIPTOR **DescriptorPtr) {
    VIPL_INSTR_BEGIN(t);
    vipl::prov::Vi *vi = vis().lookup(ViHandle);
    if (!vi || !DescriptorPtr) return VIP_INVALID_PARAMETER;
    const VIP_RETURN rc = vi->send_wait(Timeout, DescriptorPtr);
    VIPL_INSTR_END(c_send_wait, t);
    return rc;
}

VIP_RETURN VipRecvWait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout, VIP_DESCRIPTOR **DescriptorPtr) {
    VIPL_INSTR_BEGIN(t);
    vipl::prov::Vi *vi = vis().lookup(ViHandle);
    if (!vi || !DescriptorPtr) return VIP_INVALID_PARAMETER;
    const VIP_RETURN rc = vi->recv_wait(Timeout, DescriptorPtr);
    VIPL_INSTR_END(c_recv_wait, t);
    return rc;
}

VIP_RETURN VipSendNotify(VIP_VI_HANDLE ViHandle, VIP_PVOID Context, VIP_DESCRIPTOR_NOTIFY_HANDLER Handler) {
    vipl::prov::Vi *vi = vis().lookup(ViHandle);
    if (!vi || !Handler) return VIP_INVALID_PARAMETER;
    return vi->send_notify(Context, Handler);
}

VIP_RETURN VipRecvNotify(VIP_VI_HANDLE ViHandle, VIP_PVOID Context, VIP_DESCRIPTOR_NOTIFY_HANDLER Handler) {
    vipl::prov::Vi *vi = vis().lookup(ViHandle);
    if (!vi || !Handler) return VIP_INVALID_PARAMETER;
    return vi->recv_notify(Context, Handler);
}

} // extern "C"
