// tcp_wire.cpp - boot spec parsing, frame encoding and IPv4 socket helpers.
#include "tcp_wire.hpp"

#include "vipl_boot.h"

#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace viastack::boot {
namespace {

constexpr uint32_t kMagic = 0x56424f54; // "VBOT"

int ms_until(TcpClock::time_point deadline) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - TcpClock::now()).count();
    return static_cast<int>(std::clamp<long long>(ms + 1, 0, 60'000));
}

void put32(unsigned char *p, uint32_t v) {
    v = htobe32(v);
    std::memcpy(p, &v, 4);
}
void put64(unsigned char *p, uint64_t v) {
    v = htobe64(v);
    std::memcpy(p, &v, 8);
}
uint32_t get32(const unsigned char *p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return be32toh(v);
}
uint64_t get64(const unsigned char *p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return be64toh(v);
}

} // namespace

bool parse_boot_spec(const std::string &spec, TcpEndpoint *ep, std::string *err) {
    if (spec.rfind("tcp:", 0) != 0) {
        *err = "must start with 'tcp:' (the only cross-host bootstrap)";
        return false;
    }
    const std::string rest = spec.substr(4);
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0) {
        *err = "must be tcp:<host>:<port>";
        return false;
    }
    const std::string host = rest.substr(0, colon), port = rest.substr(colon + 1);
    if (host.find(':') != std::string::npos) {
        *err = "host '" + host + "' looks like IPv6; use an IPv4 address or a host name";
        return false;
    }
    if (host.size() > 253) {
        *err = "host name longer than 253 characters";
        return false;
    }
    long p = 0;
    bool digits = !port.empty() && port.size() <= 5 &&
        std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits) p = std::stol(port);
    if (!digits || p < 1 || p > 65535) {
        *err = "port '" + port + "' is not a number in 1..65535";
        return false;
    }
    ep->host = host;
    ep->port = static_cast<uint16_t>(p);
    return true;
}

FrameReader::Status FrameReader::read_some(int fd) {
    for (;;) {
        // Drop consumed bytes before growing, so long jobs do not accumulate.
        if (start_ > 0 && start_ == buf_.size()) {
            buf_.clear();
            start_ = 0;
        }
        // Holding a whole largest frame: let the caller pop it first (or find
        // the garbage) before reading more.
        if (buffered() >= kFrameHeaderBytes + max_payload_) return kOk;
        const size_t old = buf_.size();
        buf_.resize(old + 65536);
        ssize_t n = recv(fd, buf_.data() + old, 65536, 0);
        buf_.resize(old + static_cast<size_t>(std::max<ssize_t>(n, 0)));
        if (n > 0) continue;
        if (n == 0) return kEof;
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? kOk : kError;
    }
}

bool FrameReader::next(FrameHeader *h, std::vector<unsigned char> *payload) {
    if (buf_.size() - start_ < kFrameHeaderBytes) return false;
    const unsigned char *p = buf_.data() + start_;
    if (get32(p) != kMagic) {
        garbage_ = true;
        return false;
    }
    h->type = get32(p + 4);
    h->seq = get32(p + 8);
    h->len = get64(p + 12);
    h->root = static_cast<int32_t>(get32(p + 20));
    h->aux = static_cast<int32_t>(get32(p + 24));
    h->flags = get32(p + 28);
    h->payload = get64(p + 32);
    if (h->payload > max_payload_) {
        garbage_ = true;
        return false;
    }
    if (buf_.size() - start_ - kFrameHeaderBytes < h->payload) return false;
    payload->assign(p + kFrameHeaderBytes, p + kFrameHeaderBytes + h->payload);
    start_ += kFrameHeaderBytes + h->payload;
    if (start_ == buf_.size()) {
        buf_.clear();
        start_ = 0;
    }
    return true;
}

bool send_frame(int fd, FrameHeader h, const void *payload, size_t n, TcpClock::time_point deadline) {
    unsigned char hdr[kFrameHeaderBytes];
    h.payload = n;
    put32(hdr, kMagic);
    put32(hdr + 4, h.type);
    put32(hdr + 8, h.seq);
    put64(hdr + 12, h.len);
    put32(hdr + 20, static_cast<uint32_t>(h.root));
    put32(hdr + 24, static_cast<uint32_t>(h.aux));
    put32(hdr + 28, h.flags);
    put64(hdr + 32, h.payload);
    const unsigned char *parts[2] = {hdr, static_cast<const unsigned char *>(payload)};
    const size_t lens[2] = {kFrameHeaderBytes, n};
    for (int i = 0; i < 2; ++i) {
        size_t off = 0;
        while (off < lens[i]) {
            // MSG_NOSIGNAL: a vanished peer is an error code here, not a SIGPIPE.
            ssize_t k = send(fd, parts[i] + off, lens[i] - off, MSG_NOSIGNAL);
            if (k > 0) {
                off += static_cast<size_t>(k);
                continue;
            }
            if (k < 0 && errno == EINTR) continue;
            if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
            if (TcpClock::now() >= deadline) {
                errno = ETIMEDOUT;
                return false;
            }
            pollfd pfd{fd, POLLOUT, 0};
            poll(&pfd, 1, std::min(ms_until(deadline), 1000));
        }
    }
    return true;
}

bool resolve_ipv4(const TcpEndpoint &ep, sockaddr_in *addr, std::string *err, bool *transient) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *res = nullptr;
    int rc = getaddrinfo(ep.host.c_str(), nullptr, &hints, &res);
    *transient = rc == EAI_AGAIN;
    if (rc != 0 || !res) {
        *err = "cannot resolve '" + ep.host + "' to an IPv4 address: " + gai_strerror(rc);
        return false;
    }
    std::memcpy(addr, res->ai_addr, sizeof *addr);
    addr->sin_port = htons(ep.port);
    freeaddrinfo(res);
    return true;
}

int listen_ipv4(const sockaddr_in &addr) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    // A previous job's connections in TIME_WAIT must not block the port.
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr) != 0 || listen(fd, 256) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int connect_ipv4(const sockaddr_in &addr, TcpClock::time_point deadline) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    int rc = connect(fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr);
    if (rc != 0 && errno == EINPROGRESS) {
        pollfd pfd{fd, POLLOUT, 0};
        int n;
        do n = poll(&pfd, 1, ms_until(deadline));
        while (n < 0 && errno == EINTR);
        int soerr = ETIMEDOUT;
        socklen_t len = sizeof soerr;
        if (n > 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
        rc = soerr == 0 ? 0 : -1;
        errno = soerr;
    }
    if (rc != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

void tune_socket(int fd) {
    int one = 1, idle = 5, intvl = 2, cnt = 5;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

std::string peer_address(int fd) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    if (getpeername(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0) return "?";
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
    return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

bool notify_job_failed(const TcpEndpoint &ep, const std::string &job, int world, int exit_code,
                       const std::string &why) {
    const auto deadline = TcpClock::now() + std::chrono::seconds(2);
    sockaddr_in addr{};
    std::string err;
    bool transient = false;
    if (!resolve_ipv4(ep, &addr, &err, &transient)) return false;
    int fd = connect_ipv4(addr, deadline);
    if (fd < 0) return false;
    // HELLO as rank -1 ("a launcher"), then the failure; rank 0 relays it.
    FrameHeader hello{kHello, 0, uint64_t(world), -1, kProtocolVersion};
    FrameHeader fail{kFail, 0, 0, exit_code, VIPL_BOOT_ERR_TIMEOUT, kFlagKill};
    bool ok = send_frame(fd, hello, job.data(), job.size(), deadline) &&
        send_frame(fd, fail, why.data(), std::min<size_t>(why.size(), kMaxPayloadBeforeHello), deadline);
    close(fd);
    return ok;
}

} // namespace viastack::boot
