// tcp_wire.hpp - the pieces of the TCP bootstrap that libvipl_boot and vipl-run
// share: parsing "tcp:<host>:<port>", the frame format on the wire, and small
// socket helpers (IPv4 only: the guests and hosts we target all have it).
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace viastack::boot {

using TcpClock = std::chrono::steady_clock;

struct TcpEndpoint {
    std::string host; // IPv4 address or host name
    uint16_t port = 0;
    std::string str() const { return host + ":" + std::to_string(port); }
};

// Parses VIASTACK_BOOT / vipl-run --boot: "tcp:<host>:<port>", port 1..65535.
// On failure returns false and *err says what is wrong (without the value).
bool parse_boot_spec(const std::string &spec, TcpEndpoint *ep, std::string *err);

// Every message is a fixed header and `payload` bytes.  Fields travel in
// network byte order so hosts need not agree on anything but this file.
enum FrameType : uint32_t {
    kHello = 1,   // rank -> 0: root=rank, len=size, aux=version, payload=job id
    kWelcome = 2, // 0 -> rank: every rank joined, collectives may start
    kReject = 3,  // 0 -> joiner: aux=VIPL_BOOT_ERR_*, payload=why
    kContrib = 4, // rank -> 0: seq, aux=collective kind, len, root, payload=data;
                  //            flags bit 0 = the rank's own arguments were valid
    kResult = 5,  // 0 -> rank: seq, aux=VIPL_BOOT_OK/ERR_ARG, payload=data or why
    kFail = 6,    // either way: the job is over. aux=rc, root=exit code,
                  //            flags: kFlagKill (end the process after the
                  //            grace), kFlagGuessedCode
    kBye = 7,     // either way: leaving without vipl_boot_finalize (process exit)
};
inline constexpr uint32_t kFlagArgsValid = 1;
inline constexpr uint32_t kFlagKill = 2;
inline constexpr uint32_t kFlagGuessedCode = 4; // kFail: exit code 1 for want of the real one

inline constexpr int32_t kProtocolVersion = 1; // HELLO's aux

struct FrameHeader {
    uint32_t type = 0;
    uint32_t seq = 0;
    uint64_t len = 0;
    int32_t root = 0;
    int32_t aux = 0;
    uint32_t flags = 0;
    uint64_t payload = 0; // bytes after the header
};
inline constexpr size_t kFrameHeaderBytes = 40;
// A frame claiming more is garbage (or not a viastack peer): drop the peer.
inline constexpr uint64_t kMaxPayload = uint64_t{1} << 32;
// What rank 0 accepts from a connection that has not said a valid HELLO yet
// (anyone who can reach the port): the HELLO's job id, or a vipl-run's FAIL
// reason after its HELLO.  Only a joined rank may send kMaxPayload.
inline constexpr uint64_t kMaxPayloadBeforeHello = 4096;
// How long rank 0 keeps a connection that has not said a valid HELLO (ranks
// send it right after connecting).
inline constexpr std::chrono::milliseconds kHelloWait{3000};
// Connections rank 0 keeps waiting for their HELLO at once; more are closed.
inline constexpr size_t kMaxPendingConnections = 256;

// Reassembles frames from a non-blocking socket.  It never holds more than
// one largest frame (header + max_payload) plus one read's worth of bytes:
// reading stops there until frames are popped (a peer that sends faster is
// read on the next poll), and a header claiming more than max_payload is
// garbage.
class FrameReader {
public:
    enum Status { kOk, kEof, kError, kGarbage };
    explicit FrameReader(uint64_t max_payload = kMaxPayload) : max_payload_(max_payload) {}
    // Reads what the socket has now (never blocks).
    Status read_some(int fd);
    // Pops the next complete frame, if any.
    bool next(FrameHeader *h, std::vector<unsigned char> *payload);
    bool garbage() const { return garbage_; }
    // The largest payload a frame may claim from now on.
    void set_max_payload(uint64_t n) { max_payload_ = n; }
    uint64_t max_payload() const { return max_payload_; }
    size_t buffered() const { return buf_.size() - start_; }

private:
    std::vector<unsigned char> buf_;
    size_t start_ = 0;
    bool garbage_ = false;
    uint64_t max_payload_;
};

// Sends header + payload on a non-blocking socket, waiting for room until
// deadline.  false (errno set) if the peer is gone or too slow.
bool send_frame(int fd, FrameHeader h, const void *payload, size_t n, TcpClock::time_point deadline);

// Resolves host (getaddrinfo, AF_INET).  false with *err; *transient when a
// retry may help (EAI_AGAIN: name service not ready yet).
bool resolve_ipv4(const TcpEndpoint &ep, sockaddr_in *addr, std::string *err, bool *transient);
// A non-blocking listening socket bound to addr; -1 with errno.
int listen_ipv4(const sockaddr_in &addr);
// One non-blocking connect attempt, waiting until deadline; -1 with errno.
int connect_ipv4(const sockaddr_in &addr, TcpClock::time_point deadline);
// TCP_NODELAY, keep-alive probes (a vanished host is noticed in ~15 s), O_NONBLOCK.
void tune_socket(int fd);
// "10.77.0.2:40022" for messages.
std::string peer_address(int fd);

// For vipl-run: tells rank 0 of job `job` that the job failed (a local rank
// died) so that every rank learns it at once and, kGrace later, ends with
// exit_code.  Best effort within ~2 s; false if rank 0 could not be told
// (it is gone already, which the others notice by themselves).
bool notify_job_failed(const TcpEndpoint &ep, const std::string &job, int world, int exit_code, const std::string &why);

} // namespace viastack::boot
