// api_conn.cpp - connection management: client/server and peer-to-peer.
#include "handles.hpp"

using namespace vipl::api;

namespace {
bool addr_ok(const VIP_NET_ADDRESS *a) {
    return a && a->HostAddressLen <= VIP_MAX_HOST_ADDRESS_LEN && a->DiscriminatorLen <= VIP_MAX_DISCRIMINATOR_LEN;
}

// Private data to send: at most VIPX_CM_DATA_MAX bytes, from a buffer unless empty.
bool data_ok(const void *data, VIP_ULONG len) { return len <= VIPX_CM_DATA_MAX && (data || len == 0); }
} // namespace

extern "C" {

// ---- server side: the spec calls are the Data variants with no data ----
VIP_RETURN VipxConnectWaitData(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *LocalAddr, VIP_ULONG Timeout,
                               VIP_NET_ADDRESS *RemoteAddr, VIP_VI_ATTRIBUTES *RemoteViAttribs,
                               VIP_CONN_HANDLE *ConnHandle, void *Data, VIP_ULONG *Len) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !addr_ok(LocalAddr) || !RemoteAddr || !RemoteViAttribs || !ConnHandle) return VIP_INVALID_PARAMETER;
    vipl::prov::Conn *c = nullptr;
    if (VIP_RETURN rc = e->nic->connect_wait(LocalAddr, Timeout, RemoteAddr, RemoteViAttribs, &c); rc != VIP_SUCCESS)
        return rc;
    void *h = conns().insert(c, e);
    if (!h) {
        c->reject(nullptr, 0);
        delete c;
        return VIP_ERROR_RESOURCE;
    }
    c->api_handle = h;
    *ConnHandle = h;
    vipl::prov::copy_cm_data(c->data, c->data_len, Data, Len);
    return VIP_SUCCESS;
}

VIP_RETURN VipConnectWait(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *LocalAddr, VIP_ULONG Timeout,
                          VIP_NET_ADDRESS *RemoteAddr, VIP_VI_ATTRIBUTES *RemoteViAttribs,
                          VIP_CONN_HANDLE *ConnHandle) {
    return VipxConnectWaitData(NicHandle, LocalAddr, Timeout, RemoteAddr, RemoteViAttribs, ConnHandle, nullptr,
                               nullptr);
}

VIP_RETURN VipxConnectAcceptData(VIP_CONN_HANDLE ConnHandle, VIP_VI_HANDLE ViHandle, const void *Data, VIP_ULONG Len) {
    NicEntry *ce = nullptr, *ve = nullptr;
    vipl::prov::Conn *c = conns().lookup(ConnHandle, &ce);
    const ViUse vi(vis(), ViHandle, &ve);
    if (!c || !vi || !data_ok(Data, Len)) return VIP_INVALID_PARAMETER;
    VIP_RETURN rc = c->accept(vi.get(), Data, Len);
    if (rc == VIP_SUCCESS) { // the connection request is used up
        conns().remove(ConnHandle);
        delete c;
    }
    return rc;
}

VIP_RETURN VipConnectAccept(VIP_CONN_HANDLE ConnHandle, VIP_VI_HANDLE ViHandle) {
    return VipxConnectAcceptData(ConnHandle, ViHandle, nullptr, 0);
}

VIP_RETURN VipxConnectRejectData(VIP_CONN_HANDLE ConnHandle, const void *Data, VIP_ULONG Len) {
    vipl::prov::Conn *c = conns().lookup(ConnHandle);
    if (!c || !data_ok(Data, Len)) return VIP_INVALID_PARAMETER;
    VIP_RETURN rc = c->reject(Data, Len);
    conns().remove(ConnHandle);
    delete c;
    return rc;
}

VIP_RETURN VipConnectReject(VIP_CONN_HANDLE ConnHandle) { return VipxConnectRejectData(ConnHandle, nullptr, 0); }

// ---- client side: VipConnectRequest is the non-blocking request, waited for ----
VIP_RETURN VipxConnectRequestStart(VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr, VIP_NET_ADDRESS *RemoteAddr,
                                   VIP_ULONG Timeout, const void *Data, VIP_ULONG Len) {
    const ViUse vi(vis(), ViHandle);
    if (!vi || !addr_ok(RemoteAddr) || (LocalAddr && !addr_ok(LocalAddr)) || !data_ok(Data, Len))
        return VIP_INVALID_PARAMETER;
    return vi->connect_start(LocalAddr, RemoteAddr, Timeout, Data, Len);
}

VIP_RETURN VipxConnectRequestDone(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *RemoteViAttribs, void *Data,
                                  VIP_ULONG *Len) {
    const ViUse vi(vis(), ViHandle);
    if (!vi) return VIP_INVALID_PARAMETER;
    return vi->connect_done(RemoteViAttribs, Data, Len);
}

VIP_RETURN VipConnectRequest(VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr, VIP_NET_ADDRESS *RemoteAddr,
                             VIP_ULONG Timeout, VIP_VI_ATTRIBUTES *RemoteViAttribs) {
    if (!RemoteViAttribs) return VIP_INVALID_PARAMETER;
    if (VIP_RETURN rc = VipxConnectRequestStart(ViHandle, LocalAddr, RemoteAddr, Timeout, nullptr, 0);
        rc != VIP_SUCCESS)
        return rc;
    // A VI with a request under way cannot be destroyed (VIP_INVALID_STATE), so it is still there.
    const ViUse vi(vis(), ViHandle);
    return vi ? vi->connect_wait(RemoteViAttribs, nullptr, nullptr) : VIP_INVALID_PARAMETER;
}

VIP_RETURN VipDisconnect(VIP_VI_HANDLE ViHandle) {
    const ViUse vi(vis(), ViHandle);
    if (!vi) return VIP_INVALID_PARAMETER;
    return vi->disconnect();
}

VIP_RETURN VipConnectPeerRequest(VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr, VIP_NET_ADDRESS *RemoteAddr,
                                 VIP_ULONG Timeout) {
    const ViUse vi(vis(), ViHandle);
    if (!vi || !addr_ok(RemoteAddr) || (LocalAddr && !addr_ok(LocalAddr))) return VIP_INVALID_PARAMETER;
    return vi->peer_request(LocalAddr, RemoteAddr, Timeout);
}

VIP_RETURN VipConnectPeerDone(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *RemoteViAttribs) {
    const ViUse vi(vis(), ViHandle);
    if (!vi || !RemoteViAttribs) return VIP_INVALID_PARAMETER;
    return vi->peer_done(RemoteViAttribs);
}

VIP_RETURN VipConnectPeerWait(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *RemoteViAttribs) {
    const ViUse vi(vis(), ViHandle);
    if (!vi || !RemoteViAttribs) return VIP_INVALID_PARAMETER;
    return vi->peer_wait(RemoteViAttribs);
}

} // extern "C"
