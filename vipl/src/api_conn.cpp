// api_conn.cpp - connection management: client/server and peer-to-peer.
#include "handles.hpp"

using namespace vipl::api;

namespace {
bool addr_ok(const VIP_NET_ADDRESS *a) {
    return a && a->HostAddressLen <= VIP_MAX_HOST_ADDRESS_LEN && a->DiscriminatorLen <= VIP_MAX_DISCRIMINATOR_LEN;
}
} // namespace

extern "C" {

VIP_RETURN VipConnectWait(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *LocalAddr, VIP_ULONG Timeout,
                          VIP_NET_ADDRESS *RemoteAddr, VIP_VI_ATTRIBUTES *RemoteViAttribs,
                          VIP_CONN_HANDLE *ConnHandle) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !addr_ok(LocalAddr) || !RemoteAddr || !RemoteViAttribs || !ConnHandle) return VIP_INVALID_PARAMETER;
    vipl::prov::Conn *c = nullptr;
    if (VIP_RETURN rc = e->nic->connect_wait(LocalAddr, Timeout, RemoteAddr, RemoteViAttribs, &c); rc != VIP_SUCCESS)
        return rc;
    void *h = conns().insert(c, e);
    if (!h) {
        c->reject();
        delete c;
        return VIP_ERROR_RESOURCE;
    }
    c->api_handle = h;
    *ConnHandle = h;
    return VIP_SUCCESS;
}

VIP_RETURN VipConnectAccept(VIP_CONN_HANDLE ConnHandle, VIP_VI_HANDLE ViHandle) {
    NicEntry *ce = nullptr, *ve = nullptr;
    vipl::prov::Conn *c = conns().lookup(ConnHandle, &ce);
    vipl::prov::Vi *vi = vis().lookup(ViHandle, &ve);
    if (!c || !vi) return VIP_INVALID_PARAMETER;
    VIP_RETURN rc = c->accept(vi);
    if (rc == VIP_SUCCESS) { // the connection request is used up
        conns().remove(ConnHandle);
        delete c;
    }
    return rc;
}

VIP_RETURN VipConnectReject(VIP_CONN_HANDLE ConnHandle) {
    vipl::prov::Conn *c = conns().lookup(ConnHandle);
    if (!c) return VIP_INVALID_PARAMETER;
    VIP_RETURN rc = c->reject();
    conns().remove(ConnHandle);
    delete c;
    return rc;
}

VIP_RETURN VipConnectRequest(VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr, VIP_NET_ADDRESS *RemoteAddr,
                             VIP_ULONG Timeout, VIP_VI_ATTRIBUTES *RemoteViAttribs) {
    vipl::prov::Vi *vi = vis().lookup(ViHandle);
    if (!vi || !addr_ok(RemoteAddr) || (LocalAddr && !addr_ok(LocalAddr)) || !RemoteViAttribs)
        return VIP_INVALID_PARAMETER;
    return vi->connect_request(LocalAddr, RemoteAddr, Timeout, RemoteViAttribs);
}

VIP_RETURN VipDisconnect(VIP_VI_HANDLE ViHandle) {
    vipl::prov::Vi *vi = vis().lookup(ViHandle);
    if (!vi) return VIP_INVALID_PARAMETER;
    return vi->disconnect();
}

VIP_RETURN VipConnectPeerRequest(VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr, VIP_NET_ADDRESS *RemoteAddr,
                                 VIP_ULONG Timeout) {
    vipl::prov::Vi *vi = vis().lookup(ViHandle);
    if (!vi || !addr_ok(RemoteAddr) || (LocalAddr && !addr_ok(LocalAddr))) return VIP_INVALID_PARAMETER;
    return vi->peer_request(LocalAddr, RemoteAddr, Timeout);
}

VIP_RETURN VipConnectPeerDone(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *RemoteViAttribs) {
    vipl::prov::Vi *vi = vis().lookup(ViHandle);
    if (!vi || !RemoteViAttribs) return VIP_INVALID_PARAMETER;
    return vi->peer_done(RemoteViAttribs);
}

VIP_RETURN VipConnectPeerWait(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *RemoteViAttribs) {
    vipl::prov::Vi *vi = vis().lookup(ViHandle);
    if (!vi || !RemoteViAttribs) return VIP_INVALID_PARAMETER;
    return vi->peer_wait(RemoteViAttribs);
}

} // extern "C"
