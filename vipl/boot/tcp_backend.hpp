// tcp_backend.hpp - the TCP bootstrap backend (VIASTACK_BOOT=tcp:<host>:<port>),
// shared by its three files: tcp_backend.cpp (the Backend calls, failure
// state, shut-down), tcp_hub.cpp (rank 0: accepts joins, runs every round as
// the root, relays failures) and tcp_member.cpp (ranks 1..N-1: connect with
// retries, send contributions, take rank 0's results).  See tcp_backend.cpp's
// top comment for the protocol and why it is shaped this way.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "boot_backend.hpp"
#include "tcp_wire.hpp"
#include "vipl_boot.h"

namespace viastack::boot::tcp {

using Clock = TcpClock;

constexpr auto kGrace = std::chrono::seconds(1); // same grace vipl-run gives a failed job's ranks
enum Kind : int32_t { kBarrier = 1, kAllgather = 2, kBcast = 3, kFinalize = 4 };

inline const char *kind_name(int32_t k) {
    switch (k) {
    case kBarrier: return "barrier";
    case kAllgather: return "allgather";
    case kBcast: return "bcast";
    case kFinalize: return "finalize";
    default: return "an unknown collective";
    }
}

inline std::string secs(double s) {
    char b[32];
    std::snprintf(b, sizeof b, "%g s", s);
    return b;
}

inline Clock::time_point after(double s) {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// One object per process; rank 0 uses the hub half, the others the member half.
class TcpBackend final : public Backend {
public:
    TcpBackend(const JobInfo &info, const TcpEndpoint &ep) : info_(info), ep_(ep) {}
    ~TcpBackend() override { shut_down(); }

    bool start(int *rc);
    int barrier() override;
    int allgather(const void *mine, size_t len, void *out) override;
    int bcast(void *buf, size_t len, int root) override;
    int finalize() override;
    void abort_job(int code, const char *why) override;
    // atexit: leaving without finalize is not a crash; say so (see tcp_backend.cpp).
    void leave_at_exit();

private:
    struct Contribution {
        bool in = false;
        int32_t kind = 0;
        bool ok = false;
        uint64_t len = 0;
        int32_t root = -1;
        std::vector<unsigned char> data;
    };
    struct Conn {
        int fd = -1;
        FrameReader reader;
        std::string where;
        bool joined = false;       // peers_: rank sent a valid HELLO
        bool left = false;         // peers_: rank said BYE
        bool launcher = false;     // pending_: a vipl-run reporting a failed rank
        Clock::time_point since{}; // pending_: when accepted (kHelloWait)
    };

    // ---- shared by both roles (tcp_backend.cpp) ------------------------------
    void wake();
    void fail_locked(int rc, int code, bool kill, const std::string &msg, bool guessed_code = false);
    void maybe_end_process_locked(Clock::time_point now);
    int poll_ms_locked(std::initializer_list<std::pair<bool, Clock::time_point>> deadlines);
    int round(int32_t kind, bool ok, uint64_t len, int32_t root, const void *data, size_t n,
              std::vector<unsigned char> *result);
    void shut_down();
    void drain_wake();
    // Resolves rank 0's address, retrying transient (DNS) failures until the join
    // deadline; on failure reports it and sets *rc (timeout_rc if it timed out).
    bool resolve_root(sockaddr_in *addr, int timeout_rc, int *rc);

    // ---- rank 0 (tcp_hub.cpp) ----------------------------------------------
    bool start_root(int *rc);
    void root_loop();
    void accept_all();
    void reject(Conn &c, int rc, const std::string &why);
    void read_pending(size_t i);
    void on_hello(Conn &c, const FrameHeader &h, const std::string &job);
    void read_peer(int r);
    void step_root_locked(Clock::time_point now);
    // Closes the pending connection i with a log line saying why.
    void drop_pending(size_t i, const std::string &why);
    // Pending connections past kHelloWait: read what they sent, then close them.
    void expire_pending_locked(Clock::time_point now);
    size_t first_in() const;
    void send_to(int r, const FrameHeader &h, const void *p, size_t n);
    void complete_round_locked();

    // ---- ranks 1..N-1 (tcp_member.cpp) -------------------------------------
    bool start_peer(int *rc);
    void peer_loop();
    void on_frame_from_root(const FrameHeader &h, std::vector<unsigned char> p);

    const JobInfo info_;
    const TcpEndpoint ep_;
    std::thread thread_;
    int wake_fd_ = -1;
    Clock::time_point init_deadline_;

    std::mutex send_mu_; // ranks 1..N-1: API writes (contributions, BYE, abort)
    std::mutex mu_;      // everything below
    std::condition_variable cv_;
    bool stop_ = false;
    bool welcomed_ = false;
    bool finished_ = false; // the finalize round completed: EOFs are expected
    bool failed_ = false;
    bool kill_ = false;
    int fail_rc_ = VIPL_BOOT_OK;
    int fail_code_ = 1;
    bool guessed_code_ = false; // fail_code_ is 1 for want of the real one
    std::string fail_msg_;      // the first failure: what collectives report
    std::string end_msg_;       // the failure that decided kill_/fail_code_
    Clock::time_point grace_at_;
    uint32_t seq_ = 0;        // rounds this process entered
    uint32_t result_seq_ = 0; // last round whose result is known
    int result_rc_ = VIPL_BOOT_OK;
    std::string result_msg_;
    std::vector<unsigned char> result_data_;

    // rank 0 only
    int listen_fd_ = -1;
    std::vector<Conn> peers_;   // indexed by rank (0 unused)
    std::vector<Conn> pending_; // accepted, no HELLO yet
    std::vector<Contribution> contrib_;
    int joined_ = 0;
    uint32_t round_seq_ = 1; // the round being gathered
    bool round_started_ = false;
    Clock::time_point round_deadline_;
    bool relayed_ = false;
    bool leave_requested_ = false;
    bool bye_sent_ = false;

    // ranks 1..N-1 only
    int sock_ = -1;
    FrameReader reader_;
};

} // namespace viastack::boot::tcp
