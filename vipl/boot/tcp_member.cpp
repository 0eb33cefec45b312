// tcp_member.cpp - the side of ranks 1..N-1 in the TCP bootstrap (see
// tcp_backend.cpp for the protocol): connect to rank 0, retrying until
// VIASTACK_BOOT_TIMEOUT because the hosts start in any order, introduce
// ourselves with HELLO and wait for WELCOME, then let the link thread
// (peer_loop) take rank 0's results and relayed failures.  Contributions are
// sent by the caller's thread (TcpBackend::round in tcp_backend.cpp).
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tcp_backend.hpp"
#include "vipl_boot.h"

namespace viastack::boot::tcp {

using namespace std::chrono_literals;

bool TcpBackend::start_peer(int *rc) {
    sockaddr_in addr{};
    if (!resolve_root(&addr, VIPL_BOOT_ERR_TIMEOUT, rc)) return false;
    // Rank 0 may start later (another host's vipl-run): retry until the deadline.
    const auto t0 = Clock::now();
    bool noted = false;
    for (;;) {
        sock_ = connect_ipv4(addr, std::min(init_deadline_, Clock::now() + 2s));
        if (sock_ >= 0) break;
        int e = errno;
        if (Clock::now() >= init_deadline_) {
            report(info_.rank,
                   "cannot reach rank 0 at " + ep_.str() + " within " + secs(info_.timeout_s) +
                       " (VIASTACK_BOOT_TIMEOUT): " + std::strerror(e) +
                       " (is rank 0 running there, with the same VIASTACK_BOOT?)");
            *rc = VIPL_BOOT_ERR_TIMEOUT;
            return false;
        }
        if (!noted && Clock::now() - t0 > 10s) {
            report(info_.rank, "still trying to reach rank 0 at " + ep_.str() + " (" + std::strerror(e) + ")",
                   log::Level::warn);
            noted = true;
        }
        std::this_thread::sleep_for(std::min<Clock::duration>(100ms, init_deadline_ - Clock::now()));
    }
    tune_socket(sock_);
    FrameHeader hello{kHello, 0, uint64_t(info_.size), info_.rank, kProtocolVersion};
    if (!send_frame(sock_, hello, info_.job.data(), info_.job.size(), init_deadline_ + 1s)) {
        report(info_.rank, "cannot send to rank 0 at " + ep_.str() + ": " + std::strerror(errno));
        *rc = VIPL_BOOT_ERR_TIMEOUT;
        return false;
    }
    thread_ = std::thread([this] { peer_loop(); });
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_until(lk, init_deadline_ + 1s, [&] { return welcomed_ || failed_; });
    if (welcomed_ && !failed_) return true;
    if (!failed_)
        fail_locked(VIPL_BOOT_ERR_TIMEOUT, 1, false,
                    "rank 0 at " + ep_.str() + " did not start the job within " + secs(info_.timeout_s) +
                        " (VIASTACK_BOOT_TIMEOUT + 1 s)");
    report(info_.rank, "joining the job failed: " + fail_msg_);
    *rc = fail_rc_;
    return false;
}

void TcpBackend::peer_loop() {
    std::unique_lock<std::mutex> lk(mu_);
    bool reading = true;
    for (;;) {
        maybe_end_process_locked(Clock::now());
        cv_.notify_all();
        if (stop_) return;
        const int ms = poll_ms_locked({{failed_ && kill_, grace_at_}});
        pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {reading ? sock_ : -1, POLLIN, 0}};
        lk.unlock();
        poll(fds, 2, ms);
        lk.lock();
        if (stop_) return;
        if (fds[0].revents) drain_wake();
        if (!fds[1].revents) continue;
        FrameReader::Status st = reader_.read_some(sock_);
        FrameHeader h;
        std::vector<unsigned char> p;
        while (reader_.next(&h, &p)) on_frame_from_root(h, std::move(p));
        if (st == FrameReader::kOk && !reader_.garbage()) continue;
        reading = false; // the socket stays open for the API's writes to fail on
        if (!finished_)
            fail_locked(VIPL_BOOT_ERR_TIMEOUT, 1, true,
                        reader_.garbage() ? "rank 0 at " + ep_.str() + " sent garbage (is that port a viastack job?)"
                                          : "lost the connection to rank 0 at " + ep_.str() +
                                " (rank 0 died or was killed, or the network failed)",
                        true);
    }
}

void TcpBackend::on_frame_from_root(const FrameHeader &h, std::vector<unsigned char> p) {
    switch (h.type) {
    case kWelcome: welcomed_ = true; break;
    case kReject: fail_locked(h.aux, 1, false, "rank 0 refused us: " + std::string(p.begin(), p.end())); break;
    case kResult:
        if (h.aux == VIPL_BOOT_OK && h.len == kFinalize) finished_ = true;
        result_seq_ = h.seq;
        result_rc_ = h.aux;
        if (h.aux == VIPL_BOOT_OK) result_data_ = std::move(p);
        else result_msg_.assign(p.begin(), p.end());
        break;
    case kFail:
        fail_locked(h.aux, h.root, (h.flags & kFlagKill) != 0, std::string(p.begin(), p.end()),
                    (h.flags & kFlagGuessedCode) != 0);
        break;
    case kBye: fail_locked(VIPL_BOOT_ERR_TIMEOUT, 1, false, "rank 0 exited without calling vipl_boot_finalize"); break;
    default: break;
    }
}

} // namespace viastack::boot::tcp
