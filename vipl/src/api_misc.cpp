// api_misc.cpp - error callback, name service, system management, extensions.
#include "handles.hpp"

using namespace vipl::api;

extern "C" {

VIP_RETURN VipErrorCallback(VIP_NIC_HANDLE NicHandle, VIP_PVOID Context, VIP_ERROR_HANDLER Handler) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e) return VIP_INVALID_PARAMETER;
    return e->nic->error_callback(Context, Handler); // NULL handler: back to the default (report on stderr)
}

VIP_RETURN VipNSInit(VIP_NIC_HANDLE NicHandle, VIP_PVOID NSInitInfo) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e) return VIP_INVALID_PARAMETER;
    return e->nic->ns_init(NSInitInfo);
}

VIP_RETURN VipNSGetHostByName(VIP_NIC_HANDLE NicHandle, VIP_CHAR *Name, VIP_NET_ADDRESS *Address,
                              VIP_ULONG NameIndex) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !Name || !Address) return VIP_INVALID_PARAMETER;
    return e->nic->ns_get_host_by_name(Name, Address, NameIndex);
}

VIP_RETURN VipNSGetHostByAddr(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *Address, VIP_CHAR *Name,
                              VIP_ULONG *NameLen) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !Address || !Name || !NameLen) return VIP_INVALID_PARAMETER;
    return e->nic->ns_get_host_by_addr(Address, Name, NameLen);
}

VIP_RETURN VipNSShutdown(VIP_NIC_HANDLE NicHandle) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e) return VIP_INVALID_PARAMETER;
    return e->nic->ns_shutdown();
}

VIP_RETURN VipQuerySystemManagementInfo(VIP_NIC_HANDLE NicHandle, VIP_ULONG InfoType, VIP_PVOID SysManInfo) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !SysManInfo) return VIP_INVALID_PARAMETER;
    return e->nic->query_system_management(InfoType, SysManInfo);
}

int VipxNicRank(VIP_NIC_HANDLE NicHandle) {
    NicEntry *e = nics().lookup(NicHandle);
    return e ? e->nic->rank() : -1;
}

VIP_RETURN VipxProgress(VIP_NIC_HANDLE NicHandle) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e) return VIP_INVALID_PARAMETER;
    e->nic->progress();
    return VIP_SUCCESS;
}

} // extern "C"
