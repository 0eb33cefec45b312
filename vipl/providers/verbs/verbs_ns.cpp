// verbs_ns.cpp - the VIPL name service over the verbs provider.
//
// Names:  "host:port", "[ipv6]:port" or "host" (with VIPL_VERBS_PORT set), resolved
// with getaddrinfo; and "node<rank>" for the NICs of a vipl-run job on this host
// ("node0" is this NIC in a job of one).  VipNSGetHostByAddr answers "node<rank>"
// for this NIC inside a job and the numeric "ip:port" otherwise.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "verbs_provider.hpp"

namespace vipl::verbs {

bool VerbsNic::lookup_node_name(const std::string &nm, HostAddr *out) {
    if (nm.size() < 5 || nm.compare(0, 4, "node") != 0)
        return false;
    char *end = nullptr;
    long r = std::strtol(nm.c_str() + 4, &end, 10);
    if (*end != '\0' || r < 0)
        return false;
    if (r == rank_ || (rank_ < 0 && r == 0)) {
        *out = local_addr;
        return true;
    }
    if (job_.empty())
        return false;
    std::ifstream f("/dev/shm/viastack-verbs-" + job_ + "-" + name + "-" + std::to_string(r));
    std::string text;
    if (!(f >> text))
        return false;
    std::vector<HostAddr> addrs;
    std::string why;
    if (!resolve_name(text, 0, &addrs, &why))
        return false;
    *out = addrs[0];
    return true;
}

VIP_RETURN VerbsNic::ns_init(VIP_PVOID) { return VIP_SUCCESS; }
VIP_RETURN VerbsNic::ns_shutdown() { return VIP_SUCCESS; }

VIP_RETURN VerbsNic::ns_get_host_by_name(const char *nm, VIP_NET_ADDRESS *out, VIP_ULONG index) {
    std::vector<HostAddr> addrs;
    HostAddr node;
    if (lookup_node_name(nm, &node)) {
        addrs.push_back(node);
    } else {
        std::string why;
        uint16_t dflt = 0;
        if (const char *p = std::getenv("VIPL_VERBS_PORT"))
            dflt = uint16_t(std::atoi(p));
        if (!resolve_name(nm, dflt, &addrs, &why))
            return VIP_ERROR_NAMESERVICE;
    }
    if (index >= addrs.size())
        return VIP_ERROR_NAMESERVICE;
    std::vector<uint8_t> b = addrs[index].bytes();
    out->HostAddressLen = uint16_t(b.size());
    out->DiscriminatorLen = 0;
    std::memcpy(out->HostAddress, b.data(), b.size());
    return VIP_SUCCESS;
}

VIP_RETURN VerbsNic::ns_get_host_by_addr(const VIP_NET_ADDRESS *addr, char *out, VIP_ULONG *len) {
    HostAddr a;
    if (!HostAddr::from_bytes(addr->HostAddress, addr->HostAddressLen, &a))
        return VIP_INVALID_PARAMETER;
    std::string text;
    if (a == local_addr)
        text = "node" + std::to_string(rank_ < 0 ? 0 : rank_);
    else
        text = a.to_string();
    if (text.size() + 1 > *len) {
        *len = text.size() + 1;
        return VIP_INVALID_PARAMETER; // buffer too small; *len says how much is needed
    }
    std::memcpy(out, text.c_str(), text.size() + 1);
    *len = text.size() + 1;
    return VIP_SUCCESS;
}

} // namespace vipl::verbs
