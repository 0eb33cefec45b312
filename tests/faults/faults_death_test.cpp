// faults_death_test.cpp - a peer that is gone must not hang anybody.
//
//   vipl-run -n 2 faults_death_tests exit|linkdown|kill
//
//   exit      rank 1 exits (as under kill -9: no disconnect, nothing said) right
//             after a ping-pong; rank 0 then posts a reliable-reception send
//             that can never be acknowledged.  Its wait must return within
//             seconds: the send flushed, the VI in the error state, the error
//             callback called (VIP_ERROR_CONN_LOST).  With and without faults.
//   linkdown  VIPL_NICFW_FAULTS=linkdown=1@MS: both ranks keep sending; once the
//             link is down, each rank's VI must enter the error state within
//             the link timeout (VIPL_NICFW_LINK_TIMEOUT_MS) plus seconds.
//   kill      VIPL_NICFW_FAULTS=kill=1@MS: rank 1's NIC dies (its VIs break at
//             once), rank 0's VI breaks by the link timeout.
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "nicfw_vipl_util.hpp"
#include "vipl_boot.h"

using namespace nt;

namespace {
using Clock = std::chrono::steady_clock;
std::atomic<int> g_errors{0};
std::atomic<int> g_last_code{-1};

void on_error(VIP_PVOID, VIP_ERROR_DESCRIPTOR *e) {
    g_last_code.store(e->ErrorCode);
    g_errors.fetch_add(1);
}

int fail(const char *what, VIP_RETURN rc = VIP_SUCCESS) {
    std::fprintf(stderr, "faults_death_tests rank %d: %s (%s)\n", vipl_boot_rank(), what, rc_name(rc));
    std::fflush(nullptr);
    _exit(1);
}

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
} // namespace

int main(int argc, char **argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode != "exit" && mode != "linkdown" && mode != "kill") {
        std::fprintf(stderr, "usage: vipl-run -n 2 faults_death_tests exit|linkdown|kill\n");
        return 2;
    }
    if (vipl_boot_init() != VIPL_BOOT_OK || vipl_boot_size() != 2) {
        std::fprintf(stderr, "faults_death_tests: run under vipl-run -n 2\n");
        return 2;
    }
    const int rank = vipl_boot_rank();
    VIP_NIC_HANDLE nic;
    VIP_PROTECTION_HANDLE tag;
    if (VIP_RETURN rc = VipOpenNic("nicfw0", &nic); rc != VIP_SUCCESS) fail("VipOpenNic", rc);
    const auto opened = Clock::now();
    if (VIP_RETURN rc = VipErrorCallback(nic, nullptr, on_error); rc != VIP_SUCCESS) fail("VipErrorCallback", rc);
    if (VIP_RETURN rc = VipCreatePtag(nic, &tag); rc != VIP_SUCCESS) fail("VipCreatePtag", rc);
    constexpr size_t kRecvs = 64;
    Buffers bufs(nic, tag, kRecvs + 2, 1024);
    VIP_VI_ATTRIBUTES at = vi_attr(tag, VIP_SERVICE_RELIABLE_RECEPTION);
    VIP_VI_HANDLE vi;
    if (VIP_RETURN rc = VipCreateVi(nic, &at, nullptr, nullptr, &vi); rc != VIP_SUCCESS) fail("VipCreateVi", rc);
    for (size_t i = 0; i < kRecvs; ++i)
        if (VIP_RETURN rc = VipPostRecv(vi, bufs.recv(i), bufs.mh()); rc != VIP_SUCCESS) fail("VipPostRecv", rc);
    auto local = net_addr(nic, rank, "death-" + std::to_string(rank));
    auto remote = net_addr(nic, 1 - rank, "death-" + std::to_string(1 - rank));
    if (VIP_RETURN rc = VipConnectPeerRequest(vi, as_addr(local), as_addr(remote), kWaitMs); rc != VIP_SUCCESS)
        fail("VipConnectPeerRequest", rc);
    VIP_VI_ATTRIBUTES ra;
    if (VIP_RETURN rc = VipConnectPeerWait(vi, &ra); rc != VIP_SUCCESS) fail("VipConnectPeerWait", rc);

    // One message each way: the connection works.
    VIP_DESCRIPTOR *got;
    const size_t s = kRecvs, s2 = kRecvs + 1;
    if (VIP_RETURN rc = VipPostSend(vi, bufs.send(s, 64), bufs.mh()); rc != VIP_SUCCESS) fail("post", rc);
    if (VIP_RETURN rc = VipSendWait(vi, 20000, &got); rc != VIP_SUCCESS || (got->CS.Status & VIP_STATUS_ERROR_MASK))
        fail("first send", rc);
    if (VIP_RETURN rc = VipRecvWait(vi, 20000, &got); rc != VIP_SUCCESS || (got->CS.Status & VIP_STATUS_ERROR_MASK))
        fail("first receive", rc);

    VIP_RETURN rc = VIP_SUCCESS;
    Clock::time_point t0;
    int sent = 0;
    if (mode == "exit") {
        int pids[2] = {0, 0};
        const int me = int(getpid());
        if (vipl_boot_allgather(&me, sizeof me, pids) != 0) fail("vipl_boot_allgather");
        vipl_boot_barrier(); // both have their message (and rank 0 its Ack)
        if (rank == 1) {
            std::fflush(nullptr);
            _exit(0); // gone without a word, as after kill -9
        }
        // Post only once rank 1 is really gone: until its exit completes, its
        // NIC (the progress agent of a faulty wire, or a leak check at exit)
        // may still acknowledge the send, and the test would not be about a
        // dead peer.  A pidfd becomes readable when the process has exited.
        const int pfd = int(syscall(SYS_pidfd_open, pids[1], 0));
        if (pfd >= 0) {
            pollfd p{pfd, POLLIN, 0};
            if (poll(&p, 1, 20000) != 1) fail("rank 1 did not exit within 20 s");
            close(pfd);
        } // else: already reaped (ESRCH), gone
        t0 = Clock::now();
        if ((rc = VipPostSend(vi, bufs.send(s2, 512), bufs.mh())) != VIP_SUCCESS) fail("post", rc);
        rc = VipSendWait(vi, 30000, &got);
    } else {
        // Keep sending, one message at a time, until a send fails.
        for (;;) {
            t0 = Clock::now();
            if ((rc = VipPostSend(vi, bufs.send(s2, 128), bufs.mh())) != VIP_SUCCESS) fail("post", rc);
            rc = VipSendWait(vi, 30000, &got);
            if (rc != VIP_SUCCESS || (got->CS.Status & VIP_STATUS_ERROR_MASK)) break;
            if (++sent >= int(kRecvs) - 2) fail("the link never went down");
            usleep(100000);
        }
    }
    const double secs = since(t0);
    if (rc != VIP_SUCCESS) fail("the wait did not return the send (hang)", rc);
    const VIP_UINT32 status = got->CS.Status;
    const double limit = mode == "exit" ? 5.0 : 8.0;
    VIP_VI_STATE st;
    VIP_BOOLEAN sq, rq;
    VipQueryVi(vi, &st, &at, &sq, &rq);
    if (!(status & VIP_STATUS_ERROR_MASK)) fail("the send completed without an error");
    if (secs > limit) fail("the error took too long");
    if (st != VIP_STATE_ERROR) fail("the VI is not in the error state");
    // The posted receives complete too (flushed): every wait returns.
    for (size_t i = 1; i < kRecvs; ++i) {
        if ((rc = VipRecvWait(vi, 5000, &got)) != VIP_SUCCESS) break;
    }
    // Both processes live on (linkdown, kill): rank 1 must not exit before rank 0
    // has found the break itself (else rank 0 would see a dead process instead).
    if (mode != "exit") vipl_boot_barrier();
    // The callback runs on the agent (or the next call): give it a moment.
    for (int i = 0; i < 200 && g_errors.load() == 0; ++i) {
        VipxProgress(nic);
        usleep(10000);
    }
    std::printf("rank %d (%s): %d sends went through; the last completed %.3f s after it was posted "
                "(%.3f s after open) with status 0x%x, VI %s, %d error callback(s), last code %d\n",
                rank, mode.c_str(), sent, secs, since(opened), status,
                st == VIP_STATE_ERROR ? "in error" : "not in error", g_errors.load(), g_last_code.load());
    if (g_errors.load() == 0) fail("no error callback");
    // Who learns what: a dead process is a lost connection; a cut link or a dead
    // NIC is found by the retry limit (a transport error); the dead NIC's own
    // host hears that its NIC failed.
    const int want = mode == "exit"   ? VIP_ERROR_CONN_LOST
        : mode == "kill" && rank == 1 ? VIP_ERROR_CATASTROPHIC
                                      : VIP_ERROR_RDMA_TRANSPORT;
    if (g_last_code.load() != want) fail("the error callback got another error code");
    VipDisconnect(vi);
    while (VipRecvDone(vi, &got) == VIP_SUCCESS) {}
    while (VipSendDone(vi, &got) == VIP_SUCCESS) {}
    if ((rc = VipDestroyVi(vi)) != VIP_SUCCESS) fail("VipDestroyVi", rc);
    std::fflush(nullptr);
    _exit(0); // a dead or cut-off peer: no finalize barrier
}
