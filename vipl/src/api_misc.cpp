// api_misc.cpp - error callback, name service, system management, extensions.
#include <cstring>
#include <string>

#include "handles.hpp"
#include "names.hpp"

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

// Names of the job's NICs follow vipl/src/names.hpp for every provider; the
// provider only maps ranks to addresses (and may know other names).
VIP_RETURN VipNSGetHostByName(VIP_NIC_HANDLE NicHandle, VIP_CHAR *Name, VIP_NET_ADDRESS *Address, VIP_ULONG NameIndex) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !Name || !Address) return VIP_INVALID_PARAMETER;
    const names::Job job = names::current_job(e->nic->rank(), e->nic->job_size());
    if (const int r = names::resolve(job, Name, NameIndex); r >= 0) return e->nic->rank_address(r, Address);
    return e->nic->ns_other_name(Name, Address, NameIndex);
}

// A buffer too small gets VIP_INVALID_PARAMETER and the length it needs (the
// terminating NUL included) in *NameLen; nothing is written to it.
VIP_RETURN VipNSGetHostByAddr(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *Address, VIP_CHAR *Name, VIP_ULONG *NameLen) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !Address || !Name || !NameLen) return VIP_INVALID_PARAMETER;
    if (Address->HostAddressLen > VIP_MAX_HOST_ADDRESS_LEN) return VIP_INVALID_PARAMETER;
    std::string text;
    if (const int r = e->nic->address_rank(Address); r >= 0)
        text = names::name_of(names::current_job(e->nic->rank(), e->nic->job_size()), r);
    else if (!e->nic->ns_other_addr(Address, &text)) return VIP_ERROR_NAMESERVICE;
    if (*NameLen < text.size() + 1) {
        *NameLen = text.size() + 1;
        return VIP_INVALID_PARAMETER;
    }
    std::memcpy(Name, text.c_str(), text.size() + 1);
    *NameLen = text.size() + 1;
    return VIP_SUCCESS;
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

VIP_RETURN VipxRegistrationPins(VIP_NIC_HANDLE NicHandle, VIP_BOOLEAN *Pins) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e || !Pins) return VIP_INVALID_PARAMETER;
    *Pins = e->nic->registration_pins() ? VIP_TRUE : VIP_FALSE;
    return VIP_SUCCESS;
}

VIP_RETURN VipxProgress(VIP_NIC_HANDLE NicHandle) {
    NicEntry *e = nics().lookup(NicHandle);
    if (!e) return VIP_INVALID_PARAMETER;
    e->nic->progress();
    return VIP_SUCCESS;
}

} // extern "C"
