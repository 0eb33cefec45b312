// api_nic.cpp - VipOpenNic, VipCloseNic, VipQueryNic, protection tags.
#include "handles.hpp"

using namespace vipl::api;

namespace vipl::api {
VIP_RETURN default_ptag(NicEntry *e, prov::Ptag **out) {
    std::lock_guard<std::mutex> g(e->default_mu); // control path only (VI / memory set-up)
    if (!e->default_ptag) {
        prov::Ptag *p = nullptr;
        if (VIP_RETURN rc = e->nic->create_ptag(&p); rc != VIP_SUCCESS) return rc;
        void *h = ptags().insert(p, e);
        if (!h) {
            e->nic->destroy_ptag(p);
            return VIP_ERROR_RESOURCE;
        }
        p->api_handle = h; // VipQueryVi / VipQueryMem report it like any tag
        e->default_ptag = p;
    }
    *out = e->default_ptag;
    return VIP_SUCCESS;
}
} // namespace vipl::api

extern "C" {

VIP_RETURN VipOpenNic(const VIP_CHAR *DeviceName, VIP_NIC_HANDLE *NicHandle) {
    if (!NicHandle) return VIP_INVALID_PARAMETER;
    vipl::prov::Nic *nic = nullptr;
    if (VIP_RETURN rc = open_device(DeviceName, &nic); rc != VIP_SUCCESS) return rc;
    auto *e = new NicEntry;
    e->nic = nic;
    void *h = nics().insert(e, e);
    if (!h) {
        delete nic;
        delete e;
        return VIP_ERROR_RESOURCE;
    }
    nic->api_handle = h;
    *NicHandle = h;
    return VIP_SUCCESS;
}

// Refuses (VIP_INVALID_STATE) while VIs, CQs, ptags or registered memory made
// through this handle still exist: closing would strand them.
VIP_RETURN VipCloseNic(VIP_NIC_HANDLE NicHandle) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e) return VIP_INVALID_PARAMETER;
    if (e->objects.load() != 0 || e->regions.load() != 0) return VIP_INVALID_STATE;
    if (e->default_ptag) { // nothing uses it any more: no VI or region is left
        ptags().remove(e->default_ptag->api_handle);
        e->nic->destroy_ptag(e->default_ptag);
        e->default_ptag = nullptr;
    }
    nics().remove(NicHandle);
    delete e->nic;
    delete e;
    return VIP_SUCCESS;
}

VIP_RETURN VipQueryNic(VIP_NIC_HANDLE NicHandle, VIP_NIC_ATTRIBUTES *NicAttribs) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !NicAttribs) return VIP_INVALID_PARAMETER;
    return e->nic->query(NicAttribs);
}

VIP_RETURN VipCreatePtag(VIP_NIC_HANDLE NicHandle, VIP_PROTECTION_HANDLE *Ptag) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !Ptag) return VIP_INVALID_PARAMETER;
    vipl::prov::Ptag *p = nullptr;
    if (VIP_RETURN rc = e->nic->create_ptag(&p); rc != VIP_SUCCESS) return rc;
    void *h = ptags().insert(p, e);
    if (!h) {
        e->nic->destroy_ptag(p);
        return VIP_ERROR_RESOURCE;
    }
    p->api_handle = h;
    e->objects.fetch_add(1);
    *Ptag = h;
    return VIP_SUCCESS;
}

VIP_RETURN VipDestroyPtag(VIP_NIC_HANDLE NicHandle, VIP_PROTECTION_HANDLE Ptag) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e) return VIP_INVALID_PARAMETER;
    NicEntry *owner = nullptr;
    vipl::prov::Ptag *p = ptags().lookup(Ptag, &owner);
    if (!p || owner != e) return VIP_INVALID_PARAMETER; // not a live ptag of this NIC handle
    if (p == e->default_ptag) return VIP_INVALID_STATE; // the handle's own: VipCloseNic destroys it
    if (VIP_RETURN rc = e->nic->destroy_ptag(p); rc != VIP_SUCCESS) return rc;
    ptags().remove(Ptag);
    e->objects.fetch_sub(1);
    return VIP_SUCCESS;
}

} // extern "C"
