// verbs_addr.cpp - encoding, parsing and discovery of verbs host addresses.
#include "verbs_addr.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <netdb.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace vipl::verbs {

std::vector<uint8_t> HostAddr::bytes() const {
    std::vector<uint8_t> b(ip, ip + ip_len());
    b.push_back(uint8_t(port >> 8));
    b.push_back(uint8_t(port & 0xff));
    return b;
}

bool HostAddr::from_bytes(const uint8_t *p, size_t n, HostAddr *out) {
    HostAddr a;
    if (n == 6) a.family = AF_INET;
    else if (n == 18) a.family = AF_INET6;
    else return false;
    std::memcpy(a.ip, p, n - 2);
    a.port = uint16_t(p[n - 2] << 8 | p[n - 1]);
    *out = a;
    return true;
}

HostAddr HostAddr::from_sockaddr(const sockaddr *sa) {
    HostAddr a;
    if (sa->sa_family == AF_INET) {
        auto *s4 = reinterpret_cast<const sockaddr_in *>(sa);
        a.family = AF_INET;
        std::memcpy(a.ip, &s4->sin_addr, 4);
        a.port = ntohs(s4->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        auto *s6 = reinterpret_cast<const sockaddr_in6 *>(sa);
        // An IPv4-mapped IPv6 address is the IPv4 address.
        if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
            a.family = AF_INET;
            std::memcpy(a.ip, s6->sin6_addr.s6_addr + 12, 4);
        } else {
            a.family = AF_INET6;
            std::memcpy(a.ip, &s6->sin6_addr, 16);
        }
        a.port = ntohs(s6->sin6_port);
    }
    return a;
}

sockaddr_storage HostAddr::sockaddr_of() const {
    sockaddr_storage ss{};
    if (family == AF_INET) {
        auto *s4 = reinterpret_cast<sockaddr_in *>(&ss);
        s4->sin_family = AF_INET;
        std::memcpy(&s4->sin_addr, ip, 4);
        s4->sin_port = htons(port);
    } else {
        auto *s6 = reinterpret_cast<sockaddr_in6 *>(&ss);
        s6->sin6_family = AF_INET6;
        std::memcpy(&s6->sin6_addr, ip, 16);
        s6->sin6_port = htons(port);
    }
    return ss;
}

std::string HostAddr::to_string() const {
    char buf[INET6_ADDRSTRLEN] = "?";
    inet_ntop(family == AF_INET ? AF_INET : AF_INET6, ip, buf, sizeof buf);
    char out[INET6_ADDRSTRLEN + 16];
    std::snprintf(out, sizeof out, family == AF_INET ? "%s:%u" : "[%s]:%u", buf, unsigned(port));
    return out;
}

bool HostAddr::operator==(const HostAddr &o) const {
    return family == o.family && port == o.port && std::memcmp(ip, o.ip, ip_len()) == 0;
}

int compare_net_addr(const VIP_NET_ADDRESS *a, const VIP_NET_ADDRESS *b) {
    size_t na = size_t(a->HostAddressLen) + a->DiscriminatorLen;
    size_t nb = size_t(b->HostAddressLen) + b->DiscriminatorLen;
    if (a->HostAddressLen != b->HostAddressLen) return a->HostAddressLen < b->HostAddressLen ? -1 : 1;
    int c = std::memcmp(a->HostAddress, b->HostAddress, std::min(na, nb));
    if (c != 0) return c;
    return na == nb ? 0 : (na < nb ? -1 : 1);
}

bool resolve_name(const std::string &name, uint16_t default_port, std::vector<HostAddr> *out, std::string *why) {
    std::string host = name, port_text;
    if (!host.empty() && host[0] == '[') { // [v6]:port
        size_t close = host.find(']');
        if (close == std::string::npos) {
            *why = "unbalanced '[' in '" + name + "'";
            return false;
        }
        if (close + 1 < host.size() && host[close + 1] == ':') port_text = host.substr(close + 2);
        host = host.substr(1, close - 1);
    } else if (std::count(host.begin(), host.end(), ':') == 1) { // host:port
        size_t colon = host.find(':');
        port_text = host.substr(colon + 1);
        host = host.substr(0, colon);
    }
    uint16_t port = default_port;
    if (!port_text.empty()) {
        char *end = nullptr;
        unsigned long p = std::strtoul(port_text.c_str(), &end, 10);
        if (*end != '\0' || p == 0 || p > 65535) {
            *why = "bad port '" + port_text + "' in '" + name + "'";
            return false;
        }
        port = uint16_t(p);
    }
    if (port == 0) {
        *why = "'" + name + "' names no port: use host:port (or set VIPL_VERBS_PORT)";
        return false;
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *res = nullptr;
    int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (rc != 0) {
        *why = "getaddrinfo(" + host + "): " + gai_strerror(rc);
        return false;
    }
    for (addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
        HostAddr a = HostAddr::from_sockaddr(ai->ai_addr);
        a.port = port;
        if (std::find(out->begin(), out->end(), a) == out->end()) out->push_back(a);
    }
    freeaddrinfo(res);
    if (out->empty()) {
        *why = "'" + host + "' has no IPv4/IPv6 address";
        return false;
    }
    return true;
}

namespace {

// IPv4 address of a network interface, for InfiniBand devices (IPoIB).
bool netdev_ip(const std::string &ifname, HostAddr *out) {
    ifaddrs *ifs = nullptr;
    if (getifaddrs(&ifs) != 0) return false;
    bool found = false;
    for (ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || ifname != i->ifa_name) continue;
        if (i->ifa_addr->sa_family == AF_INET) {
            *out = HostAddr::from_sockaddr(i->ifa_addr);
            found = true;
        }
    }
    freeifaddrs(ifs);
    return found;
}

} // namespace

bool device_ip(ibv_context *ctx, uint8_t port, HostAddr *out, std::string *why) {
    ibv_port_attr pa{};
    if (ibv_query_port(ctx, port, &pa) != 0) {
        *why = "ibv_query_port failed";
        return false;
    }
    HostAddr v6;
    for (int i = 0; i < pa.gid_tbl_len; i++) {
        ibv_gid gid{};
        if (ibv_query_gid(ctx, port, i, &gid) != 0) continue;
        in6_addr a;
        std::memcpy(&a, gid.raw, 16);
        if (IN6_IS_ADDR_UNSPECIFIED(&a)) continue;
        if (pa.link_layer == IBV_LINK_LAYER_ETHERNET && IN6_IS_ADDR_V4MAPPED(&a)) {
            out->family = AF_INET;
            std::memcpy(out->ip, a.s6_addr + 12, 4);
            return true; // IPv4 is preferred: rdma_cm resolves it most reliably
        }
        if (pa.link_layer == IBV_LINK_LAYER_ETHERNET && !IN6_IS_ADDR_LINKLOCAL(&a) && v6.family == 0) {
            v6.family = AF_INET6;
            std::memcpy(v6.ip, a.s6_addr, 16);
        }
    }
    if (v6.family != 0) {
        *out = v6;
        return true;
    }
    // InfiniBand: GIDs are not IP addresses; use the IPoIB interface of the device.
    std::string dir = std::string("/sys/class/infiniband/") + ibv_get_device_name(ctx->device) + "/device/net";
    if (DIR *d = opendir(dir.c_str())) {
        while (dirent *e = readdir(d)) {
            if (e->d_name[0] != '.' && netdev_ip(e->d_name, out)) {
                closedir(d);
                return true;
            }
        }
        closedir(d);
    }
    *why = "no IP address found for the device (no IPv4/IPv6 GID, no IPoIB interface); "
           "set VIPL_VERBS_ADDR to the device's IP address";
    return false;
}

} // namespace vipl::verbs
