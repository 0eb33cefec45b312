// test_verbs_mp.cpp - two processes (vipl-run -n 2) over the verbs provider:
// memory handles are exchangeable between processes (handle = rkey), RDMA write,
// RDMA write with immediate (consumes a receive, REMOTE_RDMA_WRITE + IMMEDIATE
// status), RDMA read, and a checked send/receive ping-pong.  Addresses are
// exchanged with vipl_boot_allgather, connections are peer-to-peer.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "vipl.h"
#include "vipl_boot.h"

namespace {

constexpr VIP_ULONG kWait = 20000;

struct Peer {
    VIP_NIC_HANDLE nic = nullptr;
    VIP_NIC_ATTRIBUTES attr{};
    VIP_PROTECTION_HANDLE tag = nullptr;
    VIP_VI_HANDLE vi = nullptr;
    uint8_t *mem = nullptr; // [0, 64K): data; [64K, 68K): descriptors
    VIP_MEM_HANDLE mh = 0;
    int rank = 0;
};
Peer P;

VIP_DESCRIPTOR *desc(int i) { return reinterpret_cast<VIP_DESCRIPTOR *>(P.mem + 65536 + 128 * i); }

// What a rank tells its partner about its RDMA target region.
struct Target {
    uint64_t addr;
    VIP_MEM_HANDLE handle;
};

void post_recv(int di, size_t off, uint32_t len) {
    VIP_DESCRIPTOR *d = desc(di);
    std::memset(d, 0, 128);
    d->CS.SegCount = 1;
    d->DS[0].Local.Data.Address = P.mem + off;
    d->DS[0].Local.Handle = P.mh;
    d->DS[0].Local.Length = len;
    ASSERT_EQ(VipPostRecv(P.vi, d, P.mh), VIP_SUCCESS);
}

void post_send(int di, size_t off, uint32_t len) {
    VIP_DESCRIPTOR *d = desc(di);
    std::memset(d, 0, 128);
    d->CS.SegCount = 1;
    d->CS.Length = len;
    d->DS[0].Local.Data.Address = P.mem + off;
    d->DS[0].Local.Handle = P.mh;
    d->DS[0].Local.Length = len;
    ASSERT_EQ(VipPostSend(P.vi, d, P.mh), VIP_SUCCESS);
}

void post_rdma(int di, uint16_t op, const Target &t, size_t remote_off, size_t off, uint32_t len, bool imm = false,
               uint32_t imm_data = 0) {
    VIP_DESCRIPTOR *d = desc(di);
    std::memset(d, 0, 128);
    d->CS.Control = op | (imm ? VIP_CONTROL_IMMEDIATE : 0);
    d->CS.SegCount = 2; // the address segment counts
    d->CS.Length = len;
    d->CS.ImmediateData = imm_data;
    d->DS[0].Remote.Data.AddressBits = t.addr + remote_off;
    d->DS[0].Remote.Handle = t.handle;
    d->DS[1].Local.Data.Address = P.mem + off;
    d->DS[1].Local.Handle = P.mh;
    d->DS[1].Local.Length = len;
    ASSERT_EQ(VipPostSend(P.vi, d, P.mh), VIP_SUCCESS);
}

VIP_DESCRIPTOR *wait_send() {
    VIP_DESCRIPTOR *d = nullptr;
    return VipSendWait(P.vi, kWait, &d) == VIP_SUCCESS ? d : nullptr;
}
VIP_DESCRIPTOR *wait_recv() {
    VIP_DESCRIPTOR *d = nullptr;
    return VipRecvWait(P.vi, kWait, &d) == VIP_SUCCESS ? d : nullptr;
}

Target exchange_target() {
    Target mine{uint64_t(uintptr_t(P.mem)), P.mh}, all[2];
    EXPECT_EQ(vipl_boot_allgather(&mine, sizeof mine, all), VIPL_BOOT_OK);
    return all[1 - P.rank];
}

TEST(VerbsMp, HandleFromAnotherProcessNamesItsRegionForRdmaWriteAndRead) {
    Target peer = exchange_target();
    std::memset(P.mem, 0, 65536);
    vipl_boot_barrier();
    if (P.rank == 0) {
        for (int i = 0; i < 4096; i++) P.mem[i] = uint8_t(i * 7 + 1);
        post_rdma(0, VIP_CONTROL_OP_RDMAWRITE, peer, 8192, 0, 4096);
        VIP_DESCRIPTOR *d = wait_send();
        ASSERT_EQ(d, desc(0));
        EXPECT_EQ(d->CS.Status, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE);
        // Read it back from the peer's memory into a different local place.
        post_rdma(1, VIP_CONTROL_OP_RDMAREAD, peer, 8192, 16384, 4096);
        d = wait_send();
        ASSERT_EQ(d, desc(1));
        EXPECT_EQ(d->CS.Status, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_READ);
        EXPECT_EQ(std::memcmp(P.mem, P.mem + 16384, 4096), 0) << "RDMA read returned other bytes";
    }
    vipl_boot_barrier();
    if (P.rank == 1) {
        for (int i = 0; i < 4096; i++) ASSERT_EQ(P.mem[8192 + i], uint8_t(i * 7 + 1)) << "RDMA write byte " << i;
    }
    vipl_boot_barrier();
}

TEST(VerbsMp, RdmaWriteWithImmediateConsumesAReceive) {
    Target peer = exchange_target();
    if (P.rank == 1) post_recv(2, 32768, 0);
    vipl_boot_barrier();
    if (P.rank == 0) {
        std::memset(P.mem, 0xab, 100);
        post_rdma(0, VIP_CONTROL_OP_RDMAWRITE, peer, 1000, 0, 100, true, 0xfeedbeefu);
        VIP_DESCRIPTOR *d = wait_send();
        ASSERT_EQ(d, desc(0));
        EXPECT_EQ(d->CS.Status, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE);
    } else {
        VIP_DESCRIPTOR *d = wait_recv();
        ASSERT_EQ(d, desc(2));
        EXPECT_EQ(d->CS.Status, VIP_STATUS_DONE | VIP_STATUS_OP_REMOTE_RDMA_WRITE | VIP_STATUS_IMMEDIATE);
        EXPECT_EQ(d->CS.ImmediateData, 0xfeedbeefu);
        EXPECT_EQ(P.mem[1000], 0xab);
        EXPECT_EQ(P.mem[1099], 0xab);
    }
    vipl_boot_barrier();
}

TEST(VerbsMp, CheckedPingPongWithImmediate) {
    // Each rank keeps one receive posted; rank 0 pings with the round number in
    // the immediate data and the payload, rank 1 checks and echoes it back.
    const int iters = 300;
    post_recv(3, 40000, 64);
    vipl_boot_barrier();
    for (int i = 0; i < iters; i++) {
        const bool pinger = P.rank == 0;
        if (pinger) {
            std::memset(P.mem + 48000, i & 0xff, 16);
            VIP_DESCRIPTOR *d = desc(4);
            std::memset(d, 0, 128);
            d->CS.Control = VIP_CONTROL_IMMEDIATE;
            d->CS.ImmediateData = uint32_t(i);
            d->CS.SegCount = 1;
            d->CS.Length = 16;
            d->DS[0].Local.Data.Address = P.mem + 48000;
            d->DS[0].Local.Handle = P.mh;
            d->DS[0].Local.Length = 16;
            ASSERT_EQ(VipPostSend(P.vi, d, P.mh), VIP_SUCCESS);
            ASSERT_EQ(wait_send(), d);
        }
        VIP_DESCRIPTOR *r = wait_recv();
        ASSERT_EQ(r, desc(3)) << "round " << i;
        const uint32_t want_status = VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE | (pinger ? 0 : VIP_STATUS_IMMEDIATE);
        ASSERT_EQ(r->CS.Status, want_status) << "round " << i;
        if (!pinger) { ASSERT_EQ(r->CS.ImmediateData, uint32_t(i)); }
        ASSERT_EQ(r->CS.Length, 16u);
        for (int k = 0; k < 16; k++) ASSERT_EQ(P.mem[40000 + k], uint8_t(i & 0xff)) << "round " << i << " byte " << k;
        std::memcpy(P.mem + 48000, P.mem + 40000, 16);
        post_recv(3, 40000, 64);
        if (!pinger) {
            post_send(5, 48000, 16);
            ASSERT_EQ(wait_send(), desc(5));
        }
    }
    vipl_boot_barrier();
}

} // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    if (vipl_boot_init() != VIPL_BOOT_OK || vipl_boot_size() != 2) {
        std::fprintf(stderr, "run as: vipl-run -n 2 %s\n", argv[0]);
        return 2;
    }
    P.rank = vipl_boot_rank();
    if (VipOpenNic(nullptr, &P.nic) != VIP_SUCCESS || VipQueryNic(P.nic, &P.attr) != VIP_SUCCESS ||
        VipCreatePtag(P.nic, &P.tag) != VIP_SUCCESS) {
        std::fprintf(stderr, "rank %d: cannot open the NIC (VIPL_PROVIDER=%s)\n", P.rank,
                     std::getenv("VIPL_PROVIDER") ? std::getenv("VIPL_PROVIDER") : "");
        vipl_boot_abort(1, "no NIC");
    }
    P.mem = static_cast<uint8_t *>(std::aligned_alloc(4096, 65536 + 4096));
    std::memset(P.mem, 0, 65536 + 4096);
    VIP_MEM_ATTRIBUTES ma{P.tag, VIP_TRUE, VIP_TRUE};
    VIP_VI_ATTRIBUTES va{VIP_SERVICE_RELIABLE_DELIVERY, 65536, nullptr, P.tag, VIP_TRUE, VIP_TRUE};
    if (VipRegisterMem(P.nic, P.mem, 65536 + 4096, &ma, &P.mh) != VIP_SUCCESS ||
        VipCreateVi(P.nic, &va, nullptr, nullptr, &P.vi) != VIP_SUCCESS)
        vipl_boot_abort(1, "cannot register memory or create the VI");
    // Peer-to-peer connection: exchange addresses, both sides request.
    struct {
        uint16_t len;
        uint8_t bytes[VIP_MAX_HOST_ADDRESS_LEN];
    } mine{}, all[2];
    mine.len = P.attr.NicAddressLen;
    std::memcpy(mine.bytes, P.attr.LocalNicAddress, mine.len);
    vipl_boot_allgather(&mine, sizeof mine, all);
    alignas(8) uint8_t lbuf[VIP_NET_ADDRESS_SIZE(64, 8)], rbuf[VIP_NET_ADDRESS_SIZE(64, 8)];
    auto *local = reinterpret_cast<VIP_NET_ADDRESS *>(lbuf);
    auto *remote = reinterpret_cast<VIP_NET_ADDRESS *>(rbuf);
    local->HostAddressLen = mine.len;
    std::memcpy(local->HostAddress, mine.bytes, mine.len);
    local->DiscriminatorLen = 2;
    std::memcpy(local->HostAddress + mine.len, P.rank ? "r1" : "r0", 2);
    const auto &o = all[1 - P.rank];
    remote->HostAddressLen = o.len;
    std::memcpy(remote->HostAddress, o.bytes, o.len);
    remote->DiscriminatorLen = 2;
    std::memcpy(remote->HostAddress + o.len, P.rank ? "r0" : "r1", 2);
    VIP_VI_ATTRIBUTES ra{};
    if (VipConnectPeerRequest(P.vi, local, remote, kWait) != VIP_SUCCESS ||
        VipConnectPeerWait(P.vi, &ra) != VIP_SUCCESS)
        vipl_boot_abort(1, "peer connection failed");
    int rc = RUN_ALL_TESTS();
    vipl_boot_barrier();
    VipDisconnect(P.vi);
    VIP_DESCRIPTOR *d;
    while (VipSendDone(P.vi, &d) == VIP_SUCCESS) {}
    while (VipRecvDone(P.vi, &d) == VIP_SUCCESS) {}
    VipDestroyVi(P.vi);
    VipDeregisterMem(P.nic, P.mem, P.mh);
    VipDestroyPtag(P.nic, P.tag);
    VipCloseNic(P.nic);
    std::free(P.mem);
    vipl_boot_finalize();
    return rc;
}
