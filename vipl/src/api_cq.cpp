// api_cq.cpp - completion queues.
#include "handles.hpp"
#include "vipl_instr.h"

using namespace vipl::api;

VIPL_INSTR_DEFINE(c_cq_done, "vipl.VipCQDone", VIPL_INSTR_EVENT);
VIPL_INSTR_DEFINE(c_cq_wait, "vipl.VipCQWait", VIPL_INSTR_EVENT);

extern "C" {

VIP_RETURN VipCreateCQ(VIP_NIC_HANDLE NicHandle, VIP_ULONG EntryCount, VIP_CQ_HANDLE *CQHandle) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !CQHandle || EntryCount == 0) return VIP_INVALID_PARAMETER;
    vipl::prov::Cq *cq = nullptr;
    if (VIP_RETURN rc = e->nic->create_cq(EntryCount, &cq); rc != VIP_SUCCESS) return rc;
    void *h = cqs().insert(cq, e);
    if (!h) {
        e->nic->destroy_cq(cq);
        return VIP_ERROR_RESOURCE;
    }
    cq->api_handle = h;
    e->objects.fetch_add(1);
    *CQHandle = h;
    return VIP_SUCCESS;
}

// With threads: calls in progress on the CQ end first, calls arriving wait
// for the outcome (handles.hpp close/reopen/remove).
VIP_RETURN VipDestroyCQ(VIP_CQ_HANDLE CQHandle) {
    NicEntry *e = nullptr;
    if (!cqs().lookup(CQHandle, &e)) return VIP_INVALID_PARAMETER;
    vipl::prov::Cq *cq = cqs().close(CQHandle);
    if (!cq) return VIP_INVALID_PARAMETER; // destroyed meanwhile
    if (VIP_RETURN rc = e->nic->destroy_cq(cq); rc != VIP_SUCCESS) {
        cqs().reopen(CQHandle, cq);
        return rc;
    }
    cqs().remove(CQHandle);
    e->objects.fetch_sub(1);
    return VIP_SUCCESS;
}

VIP_RETURN VipResizeCQ(VIP_CQ_HANDLE CQHandle, VIP_ULONG EntryCount) {
    const CqUse cq(cqs(), CQHandle);
    if (!cq || EntryCount == 0) return VIP_INVALID_PARAMETER;
    return cq->resize(EntryCount);
}

VIP_RETURN VipCQDone(VIP_CQ_HANDLE CQHandle, VIP_VI_HANDLE *ViHandle, VIP_BOOLEAN *RecvQueue) {
    VIPL_INSTR_CALL_BEGIN(t);
    const CqUse cq(cqs(), CQHandle);
    if (__builtin_expect(!cq || !ViHandle || !RecvQueue, 0)) return VIP_INVALID_PARAMETER;
    VIP_VI_HANDLE vi = nullptr;
    bool recv = false;
    const VIP_RETURN rc = cq->done(&vi, &recv);
    VIPL_INSTR_CALL_WAITED(t, cq.get(), rc != VIP_NOT_DONE);
    if (rc == VIP_SUCCESS) {
        *ViHandle = vi;
        *RecvQueue = recv ? VIP_TRUE : VIP_FALSE;
    }
    VIPL_INSTR_PROVIDER_END_IF(c_cq_done, t, rc == VIP_SUCCESS); // an empty poll nests, uncounted
    return rc;
}

VIP_RETURN VipCQWait(VIP_CQ_HANDLE CQHandle, VIP_ULONG Timeout, VIP_VI_HANDLE *ViHandle, VIP_BOOLEAN *RecvQueue) {
    VIPL_INSTR_CALL_BEGIN(t);
    const CqUse cq(cqs(), CQHandle);
    if (!cq || !ViHandle || !RecvQueue) return VIP_INVALID_PARAMETER;
    VIP_VI_HANDLE vi = nullptr;
    bool recv = false;
    const VIP_RETURN rc = cq->wait(Timeout, &vi, &recv);
    if (rc == VIP_SUCCESS) VIPL_INSTR_CALL_WAITED(t, cq.get(), 1); // the part before its arrival
    if (rc == VIP_SUCCESS) {
        *ViHandle = vi;
        *RecvQueue = recv ? VIP_TRUE : VIP_FALSE;
    }
    VIPL_INSTR_PROVIDER_END(c_cq_wait, t);
    return rc;
}

VIP_RETURN VipCQNotify(VIP_CQ_HANDLE CQHandle, VIP_PVOID Context, VIP_CQ_NOTIFY_HANDLER Handler) {
    const CqUse cq(cqs(), CQHandle);
    if (!cq || !Handler) return VIP_INVALID_PARAMETER;
    return cq->notify(Context, Handler);
}

} // extern "C"
