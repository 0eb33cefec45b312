// test_verbs_nic.cpp - verbs-specific behaviour through the public VIPL API, one
// process, on a real RDMA device (soft-RoCE rxe0 under tools/rxe-run):
// device selection, addresses, reliability-level mapping, long discriminators,
// the name service, posting order around provider-rejected descriptors.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "vipl.h"

namespace {

constexpr VIP_ULONG kWait = 10000; // ms: soft-RoCE under emulation is slow

struct Addr {
    alignas(8) uint8_t buf[VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, VIP_MAX_DISCRIMINATOR_LEN)] = {};
    VIP_NET_ADDRESS *get() { return reinterpret_cast<VIP_NET_ADDRESS *>(buf); }
    Addr(const VIP_NIC_ATTRIBUTES &a, const std::string &disc) {
        get()->HostAddressLen = a.NicAddressLen;
        std::memcpy(get()->HostAddress, a.LocalNicAddress, a.NicAddressLen);
        get()->DiscriminatorLen = uint16_t(disc.size());
        std::memcpy(get()->HostAddress + a.NicAddressLen, disc.data(), disc.size());
    }
    Addr() = default;
    std::string disc() {
        return std::string(reinterpret_cast<char *>(get()->HostAddress + get()->HostAddressLen),
                           get()->DiscriminatorLen);
    }
};

class VerbsNic : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_EQ(VipOpenNic(nullptr, &nic), VIP_SUCCESS) << "VIPL_PROVIDER=verbs, no RDMA device?";
        ASSERT_EQ(VipQueryNic(nic, &attr), VIP_SUCCESS);
        ASSERT_EQ(VipCreatePtag(nic, &tag), VIP_SUCCESS);
    }
    void TearDown() override {
        for (VIP_VI_HANDLE v : vis) {
            VipDisconnect(v);
            VIP_DESCRIPTOR *d;
            while (VipSendDone(v, &d) == VIP_SUCCESS) {}
            while (VipRecvDone(v, &d) == VIP_SUCCESS) {}
            EXPECT_EQ(VipDestroyVi(v), VIP_SUCCESS);
        }
        for (auto &m : mems) EXPECT_EQ(VipDeregisterMem(nic, m.first, m.second), VIP_SUCCESS);
        for (void *p : bufs) std::free(p);
        EXPECT_EQ(VipDestroyPtag(nic, tag), VIP_SUCCESS);
        EXPECT_EQ(VipCloseNic(nic), VIP_SUCCESS);
    }
    VIP_VI_ATTRIBUTES vi_attr(VIP_RELIABILITY_LEVEL l, bool rdma_read = false) {
        VIP_VI_ATTRIBUTES a{};
        a.ReliabilityLevel = l;
        a.MaxTransferSize = 65536;
        a.Ptag = tag;
        a.EnableRdmaWrite = VIP_TRUE;
        a.EnableRdmaRead = rdma_read ? VIP_TRUE : VIP_FALSE;
        return a;
    }
    VIP_VI_HANDLE make_vi(VIP_RELIABILITY_LEVEL l) {
        VIP_VI_ATTRIBUTES a = vi_attr(l);
        VIP_VI_HANDLE v = nullptr;
        EXPECT_EQ(VipCreateVi(nic, &a, nullptr, nullptr, &v), VIP_SUCCESS);
        vis.push_back(v);
        return v;
    }
    uint8_t *reg(size_t len, VIP_MEM_HANDLE *mh) {
        void *p = std::aligned_alloc(4096, (len + 4095) / 4096 * 4096);
        std::memset(p, 0, len);
        VIP_MEM_ATTRIBUTES ma{tag, VIP_FALSE, VIP_FALSE};
        EXPECT_EQ(VipRegisterMem(nic, p, len, &ma, mh), VIP_SUCCESS);
        bufs.push_back(p);
        mems.push_back({p, *mh});
        return static_cast<uint8_t *>(p);
    }
    // Connects a (client) to b (server) with the given discriminators, in one process.
    void connect(VIP_VI_HANDLE a, VIP_VI_HANDLE b, const std::string &a_disc, const std::string &b_disc,
                 std::string *seen_client_disc) {
        Addr server(attr, b_disc), client(attr, a_disc), seen;
        std::atomic<int> server_rc{-1};
        std::thread srv([&] {
            VIP_CONN_HANDLE c = nullptr;
            VIP_VI_ATTRIBUTES ra{};
            VIP_RETURN rc = VipConnectWait(nic, server.get(), kWait, seen.get(), &ra, &c);
            if (rc == VIP_SUCCESS) rc = VipConnectAccept(c, b);
            server_rc = rc;
        });
        VIP_VI_ATTRIBUTES ra{};
        EXPECT_EQ(VipConnectRequest(a, client.get(), server.get(), kWait, &ra), VIP_SUCCESS);
        srv.join();
        EXPECT_EQ(server_rc.load(), VIP_SUCCESS);
        *seen_client_disc = seen.disc();
    }

    VIP_NIC_HANDLE nic = nullptr;
    VIP_NIC_ATTRIBUTES attr{};
    VIP_PROTECTION_HANDLE tag = nullptr;
    std::vector<VIP_VI_HANDLE> vis;
    std::vector<std::pair<void *, VIP_MEM_HANDLE>> mems;
    std::vector<void *> bufs;
};

TEST_F(VerbsNic, AddressIsDeviceIpv4AndListeningPort) {
    ASSERT_EQ(attr.NicAddressLen, 6u) << "IPv4 + port expected on rxe0";
    if (const char *ip = std::getenv("RXE_IPV4")) {
        uint8_t want[4];
        ASSERT_EQ(inet_pton(AF_INET, ip, want), 1);
        EXPECT_EQ(std::memcmp(attr.LocalNicAddress, want, 4), 0);
    }
    EXPECT_NE(attr.LocalNicAddress[4] | attr.LocalNicAddress[5], 0) << "port 0";
    EXPECT_EQ(attr.MaxDiscriminatorLen, VIP_MAX_DISCRIMINATOR_LEN);
    EXPECT_EQ(attr.ThreadSafe, VIP_TRUE); // docs/verbs.md "Threads"
    EXPECT_EQ(attr.RDMAReadSupport & VIP_SERVICE_UNRELIABLE, 0);
}

TEST_F(VerbsNic, OpenByDeviceNameAndUnknownRdmaName) {
    VIP_NIC_HANDLE h = nullptr;
    ASSERT_EQ(VipOpenNic(attr.Name, &h), VIP_SUCCESS) << attr.Name;
    VIP_NIC_ATTRIBUTES a{};
    ASSERT_EQ(VipQueryNic(h, &a), VIP_SUCCESS);
    EXPECT_STREQ(a.Name, attr.Name);
    // A second open is a second endpoint: same IP, its own port.
    EXPECT_EQ(std::memcmp(a.LocalNicAddress, attr.LocalNicAddress, 4), 0);
    EXPECT_NE(std::memcmp(a.LocalNicAddress, attr.LocalNicAddress, 6), 0);
    EXPECT_EQ(VipCloseNic(h), VIP_SUCCESS);
    EXPECT_EQ(VipOpenNic("mlx5_99", &h), VIP_INVALID_PARAMETER);
}

// A CQ as large as the NIC reports (MaxCQEntries: rxe's 32767, not a power of
// two) is created and takes a VI; one entry more is refused.
TEST_F(VerbsNic, CqOfMaxCqEntriesIsCreated) {
    ASSERT_GT(attr.MaxCQEntries, 0u);
    VIP_CQ_HANDLE cq = nullptr;
    ASSERT_EQ(VipCreateCQ(nic, attr.MaxCQEntries, &cq), VIP_SUCCESS) << attr.MaxCQEntries << " entries";
    VIP_VI_ATTRIBUTES a = vi_attr(VIP_SERVICE_RELIABLE_DELIVERY);
    VIP_VI_HANDLE v = nullptr;
    EXPECT_EQ(VipCreateVi(nic, &a, cq, cq, &v), VIP_SUCCESS);
    if (v) { EXPECT_EQ(VipDestroyVi(v), VIP_SUCCESS); }
    EXPECT_EQ(VipDestroyCQ(cq), VIP_SUCCESS);
    VIP_CQ_HANDLE too_big = nullptr;
    EXPECT_NE(VipCreateCQ(nic, attr.MaxCQEntries + 1, &too_big), VIP_SUCCESS);
}

TEST_F(VerbsNic, UnreliableViCannotEnableRdmaRead) {
    VIP_VI_ATTRIBUTES a = vi_attr(VIP_SERVICE_UNRELIABLE, true);
    VIP_VI_HANDLE v = nullptr;
    EXPECT_EQ(VipCreateVi(nic, &a, nullptr, nullptr, &v), VIP_INVALID_RDMAREAD);
    a = vi_attr(VIP_SERVICE_RELIABLE_DELIVERY | VIP_SERVICE_UNRELIABLE);
    EXPECT_EQ(VipCreateVi(nic, &a, nullptr, nullptr, &v), VIP_INVALID_RELIABILITY_LEVEL);
}

TEST_F(VerbsNic, LongDiscriminatorsConnectAndShortClientDiscriminatorIsExact) {
    VIP_VI_HANDLE a = make_vi(VIP_SERVICE_RELIABLE_DELIVERY), b = make_vi(VIP_SERVICE_RELIABLE_DELIVERY);
    std::string seen;
    connect(a, b, "client-short", std::string(64, 'S'), &seen);
    EXPECT_EQ(seen, "client-short") << "a short requester discriminator travels verbatim";
}

TEST_F(VerbsNic, LongClientDiscriminatorArrivesAsItsDigest) {
    VIP_VI_HANDLE a = make_vi(VIP_SERVICE_RELIABLE_RECEPTION), b = make_vi(VIP_SERVICE_RELIABLE_RECEPTION);
    std::string seen;
    connect(a, b, std::string(40, 'C'), "srv", &seen);
    EXPECT_EQ(seen.size(), 16u) << "documented: a long requester discriminator is its 16-byte digest";
}

// VipConnectAccept with a VI of another reliability level fails and leaves the
// request pending (docs/vipl.md, one behaviour on every provider): a VI of the
// requester's level then accepts it.
TEST_F(VerbsNic, ReliabilityMismatchLeavesTheRequestPending) {
    VIP_VI_HANDLE a = make_vi(VIP_SERVICE_UNRELIABLE), b = make_vi(VIP_SERVICE_RELIABLE_DELIVERY),
                  c = make_vi(VIP_SERVICE_UNRELIABLE);
    Addr server(attr, "mismatch"), client(attr, "mm-client"), seen;
    std::atomic<int> wrong_rc{-1}, right_rc{-1};
    std::thread srv([&] {
        VIP_CONN_HANDLE conn = nullptr;
        VIP_VI_ATTRIBUTES ra{};
        VIP_RETURN rc = VipConnectWait(nic, server.get(), kWait, seen.get(), &ra, &conn);
        if (rc != VIP_SUCCESS) {
            wrong_rc = rc;
            return;
        }
        wrong_rc = VipConnectAccept(conn, b);
        right_rc = VipConnectAccept(conn, c);
        if (right_rc != VIP_SUCCESS) VipConnectReject(conn);
    });
    VIP_VI_ATTRIBUTES ra{};
    VIP_RETURN rc = VipConnectRequest(a, client.get(), server.get(), kWait, &ra);
    srv.join();
    EXPECT_EQ(wrong_rc.load(), VIP_INVALID_RELIABILITY_LEVEL);
    EXPECT_EQ(right_rc.load(), VIP_SUCCESS);
    EXPECT_EQ(rc, VIP_SUCCESS);
    VIP_VI_STATE st;
    VIP_VI_ATTRIBUTES va;
    VIP_BOOLEAN se, re;
    ASSERT_EQ(VipQueryVi(b, &st, &va, &se, &re), VIP_SUCCESS);
    EXPECT_EQ(st, VIP_STATE_IDLE) << "the refused VI stays idle";
    EXPECT_EQ(VipDisconnect(a), VIP_SUCCESS);
    EXPECT_EQ(VipDisconnect(c), VIP_SUCCESS);
}

TEST_F(VerbsNic, NameServiceResolvesNodeAndNumericNames) {
    ASSERT_EQ(VipNSInit(nic, nullptr), VIP_SUCCESS);
    char name[64];
    VIP_ULONG len = sizeof name;
    Addr mine(attr, "");
    ASSERT_EQ(VipNSGetHostByAddr(nic, mine.get(), name, &len), VIP_SUCCESS);
    Addr back;
    ASSERT_EQ(VipNSGetHostByName(nic, name, back.get(), 0), VIP_SUCCESS) << name;
    EXPECT_EQ(std::memcmp(back.get()->HostAddress, attr.LocalNicAddress, 6), 0);
    // The numeric form names the same endpoint.
    char ip[32];
    inet_ntop(AF_INET, attr.LocalNicAddress, ip, sizeof ip);
    std::string numeric =
        std::string(ip) + ":" + std::to_string(attr.LocalNicAddress[4] << 8 | attr.LocalNicAddress[5]);
    ASSERT_EQ(VipNSGetHostByName(nic, numeric.data(), back.get(), 0), VIP_SUCCESS) << numeric;
    EXPECT_EQ(std::memcmp(back.get()->HostAddress, attr.LocalNicAddress, 6), 0);
    char noport[] = "192.0.2.1";
    if (!std::getenv("VIPL_VERBS_PORT")) {
        EXPECT_EQ(VipNSGetHostByName(nic, noport, back.get(), 0), VIP_ERROR_NAMESERVICE);
    }
    len = 3;
    EXPECT_EQ(VipNSGetHostByAddr(nic, mine.get(), name, &len), VIP_INVALID_PARAMETER);
    EXPECT_GT(len, 3u) << "the needed length is reported";
    EXPECT_EQ(VipNSShutdown(nic), VIP_SUCCESS);
}

TEST_F(VerbsNic, RejectedDescriptorKeepsPostingOrder) {
    // Unreliable: a descriptor the provider rejects (forged memory handle) completes
    // in its place between good ones, and the VI stays connected.
    VIP_VI_HANDLE a = make_vi(VIP_SERVICE_UNRELIABLE), b = make_vi(VIP_SERVICE_UNRELIABLE);
    std::string seen;
    connect(a, b, "order-a", "order-b", &seen);
    VIP_MEM_HANDLE mh, dmh;
    uint8_t *buf = reg(4096, &mh);
    auto *descs = reinterpret_cast<VIP_DESCRIPTOR *>(reg(8 * 64, &dmh));
    for (int i = 0; i < 2; i++) {
        VIP_DESCRIPTOR *r = &descs[4 + i];
        std::memset(r, 0, sizeof *r);
        r->CS.SegCount = 1;
        r->DS[0].Local = {{.Address = buf + 1024 + 64 * i}, mh, 64};
        ASSERT_EQ(VipPostRecv(b, r, dmh), VIP_SUCCESS);
    }
    for (int i = 0; i < 3; i++) {
        VIP_DESCRIPTOR *s = &descs[i];
        std::memset(s, 0, sizeof *s);
        s->CS.SegCount = 1;
        s->CS.Length = 16;
        s->DS[0].Local = {{.Address = buf + 16 * i}, i == 1 ? mh ^ 0x00770000u : mh, 16};
        ASSERT_EQ(VipPostSend(a, s, dmh), VIP_SUCCESS);
    }
    for (int i = 0; i < 3; i++) {
        VIP_DESCRIPTOR *d = nullptr;
        ASSERT_EQ(VipSendWait(a, kWait, &d), VIP_SUCCESS);
        EXPECT_EQ(d, &descs[i]) << "completion out of posting order";
        EXPECT_TRUE(d->CS.Status & VIP_STATUS_DONE);
        EXPECT_EQ((d->CS.Status & VIP_STATUS_PROTECTION_ERROR) != 0, i == 1) << i;
    }
    for (int i = 0; i < 2; i++) {
        VIP_DESCRIPTOR *d = nullptr;
        ASSERT_EQ(VipRecvWait(b, kWait, &d), VIP_SUCCESS);
        EXPECT_EQ(d, &descs[4 + i]);
        EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u);
        EXPECT_EQ(d->CS.Length, 16u);
    }
    VIP_VI_STATE st;
    VIP_VI_ATTRIBUTES va;
    VIP_BOOLEAN se, re;
    ASSERT_EQ(VipQueryVi(a, &st, &va, &se, &re), VIP_SUCCESS);
    EXPECT_EQ(st, VIP_STATE_CONNECTED);
}

} // namespace
