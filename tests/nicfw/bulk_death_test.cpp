// bulk_death_test.cpp - a peer that dies in the middle of a bulk transfer must
// not hang (or crash) the NIC that serves it.
//
//   vipl-run -n 2 nicfw_bulk_death_tests heap|shm
//
// Rank 1 tells rank 0 its pid, posts an 8 MiB RDMA write with immediate (from
// heap memory: cross-memory attach; or from VipxAllocMem memory: a shared
// segment the target has not mapped yet), makes sure its firmware sent the
// request, and exits at once.  Rank 0 waits until rank 1 is gone, then enters
// VIPL: its firmware finds the request and cannot pull the bytes.  The receive
// that the immediate would consume must complete (with an error) well within
// the wait's timeout, and the VI must be in the error state.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "nicfw_pair.hpp"
#include "vipl_boot.h"

using namespace nt;

namespace {
constexpr size_t kLen = 8u << 20;

constexpr const char *kProg = "nicfw_bulk_death_tests";
int fail(const char *what, VIP_RETURN rc = VIP_SUCCESS) { return pair_fail(kProg, what, rc); }

// Gone, or a zombie waiting for vipl-run to reap it.
bool dead(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(f, line)) return true;
    const size_t p = line.rfind(')');
    return p != std::string::npos && p + 2 < line.size() && (line[p + 2] == 'Z' || line[p + 2] == 'X');
}

struct Info {
    uint64_t addr;
    uint32_t mh;
    uint32_t pid;
};
} // namespace

int main(int argc, char **argv) {
    const bool shm = argc > 1 && std::strcmp(argv[1], "shm") == 0;
    VIP_NIC_HANDLE nic;
    VIP_PROTECTION_HANDLE tag;
    if (int rc = pair_start(kProg, &nic, &tag)) return rc;
    const int rank = vipl_boot_rank();
    Buffers ctl(nic, tag, 4, 64);
    void *data = nullptr;
    if (shm) {
        if (VipxAllocMem(nic, kLen, &data) != VIP_SUCCESS) return fail("VipxAllocMem");
    } else {
        data = std::aligned_alloc(4096, kLen);
    }
    std::memset(data, rank == 1 ? 0xa5 : 0x5a, kLen);
    VIP_MEM_ATTRIBUTES ma{tag, rank == 0 ? VIP_TRUE : VIP_FALSE, VIP_FALSE};
    VIP_MEM_HANDLE mh;
    if (VIP_RETURN rc = VipRegisterMem(nic, data, kLen, &ma, &mh); rc != VIP_SUCCESS) return fail("register", rc);
    VIP_VI_ATTRIBUTES at = vi_attr(tag, VIP_SERVICE_RELIABLE_RECEPTION);
    at.MaxTransferSize = kLen;
    at.EnableRdmaWrite = VIP_TRUE;
    VIP_VI_HANDLE vi;
    if (VIP_RETURN rc = VipCreateVi(nic, &at, nullptr, nullptr, &vi); rc != VIP_SUCCESS) return fail("VipCreateVi", rc);
    // Rank 0: a receive for the immediate; rank 1: a receive for the info.
    VIP_DESCRIPTOR *r = ctl.recv(0);
    if (VIP_RETURN rc = VipPostRecv(vi, r, ctl.mh()); rc != VIP_SUCCESS) return fail("VipPostRecv", rc);
    if (rank == 0) { // the receive the write's immediate consumes
        VIP_DESCRIPTOR *ri = ctl.recv(3);
        ri->CS.SegCount = 0;
        ri->CS.Length = 0;
        if (VIP_RETURN rc = VipPostRecv(vi, ri, ctl.mh()); rc != VIP_SUCCESS) return fail("VipPostRecv", rc);
    }
    auto local = net_addr(nic, rank, "death-" + std::to_string(rank));
    auto remote = net_addr(nic, 1 - rank, "death-" + std::to_string(1 - rank));
    if (VIP_RETURN rc = VipConnectPeerRequest(vi, as_addr(local), as_addr(remote), kWaitMs); rc != VIP_SUCCESS)
        return fail("VipConnectPeerRequest", rc);
    VIP_VI_ATTRIBUTES ra;
    if (VIP_RETURN rc = VipConnectPeerWait(vi, &ra); rc != VIP_SUCCESS) return fail("VipConnectPeerWait", rc);

    if (rank == 1) { // the initiator that dies
        VIP_DESCRIPTOR *got;
        if (VIP_RETURN rc = VipRecvWait(vi, kWaitMs, &got); rc != VIP_SUCCESS) return fail("info", rc);
        Info info;
        std::memcpy(&info, ctl.data(0), sizeof info);
        Info mine{0, 0, uint32_t(getpid())};
        std::memcpy(ctl.data(1), &mine, sizeof mine);
        if (VIP_RETURN rc = VipPostSend(vi, ctl.send(1, sizeof mine), ctl.mh()); rc != VIP_SUCCESS)
            return fail("send pid", rc);
        if (VIP_RETURN rc = VipSendWait(vi, kWaitMs, &got); rc != VIP_SUCCESS) return fail("send pid wait", rc);
        VIP_DESCRIPTOR *w = ctl.desc(2);
        std::memset(w, 0, sizeof(VIP_CONTROL_SEGMENT) + 2 * sizeof(VIP_DESCRIPTOR_SEGMENT));
        w->CS.Control = VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_IMMEDIATE;
        w->CS.SegCount = 2;
        w->CS.Length = kLen;
        w->DS[0].Remote.Data.AddressBits = info.addr;
        w->DS[0].Remote.Handle = info.mh;
        w->DS[1].Local.Data.Address = data;
        w->DS[1].Local.Handle = mh;
        w->DS[1].Local.Length = kLen;
        if (VIP_RETURN rc = VipPostSend(vi, w, ctl.mh()); rc != VIP_SUCCESS) return fail("post write", rc);
        // The request must be on the wire: an inline firmware sends it from these
        // calls; a firmware thread gets the time to.  (With a firmware thread the
        // target may also serve it before we die: then it simply succeeds.)
        for (int i = 0; i < 1000; ++i) VipxProgress(nic);
        usleep(200000);
        std::fflush(nullptr);
        _exit(0); // mid-transfer: the target has not pulled the bytes yet
    }

    // Rank 0: the target.  Receives: desc 0 takes the pid, desc 3 the immediate.
    Info mine{uint64_t(uintptr_t(data)), mh, uint32_t(getpid())};
    std::memcpy(ctl.data(1), &mine, sizeof mine);
    if (VIP_RETURN rc = VipPostSend(vi, ctl.send(1, sizeof mine), ctl.mh()); rc != VIP_SUCCESS)
        return fail("send info", rc);
    VIP_DESCRIPTOR *got;
    if (VIP_RETURN rc = VipSendWait(vi, kWaitMs, &got); rc != VIP_SUCCESS) return fail("send info wait", rc);
    if (VIP_RETURN rc = VipRecvWait(vi, kWaitMs, &got); rc != VIP_SUCCESS || got != r) return fail("pid", rc);
    Info peer;
    std::memcpy(&peer, ctl.data(0), sizeof peer);
    // Out of VIPL (inline firmware: nothing served) until rank 1 is gone.
    const auto t0 = std::chrono::steady_clock::now();
    while (!dead(pid_t(peer.pid))) {
        if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(20)) return fail("rank 1 did not exit");
        usleep(1000);
    }
    const auto t1 = std::chrono::steady_clock::now();
    VIP_RETURN rc = VipRecvWait(vi, kWaitMs, &got);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    if (rc != VIP_SUCCESS) return fail("the receive of the write's immediate never completed (hang)", rc);
    VIP_VI_STATE st;
    VIP_VI_ATTRIBUTES qa;
    VIP_BOOLEAN sq, rq;
    VipQueryVi(vi, &st, &qa, &sq, &rq);
    const bool err = (got->CS.Status & VIP_STATUS_ERROR_MASK) != 0;
    std::printf("rank 0 (%s): after the initiator died the receive completed in %.3f s with status 0x%x, VI %s\n",
                shm ? "shm" : "heap", secs, got->CS.Status, st == VIP_STATE_ERROR ? "in error" : "connected");
    if (err && st != VIP_STATE_ERROR) return fail("a failed bulk pull must break the connection");
    const auto *b = static_cast<const unsigned char *>(data);
    if (!err && (b[0] != 0xa5 || b[kLen - 1] != 0xa5))
        return fail("completed without error but the data is not the initiator's");
    // The peer is gone: tear down locally (no barrier, no finalize with a dead rank).
    VipDisconnect(vi);
    while (VipRecvDone(vi, &got) == VIP_SUCCESS) {}
    while (VipSendDone(vi, &got) == VIP_SUCCESS) {}
    if (VIP_RETURN rc2 = VipDestroyVi(vi); rc2 != VIP_SUCCESS) return fail("VipDestroyVi", rc2);
    std::fflush(nullptr);
    _exit(0);
}
