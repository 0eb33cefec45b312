// vfi_addr.cpp - endpoint names: the VI net address in a sockaddr_in6.
//
// fd 'V' 'I' <n> <n host address bytes> 0... ; port = the discriminator.
// Node strings go through VIPL's own name service (VipNSGetHostByName), so a
// node names a NIC here exactly as it does for a VI program: on nicfw
// "localhost", "127.0.0.1" or this host's name is the first rank on this host,
// "<r>" or "node<r>" is rank r; on verbs an IP address or host name (with
// ":port" when several processes share a host).  A name printed by the
// provider ("fd56:4902:1::" style, see addr_str) is accepted too.
#include "vfi.hpp"

#include <arpa/inet.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>

namespace vfi {

bool addr_make(const std::vector<uint8_t> &host, uint16_t disc, sockaddr_in6 *out) {
    if (host.size() > kMaxHostLen) return false;
    std::memset(out, 0, sizeof(*out));
    out->sin6_family = AF_INET6;
    out->sin6_port = htons(disc);
    uint8_t *b = out->sin6_addr.s6_addr;
    b[0] = 0xfd;
    b[1] = 'V';
    b[2] = 'I';
    b[3] = uint8_t(host.size());
    std::memcpy(b + 4, host.data(), host.size());
    return true;
}

bool addr_parse(const void *addr, size_t len, std::vector<uint8_t> *host, uint16_t *disc) {
    if (!addr || len < kAddrLen) return false;
    sockaddr_in6 a;
    std::memcpy(&a, addr, sizeof(a));
    const uint8_t *b = a.sin6_addr.s6_addr;
    if (a.sin6_family != AF_INET6 || b[0] != 0xfd || b[1] != 'V' || b[2] != 'I' || b[3] > kMaxHostLen) return false;
    if (host) host->assign(b + 4, b + 4 + b[3]);
    if (disc) *disc = ntohs(a.sin6_port);
    return true;
}

uint16_t addr_port(const sockaddr_in6 &a) { return ntohs(a.sin6_port); }

std::string addr_str(const void *addr, size_t len) {
    if (!addr_parse(addr, len, nullptr, nullptr)) return "(not a viastack address)";
    sockaddr_in6 a;
    std::memcpy(&a, addr, sizeof(a));
    char ip[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, &a.sin6_addr, ip, sizeof(ip));
    return std::string("[") + ip + "]:" + std::to_string(ntohs(a.sin6_port));
}

void net_addr(const std::vector<uint8_t> &host, uint16_t disc, NetAddr *out) {
    VIP_NET_ADDRESS *a = out->get();
    a->HostAddressLen = uint16_t(host.size());
    a->DiscriminatorLen = 2;
    std::memcpy(a->HostAddress, host.data(), host.size());
    a->HostAddress[host.size()] = uint8_t(disc >> 8);
    a->HostAddress[host.size() + 1] = uint8_t(disc);
}

bool net_addr_split(VIP_NET_ADDRESS *a, std::vector<uint8_t> *host, uint16_t *disc) {
    if (a->HostAddressLen > kMaxHostLen) return false;
    host->assign(a->HostAddress, a->HostAddress + a->HostAddressLen);
    *disc = 0;
    if (a->DiscriminatorLen == 2)
        *disc = uint16_t(a->HostAddress[a->HostAddressLen] << 8 | a->HostAddress[a->HostAddressLen + 1]);
    return true;
}

static int parse_service(const char *service, uint16_t *port) {
    *port = 0;
    if (!service || !*service) return 0;
    char *end = nullptr;
    errno = 0;
    unsigned long v = std::strtoul(service, &end, 10);
    if (errno || *end || v > 65535) {
        warn("service \"%s\" is not a discriminator (a number 0..65535)", service);
        return -FI_EINVAL;
    }
    *port = uint16_t(v);
    return 0;
}

int resolve(const char *node, const char *service, sockaddr_in6 *out) {
    uint16_t port;
    if (int rc = parse_service(service, &port)) return rc;
    Nic *n = nic();
    if (!n) return -FI_ENODATA;
    if (!node || !*node) return addr_make(n->host, port, out) ? 0 : -FI_ENODATA;
    // A name the provider printed: "fd56:4902:..." or "[...]:port".
    std::string s(node);
    if (!s.empty() && s.front() == '[') {
        auto close = s.find(']');
        if (close != std::string::npos) {
            if (close + 2 < s.size() && s[close + 1] == ':' && !service)
                if (int rc = parse_service(s.c_str() + close + 2, &port)) return rc;
            s = s.substr(1, close - 1);
        }
    }
    sockaddr_in6 a{};
    if (inet_pton(AF_INET6, s.c_str(), &a.sin6_addr) == 1) {
        a.sin6_family = AF_INET6;
        std::vector<uint8_t> host;
        if (!addr_parse(&a, sizeof(a), &host, nullptr)) {
            warn("node \"%s\" is an IPv6 address but not a viastack NIC (fd56:49..)", node);
            return -FI_ENODATA;
        }
        return addr_make(host, port, out) ? 0 : -FI_ENODATA;
    }
    NetAddr na;
    VIP_RETURN rc = VipNSGetHostByName(n->handle, const_cast<VIP_CHAR *>(node), na.get(), 0);
    if (rc != VIP_SUCCESS) {
        warn("node \"%s\" names no NIC of this job (VipNSGetHostByName: %s)", node, VipxReturnString(rc));
        return -FI_ENODATA;
    }
    std::vector<uint8_t> host;
    uint16_t ignored;
    if (!net_addr_split(na.get(), &host, &ignored) || !addr_make(host, port, out)) {
        warn("node \"%s\": host address longer than %zu bytes", node, kMaxHostLen);
        return -FI_ENODATA;
    }
    return 0;
}

uint16_t next_auto_port() {
    // Discriminators name listeners of this NIC only (one NIC per process),
    // so a per-process counter in the dynamic port range is unique.
    static std::atomic<uint32_t> next{49152};
    uint32_t v = next++;
    return uint16_t(49152 + (v - 49152) % 16384);
}

} // namespace vfi
