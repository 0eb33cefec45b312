// api_vi.cpp - VI creation, destruction, attributes and queries.
#include "handles.hpp"

using namespace vipl::api;

namespace {
// A NULL Ptag is the NIC's default tag (cLAN and M-VIA programs zero the
// attributes and set only what they need).
VIP_RETURN resolve(NicEntry *e, const VIP_VI_ATTRIBUTES *a, vipl::prov::ViAttr *out) {
    NicEntry *owner = nullptr;
    vipl::prov::Ptag *p = nullptr;
    if (!a->Ptag) {
        if (VIP_RETURN rc = default_ptag(e, &p); rc != VIP_SUCCESS) return rc;
    } else {
        p = ptags().lookup(a->Ptag, &owner);
        if (!p || owner->nic != e->nic) return VIP_INVALID_PTAG;
    }
    out->reliability = a->ReliabilityLevel;
    out->max_transfer = a->MaxTransferSize;
    out->qos = a->QoS;
    out->ptag = p;
    out->rdma_write = a->EnableRdmaWrite != VIP_FALSE;
    out->rdma_read = a->EnableRdmaRead != VIP_FALSE;
    return VIP_SUCCESS;
}

VIP_RETURN cq_of(NicEntry *e, VIP_CQ_HANDLE h, vipl::prov::Cq **out) {
    *out = nullptr;
    if (!h) return VIP_SUCCESS; // not bound to a CQ
    NicEntry *owner = nullptr;
    *out = cqs().lookup(h, &owner);
    return (*out && owner->nic == e->nic) ? VIP_SUCCESS : VIP_INVALID_PARAMETER;
}
} // namespace

extern "C" {

VIP_RETURN VipCreateVi(VIP_NIC_HANDLE NicHandle, VIP_VI_ATTRIBUTES *ViAttribs, VIP_CQ_HANDLE SendCQHandle,
                       VIP_CQ_HANDLE RecvCQHandle, VIP_VI_HANDLE *ViHandle) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !ViAttribs || !ViHandle) return VIP_INVALID_PARAMETER;
    vipl::prov::ViAttr a;
    if (VIP_RETURN rc = resolve(e, ViAttribs, &a); rc != VIP_SUCCESS) return rc;
    vipl::prov::Cq *scq, *rcq;
    if (cq_of(e, SendCQHandle, &scq) != VIP_SUCCESS || cq_of(e, RecvCQHandle, &rcq) != VIP_SUCCESS)
        return VIP_INVALID_PARAMETER;
    vipl::prov::Vi *vi = nullptr;
    if (VIP_RETURN rc = e->nic->create_vi(a, scq, rcq, &vi); rc != VIP_SUCCESS) return rc;
    void *h = vis().insert(vi, e);
    if (!h) {
        e->nic->destroy_vi(vi);
        return VIP_ERROR_RESOURCE;
    }
    vi->api_handle = h;
    e->objects.fetch_add(1);
    *ViHandle = h;
    return VIP_SUCCESS;
}

// With threads: calls in progress on the VI end first (a Wait on it returns
// VIP_INVALID_STATE), calls arriving wait for the outcome: the handle gone
// (VIP_INVALID_PARAMETER) or, when the provider refuses, the VI as it was
// (handles.hpp close/reopen/remove).  What the provider would refuse anyway
// (connected, descriptors posted) is refused first, without disturbing a
// thread waiting on the VI.
VIP_RETURN VipDestroyVi(VIP_VI_HANDLE ViHandle) {
    NicEntry *e = nullptr;
    {
        const ViUse live(vis(), ViHandle, &e);
        if (!live) return VIP_INVALID_PARAMETER;
        VIP_VI_STATE st;
        vipl::prov::ViAttr a;
        bool sq = true, rq = true;
        if (live->query(&st, &a, &sq, &rq) == VIP_SUCCESS &&
            (st == VIP_STATE_CONNECTED || st == VIP_STATE_CONNECT_PENDING || !sq || !rq))
            return VIP_INVALID_STATE;
    }
    vipl::prov::Vi *vi = vis().close(ViHandle);
    if (!vi) return VIP_INVALID_PARAMETER; // destroyed meanwhile
    if (VIP_RETURN rc = e->nic->destroy_vi(vi); rc != VIP_SUCCESS) {
        vis().reopen(ViHandle, vi);
        return rc;
    }
    vis().remove(ViHandle);
    e->objects.fetch_sub(1);
    return VIP_SUCCESS;
}

VIP_RETURN VipQueryVi(VIP_VI_HANDLE ViHandle, VIP_VI_STATE *State, VIP_VI_ATTRIBUTES *ViAttribs,
                      VIP_BOOLEAN *ViSendQEmpty, VIP_BOOLEAN *ViRecvQEmpty) {
    const ViUse vi(vis(), ViHandle);
    if (!vi || !State || !ViAttribs || !ViSendQEmpty || !ViRecvQEmpty) return VIP_INVALID_PARAMETER;
    vipl::prov::ViAttr a;
    bool sq, rq;
    if (VIP_RETURN rc = vi->query(State, &a, &sq, &rq); rc != VIP_SUCCESS) return rc;
    ViAttribs->ReliabilityLevel = a.reliability;
    ViAttribs->MaxTransferSize = a.max_transfer;
    ViAttribs->QoS = a.qos;
    ViAttribs->Ptag = a.ptag ? a.ptag->api_handle : nullptr;
    ViAttribs->EnableRdmaWrite = a.rdma_write ? VIP_TRUE : VIP_FALSE;
    ViAttribs->EnableRdmaRead = a.rdma_read ? VIP_TRUE : VIP_FALSE;
    *ViSendQEmpty = sq ? VIP_TRUE : VIP_FALSE;
    *ViRecvQEmpty = rq ? VIP_TRUE : VIP_FALSE;
    return VIP_SUCCESS;
}

VIP_RETURN VipSetViAttributes(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *ViAttribs) {
    NicEntry *e = nullptr;
    const ViUse vi(vis(), ViHandle, &e);
    if (!vi || !ViAttribs) return VIP_INVALID_PARAMETER;
    vipl::prov::ViAttr a;
    if (VIP_RETURN rc = resolve(e, ViAttribs, &a); rc != VIP_SUCCESS) return rc;
    return vi->set_attributes(a);
}

} // extern "C"
