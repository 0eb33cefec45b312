// tcp_hub.cpp - rank 0's side of the TCP bootstrap (see tcp_backend.cpp for
// the protocol): listen, accept joins and check them (job, size, protocol
// version, duplicate ranks), gather every round's contributions, check that
// the ranks agree and send each the result, time out start-up and rounds
// naming the missing ranks, and relay any failure (an abort, a lost rank, a
// vipl-run's report) to every rank at once.  All of it runs on rank 0's link
// thread (root_loop), so it happens even while rank 0's main thread is busy.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tcp_backend.hpp"
#include "vipl_boot.h"

namespace viastack::boot::tcp {
namespace {

std::string rank_list(const std::vector<int> &ranks) {
    std::string s;
    for (size_t i = 0; i < ranks.size() && i < 32; ++i) {
        if (i) s += ',';
        s += std::to_string(ranks[i]);
    }
    if (ranks.size() > 32) s += ",... (" + std::to_string(ranks.size()) + " in all)";
    return (ranks.size() == 1 ? "rank " : "ranks ") + s;
}

} // namespace

using namespace std::chrono_literals;

bool TcpBackend::start_root(int *rc) {
    sockaddr_in addr{};
    if (!resolve_root(&addr, VIPL_BOOT_ERR_ENV /* its own address: a bad setting */, rc)) return false;
    listen_fd_ = listen_ipv4(addr);
    if (listen_fd_ < 0) {
        int e = errno;
        std::string why = std::strerror(e);
        if (e == EADDRINUSE)
            why = "the port is in use (another job, or a program still holds it): choose another port "
                  "in VIASTACK_BOOT (vipl-run --boot)";
        else if (e == EADDRNOTAVAIL)
            why = "it is not an address of this host: rank 0 must run on the host VIASTACK_BOOT names "
                  "(vipl-run --first-rank 0 goes there)";
        report(0, "rank 0 cannot listen on " + ep_.str() + ": " + why);
        *rc = VIPL_BOOT_ERR_ENV;
        return false;
    }
    peers_.resize(size_t(info_.size));
    contrib_.resize(size_t(info_.size));
    thread_ = std::thread([this] { root_loop(); });
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_until(lk, init_deadline_ + 2s, [&] { return welcomed_ || failed_; });
    if (welcomed_ && !failed_) return true;
    if (!failed_) fail_locked(VIPL_BOOT_ERR_TIMEOUT, 1, false, "start-up did not finish in time");
    report(0, "starting the job failed: " + fail_msg_);
    *rc = fail_rc_;
    return false;
}

void TcpBackend::root_loop() {
    std::vector<pollfd> fds;
    std::vector<int> who; // -1 wake, -2 listen, >= 0 a peer rank, <= -10 pending -(10+i)
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
        step_root_locked(Clock::now());
        cv_.notify_all();
        if (stop_) return;
        expire_pending_locked(Clock::now());
        Clock::time_point first_pending = Clock::time_point::max();
        for (const Conn &c : pending_) first_pending = std::min(first_pending, c.since + kHelloWait);
        const int ms = poll_ms_locked({{!welcomed_ && !failed_, init_deadline_},
                                       {round_started_ && !failed_, round_deadline_},
                                       {failed_ && kill_, grace_at_},
                                       {!pending_.empty(), first_pending}});
        fds.assign({{wake_fd_, POLLIN, 0}});
        who.assign({-1});
        if (listen_fd_ >= 0) fds.push_back({listen_fd_, POLLIN, 0}), who.push_back(-2);
        for (size_t i = 0; i < pending_.size(); ++i)
            fds.push_back({pending_[i].fd, POLLIN, 0}), who.push_back(-10 - int(i));
        for (int r = 1; r < info_.size; ++r)
            if (peers_[size_t(r)].fd >= 0) fds.push_back({peers_[size_t(r)].fd, POLLIN, 0}), who.push_back(r);
        lk.unlock();
        poll(fds.data(), fds.size(), ms);
        lk.lock();
        if (stop_) return;
        for (size_t i = 0; i < fds.size(); ++i) {
            if (!fds[i].revents) continue;
            if (who[i] == -1) drain_wake();
            else if (who[i] == -2) accept_all();
            else if (who[i] <= -10) read_pending(size_t(-10 - who[i]));
            else read_peer(who[i]);
        }
        // Pending connections that were closed (rejected, joined, or gone).
        pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const Conn &c) { return c.fd < 0; }),
                       pending_.end());
    }
}

void TcpBackend::accept_all() {
    for (;;) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return;
        if (pending_.size() >= kMaxPendingConnections) {
            report(0,
                   "closed the connection from " + peer_address(fd) + ": already " +
                       std::to_string(kMaxPendingConnections) + " connections waiting for their HELLO",
                   log::Level::warn);
            close(fd);
            continue;
        }
        tune_socket(fd);
        Conn c;
        c.fd = fd;
        c.where = peer_address(fd);
        c.since = Clock::now();
        // Unauthenticated until its HELLO names this job: it may make rank 0
        // hold one small frame, not a collective's worth.
        c.reader.set_max_payload(kMaxPayloadBeforeHello);
        pending_.push_back(std::move(c));
    }
}

void TcpBackend::drop_pending(size_t i, const std::string &why) {
    Conn &c = pending_[i];
    report(0, "closed the connection from " + c.where + ": " + why, log::Level::warn);
    close(c.fd);
    c.fd = -1;
}

void TcpBackend::expire_pending_locked(Clock::time_point now) {
    for (size_t i = 0; i < pending_.size(); ++i) {
        if (pending_[i].fd < 0 || now < pending_[i].since + kHelloWait) continue;
        read_pending(i); // what it sent while rank 0 was busy counts
        if (pending_[i].fd >= 0)
            drop_pending(i,
                         pending_[i].launcher ? "a vipl-run said HELLO but sent no FAIL within " +
                                 std::to_string(kHelloWait.count()) + " ms"
                                              : "no HELLO within " + std::to_string(kHelloWait.count()) +
                                 " ms (a viastack rank sends it at once: not a rank of this job?)");
    }
}

void TcpBackend::reject(Conn &c, int rc, const std::string &why) {
    send_frame(c.fd, FrameHeader{kReject, 0, 0, 0, rc}, why.data(), why.size(), Clock::now() + 1s);
    close(c.fd);
    c.fd = -1;
}

void TcpBackend::read_pending(size_t i) {
    Conn &c = pending_[i];
    FrameReader::Status st = c.reader.read_some(c.fd);
    FrameHeader h;
    std::vector<unsigned char> p;
    while (c.fd >= 0 && c.reader.next(&h, &p)) {
        if (c.launcher && h.type == kFail) {
            fail_locked(h.aux, h.root, (h.flags & kFlagKill) != 0, std::string(p.begin(), p.end()),
                        (h.flags & kFlagGuessedCode) != 0);
        } else if (h.type == kHello && !c.launcher) {
            on_hello(c, h, std::string(p.begin(), p.end()));
        } else {
            return drop_pending(i, "unexpected frame (type " + std::to_string(h.type) + ") before a HELLO");
        }
    }
    if (c.fd < 0) return;
    if (c.reader.garbage())
        drop_pending(i,
                     "not a viastack bootstrap peer (a frame with a wrong magic, or claiming more than " +
                         std::to_string(c.reader.max_payload()) + " payload bytes before its HELLO)");
    else if (st == FrameReader::kError) drop_pending(i, std::string("read failed: ") + std::strerror(errno));
    else if (st != FrameReader::kOk)
        close(c.fd), c.fd = -1; // closed by the peer (a port probe, or a vipl-run done reporting)
}

void TcpBackend::on_hello(Conn &c, const FrameHeader &h, const std::string &job) {
    const int r = h.root;
    const std::string who = "rank " + std::to_string(r) + " at " + c.where;
    if (h.aux != kProtocolVersion)
        return reject(c, VIPL_BOOT_ERR_ENV,
                      "bootstrap protocol version mismatch (rank 0 speaks " + std::to_string(kProtocolVersion) +
                          "): use the same viastack build everywhere");
    if (job != info_.job) {
        report(0, "rejected " + who + ": it belongs to job '" + job + "', this is job '" + info_.job + "'");
        return reject(c, VIPL_BOOT_ERR_ENV,
                      "rank 0 at " + ep_.str() + " runs job '" + info_.job + "', not '" + job +
                          "': give every host the same VIASTACK_JOB (vipl-run --job)");
    }
    if (r == -1) { // a vipl-run reporting a failed local rank; its FAIL follows
        c.launcher = true;
        return;
    }
    std::string conflict;
    if (h.len != uint64_t(info_.size))
        conflict = who + " was started with VIASTACK_SIZE=" + std::to_string(h.len) + ", rank 0 with " +
            std::to_string(info_.size) + ": give every host the same vipl-run --world";
    else if (r <= 0 || r >= info_.size || peers_[size_t(r)].joined)
        conflict = "rank " + std::to_string(r) + " joined twice (again from " + c.where +
            "): the hosts' vipl-run --first-rank/-n ranges overlap";
    else if (failed_) return reject(c, fail_rc_, "the job already failed: " + fail_msg_);
    if (!conflict.empty()) {
        reject(c, VIPL_BOOT_ERR_ENV, conflict);
        return fail_locked(VIPL_BOOT_ERR_ENV, 1, true, conflict);
    }
    Conn &peer = peers_[size_t(r)];
    peer = std::move(c);
    c.fd = -1;
    peer.reader.set_max_payload(kMaxPayload); // a rank of the job: collectives may be large
    peer.joined = true;
    ++joined_;
}

void TcpBackend::read_peer(int r) {
    Conn &c = peers_[size_t(r)];
    FrameReader::Status st = c.reader.read_some(c.fd);
    FrameHeader h;
    std::vector<unsigned char> p;
    while (c.reader.next(&h, &p)) {
        if (h.type == kContrib) {
            if (h.seq != round_seq_) {
                fail_locked(VIPL_BOOT_ERR_ARG, 1, true,
                            "rank " + std::to_string(r) + " is out of step (its collective #" + std::to_string(h.seq) +
                                ", rank 0 expects #" + std::to_string(round_seq_) + ")");
                continue;
            }
            contrib_[size_t(r)] =
                Contribution{true, h.aux, (h.flags & kFlagArgsValid) != 0, h.len, h.root, std::move(p)};
            p = {};
        } else if (h.type == kFail) {
            fail_locked(h.aux, h.root, (h.flags & kFlagKill) != 0, std::string(p.begin(), p.end()),
                        (h.flags & kFlagGuessedCode) != 0);
        } else if (h.type == kBye) {
            c.left = true;
            fail_locked(VIPL_BOOT_ERR_TIMEOUT, 1, false,
                        "rank " + std::to_string(r) + " exited without calling vipl_boot_finalize");
        }
    }
    if (st == FrameReader::kOk && !c.reader.garbage()) return;
    close(c.fd);
    c.fd = -1;
    if (!c.left && !finished_)
        fail_locked(VIPL_BOOT_ERR_TIMEOUT, 1, true,
                    "lost rank " + std::to_string(r) + " (at " + c.where +
                        "): its connection closed without vipl_boot_finalize (the process died or was killed)",
                    true);
}

// Everything rank 0 does besides reading: welcome, complete or time out the
// round, relay a failure, say BYE, end the process after the grace.
void TcpBackend::step_root_locked(Clock::time_point now) {
    if (!welcomed_ && !failed_) {
        if (joined_ == info_.size - 1) {
            for (int r = 1; r < info_.size; ++r) send_to(r, FrameHeader{kWelcome}, nullptr, 0);
            welcomed_ = true;
        } else if (now >= init_deadline_) {
            std::vector<int> missing;
            for (int r = 1; r < info_.size; ++r)
                if (!peers_[size_t(r)].joined) missing.push_back(r);
            fail_locked(VIPL_BOOT_ERR_TIMEOUT, 1, false,
                        "start-up timed out after " + secs(info_.timeout_s) +
                            " (VIASTACK_BOOT_TIMEOUT): " + rank_list(missing) + " never joined at " + ep_.str() +
                            " (not started, a different VIASTACK_BOOT, or a firewall)");
        }
    }
    if (welcomed_ && !failed_) {
        std::vector<int> missing;
        for (int r = 0; r < info_.size; ++r)
            if (!contrib_[size_t(r)].in) missing.push_back(r);
        if (missing.empty()) {
            complete_round_locked();
        } else if (missing.size() < size_t(info_.size)) {
            // The round's clock starts with its first contribution.
            if (!round_started_) {
                round_started_ = true;
                round_deadline_ = after(info_.timeout_s);
            }
            if (now >= round_deadline_)
                fail_locked(VIPL_BOOT_ERR_TIMEOUT, 1, true,
                            std::string(kind_name(contrib_[first_in()].kind)) + " timed out after " +
                                secs(info_.timeout_s) + " (VIASTACK_BOOT_TIMEOUT): " + rank_list(missing) +
                                " did not arrive (died, hang, or call the collectives in a different order)");
        }
    }
    if (failed_ && !relayed_) {
        FrameHeader h{kFail,      0,        0,
                      fail_code_, fail_rc_, (kill_ ? kFlagKill : 0u) | (guessed_code_ ? kFlagGuessedCode : 0u)};
        for (int r = 1; r < info_.size; ++r) send_to(r, h, end_msg_.data(), end_msg_.size());
        relayed_ = true;
    }
    if (leave_requested_ && !bye_sent_) {
        for (int r = 1; r < info_.size; ++r) send_to(r, FrameHeader{kBye}, nullptr, 0);
        bye_sent_ = true;
    }
    maybe_end_process_locked(now);
}

size_t TcpBackend::first_in() const {
    for (size_t r = 0; r < contrib_.size(); ++r)
        if (contrib_[r].in) return r;
    return 0;
}

// A peer that cannot take a message is lost; the failure is relayed to the rest.
void TcpBackend::send_to(int r, const FrameHeader &h, const void *p, size_t n) {
    Conn &c = peers_[size_t(r)];
    if (c.fd < 0) return;
    if (!send_frame(c.fd, h, p, n, after(std::min(info_.timeout_s, 10.0)))) {
        int e = errno;
        close(c.fd);
        c.fd = -1;
        if (!c.left)
            fail_locked(VIPL_BOOT_ERR_TIMEOUT, 1, true,
                        "lost rank " + std::to_string(r) + " (at " + c.where + "): " + std::strerror(e), true);
    }
}

// All N contributions are in: agree on the arguments, build the result.
void TcpBackend::complete_round_locked() {
    const Contribution &c0 = contrib_[0];
    int rc = VIPL_BOOT_OK;
    std::string msg;
    for (int r = 0; r < info_.size && rc == VIPL_BOOT_OK; ++r) {
        const Contribution &c = contrib_[size_t(r)];
        rc = VIPL_BOOT_ERR_ARG;
        if (c.kind != c0.kind)
            msg = std::string("ranks called different collectives: rank 0 called ") + kind_name(c0.kind) + ", rank " +
                std::to_string(r) + " called " + kind_name(c.kind) + " (every rank must call them in the same order)";
        else if (!c.ok) msg = "rank " + std::to_string(r) + " passed invalid arguments (see its message)";
        else if (c.len != c0.len || c.root != c0.root)
            msg = "ranks disagree: rank " + std::to_string(r) + " passed len " + std::to_string(c.len) + " root " +
                std::to_string(c.root) + ", rank 0 passed len " + std::to_string(c0.len) + " root " +
                std::to_string(c0.root) + " (every rank must pass the same len and root)";
        else if (c.kind == kAllgather ? c.data.size() != c.len
                                      : c.kind == kBcast && r == c.root && c.data.size() != c.len)
            msg = "rank " + std::to_string(r) + " sent " + std::to_string(c.data.size()) + " bytes for len " +
                std::to_string(c.len);
        else rc = VIPL_BOOT_OK;
    }
    std::vector<unsigned char> data;
    if (rc == VIPL_BOOT_OK && c0.kind == kAllgather) {
        data.reserve(size_t(info_.size) * c0.len);
        for (const Contribution &c : contrib_) data.insert(data.end(), c.data.begin(), c.data.end());
    } else if (rc == VIPL_BOOT_OK && c0.kind == kBcast) {
        data = std::move(contrib_[size_t(c0.root)].data);
    }
    // Set before sending: a peer that got its finalize result may close at once.
    if (rc == VIPL_BOOT_OK && c0.kind == kFinalize) finished_ = true;
    const uint32_t seq = round_seq_++;
    const int32_t kind = c0.kind, root = c0.root;
    for (Contribution &c : contrib_) c = Contribution{};
    round_started_ = false;
    for (int r = 1; r < info_.size; ++r) {
        FrameHeader h{kResult, seq, uint64_t(kind), root, rc};
        if (rc != VIPL_BOOT_OK) send_to(r, h, msg.data(), msg.size());
        else if (kind == kBcast && r == root) send_to(r, h, nullptr, 0); // it has the data
        else send_to(r, h, data.data(), data.size());
    }
    result_seq_ = seq;
    result_rc_ = rc;
    result_msg_ = msg;
    result_data_ = std::move(data);
}

} // namespace viastack::boot::tcp
