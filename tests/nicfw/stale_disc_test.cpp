// stale_disc_test.cpp - a disconnect notice that waited for room in the peer's
// FIFO must not break a newer connection between the same two VIs.
//
//   vipl-run -n 2 nicfw_stale_disc_tests
//
// A notice (Disc) that finds the peer's FIFO full waits in the firmware's
// backlog and is retried from a later step, while a connection request is sent
// at once when the FIFO has room: the request can overtake the notice.  So:
//  1. rank 0's VI a and rank 1's VI b connect (peer-to-peer);
//  2. rank 1 posts RDMA reads of rank 0's memory and then makes no VIPL call
//     (an inline NIC does not drain its FIFO); rank 0 answers them until rank
//     1's FIFO is full to the last slot (read responses are replies, which may
//     use the whole FIFO; the last ones are one slot each);
//  3. rank 0 disconnects a: its Disc finds no room and goes to the backlog;
//  4. rank 1 disconnects b, reaps its flushed reads and drains its FIFO, while
//     rank 0 makes no VIPL call;
//  5. a and b connect again: rank 0's request leaves at once, its old Disc at
//     its next step.  Rank 1's b must stay connected and receive a message.
// Both ranks inline, staged transfers (the test sets it): a thread-mode
// firmware drains its FIFO by itself, and one-sided reads bypass the FIFO.
#include <sched.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "nicfw_pair.hpp"

using namespace nt;

namespace {
constexpr const char *kProg = "nicfw_stale_disc_tests";
// 15 responses of 961 slots (60 KiB + header) and 2500 of one slot: more than
// the 16384 slots of the 1 MiB FIFO, and its last free slots are filled one by one.
constexpr uint32_t kBigLen = 60 * 1024, kSmallLen = 16;
constexpr size_t kBig = 15, kSmall = 2500, kReads = kBig + kSmall;
constexpr size_t kDescBytes = 128; // a descriptor with an address and a data segment
int fail(const char *what, VIP_RETURN rc = VIP_SUCCESS) { return pair_fail(kProg, what, rc); }

struct Remote {
    uint64_t addr;
    VIP_MEM_HANDLE mh;
};

VIP_RETURN connect_peer(VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi, int rank, const char *disc) {
    auto local = net_addr(nic, rank, disc);
    auto remote = net_addr(nic, 1 - rank, disc);
    if (VIP_RETURN rc = VipConnectPeerRequest(vi, as_addr(local), as_addr(remote), kWaitMs); rc != VIP_SUCCESS)
        return rc;
    VIP_VI_ATTRIBUTES ra;
    return VipConnectPeerWait(vi, &ra);
}

// Rank 1, step 2: the reads, each into the same local buffer.
int post_reads(VIP_VI_HANDLE vi, Region &mem, const Remote &src) {
    uint8_t *data = mem.p() + kReads * kDescBytes;
    for (size_t i = 0; i < kReads; ++i) {
        auto *d = reinterpret_cast<VIP_DESCRIPTOR *>(mem.p() + i * kDescBytes);
        const uint32_t len = i < kBig ? kBigLen : kSmallLen;
        std::memset(d, 0, kDescBytes);
        d->CS.Control = VIP_CONTROL_OP_RDMAREAD;
        d->CS.SegCount = 2;
        d->CS.Length = len;
        d->DS[0].Remote.Data.AddressBits = src.addr;
        d->DS[0].Remote.Handle = src.mh;
        d->DS[1].Local.Data.Address = data;
        d->DS[1].Local.Handle = mem.mh();
        d->DS[1].Local.Length = len;
        if (VIP_RETURN rc = VipPostSend(vi, d, mem.mh()); rc != VIP_SUCCESS) return fail("VipPostSend (read)", rc);
    }
    return 0;
}

// Rank 0, step 2 and 3: answers the reads as far as rank 1's FIFO takes them, disconnects.
int answer_and_disconnect(VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < end) VipxProgress(nic);
    if (VIP_RETURN rc = VipDisconnect(vi); rc != VIP_SUCCESS) return fail("VipDisconnect", rc);
    return 0;
}

// Rank 1, step 4: disconnects, reaps its reads and its receive, drains its FIFO.
int disconnect_and_drain(VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi) {
    if (VIP_RETURN rc = VipDisconnect(vi); rc != VIP_SUCCESS) return fail("VipDisconnect", rc);
    VIP_DESCRIPTOR *d;
    for (size_t i = 0; i < kReads; ++i)
        if (VIP_RETURN rc = VipSendWait(vi, kWaitMs, &d); rc != VIP_SUCCESS) return fail("VipSendWait (read)", rc);
    if (VIP_RETURN rc = VipRecvWait(vi, kWaitMs, &d); rc != VIP_SUCCESS) return fail("VipRecvWait (flush)", rc);
    // A step takes up to 32 packets; the FIFO holds fewer than 32 x 1000.
    for (int i = 0; i < 1000; ++i) VipxProgress(nic);
    return 0;
}
} // namespace

int main() {
    setenv("VIPL_NICFW_MODE", "inline", 1);
    setenv("VIPL_NICFW_DMA_MIN", "off", 1);
    setenv("VIPL_NICFW_PROGRESS", "0", 1);
    setenv("VIPL_NICFW_RING_KB", "1024", 1);
    VIP_NIC_HANDLE nic;
    VIP_PROTECTION_HANDLE tag;
    if (int rc = pair_start(kProg, &nic, &tag)) return rc;
    // Declared before the VI's memory, so it goes last: the NIC closes after
    // every region is deregistered, on every way out.
    struct CloseNic {
        VIP_NIC_HANDLE nic;
        VIP_PROTECTION_HANDLE tag;
        ~CloseNic() {
            VipDestroyPtag(nic, tag);
            VipCloseNic(nic);
        }
    } close_nic{nic, tag};
    const int rank = vipl_boot_rank();
    VIP_VI_ATTRIBUTES at = vi_attr(tag, VIP_SERVICE_RELIABLE_DELIVERY);
    at.EnableRdmaRead = VIP_TRUE;
    VIP_VI_HANDLE vi;
    if (VIP_RETURN rc = VipCreateVi(nic, &at, nullptr, nullptr, &vi); rc != VIP_SUCCESS) return fail("VipCreateVi", rc);
    // Descriptors, then one buffer: the reads' source on rank 0, their target on rank 1.
    Region mem(nic, tag, kReads * kDescBytes + kBigLen);
    if (mem.rc != VIP_SUCCESS) return fail("VipRegisterMem", mem.rc);
    VIP_MEM_ATTRIBUTES ma{tag, VIP_FALSE, VIP_TRUE};
    if (VIP_RETURN rc = VipSetMemAttributes(nic, mem.p(), mem.mh(), &ma); rc != VIP_SUCCESS)
        return fail("VipSetMemAttributes", rc);
    const Remote mine{reinterpret_cast<uintptr_t>(mem.p() + kReads * kDescBytes), mem.mh()};
    Remote all[2];
    if (vipl_boot_allgather(&mine, sizeof mine, all) != VIPL_BOOT_OK) return fail("vipl_boot_allgather");
    Buffers msg(nic, tag, 1, 64);
    if (msg.rc() != VIP_SUCCESS) return fail("VipRegisterMem", msg.rc());
    if (rank == 1) // a receive for the first connection, flushed by its disconnect
        if (VIP_RETURN rc = VipPostRecv(vi, msg.recv(0), msg.mh()); rc != VIP_SUCCESS) return fail("VipPostRecv", rc);
    if (VIP_RETURN rc = connect_peer(nic, vi, rank, "first"); rc != VIP_SUCCESS) return fail("first connect", rc);

    if (rank == 1)
        if (int rc = post_reads(vi, mem, all[0])) return rc;
    if (vipl_boot_barrier() != VIPL_BOOT_OK) return fail("vipl_boot_barrier");
    if (rank == 0)
        if (int rc = answer_and_disconnect(nic, vi)) return rc;
    if (vipl_boot_barrier() != VIPL_BOOT_OK) return fail("vipl_boot_barrier");
    if (rank == 1)
        if (int rc = disconnect_and_drain(nic, vi)) return rc;
    if (vipl_boot_barrier() != VIPL_BOOT_OK) return fail("vipl_boot_barrier");

    if (rank == 1)
        if (VIP_RETURN rc = VipPostRecv(vi, msg.recv(0), msg.mh()); rc != VIP_SUCCESS) return fail("VipPostRecv", rc);
    if (VIP_RETURN rc = connect_peer(nic, vi, rank, "second"); rc != VIP_SUCCESS)
        return fail(vi_state(vi) == VIP_STATE_ERROR ? "the second connection broke as it was made: the first "
                                                      "connection's disconnect notice reached it"
                                                    : "second connect",
                    rc);
    VIP_DESCRIPTOR *d;
    int result = 0;
    if (rank == 0) {
        if (VIP_RETURN rc = VipPostSend(vi, msg.send(0, 64), msg.mh()); rc != VIP_SUCCESS)
            return fail("VipPostSend", rc);
        if (VIP_RETURN rc = VipSendWait(vi, kWaitMs, &d); rc != VIP_SUCCESS) return fail("VipSendWait", rc);
    } else {
        if (VIP_RETURN rc = VipRecvWait(vi, kWaitMs, &d); rc != VIP_SUCCESS) return fail("VipRecvWait", rc);
        if (d->CS.Status & VIP_STATUS_ERROR_MASK)
            result = fail("the second connection's receive completed in error: the first connection's "
                          "disconnect notice broke it");
        else if (vi_state(vi) != VIP_STATE_CONNECTED) result = fail("the second connection is not connected");
    }
    if (vipl_boot_barrier() != VIPL_BOOT_OK) return fail("vipl_boot_barrier");
    if (VIP_RETURN rc = VipDisconnect(vi); rc != VIP_SUCCESS) return fail("VipDisconnect", rc);
    if (VIP_RETURN rc = VipDestroyVi(vi); rc != VIP_SUCCESS) return fail("VipDestroyVi", rc);
    if (result == 0)
        std::printf("%s rank %d: a stale disconnect notice left the newer connection alone\n", kProg, rank);
    return result;
}
