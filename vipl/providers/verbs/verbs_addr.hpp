// verbs_addr.hpp - host addresses of the verbs provider.
//
// A verbs host address names one process's NIC endpoint: the IP address of the
// RDMA device followed by the rdma_cm port that process listens on, both in
// network byte order:  IPv4: 4 + 2 = 6 bytes;  IPv6: 16 + 2 = 18 bytes.
// The port is part of the host address (not of the discriminator) because
// several processes on one host each need their own listener.
#pragma once

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

#include "vipl.h"

namespace vipl::verbs {

struct HostAddr {
    int family = 0; // AF_INET or AF_INET6; 0 = unset
    uint8_t ip[16] = {};
    uint16_t port = 0; // host byte order

    size_t ip_len() const { return family == AF_INET ? 4 : 16; }
    std::vector<uint8_t> bytes() const;
    // Parses the host part of a VIP_NET_ADDRESS (6 or 18 bytes); false if malformed.
    static bool from_bytes(const uint8_t *p, size_t n, HostAddr *out);
    static HostAddr from_sockaddr(const sockaddr *sa);
    // A sockaddr for rdma_cm (port included).
    sockaddr_storage sockaddr_of() const;
    std::string to_string() const; // "192.0.2.1:4791" or "[fe80::1]:4791"
    bool operator==(const HostAddr &o) const;
};

// Compares two addresses (host bytes, then discriminator) for the peer-to-peer
// tie break: returns <0, 0, >0.
int compare_net_addr(const VIP_NET_ADDRESS *a, const VIP_NET_ADDRESS *b);

// Resolves "host", "host:port", "[v6]:port" with getaddrinfo.  default_port is
// used when the name has none (0: a port is required).  Returns all results.
bool resolve_name(const std::string &name, uint16_t default_port, std::vector<HostAddr> *out, std::string *why);

// The IP address bound to an RDMA device port, from its GID table (RoCE: IPv4-mapped
// or global IPv6 GIDs) or, for InfiniBand, from the IPoIB interface of the device.
bool device_ip(ibv_context *ctx, uint8_t port, HostAddr *out, std::string *why);

} // namespace vipl::verbs
