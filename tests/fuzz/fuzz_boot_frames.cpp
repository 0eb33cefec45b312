// fuzz_boot_frames - the TCP bootstrap's parsers (vipl/boot/tcp_wire.cpp):
// FrameReader reassembling frames from a socket, fed arbitrary bytes in two
// pieces, and parse_boot_spec ("tcp:<host>:<port>") on the input's first line.
//
// What must hold:
//   - FrameReader pops exactly the frames an independent decoder of the format
//     (tcp_wire.hpp: 40-byte big-endian header with magic "VBOT", then
//     `payload` bytes) finds, with the same fields and payload bytes, however
//     the bytes are split between reads; it flags garbage exactly when a
//     complete header has a wrong magic or a payload over kMaxPayload, and then
//     pops nothing more; it never pops a frame whose payload has not fully
//     arrived;
//   - parse_boot_spec accepts only "tcp:" + host + ":" + digits with a port in
//     1..65535 and a host without ':' of at most 253 characters, and returns
//     exactly that host and port.
#include <endian.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "tcp_wire.hpp"

using namespace viastack::boot;

namespace {

struct RefFrame {
    FrameHeader h;
    size_t at; // payload offset in the input
};

uint32_t be32(const uint8_t *p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return be32toh(v);
}
uint64_t be64(const uint8_t *p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return be64toh(v);
}

// The format, decoded independently: complete frames, and whether a complete header is garbage.
std::vector<RefFrame> decode(const uint8_t *d, size_t n, size_t *complete_bytes, bool *garbage) {
    std::vector<RefFrame> out;
    size_t pos = 0;
    *garbage = false;
    while (n - pos >= kFrameHeaderBytes) {
        const uint8_t *p = d + pos;
        if (be32(p) != 0x56424f54u) {
            *garbage = true;
            break;
        }
        FrameHeader h;
        h.type = be32(p + 4);
        h.seq = be32(p + 8);
        h.len = be64(p + 12);
        h.root = int32_t(be32(p + 20));
        h.aux = int32_t(be32(p + 24));
        h.flags = be32(p + 28);
        h.payload = be64(p + 32);
        if (h.payload > kMaxPayload) {
            *garbage = true;
            break;
        }
        if (n - pos - kFrameHeaderBytes < h.payload) break;
        out.push_back({h, pos + kFrameHeaderBytes});
        pos += kFrameHeaderBytes + h.payload;
    }
    *complete_bytes = pos;
    return out;
}

void send_all(int fd, const uint8_t *p, size_t n) {
    while (n) {
        const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
        FUZZ_ASSERT(k > 0, "socketpair send failed");
        p += k;
        n -= size_t(k);
    }
}

void check_frames(const uint8_t *data, size_t size, size_t split) {
    int sv[2];
    FUZZ_ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
    FrameReader r;
    std::vector<std::pair<FrameHeader, std::vector<unsigned char>>> got;
    auto pop = [&](size_t arrived) {
        FrameHeader h;
        std::vector<unsigned char> p;
        while (r.next(&h, &p)) {
            got.emplace_back(h, p);
            // Never a frame that has not fully arrived.
            size_t cb;
            bool g;
            const auto ref = decode(data, arrived, &cb, &g);
            FUZZ_ASSERT(got.size() <= ref.size(), "popped frame %zu of only %zu complete in %zu bytes", got.size(),
                        ref.size(), arrived);
        }
    };
    send_all(sv[0], data, split);
    FUZZ_ASSERT(r.read_some(sv[1]) == FrameReader::kOk, "read_some on an open socket");
    pop(split);
    send_all(sv[0], data + split, size - split);
    ::close(sv[0]);
    const FrameReader::Status st = r.read_some(sv[1]);
    FUZZ_ASSERT(st == FrameReader::kEof, "read_some after close: %d", int(st));
    pop(size);
    ::close(sv[1]);

    size_t complete;
    bool garbage;
    const auto ref = decode(data, size, &complete, &garbage);
    FUZZ_ASSERT(got.size() == ref.size(), "%zu frames popped, %zu in the input", got.size(), ref.size());
    FUZZ_ASSERT(r.garbage() == garbage, "garbage flag %d, expected %d", int(r.garbage()), int(garbage));
    for (size_t i = 0; i < ref.size(); ++i) {
        const FrameHeader &a = got[i].first, &b = ref[i].h;
        FUZZ_ASSERT(a.type == b.type && a.seq == b.seq && a.len == b.len && a.root == b.root && a.aux == b.aux &&
                        a.flags == b.flags && a.payload == b.payload,
                    "frame %zu header differs", i);
        FUZZ_ASSERT(got[i].second.size() == b.payload &&
                        (b.payload == 0 || std::memcmp(got[i].second.data(), data + ref[i].at, b.payload) == 0),
                    "frame %zu payload differs", i);
    }
}

void check_spec(const std::string &spec) {
    TcpEndpoint ep;
    std::string err;
    if (!parse_boot_spec(spec, &ep, &err)) {
        FUZZ_ASSERT(!err.empty(), "rejected '%s' without a reason", spec.c_str());
        return;
    }
    FUZZ_ASSERT(ep.port >= 1, "port 0 accepted");
    FUZZ_ASSERT(!ep.host.empty() && ep.host.size() <= 253 && ep.host.find(':') == std::string::npos,
                "bad host accepted from '%s'", spec.c_str());
    const std::string pre = "tcp:" + ep.host + ":";
    FUZZ_ASSERT(spec.compare(0, pre.size(), pre) == 0, "'%s' is not tcp:<host>:...", spec.c_str());
    const std::string port = spec.substr(pre.size());
    FUZZ_ASSERT(!port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos &&
                    std::stoul(port) == ep.port,
                "port '%s' parsed as %u", port.c_str(), ep.port);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    if (size > 64 * 1024) return 0; // fits the socket buffers without a concurrent reader
    const size_t split = size_t(data[0]) * size / 256;
    check_frames(data, size, split);
    const uint8_t *nl = static_cast<const uint8_t *>(std::memchr(data, '\n', size));
    check_spec(std::string(reinterpret_cast<const char *>(data), nl ? size_t(nl - data) : size));
    return 0;
}
