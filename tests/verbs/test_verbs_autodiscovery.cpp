// test_verbs_autodiscovery.cpp - VipQuerySystemManagementInfo(VIP_SMI_AUTODISCOVERY)
// on the verbs provider (docs/verbs.md, "Name service"): run on N ranks under
// vipl-run, or alone (a job of one).
//
// Every rank tells the others the address its NIC reports (VipQueryNic,
// exchanged with vipl_boot_allgather); autodiscovery must list exactly those,
// entry r for rank r, and count every rank even when the caller made room for
// fewer.  Ranks 0 and 1 then connect to each other at the addresses autodiscovery
// gave them and move one checked message: the listed addresses are the ones VIs
// connect to.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "vipl.h"
#include "vipl_boot.h"

namespace {

constexpr VIP_ULONG kWait = 20000;

struct Published {
    uint16_t len;
    uint8_t bytes[VIP_MAX_HOST_ADDRESS_LEN];
};

struct Job {
    VIP_NIC_HANDLE nic = nullptr;
    VIP_NIC_ATTRIBUTES attr{};
    int rank = 0, size = 1;
    std::vector<Published> published; // [rank]: what that rank's VipQueryNic says
};
Job J;

// Room for `n` addresses of the largest size, each pre-filled with a sentinel.
struct AddressList {
    explicit AddressList(size_t n)
        : storage(n, std::vector<uint8_t>(VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, 0), 0xa5)) {
        for (auto &s : storage) ptrs.push_back(reinterpret_cast<VIP_NET_ADDRESS *>(s.data()));
        list.ADAddrArray = ptrs.empty() ? nullptr : ptrs.data();
        list.NumAdAddrs = VIP_ULONG(n);
    }
    bool untouched(size_t i) const {
        for (uint8_t b : storage[i])
            if (b != 0xa5) return false;
        return true;
    }
    std::vector<std::vector<uint8_t>> storage;
    std::vector<VIP_NET_ADDRESS *> ptrs;
    VIP_AUTODISCOVERY_LIST list{};
};

void expect_published(const VIP_NET_ADDRESS *a, int rank) {
    const Published &p = J.published[rank];
    ASSERT_EQ(a->HostAddressLen, p.len) << "rank " << rank;
    EXPECT_EQ(a->DiscriminatorLen, 0) << "rank " << rank;
    EXPECT_EQ(std::memcmp(a->HostAddress, p.bytes, p.len), 0) << "rank " << rank << "'s address differs";
}

TEST(VerbsAutodiscovery, ListsEveryRankAtTheAddressItsNicReports) {
    AddressList l(J.size);
    ASSERT_EQ(VipQuerySystemManagementInfo(J.nic, VIP_SMI_AUTODISCOVERY, &l.list), VIP_SUCCESS);
    EXPECT_EQ(l.list.NumAdAddrs, VIP_ULONG(J.size));
    EXPECT_EQ(l.list.NumberOfHops, 1u);
    for (int r = 0; r < J.size; ++r) expect_published(l.ptrs[r], r);
    // One NIC per rank: no two entries alike.
    for (int a = 0; a < J.size; ++a)
        for (int b = a + 1; b < J.size; ++b)
            EXPECT_FALSE(l.ptrs[a]->HostAddressLen == l.ptrs[b]->HostAddressLen &&
                         !std::memcmp(l.ptrs[a]->HostAddress, l.ptrs[b]->HostAddress, l.ptrs[a]->HostAddressLen))
                << "ranks " << a << " and " << b << " listed at one address";
}

TEST(VerbsAutodiscovery, CountsEveryRankAndWritesOnlyWhatFits) {
    AddressList none(0);
    ASSERT_EQ(VipQuerySystemManagementInfo(J.nic, VIP_SMI_AUTODISCOVERY, &none.list), VIP_SUCCESS);
    EXPECT_EQ(none.list.NumAdAddrs, VIP_ULONG(J.size));

    AddressList one(J.size + 1); // room for one, then one more than there are ranks
    one.list.NumAdAddrs = 1;
    ASSERT_EQ(VipQuerySystemManagementInfo(J.nic, VIP_SMI_AUTODISCOVERY, &one.list), VIP_SUCCESS);
    EXPECT_EQ(one.list.NumAdAddrs, VIP_ULONG(J.size));
    expect_published(one.ptrs[0], 0);
    EXPECT_TRUE(one.untouched(1)) << "an entry beyond the room given was written";

    one.list.NumAdAddrs = VIP_ULONG(J.size + 1);
    ASSERT_EQ(VipQuerySystemManagementInfo(J.nic, VIP_SMI_AUTODISCOVERY, &one.list), VIP_SUCCESS);
    EXPECT_EQ(one.list.NumAdAddrs, VIP_ULONG(J.size));
    EXPECT_TRUE(one.untouched(J.size)) << "an entry beyond the job's ranks was written";
}

TEST(VerbsAutodiscovery, RejectsOtherInformationAndMalformedLists) {
    AddressList l(J.size);
    EXPECT_EQ(VipQuerySystemManagementInfo(J.nic, 0, &l.list), VIP_INVALID_PARAMETER);
    EXPECT_EQ(VipQuerySystemManagementInfo(J.nic, 2, &l.list), VIP_INVALID_PARAMETER);
    EXPECT_EQ(VipQuerySystemManagementInfo(J.nic, VIP_SMI_AUTODISCOVERY, nullptr), VIP_INVALID_PARAMETER);
    VIP_AUTODISCOVERY_LIST no_array{};
    no_array.NumAdAddrs = 1; // room claimed, no array
    EXPECT_EQ(VipQuerySystemManagementInfo(J.nic, VIP_SMI_AUTODISCOVERY, &no_array), VIP_INVALID_PARAMETER);
    l.ptrs[0] = nullptr; // a NULL entry inside the room
    EXPECT_EQ(VipQuerySystemManagementInfo(J.nic, VIP_SMI_AUTODISCOVERY, &l.list), VIP_INVALID_PARAMETER);
}

// Ranks 0 and 1 connect peer-to-peer at the discovered addresses; 0 sends 1 a
// message naming both addresses' lengths and a magic word, 1 checks it.
TEST(VerbsAutodiscovery, DiscoveredAddressesAreWhereVisConnect) {
    // Torn down last, after every rank has met below.
    struct Connection {
        VIP_PROTECTION_HANDLE tag = nullptr;
        uint8_t *mem = nullptr;
        VIP_MEM_HANDLE mh = 0;
        VIP_VI_HANDLE vi = nullptr;
        ~Connection() {
            if (vi) {
                VipDisconnect(vi);
                VipDestroyVi(vi);
            }
            if (mh) VipDeregisterMem(J.nic, mem, mh);
            if (tag) VipDestroyPtag(J.nic, tag);
            std::free(mem);
        }
    } c;
    // Every rank leaves this test through one barrier: both ends have finished
    // with the connection before either disconnects, even when an assertion
    // ends the test early, and the skipped ranks keep the count.
    struct AllRanksMeetOnExit {
        ~AllRanksMeetOnExit() { vipl_boot_barrier(); }
    } meet;
    if (J.size < 2 || J.rank > 1) GTEST_SKIP() << "needs ranks 0 and 1";
    AddressList l(2);
    ASSERT_EQ(VipQuerySystemManagementInfo(J.nic, VIP_SMI_AUTODISCOVERY, &l.list), VIP_SUCCESS);
    const int peer = 1 - J.rank;

    ASSERT_EQ(VipCreatePtag(J.nic, &c.tag), VIP_SUCCESS);
    c.mem = static_cast<uint8_t *>(std::aligned_alloc(4096, 8192));
    ASSERT_NE(c.mem, nullptr);
    std::memset(c.mem, 0, 8192);
    VIP_MEM_ATTRIBUTES ma{c.tag, VIP_FALSE, VIP_FALSE};
    ASSERT_EQ(VipRegisterMem(J.nic, c.mem, 8192, &ma, &c.mh), VIP_SUCCESS);
    VIP_VI_ATTRIBUTES va{VIP_SERVICE_RELIABLE_DELIVERY, 4096, nullptr, c.tag, VIP_FALSE, VIP_FALSE};
    ASSERT_EQ(VipCreateVi(J.nic, &va, nullptr, nullptr, &c.vi), VIP_SUCCESS);

    auto *d = reinterpret_cast<VIP_DESCRIPTOR *>(c.mem + 4096);
    d->CS.SegCount = 1;
    d->CS.Length = 16;
    d->DS[0].Local.Data.Address = c.mem;
    d->DS[0].Local.Handle = c.mh;
    d->DS[0].Local.Length = 16;
    if (J.rank == 1) { // posted before the connection, so the send finds it
        ASSERT_EQ(VipPostRecv(c.vi, d, c.mh), VIP_SUCCESS);
    }

    // Local: this rank's own discovered entry; remote: the peer's.  The
    // discriminator says who is who.
    alignas(8) uint8_t lbuf[VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, 4)];
    alignas(8) uint8_t rbuf[VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, 4)];
    auto with_discriminator = [](uint8_t *buf, const VIP_NET_ADDRESS *a, const char *disc) {
        auto *out = reinterpret_cast<VIP_NET_ADDRESS *>(buf);
        out->HostAddressLen = a->HostAddressLen;
        std::memcpy(out->HostAddress, a->HostAddress, a->HostAddressLen);
        out->DiscriminatorLen = 3;
        std::memcpy(out->HostAddress + a->HostAddressLen, disc, 3);
        return out;
    };
    VIP_NET_ADDRESS *local = with_discriminator(lbuf, l.ptrs[J.rank], J.rank ? "ad1" : "ad0");
    VIP_NET_ADDRESS *remote = with_discriminator(rbuf, l.ptrs[peer], J.rank ? "ad0" : "ad1");
    VIP_VI_ATTRIBUTES ra{};
    ASSERT_EQ(VipConnectPeerRequest(c.vi, local, remote, kWait), VIP_SUCCESS);
    ASSERT_EQ(VipConnectPeerWait(c.vi, &ra), VIP_SUCCESS);

    const uint32_t magic[4] = {0x61757464u, l.ptrs[0]->HostAddressLen, l.ptrs[1]->HostAddressLen, 0x69736321u};
    VIP_DESCRIPTOR *done = nullptr;
    if (J.rank == 0) {
        std::memcpy(c.mem, magic, sizeof magic);
        ASSERT_EQ(VipPostSend(c.vi, d, c.mh), VIP_SUCCESS);
        ASSERT_EQ(VipSendWait(c.vi, kWait, &done), VIP_SUCCESS);
    } else {
        ASSERT_EQ(VipRecvWait(c.vi, kWait, &done), VIP_SUCCESS);
        EXPECT_EQ(done->CS.Length, 16u);
        EXPECT_EQ(std::memcmp(c.mem, magic, sizeof magic), 0) << "the message arrived altered";
    }
    ASSERT_EQ(done, d);
    EXPECT_EQ(d->CS.Status & VIP_STATUS_DONE, VIP_STATUS_DONE);
    EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u) << "descriptor status " << d->CS.Status;
    EXPECT_EQ(d->CS.Status & VIP_STATUS_OP_MASK, J.rank ? VIP_STATUS_OP_RECEIVE : VIP_STATUS_OP_SEND);
}

} // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    if (vipl_boot_init() != VIPL_BOOT_OK) {
        std::fprintf(stderr, "run as: vipl-run -n N %s (or alone)\n", argv[0]);
        return 2;
    }
    J.rank = vipl_boot_rank();
    J.size = vipl_boot_size();
    if (VipOpenNic(nullptr, &J.nic) != VIP_SUCCESS || VipQueryNic(J.nic, &J.attr) != VIP_SUCCESS) {
        std::fprintf(stderr, "rank %d: cannot open the NIC (VIPL_PROVIDER=%s)\n", J.rank,
                     std::getenv("VIPL_PROVIDER") ? std::getenv("VIPL_PROVIDER") : "");
        vipl_boot_abort(1, "no NIC");
    }
    Published mine{};
    if (J.attr.NicAddressLen > sizeof mine.bytes)
        vipl_boot_abort(1, "NIC address longer than VIP_MAX_HOST_ADDRESS_LEN");
    mine.len = J.attr.NicAddressLen;
    std::memcpy(mine.bytes, J.attr.LocalNicAddress, mine.len);
    J.published.resize(J.size);
    if (vipl_boot_allgather(&mine, sizeof mine, J.published.data()) != VIPL_BOOT_OK)
        vipl_boot_abort(1, "allgather failed");
    const int rc = RUN_ALL_TESTS();
    vipl_boot_barrier();
    VipCloseNic(J.nic);
    vipl_boot_finalize();
    return rc;
}
