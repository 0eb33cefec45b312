// verbs_ns.cpp - the verbs provider's part of the VIPL name service.
//
// Names of the job's NICs (host names, "localhost", "host#rank", "node<rank>")
// are resolved to ranks by the API layer (vipl/src/names.hpp), the same as on
// nicfw; a rank becomes the address its NIC published in the job's rank
// directory (vipl/providers/common/name_service.hpp: files
// /dev/shm/viastack-verbs-<job>-<device>-<rank>, a job on one host), and an
// address becomes a rank again; VIP_SMI_AUTODISCOVERY lists those addresses
// for every rank.  Names outside the job -- "host:port",
// "[ipv6]:port", or "host" with VIPL_VERBS_PORT set -- go to getaddrinfo, and an
// address outside the job is named by its numeric "ip:port".
#include "viastack_env.hpp"
#include "verbs_provider.hpp"

namespace vipl::verbs {

VIP_RETURN VerbsNic::ns_init(VIP_PVOID) { return VIP_SUCCESS; }
VIP_RETURN VerbsNic::ns_shutdown() { return VIP_SUCCESS; }

// A rank of the job that has not opened its NIC yet is waited for (up to 10 s),
// as a program that looks up its server right after start-up expects a name
// service that knows every host of the job (cLAN's and M-VIA's were static
// tables).
VIP_RETURN VerbsNic::rank_address(int r, VIP_NET_ADDRESS *out) {
    std::vector<uint8_t> b;
    HostAddr a;
    std::string refused;
    if (!directory_->wait_for(r, 10000, &b, &refused) || !HostAddr::from_bytes(b.data(), b.size(), &a)) {
        if (!refused.empty()) // a planted entry (docs/security.md)
            viastack_log(VIASTACK_LOG_VERBS, VIASTACK_LOG_ERROR, "name service: %s", refused.c_str());
        return VIP_ERROR_NAMESERVICE; // no such rank, it never opened its NIC, or its entry was refused
    }
    return common::put_host_address(out, b) ? VIP_SUCCESS : VIP_ERROR_NAMESERVICE;
}

// VIP_SMI_AUTODISCOVERY: the NICs of the job, entry r holding the address
// rank r's NIC published (what rank_address(r) gives, so each can be passed to
// VipConnectRequest as is), as nicfw answers it with its rank numbers.  No
// other system management information exists.
VIP_RETURN VerbsNic::query_system_management(VIP_ULONG type, VIP_PVOID out) {
    if (type != VIP_SMI_AUTODISCOVERY) return VIP_INVALID_PARAMETER;
    return common::autodiscovery(static_cast<VIP_AUTODISCOVERY_LIST *>(out), job_.size,
                                 [this](int r, VIP_NET_ADDRESS *a) { return rank_address(r, a); });
}

int VerbsNic::address_rank(const VIP_NET_ADDRESS *addr) {
    HostAddr a;
    if (!HostAddr::from_bytes(addr->HostAddress, addr->HostAddressLen, &a)) return -1;
    return directory_->rank_of(a.bytes());
}

VIP_RETURN VerbsNic::ns_other_name(const char *nm, VIP_NET_ADDRESS *out, VIP_ULONG index) {
    std::vector<HostAddr> addrs;
    std::string why;
    const auto dflt = uint16_t(viastack::env::integer(viastack::log::Layer::verbs, "VIPL_VERBS_PORT", 0, 0, 65535));
    if (!resolve_name(nm, dflt, &addrs, &why) || index >= addrs.size()) return VIP_ERROR_NAMESERVICE;
    return common::put_host_address(out, addrs[index].bytes()) ? VIP_SUCCESS : VIP_ERROR_NAMESERVICE;
}

bool VerbsNic::ns_other_addr(const VIP_NET_ADDRESS *addr, std::string *out) {
    HostAddr a;
    if (!HostAddr::from_bytes(addr->HostAddress, addr->HostAddressLen, &a)) return false;
    *out = a.to_string();
    return true;
}

} // namespace vipl::verbs
