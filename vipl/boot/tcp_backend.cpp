// tcp_backend.cpp - vipl_boot across hosts: VIASTACK_BOOT=tcp:<host>:<port>.
//
// Star through rank 0: rank 0 listens, every other rank connects, sends HELLO
// (job, rank, size) and waits for WELCOME, which rank 0 sends once all N ranks
// joined.  A collective is one round: each rank sends its contribution to rank
// 0, rank 0 checks that all agree (kind, len, root) and sends everyone the
// result.  Bootstrap is start-up/shut-down only, so the O(N) work on rank 0 is
// cheaper than the complexity of a tree.
//
// Every process runs one link thread that owns the reading side of its
// socket(s).  That is what makes failures prompt: rank 0's thread relays an
// abort or a lost peer to everyone at once even while rank 0's main thread is
// busy in user code, and a rank waiting in a collective wakes on the relayed
// FAIL.  Across hosts no single vipl-run can tear the job down, so once the
// job has failed (abort, lost peer, timeout) each process also ends itself
// kGrace later unless it exits first, as vipl-run does for the ranks it owns.
// A rank that exits normally without vipl_boot_finalize says BYE (atexit), so
// that is not mistaken for a crash: collectives then fail, nobody is killed.
//
// This file holds what both roles share: the Backend calls, one collective
// round from the caller's side, the failure state and the grace kill, and
// shut-down.  Rank 0's side is tcp_hub.cpp, the other ranks' tcp_member.cpp.
#include "tcp_backend.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "vipl_boot.h"

namespace viastack::boot::tcp {
namespace {

TcpBackend *g_live = nullptr; // for the atexit BYE
pid_t g_live_pid = 0;         // a fork()ed child shares the sockets: it must stay quiet
void leave_hook();

} // namespace

using namespace std::chrono_literals;

bool TcpBackend::start(int *rc) {
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    init_deadline_ = after(info_.timeout_s);
    bool ok = info_.rank == 0 ? start_root(rc) : start_peer(rc);
    if (ok) {
        g_live = this;
        g_live_pid = getpid();
        std::atexit(leave_hook);
    }
    return ok;
}

bool TcpBackend::resolve_root(sockaddr_in *addr, int timeout_rc, int *rc) {
    std::string err;
    bool transient = false;
    while (!resolve_ipv4(ep_, addr, &err, &transient)) {
        if (!transient || Clock::now() >= init_deadline_) {
            report(info_.rank, "VIASTACK_BOOT=tcp:" + ep_.str() + ": " + err);
            *rc = transient ? timeout_rc : VIPL_BOOT_ERR_ENV;
            return false;
        }
        std::this_thread::sleep_for(200ms);
    }
    return true;
}

int TcpBackend::barrier() {
    std::vector<unsigned char> r;
    return round(kBarrier, true, 0, -1, nullptr, 0, &r);
}

int TcpBackend::allgather(const void *mine, size_t len, void *out) {
    bool ok = len <= VIPL_BOOT_MAX_ITEM && (len == 0 || (mine && out));
    if (!ok)
        report(info_.rank,
               "vipl_boot_allgather: len " + std::to_string(len) +
                   (len > VIPL_BOOT_MAX_ITEM
                        ? " exceeds VIPL_BOOT_MAX_ITEM (" + std::to_string(VIPL_BOOT_MAX_ITEM) + ")"
                        : std::string(" with a NULL buffer")));
    std::vector<unsigned char> all;
    int rc = round(kAllgather, ok, len, -1, mine, ok ? len : 0, &all);
    if (rc == VIPL_BOOT_OK && len) std::memcpy(out, all.data(), all.size());
    return rc;
}

int TcpBackend::bcast(void *buf, size_t len, int root) {
    bool ok = root >= 0 && root < info_.size && (len == 0 || buf);
    if (!ok)
        report(info_.rank,
               root < 0 || root >= info_.size ? "vipl_boot_bcast: root " + std::to_string(root) + " out of range 0.." +
                       std::to_string(info_.size - 1)
                                              : std::string("vipl_boot_bcast: NULL buffer"));
    const bool mine = ok && root == info_.rank;
    std::vector<unsigned char> data;
    int rc = round(kBcast, ok, len, root, mine ? buf : nullptr, mine ? len : 0, &data);
    if (rc == VIPL_BOOT_OK && !mine && len) std::memcpy(buf, data.data(), len);
    return rc;
}

int TcpBackend::finalize() {
    std::vector<unsigned char> r;
    int rc = round(kFinalize, true, 0, -1, nullptr, 0, &r);
    shut_down(); // a finalized process's later life is its own: no grace kill
    return rc;
}

void TcpBackend::abort_job(int code, const char *why) {
    std::string msg = "rank " + std::to_string(info_.rank) + " aborted the job (code " + std::to_string(code) + ")" +
        (why && *why ? std::string(": ") + why : "");
    std::unique_lock<std::mutex> lk(mu_);
    if (info_.rank == 0) {
        fail_locked(VIPL_BOOT_ERR_TIMEOUT, code, true, msg);
        wake();
        cv_.wait_until(lk, Clock::now() + 1s, [&] { return relayed_ || stop_; });
    } else {
        lk.unlock();
        FrameHeader h{kFail, 0, 0, code, VIPL_BOOT_ERR_TIMEOUT, kFlagKill, 0};
        std::lock_guard<std::mutex> send_lock(send_mu_);
        send_frame(sock_, h, msg.data(), msg.size(), Clock::now() + 1s);
    }
}

// atexit: leaving without finalize is not a crash; say so (see top comment).
void TcpBackend::leave_at_exit() {
    std::unique_lock<std::mutex> lk(mu_);
    if (stop_ || failed_ || finished_) return;
    if (info_.rank == 0) {
        leave_requested_ = true;
        wake();
        cv_.wait_until(lk, Clock::now() + 1s, [&] { return bye_sent_ || stop_; });
    } else {
        lk.unlock();
        std::lock_guard<std::mutex> send_lock(send_mu_);
        send_frame(sock_, FrameHeader{kBye}, nullptr, 0, Clock::now() + 1s);
    }
}

void TcpBackend::wake() {
    uint64_t one = 1;
    ssize_t unused = write(wake_fd_, &one, sizeof one);
    (void)unused;
}

// The first failure names the cause; later ones are mostly its echoes.  Two
// exceptions upgrade it: a failure that ends processes after one that did
// not (a rank said BYE, then its vipl-run reported that it exited 3), and a
// real exit code (vipl-run's report, an abort) after a guessed one (the
// connection of a killed rank closed: we only know it is gone).
void TcpBackend::fail_locked(int rc, int code, bool kill, const std::string &msg, bool guessed_code) {
    if (failed_ && !(kill && (!kill_ || (guessed_code_ && !guessed_code)))) return;
    if (!failed_) {
        failed_ = true;
        fail_rc_ = rc;
        fail_msg_ = msg;
    }
    fail_code_ = code;
    guessed_code_ = guessed_code;
    kill_ = kill;
    end_msg_ = msg;
    relayed_ = false;
    grace_at_ = Clock::now() + kGrace;
    cv_.notify_all();
    wake(); // rank 0's thread relays it to everyone
}

void TcpBackend::maybe_end_process_locked(Clock::time_point now) {
    if (!failed_ || !kill_ || now < grace_at_) return;
    report(info_.rank,
           "ending this process with exit code " + std::to_string(fail_code_) + ": the job failed 1 s ago (" +
               end_msg_ + ") and across hosts each rank ends itself");
    _exit(fail_code_ & 0xff ? fail_code_ & 0xff : 1);
}

int TcpBackend::poll_ms_locked(std::initializer_list<std::pair<bool, Clock::time_point>> deadlines) {
    long long ms = -1;
    for (auto [on, t] : deadlines) {
        if (!on) continue;
        long long d = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count() + 1;
        d = std::max(0LL, d);
        ms = ms < 0 ? d : std::min(ms, d);
    }
    return static_cast<int>(std::min(ms, 60'000LL));
}

// One collective round from the caller's side.
int TcpBackend::round(int32_t kind, bool ok, uint64_t len, int32_t root, const void *data, size_t n,
                      std::vector<unsigned char> *result) {
    const char *what = kind_name(kind);
    std::unique_lock<std::mutex> lk(mu_);
    if (failed_) {
        report(info_.rank,
               std::string(what) + " failed: the job failed earlier (" + fail_msg_ +
                   "); it cannot continue (exit, or call vipl_boot_abort)");
        return fail_rc_;
    }
    const uint32_t seq = ++seq_;
    if (info_.rank == 0) {
        Contribution &c = contrib_[0];
        c = Contribution{true, kind, ok, len, root, {}};
        if (n) c.data.assign(static_cast<const unsigned char *>(data), static_cast<const unsigned char *>(data) + n);
        wake();
    } else {
        lk.unlock();
        FrameHeader h{kContrib, seq, len, root, kind, ok ? kFlagArgsValid : 0u, 0};
        bool sent;
        {
            std::lock_guard<std::mutex> send_lock(send_mu_);
            sent = send_frame(sock_, h, data, n, after(info_.timeout_s));
        }
        int e = errno;
        lk.lock();
        if (!sent)
            fail_locked(VIPL_BOOT_ERR_TIMEOUT, 1, true,
                        "cannot send to rank 0 at " + ep_.str() + ": " + std::strerror(e) +
                            " (rank 0 died, or the network is down)",
                        true);
    }
    // Rank 0's thread times the round and names the missing ranks; this local
    // limit only matters when rank 0 itself stopped answering.
    const auto fallback = after(info_.timeout_s + 1.0);
    cv_.wait_until(lk, fallback, [&] { return result_seq_ == seq || failed_; });
    if (result_seq_ == seq) {
        if (result_rc_ != VIPL_BOOT_OK) {
            report(info_.rank, std::string(what) + ": " + result_msg_);
            return result_rc_;
        }
        result->swap(result_data_);
        return VIPL_BOOT_OK;
    }
    if (!failed_)
        fail_locked(VIPL_BOOT_ERR_TIMEOUT, 1, false,
                    std::string(what) + " timed out after " + secs(info_.timeout_s + 1) +
                        " (VIASTACK_BOOT_TIMEOUT + 1 s): rank 0 at " + ep_.str() +
                        " did not answer (it hangs, or the network between us is down)");
    report(info_.rank, std::string(what) + " failed: " + fail_msg_);
    return fail_rc_;
}

void TcpBackend::shut_down() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
        if (g_live == this) g_live = nullptr;
        cv_.notify_all();
    }
    if (wake_fd_ >= 0) wake();
    if (thread_.joinable()) thread_.join();
    for (Conn &c : peers_)
        if (c.fd >= 0) close(c.fd), c.fd = -1;
    for (Conn &c : pending_)
        if (c.fd >= 0) close(c.fd), c.fd = -1;
    for (int *fd : {&listen_fd_, &sock_, &wake_fd_})
        if (*fd >= 0) close(*fd), *fd = -1;
}

void TcpBackend::drain_wake() {
    uint64_t v;
    ssize_t unused = read(wake_fd_, &v, sizeof v);
    (void)unused;
}

namespace {

void leave_hook() {
    if (g_live && getpid() == g_live_pid) g_live->leave_at_exit();
}

} // namespace
} // namespace viastack::boot::tcp

namespace viastack::boot {

std::unique_ptr<Backend> make_tcp_backend(const JobInfo &info, int *rc) {
    TcpEndpoint ep;
    std::string err;
    if (!parse_boot_spec(info.boot, &ep, &err)) { // read_env checked it already
        report(info.rank, "VIASTACK_BOOT='" + info.boot + "': " + err);
        *rc = VIPL_BOOT_ERR_ENV;
        return nullptr;
    }
    auto b = std::make_unique<tcp::TcpBackend>(info, ep);
    if (!b->start(rc)) return nullptr;
    return b;
}

} // namespace viastack::boot
