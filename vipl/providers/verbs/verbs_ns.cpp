// verbs_ns.cpp - the verbs provider's part of the VIPL name service.
//
// Names of the job's NICs (host names, "localhost", "host#rank", "node<rank>")
// are resolved to ranks by the API layer (vipl/src/names.hpp), the same as on
// nicfw; here a rank becomes the address its NIC published in
// /dev/shm/viastack-verbs-<job>-<device>-<rank> (a vipl-run job on one host), and
// an address becomes a rank again.  Names outside the job -- "host:port",
// "[ipv6]:port", or "host" with VIPL_VERBS_PORT set -- go to getaddrinfo, and an
// address outside the job is named by its numeric "ip:port".
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "verbs_provider.hpp"

namespace vipl::verbs {

namespace {
void put(const HostAddr &a, VIP_NET_ADDRESS *out) {
    std::vector<uint8_t> b = a.bytes();
    out->HostAddressLen = uint16_t(b.size());
    out->DiscriminatorLen = 0;
    std::memcpy(out->HostAddress, b.data(), b.size());
}
} // namespace

bool VerbsNic::rank_host_addr(int r, HostAddr *out) {
    if (r == rank_ || (rank_ < 0 && r == 0)) {
        *out = local_addr;
        return true;
    }
    if (job_.empty() || r < 0)
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

// A rank of the job that has not opened its NIC yet has no address file: wait
// for it (up to 10 s), as a program that looks up its server right after start-up
// expects a name service that knows every host of the job (cLAN's and M-VIA's
// were static tables).
VIP_RETURN VerbsNic::rank_address(int r, VIP_NET_ADDRESS *out) {
    HostAddr a;
    const bool in_job = !job_.empty() && r >= 0 && r < size_;
    for (int waited_ms = 0; !rank_host_addr(r, &a); waited_ms += 10) {
        if (!in_job || waited_ms >= 10000)
            return VIP_ERROR_NAMESERVICE; // no such rank, or it never opened its NIC
        usleep(10000);
    }
    put(a, out);
    return VIP_SUCCESS;
}

int VerbsNic::address_rank(const VIP_NET_ADDRESS *addr) {
    HostAddr a;
    if (!HostAddr::from_bytes(addr->HostAddress, addr->HostAddressLen, &a))
        return -1;
    if (a == local_addr)
        return rank_ < 0 ? 0 : rank_;
    for (int r = 0; r < size_; r++) { // a few small files: the name service is not the data path
        HostAddr other;
        if (r != rank_ && rank_host_addr(r, &other) && other == a)
            return r;
    }
    return -1;
}

VIP_RETURN VerbsNic::ns_other_name(const char *nm, VIP_NET_ADDRESS *out, VIP_ULONG index) {
    std::vector<HostAddr> addrs;
    std::string why;
    uint16_t dflt = 0;
    if (const char *p = std::getenv("VIPL_VERBS_PORT"))
        dflt = uint16_t(std::atoi(p));
    if (!resolve_name(nm, dflt, &addrs, &why) || index >= addrs.size())
        return VIP_ERROR_NAMESERVICE;
    put(addrs[index], out);
    return VIP_SUCCESS;
}

bool VerbsNic::ns_other_addr(const VIP_NET_ADDRESS *addr, std::string *out) {
    HostAddr a;
    if (!HostAddr::from_bytes(addr->HostAddress, addr->HostAddressLen, &a))
        return false;
    *out = a.to_string();
    return true;
}

} // namespace vipl::verbs
