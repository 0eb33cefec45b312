// dead_producer_test.cpp - a process killed between reserving a slot of a
// peer's FIFO and publishing it must not block that FIFO for the live senders.
//
//   VIPL_NICFW_FAULTS=die_reserved=2@2 vipl-run -n 3 faults_dead_producer_tests
//
// Ranks 1 and 2 both send to rank 0, so they share rank 0's FIFO.  Rank 2 sends
// one message (delivered), then raises SIGKILL right after reserving the slot of
// its second (the die_reserved test hook, wire.cpp), leaving a claimed,
// never-published slot in rank 0's FIFO.  As soon as rank 0 has rank 2's first
// message it tells rank 1 to go, and rank 1 streams kMsgs messages (reliable
// reception) to rank 0: those that land behind the stuck slot only get through
// if rank 0's firmware skips it (its owner is dead).  Rank 0 must receive every
// one exactly once and in order, see its VI to rank 2 break, and both survivors
// must end within seconds.
//
// With the argument `late`, rank 2 dies half a second after its first message,
// when rank 1's stream is long over and rank 0 only calls VipxProgress every
// 10 ms: rank 0 must still skip the slot and see its VI to rank 2 break within
// seconds (its firmware's peer watch runs on the clock, not only every 1024
// steps, which at that rate came after 10 s).
//
// Rank 2 does its work in a forked child (the process that dies) and waits for
// it: vipl-run stops the whole job one second after a rank is killed by a
// signal, which would cut the survivors short; the child's death by SIGKILL is
// checked and reported by its parent instead.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>

#include "nicfw_vipl_util.hpp"
#include "vipl_boot.h"

using namespace nt;

namespace {
using Clock = std::chrono::steady_clock;
constexpr int kMsgs = 3000;           // rank 1 -> rank 0
constexpr int kBatch = 32;            // rank 1 sends in batches...
constexpr size_t kRecvs = 2 * kBatch; // ...into rank 0's receives, which it reposts:
// before batch k (k >= 2) rank 1 waits for rank 0's credit saying batch k-2 is
// reposted (its host may lag the NIC, which completes receives on its own).
constexpr int kBatches = (kMsgs + kBatch - 1) / kBatch;
constexpr uint32_t kLen = 128;
constexpr double kLimitS = 10.0; // the survivors end within this after the go

int rank_ = -1;
bool late_ = false; // argument `late`: rank 2 dies while rank 0 polls slowly

[[noreturn]] void fail(const char *what, VIP_RETURN rc = VIP_SUCCESS) {
    std::printf("dead_producer FAIL rank %d: %s (%s)\n", rank_, what, rc_name(rc));
    std::fflush(nullptr);
    _exit(1);
}

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A reliable-reception VI to `peer`, requested (the caller waits with finish()).
VIP_VI_HANDLE connect_to(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE tag, int peer, Buffers &bufs, size_t recvs) {
    VIP_VI_ATTRIBUTES at = vi_attr(tag, VIP_SERVICE_RELIABLE_RECEPTION);
    VIP_VI_HANDLE vi;
    if (VIP_RETURN rc = VipCreateVi(nic, &at, nullptr, nullptr, &vi); rc != VIP_SUCCESS) fail("VipCreateVi", rc);
    for (size_t i = 0; i < recvs; ++i)
        if (VIP_RETURN rc = VipPostRecv(vi, bufs.recv(i), bufs.mh()); rc != VIP_SUCCESS) fail("VipPostRecv", rc);
    auto local = net_addr(nic, rank_, "dp-" + std::to_string(rank_) + "-" + std::to_string(peer));
    auto remote = net_addr(nic, peer, "dp-" + std::to_string(peer) + "-" + std::to_string(rank_));
    if (VIP_RETURN rc = VipConnectPeerRequest(vi, as_addr(local), as_addr(remote), kWaitMs); rc != VIP_SUCCESS)
        fail("VipConnectPeerRequest", rc);
    return vi;
}

void finish(VIP_VI_HANDLE vi) {
    VIP_VI_ATTRIBUTES ra;
    if (VIP_RETURN rc = VipConnectPeerWait(vi, &ra); rc != VIP_SUCCESS) fail("VipConnectPeerWait", rc);
}

void send_wait(VIP_VI_HANDLE vi, Buffers &bufs, size_t i, uint32_t len, const char *what) {
    VIP_DESCRIPTOR *got;
    if (VIP_RETURN rc = VipPostSend(vi, bufs.send(i, len), bufs.mh()); rc != VIP_SUCCESS) fail(what, rc);
    VIP_RETURN rc = VipSendWait(vi, 10000, &got);
    if (rc != VIP_SUCCESS || (got->CS.Status & VIP_STATUS_ERROR_MASK)) fail(what, rc);
}

int run() {
    VIP_NIC_HANDLE nic;
    VIP_PROTECTION_HANDLE tag;
    if (VIP_RETURN rc = VipOpenNic("nicfw0", &nic); rc != VIP_SUCCESS) fail("VipOpenNic", rc);
    if (VIP_RETURN rc = VipCreatePtag(nic, &tag); rc != VIP_SUCCESS) fail("VipCreatePtag", rc);
    VIP_DESCRIPTOR *got;

    if (rank_ == 2) {
        Buffers bufs(nic, tag, 4, 1024);
        VIP_VI_HANDLE vi = connect_to(nic, tag, 0, bufs, 0);
        finish(vi);
        vipl_boot_barrier(); // everybody connected
        send_wait(vi, bufs, 0, kLen, "rank 2's first message");
        if (late_) usleep(500000);
        // The second message's reservation kills this process (die_reserved=2@2).
        VipPostSend(vi, bufs.send(1, kLen), bufs.mh());
        VipSendWait(vi, 10000, &got);
        fail("still alive after the second message: run with VIPL_NICFW_FAULTS=die_reserved=2@2");
    }

    if (rank_ == 1) {
        Buffers bufs(nic, tag, kBatch + 2, 1024);
        // Two receives posted: rank 0's go, then its credits (at most two in flight).
        VIP_VI_ATTRIBUTES at = vi_attr(tag, VIP_SERVICE_RELIABLE_RECEPTION);
        VIP_VI_HANDLE vi;
        if (VIP_RETURN rc = VipCreateVi(nic, &at, nullptr, nullptr, &vi); rc != VIP_SUCCESS) fail("VipCreateVi", rc);
        for (size_t r : {size_t(kBatch), size_t(kBatch + 1)})
            if (VIP_RETURN rc = VipPostRecv(vi, bufs.recv(r), bufs.mh()); rc != VIP_SUCCESS) fail("VipPostRecv", rc);
        auto local = net_addr(nic, 1, "dp-1-0");
        auto remote = net_addr(nic, 0, "dp-0-1");
        if (VIP_RETURN rc = VipConnectPeerRequest(vi, as_addr(local), as_addr(remote), kWaitMs); rc != VIP_SUCCESS)
            fail("VipConnectPeerRequest", rc);
        finish(vi);
        vipl_boot_barrier();
        if (VIP_RETURN rc = VipRecvWait(vi, 20000, &got); rc != VIP_SUCCESS || (got->CS.Status & VIP_STATUS_ERROR_MASK))
            fail("rank 0's go", rc);
        if (VIP_RETURN rc = VipPostRecv(vi, got, bufs.mh()); rc != VIP_SUCCESS) fail("VipPostRecv", rc);
        const auto t0 = Clock::now();
        for (int sent = 0; sent < kMsgs; sent += kBatch) {
            if (sent / kBatch >= 2) {
                VIP_RETURN rc = VipRecvWait(vi, 8000, &got);
                if (rc != VIP_SUCCESS || (got->CS.Status & VIP_STATUS_ERROR_MASK))
                    fail("rank 0's credit did not come within 8 s: rank 0's FIFO is blocked", rc);
                if ((rc = VipPostRecv(vi, got, bufs.mh())) != VIP_SUCCESS) fail("VipPostRecv", rc);
            }
            const int n = std::min(kBatch, kMsgs - sent);
            for (int k = 0; k < n; ++k) {
                VIP_DESCRIPTOR *d = bufs.send(size_t(k), kLen);
                fill(bufs.data(size_t(k)), kLen, uint32_t(sent + k));
                if (VIP_RETURN rc = VipPostSend(vi, d, bufs.mh()); rc != VIP_SUCCESS) fail("VipPostSend", rc);
            }
            for (int k = 0; k < n; ++k) {
                VIP_RETURN rc = VipSendWait(vi, 5000, &got);
                if (rc != VIP_SUCCESS)
                    fail("a send to rank 0 did not complete within 5 s: rank 0's FIFO is blocked", rc);
                if (got->CS.Status & VIP_STATUS_ERROR_MASK) fail("a send to rank 0 completed in error");
            }
        }
        std::printf("dead_producer: rank 1 sent %d messages to rank 0, all acknowledged, in %.3f s\n", kMsgs,
                    since(t0));
        std::fflush(nullptr);
        _exit(0);
    }

    // Rank 0: a VI to each sender.
    Buffers b1(nic, tag, kRecvs + 1, 1024), b2(nic, tag, 2, 1024);
    VIP_VI_HANDLE v1 = connect_to(nic, tag, 1, b1, kRecvs);
    VIP_VI_HANDLE v2 = connect_to(nic, tag, 2, b2, 2);
    finish(v1);
    finish(v2);
    vipl_boot_barrier();
    if (VIP_RETURN rc = VipRecvWait(v2, 20000, &got); rc != VIP_SUCCESS || (got->CS.Status & VIP_STATUS_ERROR_MASK))
        fail("rank 2's first message", rc);
    // Rank 2 is about to die holding a slot of this FIFO: rank 1 goes now, so
    // its messages queue behind that slot.
    const auto t0 = Clock::now();
    send_wait(v1, b1, kRecvs, 16, "the go to rank 1");
    for (int i = 0; i < kMsgs; ++i) {
        VIP_RETURN rc = VipRecvWait(v1, 8000, &got);
        if (rc != VIP_SUCCESS) {
            std::printf("dead_producer FAIL rank 0: message %d of %d from rank 1 never arrived (%s): the FIFO is "
                        "blocked by rank 2's reserved slot\n",
                        i, kMsgs, rc_name(rc));
            std::fflush(nullptr);
            _exit(1);
        }
        if (got->CS.Status & VIP_STATUS_ERROR_MASK) fail("a receive from rank 1 completed in error");
        const size_t slot = size_t(got - b1.desc(0));
        if (got->CS.Length != kLen || !check(b1.data(slot), kLen, uint32_t(i))) {
            std::printf("dead_producer FAIL rank 0: message %d from rank 1 is not the one expected (length %u)\n", i,
                        unsigned(got->CS.Length));
            std::fflush(nullptr);
            _exit(1);
        }
        if (VIP_RETURN r = VipPostRecv(v1, b1.recv(slot), b1.mh()); r != VIP_SUCCESS) fail("VipPostRecv", r);
        // Batch i / kBatch reposted: rank 1 may send batch i / kBatch + 2.
        if (i % kBatch == kBatch - 1 && i / kBatch + 2 < kBatches) send_wait(v1, b1, kRecvs, 16, "a credit to rank 1");
    }
    const double secs = since(t0);
    // The VI to the dead rank breaks (its posted receive completes flushed).
    // Late: rank 2 died about half a second after t0; its VI breaks well within 3 s.
    const double break_limit = late_ ? 3.0 : kLimitS;
    while (vi_state(v2) != VIP_STATE_ERROR && since(t0) < break_limit) {
        VipxProgress(nic);
        usleep(10000);
    }
    if (vi_state(v2) != VIP_STATE_ERROR) fail("the VI to the dead rank 2 did not enter the error state in time");
    const double broke = since(t0);
    if (secs > kLimitS) fail("rank 1's messages took too long");
    std::printf("dead_producer: rank 0 received all %d messages from rank 1 exactly once and in order in %.3f s; "
                "its VI to the dead rank 2 was in the error state %.3f s after the go\n",
                kMsgs, secs, broke);
    std::fflush(nullptr);
    _exit(0);
}
} // namespace

int main(int argc, char **argv) {
    late_ = argc > 1 && std::strcmp(argv[1], "late") == 0;
    const char *r = std::getenv("VIASTACK_RANK");
    const char *n = std::getenv("VIASTACK_SIZE");
    if (!r || !n || std::strcmp(n, "3") != 0) {
        std::fprintf(stderr, "usage: VIPL_NICFW_FAULTS=die_reserved=2@2 vipl-run -n 3 faults_dead_producer_tests\n");
        return 2;
    }
    rank_ = std::atoi(r);
    if (rank_ == 2) {
        std::fflush(nullptr);
        const pid_t child = fork();
        if (child < 0) fail("fork");
        if (child > 0) {
            int status = 0;
            while (waitpid(child, &status, 0) < 0) {}
            if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
                std::printf("dead_producer: rank 2 was killed (SIGKILL) holding a reserved slot, as planned\n");
                std::fflush(nullptr);
                return 0;
            }
            std::printf("dead_producer FAIL rank 2: the producer ended with status 0x%x, not by SIGKILL\n", status);
            return 1;
        }
    }
    if (vipl_boot_init() != VIPL_BOOT_OK || vipl_boot_size() != 3) fail("vipl_boot_init: run under vipl-run -n 3");
    return run();
}
