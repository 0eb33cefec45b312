// test_legacy.cpp - what public VI programs written against M-VIA or Giganet cLAN
// headers (iometer's VI clients, the ARMCI VIA port of Global Arrays, MPICH-NT's
// and Madeleine's VI drivers) rely on besides VI semantics: legacy device names,
// host-name lookups, NULL ptag / memory attributes meaning the NIC's defaults,
// and a VipRecvWait(VIP_INFINITE) that blocks on a VI with nothing posted.
// Provider-neutral, like the rest of the suite.
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "loopback_fixture.hpp"
#include "vipl_test_util.hpp"

namespace {
using namespace vt;

// Sets an environment variable for one scope (the tests run on one thread).
class ScopedEnv {
public:
    ScopedEnv(const char *name, const std::string &value) : name_(name) {
        if (const char *old = std::getenv(name)) {
            had_ = true;
            old_ = old;
        }
        setenv(name, value.c_str(), 1);
    }
    ~ScopedEnv() {
        if (had_) setenv(name_, old_.c_str(), 1);
        else unsetenv(name_);
    }

private:
    const char *name_;
    bool had_ = false;
    std::string old_;
};

std::string default_provider() {
    const char *p = std::getenv("VIPL_PROVIDER");
    return p && *p ? p : "nicfw";
}

std::string host_name() {
    char b[256] = {};
    gethostname(b, sizeof b - 1);
    return b;
}
std::string first_label(const std::string &n) { return n.substr(0, n.find('.')); }
// a + b without operator+ (GCC 12 warns falsely, -Wrestrict, on some chains of it)
std::string cat(std::string a, const std::string &b) { return a.append(b); }

std::vector<uint8_t> my_host() {
    return {nic_attr().LocalNicAddress, nic_attr().LocalNicAddress + nic_attr().NicAddressLen};
}
std::string my_rank_text() { return std::to_string(std::max(0, VipxNicRank(nic()))); }

// ---- item 7: device names ------------------------------------------------------------

TEST(LegacyDevice, MviaAndClanNamesOpenTheDefaultProvider) {
    for (const char *name : {"/dev/via_lo", "/dev/via_eth0", "/dev/via_eth1", "/dev/clanvi0", "clanvi0"}) {
        VIP_NIC_HANDLE h = nullptr;
        VT_ASSERT_OK(VipOpenNic(name, &h)) << name;
        VIP_NIC_ATTRIBUTES a;
        VT_EXPECT_OK(VipQueryNic(h, &a));
        EXPECT_STREQ(a.Name, nic_attr().Name) << name << " opened another device than VipOpenNic(NULL)";
        VT_EXPECT_OK(VipCloseNic(h)) << name;
    }
    VIP_NIC_HANDLE h = nullptr;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipOpenNic("/dev/not_a_vi_device", &h));
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipOpenNic("/dev/via", &h)) << "no device part";
}

TEST(LegacyDevice, MapVariableOverridesTheDefaultMapping) {
    ScopedEnv e("VIPL_DEVICE_MAP", "/dev/via_eth0=no_such_device0, /dev/my_vi = " + default_provider());
    VIP_NIC_HANDLE h = nullptr;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipOpenNic("/dev/via_eth0", &h)) << "the map sends it to a missing device";
    VT_ASSERT_OK(VipOpenNic("/dev/my_vi", &h));
    VT_EXPECT_OK(VipCloseNic(h));
    VT_ASSERT_OK(VipOpenNic("/dev/via_lo", &h)) << "names the map does not list keep the default mapping";
    VT_EXPECT_OK(VipCloseNic(h));
}

// ---- item 8: name service ------------------------------------------------------------

TEST(LegacyNames, ThisHostsNamesResolveToThisNic) {
    VT_ASSERT_OK(VipNSInit(nic(), nullptr));
    const std::string h = host_name(), s = first_label(h);
    std::string upper = s;
    for (char &c : upper) c = char(std::toupper((unsigned char)c));
    std::vector<std::string> names = {h, s, upper, "localhost", cat(h, "#" + my_rank_text())};
    if (s == h) names.push_back(cat(s, ".some.domain")); // a domain added to a short host name
    for (const std::string &n : names) {
        NetAddr a;
        std::string name = n;
        VT_ASSERT_OK(VipNSGetHostByName(nic(), name.data(), a.get(), 0)) << name;
        EXPECT_EQ(a.host(), my_host()) << name;
        EXPECT_EQ(a.get()->DiscriminatorLen, 0) << name;
    }
    NetAddr a;
    std::string name = h;
    VT_EXPECT_RC(VIP_ERROR_NAMESERVICE, VipNSGetHostByName(nic(), name.data(), a.get(), 1))
        << "one process on this host: NameIndex 1 names nobody";
    std::string other_rank = cat(h, "#" + std::to_string(std::max(0, VipxNicRank(nic())) + 1000));
    VT_EXPECT_RC(VIP_ERROR_NAMESERVICE, VipNSGetHostByName(nic(), other_rank.data(), a.get(), 0));
    VT_EXPECT_OK(VipNSShutdown(nic()));
}

TEST(LegacyNames, AddressMapsBackToTheHostName) {
    NetAddr mine(nic_attr().LocalNicAddress, nic_attr().NicAddressLen, "");
    char back[256] = {};
    VIP_ULONG len = sizeof back;
    VT_ASSERT_OK(VipNSGetHostByAddr(nic(), mine.get(), back, &len));
    EXPECT_EQ(len, std::strlen(back) + 1);
    EXPECT_EQ(first_label(back), first_label(host_name())) << back;
    NetAddr again;
    VT_ASSERT_OK(VipNSGetHostByName(nic(), back, again.get(), 0));
    EXPECT_EQ(again.host(), my_host()) << back;

    VIP_ULONG small = 2;
    VT_EXPECT_RC(VIP_INVALID_PARAMETER, VipNSGetHostByAddr(nic(), mine.get(), back, &small));
    EXPECT_EQ(small, std::strlen(back) + 1) << "a short buffer is told the length it needs";
}

TEST(LegacyNames, HostsMapNamesThisRanksHost) {
    // What the launcher sets: one host name per rank, "name*k" for k ranks.
    std::string map;
    for (int r = 0; r <= std::max(0, VipxNicRank(nic())); r++) map.append(r ? ",alpha-node" : "alpha-node");
    ScopedEnv e("VIASTACK_HOSTS", map);
    for (std::string n : {"alpha-node", "ALPHA-node.example.org", "localhost"}) {
        NetAddr a;
        VT_ASSERT_OK(VipNSGetHostByName(nic(), n.data(), a.get(), 0)) << n;
        EXPECT_EQ(a.host(), my_host()) << n;
    }
    NetAddr mine(nic_attr().LocalNicAddress, nic_attr().NicAddressLen, "");
    char back[256] = {};
    VIP_ULONG len = sizeof back;
    VT_ASSERT_OK(VipNSGetHostByAddr(nic(), mine.get(), back, &len));
    EXPECT_STREQ(back, "alpha-node");
}

// ---- item 9: defaults ------------------------------------------------------------------

// Registered memory with NULL attributes holding two descriptors and two buffers.
struct NullAttrMem {
    uint8_t *p = nullptr;
    VIP_MEM_HANDLE mh = 0;
    VIP_RETURN rc = VIP_ERROR_RESOURCE;
    NullAttrMem() {
        p = static_cast<uint8_t *>(std::aligned_alloc(4096, 8192));
        std::memset(p, 0, 8192);
        rc = VipRegisterMem(nic(), p, 8192, nullptr, &mh);
    }
    ~NullAttrMem() {
        if (rc == VIP_SUCCESS) VipDeregisterMem(nic(), p, mh);
        std::free(p);
    }
    VIP_DESCRIPTOR *d(int i) const { return reinterpret_cast<VIP_DESCRIPTOR *>(p + 64 * 4 * i); }
    uint8_t *buf(int i) const { return p + 4096 + 1024 * i; }
};

class LegacyDefaults : public LoopbackTest {};

TEST_P(LegacyDefaults, NullPtagAndNullMemAttributesMeanTheNicDefaults) {
    VIP_VI_ATTRIBUTES at = vi_attr(level(), nullptr); // Ptag NULL, as after bzero()
    connect(at, at);
    if (HasFatalFailure()) return;
    VIP_VI_STATE st;
    VIP_VI_ATTRIBUTES q;
    VIP_BOOLEAN se, re;
    VT_ASSERT_OK(VipQueryVi(a->h(), &st, &q, &se, &re));
    EXPECT_NE(q.Ptag, nullptr) << "the VI should report the NIC's default tag";

    NullAttrMem m;
    VT_ASSERT_OK(m.rc) << "VipRegisterMem with NULL MemAttributes";
    VIP_MEM_ATTRIBUTES ma;
    VT_ASSERT_OK(VipQueryMem(nic(), m.p, m.mh, &ma));
    EXPECT_EQ(ma.Ptag, q.Ptag) << "memory and VIs share the default tag";
    EXPECT_EQ(ma.EnableRdmaWrite, VIP_FALSE);
    EXPECT_EQ(ma.EnableRdmaRead, VIP_FALSE);

    fill_pattern(m.buf(0), 256, 7);
    fill_recv(m.d(1), {{m.buf(1), m.mh, 256}});
    VT_ASSERT_OK(VipPostRecv(b->h(), m.d(1), m.mh));
    fill_send(m.d(0), {{m.buf(0), m.mh, 256}});
    VT_ASSERT_OK(VipPostSend(a->h(), m.d(0), m.mh));
    VIP_DESCRIPTOR *s = wait_send(a->h());
    ASSERT_EQ(s, m.d(0));
    EXPECT_TRUE(status_is(s->CS.Status, VIP_STATUS_OP_SEND, 0));
    VIP_DESCRIPTOR *r = wait_recv(b->h());
    ASSERT_EQ(r, m.d(1));
    EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0));
    EXPECT_EQ(check_pattern(m.buf(1), 256, 7), -1);
}

TEST_P(LegacyDefaults, DefaultTagDoesNotKeepTheNicOpen) {
    VIP_NIC_HANDLE h = nullptr;
    VT_ASSERT_OK(VipOpenNic(nullptr, &h));
    VIP_VI_ATTRIBUTES at = vi_attr(level(), nullptr);
    VIP_VI_HANDLE vi = nullptr;
    VT_ASSERT_OK(VipCreateVi(h, &at, nullptr, nullptr, &vi));
    VT_EXPECT_RC(VIP_INVALID_STATE, VipCloseNic(h)) << "a VI still exists";
    VIP_VI_STATE st;
    VIP_VI_ATTRIBUTES q;
    VIP_BOOLEAN se, re;
    VT_ASSERT_OK(VipQueryVi(vi, &st, &q, &se, &re));
    VT_EXPECT_RC(VIP_INVALID_STATE, VipDestroyPtag(h, q.Ptag)) << "the default tag belongs to the NIC handle";
    VT_ASSERT_OK(VipDestroyVi(vi));
    VT_EXPECT_OK(VipCloseNic(h)) << "the default tag alone must not keep the handle open";
}

TEST_P(LegacyDefaults, RecvWaitInfiniteBlocksUntilAReceiveIsPostedAndCompletes) {
    connect_default();
    if (HasFatalFailure()) return;
    Mem src(256, tag->h()), dst(256, tag->h());
    fill_pattern(src.p(), 256, 11);
    // The receive is posted by another thread while this one is already waiting,
    // as the receive threads of cLAN-era drivers do.
    std::thread poster([&] {
        // The pause is the scenario: the waiter must be blocked in VipRecvWait
        // before anything is posted (no state shows that a thread sleeps).
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        fill_recv(d(1), {{dst.p(), dst.mh(), 256}});
        EXPECT_EQ(VipPostRecv(b->h(), d(1), dmh()), VIP_SUCCESS);
        fill_send(d(0), {{src.p(), src.mh(), 256}});
        EXPECT_EQ(VipPostSend(a->h(), d(0), dmh()), VIP_SUCCESS);
        EXPECT_EQ(wait_send(a->h()), d(0));
    });
    auto t0 = Clock::now();
    VIP_DESCRIPTOR *r = nullptr;
    VIP_RETURN rc = VipRecvWait(b->h(), VIP_INFINITE, &r);
    long e = elapsed_ms(t0);
    poster.join();
    VT_ASSERT_OK(rc) << "VipRecvWait(VIP_INFINITE) on an empty receive queue";
    ASSERT_EQ(r, d(1));
    EXPECT_TRUE(status_is(r->CS.Status, VIP_STATUS_OP_RECEIVE, 0));
    EXPECT_GE(e, 80) << "returned before anything was posted";
    EXPECT_EQ(check_pattern(dst.p(), 256, 11), -1);
}

TEST_P(LegacyDefaults, RecvWaitOnAnEmptyQueueEndsWhenTheViBreaks) {
    if (!reliable()) GTEST_SKIP() << "an unreliable VI stays connected after the peer leaves";
    connect_default();
    if (HasFatalFailure()) return;
    std::thread breaker([&] {
        // The pause is the scenario: the wait must already block when the VI breaks.
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        EXPECT_EQ(VipDisconnect(a->h()), VIP_SUCCESS);
    });
    VIP_DESCRIPTOR *r = nullptr;
    auto t0 = Clock::now();
    VIP_RETURN rc = VipRecvWait(b->h(), 20000, &r);
    long e = elapsed_ms(t0);
    breaker.join();
    VT_EXPECT_RC(VIP_INVALID_STATE, rc) << "nothing was posted and the connection broke";
    EXPECT_GE(e, 80);
    EXPECT_LT(e, 15000) << "the wait sat out its timeout";
}

VT_INSTANTIATE_LEVELS(LegacyDefaults);

// ---- item 10: header names -----------------------------------------------------------

TEST(LegacyHeader, ReturnCodesOfLaterHeadersHaveNames) {
    EXPECT_EQ(int(VIP_NOT_REACHABLE), 15);
    EXPECT_EQ(int(VIP_ERROR_NOT_SUPPORTED), 16);
    EXPECT_STREQ(VipxReturnString(VIP_NOT_REACHABLE), "VIP_NOT_REACHABLE");
    EXPECT_STREQ(VipxReturnString(VIP_ERROR_NOT_SUPPORTED), "VIP_ERROR_NOT_SUPPORTED");
}

} // namespace
