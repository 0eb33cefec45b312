// vipl_bad_input_test - bad input to every call of vipl.h, written as a program
// that read only the VI Architecture Specification would call it (public header
// only): invalid, stale and foreign handles, NULL pointers, zero and oversize
// lengths, unregistered and misaligned descriptors, descriptors reposted while
// in flight, CQ overflow.  Each test names its rows in docs/bad-input.md.
//
// Provider-neutral: the NIC is VipOpenNic(NULL), so $VIPL_PROVIDER picks it;
// ctest runs the binary over nicfw and over the fake provider.
#include <gtest/gtest.h>

#include <chrono>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "vipl.h"

namespace {

constexpr VIP_ULONG kWaitMs = 5000;

const char *rc_name(VIP_RETURN rc) { return VipxReturnString(rc); }
::testing::AssertionResult rc_is(VIP_RETURN want, VIP_RETURN got, const char *expr) {
    if (got == want) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << expr << " returned " << rc_name(got) << ", expected " << rc_name(want);
}
#define EXPECT_RC(want, call) EXPECT_TRUE(rc_is((want), (call), #call))
#define ASSERT_OK(call) ASSERT_TRUE(rc_is(VIP_SUCCESS, (call), #call))

// A handle value no provider hands out.
VIP_PVOID forged() { return reinterpret_cast<VIP_PVOID>(uintptr_t(0x5eed0000beef0080ull)); }

// Registered, VIP_DESCRIPTOR_ALIGNMENT-aligned memory.
struct Buffer {
    VIP_NIC_HANDLE nic = nullptr;
    uint8_t *p = nullptr;
    size_t len = 0;
    VIP_MEM_HANDLE mh = 0;
    bool registered = false;
    Buffer(VIP_NIC_HANDLE n, size_t bytes, VIP_PROTECTION_HANDLE tag, bool rdma_write = false) : nic(n), len(bytes) {
        p = static_cast<uint8_t *>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096));
        std::memset(p, 0, bytes);
        VIP_MEM_ATTRIBUTES ma = {tag, rdma_write ? VIP_TRUE : VIP_FALSE, VIP_FALSE};
        registered = VipRegisterMem(nic, p, bytes, &ma, &mh) == VIP_SUCCESS;
    }
    ~Buffer() {
        if (registered) VipDeregisterMem(nic, p, mh);
        std::free(p);
    }
    VIP_DESCRIPTOR *desc(int i) { return reinterpret_cast<VIP_DESCRIPTOR *>(p + 128 * i); }
};

// One data segment (or none for len 0) in a send or receive descriptor.
void fill(VIP_DESCRIPTOR *d, void *buf, VIP_MEM_HANDLE mh, VIP_UINT32 len) {
    std::memset(d, 0, 128);
    d->CS.Control = VIP_CONTROL_OP_SENDRECV;
    d->CS.SegCount = len ? 1 : 0;
    d->CS.Length = len;
    if (len) {
        d->DS[0].Local.Data.Address = buf;
        d->DS[0].Local.Handle = mh;
        d->DS[0].Local.Length = len;
    }
}

// The error callback may run on a provider thread.
struct ErrorLog {
    std::mutex mu;
    std::vector<VIP_ERROR_DESCRIPTOR> seen;
    std::vector<VIP_ERROR_DESCRIPTOR> copy() {
        std::lock_guard<std::mutex> g(mu);
        return seen;
    }
};
void on_error(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e) {
    auto *log = static_cast<ErrorLog *>(ctx);
    std::lock_guard<std::mutex> g(log->mu);
    log->seen.push_back(*e);
}

class Vipl : public ::testing::Test {
protected:
    VIP_NIC_HANDLE nic = nullptr;
    VIP_NIC_ATTRIBUTES attr{};
    VIP_PROTECTION_HANDLE tag = nullptr;
    VIP_RELIABILITY_LEVEL level = VIP_SERVICE_UNRELIABLE;

    void SetUp() override {
        ASSERT_OK(VipOpenNic(nullptr, &nic));
        ASSERT_OK(VipQueryNic(nic, &attr));
        ASSERT_OK(VipCreatePtag(nic, &tag));
        if (attr.ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_DELIVERY) level = VIP_SERVICE_RELIABLE_DELIVERY;
    }
    void TearDown() override {
        if (tag) { EXPECT_RC(VIP_SUCCESS, VipDestroyPtag(nic, tag)); }
        // Everything a test made must be gone: VipCloseNic refuses otherwise.
        EXPECT_RC(VIP_SUCCESS, VipCloseNic(nic));
    }
    VIP_VI_ATTRIBUTES vi_attr(bool rdma_write = false) const {
        VIP_VI_ATTRIBUTES a{};
        a.ReliabilityLevel = level;
        a.MaxTransferSize = attr.MaxTransferSize < 65536 ? attr.MaxTransferSize : 65536;
        a.QoS = nullptr;
        a.Ptag = tag;
        a.EnableRdmaWrite = rdma_write ? VIP_TRUE : VIP_FALSE;
        a.EnableRdmaRead = VIP_FALSE;
        return a;
    }
    VIP_VI_HANDLE make_vi(VIP_CQ_HANDLE scq = nullptr, VIP_CQ_HANDLE rcq = nullptr, bool rdma_write = false) {
        VIP_VI_ATTRIBUTES a = vi_attr(rdma_write);
        VIP_VI_HANDLE v = nullptr;
        EXPECT_RC(VIP_SUCCESS, VipCreateVi(nic, &a, scq, rcq, &v));
        return v;
    }
    // This NIC's address with a discriminator.
    std::vector<uint8_t> address(const std::string &disc) const {
        std::vector<uint8_t> a(VIP_NET_ADDRESS_SIZE(attr.NicAddressLen, disc.size()));
        auto *na = reinterpret_cast<VIP_NET_ADDRESS *>(a.data());
        na->HostAddressLen = attr.NicAddressLen;
        na->DiscriminatorLen = VIP_UINT16(disc.size());
        std::memcpy(na->HostAddress, attr.LocalNicAddress, attr.NicAddressLen);
        std::memcpy(na->HostAddress + attr.NicAddressLen, disc.data(), disc.size());
        return a;
    }
    static VIP_NET_ADDRESS *na(std::vector<uint8_t> &v) { return reinterpret_cast<VIP_NET_ADDRESS *>(v.data()); }
    std::string disc(const char *what) {
        static int n = 0;
        return "bad" + std::to_string(getpid()) + what + std::to_string(n++);
    }
    // Connects two VIs of this NIC to each other, peer to peer.
    void connect(VIP_VI_HANDLE a, VIP_VI_HANDLE b) {
        std::string base = disc("lb");
        auto la = address(base + "a"), lb = address(base + "b");
        ASSERT_OK(VipConnectPeerRequest(a, na(la), na(lb), kWaitMs));
        ASSERT_OK(VipConnectPeerRequest(b, na(lb), na(la), kWaitMs));
        VIP_VI_ATTRIBUTES r;
        ASSERT_OK(VipConnectPeerWait(a, &r));
        ASSERT_OK(VipConnectPeerWait(b, &r));
    }
    VIP_VI_STATE state(VIP_VI_HANDLE v) {
        VIP_VI_STATE st = VIP_STATE_ERROR;
        VIP_VI_ATTRIBUTES a;
        VIP_BOOLEAN se, re;
        EXPECT_RC(VIP_SUCCESS, VipQueryVi(v, &st, &a, &se, &re));
        return st;
    }
    // Disconnects (flushing what is posted), reaps every descriptor, destroys.
    void teardown_vi(VIP_VI_HANDLE v) {
        VipDisconnect(v);
        VIP_DESCRIPTOR *d;
        while (VipSendWait(v, 200, &d) == VIP_SUCCESS || VipRecvWait(v, 200, &d) == VIP_SUCCESS) {}
        EXPECT_RC(VIP_SUCCESS, VipDestroyVi(v));
    }
};

// ---- NIC --------------------------------------------------------------------
TEST_F(Vipl, OpenNicBadArguments) {
    EXPECT_RC(VIP_INVALID_PARAMETER, VipOpenNic(nullptr, nullptr));
    VIP_NIC_HANDLE h = nullptr;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipOpenNic("no-such-device-badinput", &h));
    std::string long_name(4096, 'x');
    EXPECT_RC(VIP_INVALID_PARAMETER, VipOpenNic(long_name.c_str(), &h));
}

TEST_F(Vipl, CloseNicInvalidStaleAndBusy) {
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCloseNic(nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCloseNic(forged()));
    VIP_NIC_HANDLE second = nullptr;
    ASSERT_OK(VipOpenNic(nullptr, &second));
    VIP_CQ_HANDLE cq = nullptr;
    ASSERT_OK(VipCreateCQ(second, 4, &cq));
    EXPECT_RC(VIP_INVALID_STATE, VipCloseNic(second)) << "a CQ made through it still exists";
    ASSERT_OK(VipDestroyCQ(cq));
    ASSERT_OK(VipCloseNic(second));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCloseNic(second)) << "closed twice";
    VIP_NIC_ATTRIBUTES a;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryNic(second, &a)) << "stale NIC handle";
    VIP_PROTECTION_HANDLE p;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCreatePtag(second, &p));
}

TEST_F(Vipl, QueryNicBadArguments) {
    VIP_NIC_ATTRIBUTES a;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryNic(nic, nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryNic(tag, &a)) << "a ptag handle passed as a NIC";
}

// ---- handles of the wrong kind --------------------------------------------------
TEST_F(Vipl, HandleOfAnotherKindIsRejected) {
    VIP_CQ_HANDLE cq = nullptr;
    ASSERT_OK(VipCreateCQ(nic, 4, &cq));
    VIP_VI_HANDLE vi = make_vi();
    ASSERT_NE(vi, nullptr);
    VIP_DESCRIPTOR *d = nullptr;
    VIP_VI_HANDLE v2;
    VIP_BOOLEAN rq;
    VIP_NIC_ATTRIBUTES na_;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipSendDone(cq, &d)) << "a CQ passed as a VI";
    EXPECT_RC(VIP_INVALID_PARAMETER, VipPostRecv(nic, nullptr, 0)) << "a NIC passed as a VI";
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCQDone(vi, &v2, &rq)) << "a VI passed as a CQ";
    EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryNic(vi, &na_)) << "a VI passed as a NIC";
    EXPECT_RC(VIP_INVALID_PARAMETER, VipDestroyCQ(vi));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipDestroyVi(cq));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectAccept(vi, vi)) << "a VI passed as a connection";
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectReject(cq));
    VIP_VI_ATTRIBUTES a = vi_attr();
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCreateVi(nic, &a, vi, nullptr, &v2)) << "a VI passed as a send CQ";
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCreateVi(nic, &a, nullptr, forged(), &v2)) << "forged receive CQ";
    a.Ptag = cq;
    VIP_RETURN rc = VipCreateVi(nic, &a, nullptr, nullptr, &v2);
    EXPECT_TRUE(rc == VIP_INVALID_PTAG || rc == VIP_INVALID_PARAMETER) << "a CQ passed as a ptag: " << rc_name(rc);
    EXPECT_RC(VIP_SUCCESS, VipDestroyVi(vi));
    EXPECT_RC(VIP_SUCCESS, VipDestroyCQ(cq));
}

// Objects made through one NIC handle, used with another handle of the same device.
TEST_F(Vipl, ObjectsOfAnotherNicHandleAreRejected) {
    VIP_NIC_HANDLE other = nullptr;
    ASSERT_OK(VipOpenNic(nullptr, &other));
    VIP_PROTECTION_HANDLE other_tag = nullptr;
    ASSERT_OK(VipCreatePtag(other, &other_tag));
    VIP_CQ_HANDLE other_cq = nullptr;
    ASSERT_OK(VipCreateCQ(other, 4, &other_cq));
    Buffer mine(nic, 4096, tag);
    ASSERT_TRUE(mine.registered);

    alignas(64) static uint8_t buf[4096];
    VIP_MEM_ATTRIBUTES ma = {other_tag, VIP_FALSE, VIP_FALSE};
    VIP_MEM_HANDLE mh;
    VIP_RETURN rc = VipRegisterMem(nic, buf, sizeof buf, &ma, &mh);
    EXPECT_TRUE(rc == VIP_INVALID_PTAG || rc == VIP_INVALID_PARAMETER)
        << "registering under another NIC handle's ptag returned " << rc_name(rc);
    if (rc == VIP_SUCCESS) VipDeregisterMem(nic, buf, mh);
    VIP_VI_ATTRIBUTES a = vi_attr();
    a.Ptag = other_tag;
    VIP_VI_HANDLE v = nullptr;
    rc = VipCreateVi(nic, &a, nullptr, nullptr, &v);
    EXPECT_TRUE(rc == VIP_INVALID_PTAG || rc == VIP_INVALID_PARAMETER)
        << "a VI under another NIC handle's ptag: " << rc_name(rc);
    if (rc == VIP_SUCCESS) VipDestroyVi(v);
    a = vi_attr();
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCreateVi(nic, &a, other_cq, nullptr, &v))
        << "a VI bound to another NIC handle's CQ";
    rc = VipDestroyPtag(nic, other_tag);
    EXPECT_TRUE(rc == VIP_INVALID_PTAG || rc == VIP_INVALID_PARAMETER) << rc_name(rc);
    EXPECT_RC(VIP_INVALID_PARAMETER, VipDeregisterMem(other, mine.p, mine.mh))
        << "deregistering a region through another NIC handle";
    VIP_MEM_ATTRIBUTES q;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryMem(other, mine.p, mine.mh, &q));
    ma = {other_tag, VIP_FALSE, VIP_FALSE};
    EXPECT_RC(VIP_INVALID_PARAMETER, VipSetMemAttributes(other, mine.p, mine.mh, &ma));

    ASSERT_OK(VipDestroyCQ(other_cq));
    ASSERT_OK(VipDestroyPtag(other, other_tag));
    ASSERT_OK(VipCloseNic(other));
}

// ---- protection tags and memory ---------------------------------------------------
TEST_F(Vipl, PtagBadArguments) {
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCreatePtag(nic, nullptr));
    VIP_PROTECTION_HANDLE p;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCreatePtag(forged(), &p));
    VIP_RETURN rc = VipDestroyPtag(nic, forged());
    EXPECT_TRUE(rc == VIP_INVALID_PTAG || rc == VIP_INVALID_PARAMETER) << rc_name(rc);
    rc = VipDestroyPtag(nic, nullptr);
    EXPECT_TRUE(rc == VIP_INVALID_PTAG || rc == VIP_INVALID_PARAMETER || rc == VIP_INVALID_STATE) << rc_name(rc);
    EXPECT_RC(VIP_INVALID_PARAMETER, VipDestroyPtag(forged(), tag));
}

TEST_F(Vipl, RegisterMemBadArguments) {
    alignas(64) static uint8_t buf[8192];
    VIP_MEM_ATTRIBUTES ma = {tag, VIP_FALSE, VIP_FALSE};
    VIP_MEM_HANDLE mh;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipRegisterMem(forged(), buf, 64, &ma, &mh));
    // Longer than the NIC registers in one region.
    VIP_RETURN rc = VipRegisterMem(nic, buf, attr.MaxRegisterBytes + 1, &ma, &mh);
    EXPECT_TRUE(rc == VIP_INVALID_PARAMETER || rc == VIP_ERROR_RESOURCE)
        << "a region over MaxRegisterBytes returned " << rc_name(rc);
    if (rc == VIP_SUCCESS) VipDeregisterMem(nic, buf, mh);
    // A range that wraps around the end of the address space.
    rc = VipRegisterMem(nic, reinterpret_cast<void *>(~uintptr_t(0) - 63), 4096, &ma, &mh);
    EXPECT_TRUE(rc == VIP_INVALID_PARAMETER || rc == VIP_ERROR_RESOURCE) << "wrapping range: " << rc_name(rc);
    if (rc == VIP_SUCCESS) VipDeregisterMem(nic, reinterpret_cast<void *>(~uintptr_t(0) - 63), mh);
    ma.Ptag = forged();
    EXPECT_RC(VIP_INVALID_PTAG, VipRegisterMem(nic, buf, 64, &ma, &mh));
}

TEST_F(Vipl, QueryAndSetMemBadArguments) {
    Buffer m(nic, 4096, tag);
    ASSERT_TRUE(m.registered);
    VIP_MEM_ATTRIBUTES q;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryMem(nic, m.p, m.mh, nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryMem(forged(), m.p, m.mh, &q));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipSetMemAttributes(nic, m.p, m.mh, nullptr));
    VIP_MEM_ATTRIBUTES s = {tag, VIP_TRUE, VIP_FALSE};
    EXPECT_RC(VIP_INVALID_PARAMETER, VipSetMemAttributes(nic, m.p, m.mh ^ 0x00990000u, &s));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipSetMemAttributes(forged(), m.p, m.mh, &s));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipDeregisterMem(forged(), m.p, m.mh));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipDeregisterMem(nic, nullptr, m.mh));
    // Nothing changed.
    ASSERT_OK(VipQueryMem(nic, m.p, m.mh, &q));
    EXPECT_EQ(q.EnableRdmaWrite, VIP_FALSE);
}

// ---- VIs ----------------------------------------------------------------------------
TEST_F(Vipl, CreateViBadArguments) {
    VIP_VI_ATTRIBUTES a = vi_attr();
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCreateVi(nic, &a, nullptr, nullptr, nullptr));
    VIP_VI_HANDLE v;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCreateVi(forged(), &a, nullptr, nullptr, &v));
    a.MaxTransferSize = 0;
    EXPECT_RC(VIP_INVALID_MTU, VipCreateVi(nic, &a, nullptr, nullptr, &v));
    VIP_CQ_HANDLE cq = nullptr;
    ASSERT_OK(VipCreateCQ(nic, 4, &cq));
    ASSERT_OK(VipDestroyCQ(cq));
    a = vi_attr();
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCreateVi(nic, &a, cq, nullptr, &v)) << "a destroyed CQ";
}

TEST_F(Vipl, QueryAndSetViBadArguments) {
    VIP_VI_HANDLE v = make_vi();
    ASSERT_NE(v, nullptr);
    VIP_VI_STATE st;
    VIP_VI_ATTRIBUTES a;
    VIP_BOOLEAN se, re;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryVi(v, nullptr, &a, &se, &re));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryVi(v, &st, nullptr, &se, &re));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryVi(v, &st, &a, nullptr, &re));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryVi(v, &st, &a, &se, nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipSetViAttributes(v, nullptr));
    a = vi_attr();
    EXPECT_RC(VIP_INVALID_PARAMETER, VipSetViAttributes(forged(), &a));
    a.Ptag = forged();
    EXPECT_RC(VIP_INVALID_PTAG, VipSetViAttributes(v, &a));
    a = vi_attr();
    a.QoS = &a;
    EXPECT_RC(VIP_INVALID_QOS, VipSetViAttributes(v, &a));
    VIP_VI_HANDLE w = make_vi();
    connect(v, w);
    a = vi_attr();
    EXPECT_RC(VIP_INVALID_STATE, VipSetViAttributes(v, &a)) << "attributes of a connected VI";
    teardown_vi(v);
    teardown_vi(w);
}

// ---- connections ----------------------------------------------------------------------
TEST_F(Vipl, ConnectCallsBadArguments) {
    VIP_VI_HANDLE v = make_vi();
    ASSERT_NE(v, nullptr);
    auto local = address(disc("cw")), remote = address(disc("cr"));
    std::vector<uint8_t> out(VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, VIP_MAX_DISCRIMINATOR_LEN));
    VIP_VI_ATTRIBUTES ra;
    VIP_CONN_HANDLE ch;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectWait(forged(), na(local), 0, na(out), &ra, &ch));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectWait(nic, nullptr, 0, na(out), &ra, &ch));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectWait(nic, na(local), 0, nullptr, &ra, &ch));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectWait(nic, na(local), 0, na(out), nullptr, &ch));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectWait(nic, na(local), 0, na(out), &ra, nullptr));
    // A discriminator length past the header's maximum.
    std::vector<uint8_t> huge(VIP_NET_ADDRESS_SIZE(attr.NicAddressLen, 4096));
    na(huge)->HostAddressLen = attr.NicAddressLen;
    na(huge)->DiscriminatorLen = 4096;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectWait(nic, na(huge), 0, na(out), &ra, &ch));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectRequest(v, na(local), na(huge), 0, &ra));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectRequest(forged(), na(local), na(remote), 0, &ra));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectRequest(v, na(local), nullptr, 0, &ra));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectRequest(v, na(local), na(remote), 0, nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectPeerRequest(forged(), na(local), na(remote), 0));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectPeerRequest(v, na(local), nullptr, 0));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectPeerRequest(v, na(huge), na(remote), 0));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectPeerDone(forged(), &ra));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectPeerDone(v, nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectPeerWait(forged(), &ra));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectPeerWait(v, nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipDisconnect(forged()));
    // Done/Wait with no peer request outstanding: nothing to wait for.
    EXPECT_RC(VIP_INVALID_STATE, VipConnectPeerDone(v, &ra));
    EXPECT_RC(VIP_INVALID_STATE, VipConnectPeerWait(v, &ra));
    EXPECT_EQ(state(v), VIP_STATE_IDLE);
    EXPECT_RC(VIP_SUCCESS, VipDestroyVi(v));
}

// The connection extensions (VipxConnect*): the spec calls' checks, plus the
// private data's length and buffer.  Nothing is sent when a call is refused.
TEST_F(Vipl, ConnectExtensionsBadArguments) {
    VIP_VI_HANDLE v = make_vi();
    ASSERT_NE(v, nullptr);
    auto local = address(disc("xw")), remote = address(disc("xr"));
    std::vector<uint8_t> out(VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, VIP_MAX_DISCRIMINATOR_LEN));
    uint8_t data[VIPX_CM_DATA_MAX + 1] = {};
    VIP_ULONG len = sizeof data;
    VIP_VI_ATTRIBUTES ra;
    VIP_CONN_HANDLE ch;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectRequestStart(forged(), na(local), na(remote), 0, data, 8));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectRequestStart(v, na(local), nullptr, 0, data, 8));
    std::vector<uint8_t> huge(VIP_NET_ADDRESS_SIZE(attr.NicAddressLen, 4096));
    na(huge)->HostAddressLen = attr.NicAddressLen;
    na(huge)->DiscriminatorLen = 4096;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectRequestStart(v, na(local), na(huge), 0, data, 8));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectWaitData(nic, na(huge), 0, na(out), &ra, &ch, data, &len));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectRequestStart(v, na(local), na(remote), 0, data, VIPX_CM_DATA_MAX + 1));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectRequestStart(v, na(local), na(remote), 0, nullptr, 1));
    EXPECT_EQ(state(v), VIP_STATE_IDLE) << "a refused request starts nothing";
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectRequestDone(forged(), &ra, data, &len));
    EXPECT_RC(VIP_INVALID_STATE, VipxConnectRequestDone(v, &ra, data, &len));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectWaitData(forged(), na(local), 0, na(out), &ra, &ch, data, &len));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectWaitData(nic, nullptr, 0, na(out), &ra, &ch, data, &len));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectWaitData(nic, na(local), 0, nullptr, &ra, &ch, data, &len));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectWaitData(nic, na(local), 0, na(out), nullptr, &ch, data, &len));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectWaitData(nic, na(local), 0, na(out), &ra, nullptr, data, &len));
    // Timeout 0 with nobody asking: at once.
    EXPECT_RC(VIP_TIMEOUT, VipxConnectWaitData(nic, na(local), 0, na(out), &ra, &ch, nullptr, nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectAcceptData(forged(), v, data, 8));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectRejectData(forged(), data, 8));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxConnectRejectData(v, data, 8)) << "a VI handle is not a connection";
    EXPECT_EQ(state(v), VIP_STATE_IDLE);
    EXPECT_RC(VIP_SUCCESS, VipDestroyVi(v));
}

// A connection request handle is used up by accept or reject.
TEST_F(Vipl, ConnHandleIsStaleAfterRejectAndAccept) {
    VIP_VI_HANDLE client = make_vi(), server = make_vi();
    ASSERT_NE(client, nullptr);
    ASSERT_NE(server, nullptr);
    std::string d = disc("srv");
    auto srv = address(d), cli = address(disc("cli"));
    VIP_RETURN client_rc = VIP_SUCCESS;
    std::thread t([&] {
        // One request, waited for as long as the server may take: both providers keep
        // a request until a VipConnectWait claims it. (Retrying after a short timeout
        // raced: the server could claim a request just as its client gave up on it,
        // reject that one, and leave the retry unanswered.)
        VIP_VI_ATTRIBUTES ra;
        client_rc = VipConnectRequest(client, na(cli), na(srv), kWaitMs, &ra);
    });
    std::vector<uint8_t> from(VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, VIP_MAX_DISCRIMINATOR_LEN));
    VIP_VI_ATTRIBUTES ra;
    VIP_CONN_HANDLE ch = nullptr;
    VIP_RETURN rc = VipConnectWait(nic, na(srv), kWaitMs, na(from), &ra, &ch);
    if (rc == VIP_SUCCESS) {
        ASSERT_OK(VipConnectReject(ch));
        EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectReject(ch)) << "rejected twice";
        EXPECT_RC(VIP_INVALID_PARAMETER, VipConnectAccept(ch, server)) << "accepted after reject";
    } else {
        ADD_FAILURE() << "VipConnectWait: " << rc_name(rc);
    }
    t.join();
    EXPECT_RC(VIP_REJECT, client_rc);
    EXPECT_EQ(state(server), VIP_STATE_IDLE);
    EXPECT_RC(VIP_SUCCESS, VipDestroyVi(client));
    EXPECT_RC(VIP_SUCCESS, VipDestroyVi(server));
}

// ---- data transfer --------------------------------------------------------------------
TEST_F(Vipl, PostBadDescriptorPointers) {
    VIP_VI_HANDLE a = make_vi(), b = make_vi();
    connect(a, b);
    Buffer ds(nic, 4096, tag);
    ASSERT_TRUE(ds.registered);
    EXPECT_RC(VIP_INVALID_PARAMETER, VipPostSend(a, nullptr, ds.mh));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipPostRecv(b, nullptr, ds.mh));
    auto *odd = reinterpret_cast<VIP_DESCRIPTOR *>(ds.p + 8);
    EXPECT_RC(VIP_INVALID_PARAMETER, VipPostSend(a, odd, ds.mh)) << "misaligned descriptor";
    EXPECT_RC(VIP_INVALID_PARAMETER, VipPostRecv(b, odd, ds.mh)) << "misaligned descriptor";
    EXPECT_RC(VIP_INVALID_PARAMETER, VipPostSend(forged(), ds.desc(0), ds.mh));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipPostRecv(forged(), ds.desc(0), ds.mh));
    VIP_DESCRIPTOR *d;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipSendDone(a, nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipRecvDone(a, nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipSendWait(a, 0, nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipRecvWait(a, 0, nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipSendWait(forged(), 0, &d));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipRecvWait(forged(), 0, &d));
    EXPECT_EQ(state(a), VIP_STATE_CONNECTED) << "refused posts change nothing";
    teardown_vi(a);
    teardown_vi(b);
}

// A descriptor the memory handle does not cover: the NIC cannot fetch it.
// It must not be used; the VI must survive for the unreliable level and the
// error must be visible (refused at post, or completed with an error).
TEST_F(Vipl, DescriptorOutsideItsMemoryHandle) {
    VIP_VI_HANDLE a = make_vi(), b = make_vi();
    connect(a, b);
    Buffer ds(nic, 4096, tag), data(nic, 4096, tag);
    ASSERT_TRUE(ds.registered && data.registered);
    // Descriptor in `ds`, memory handle of `data`.
    fill(ds.desc(0), data.p, data.mh, 16);
    VIP_RETURN rc = VipPostSend(a, ds.desc(0), data.mh);
    if (rc == VIP_SUCCESS) {
        VIP_DESCRIPTOR *d = nullptr;
        rc = VipSendWait(a, kWaitMs, &d);
        ASSERT_EQ(rc, VIP_SUCCESS) << "a descriptor outside its memory handle never completed: " << rc_name(rc);
        EXPECT_EQ(d, ds.desc(0));
        EXPECT_NE(d->CS.Status & VIP_STATUS_PROTECTION_ERROR, 0u)
            << "completed without a protection error: status 0x" << std::hex << d->CS.Status;
    } else {
        EXPECT_RC(VIP_INVALID_PARAMETER, rc);
    }
    // Forged descriptor memory handle.
    fill(ds.desc(1), data.p, data.mh, 16);
    rc = VipPostRecv(b, ds.desc(1), ds.mh ^ 0x00ab0000u);
    if (rc == VIP_SUCCESS) {
        VIP_DESCRIPTOR *d = nullptr;
        VipDisconnect(b);
        rc = VipRecvWait(b, kWaitMs, &d);
        ASSERT_EQ(rc, VIP_SUCCESS) << rc_name(rc);
        EXPECT_NE(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u);
    } else {
        EXPECT_RC(VIP_INVALID_PARAMETER, rc);
    }
    teardown_vi(a);
    teardown_vi(b);
}

// A descriptor in memory that is not registered at all (but mapped).
TEST_F(Vipl, UnregisteredDescriptor) {
    VIP_VI_HANDLE a = make_vi(), b = make_vi();
    connect(a, b);
    Buffer data(nic, 4096, tag);
    void *raw = std::aligned_alloc(4096, 4096);
    std::memset(raw, 0, 4096);
    auto *d0 = static_cast<VIP_DESCRIPTOR *>(raw);
    fill(d0, data.p, data.mh, 16);
    VIP_RETURN rc = VipPostSend(a, d0, data.mh);
    if (rc == VIP_SUCCESS) {
        VIP_DESCRIPTOR *d = nullptr;
        rc = VipSendWait(a, kWaitMs, &d);
        ASSERT_EQ(rc, VIP_SUCCESS) << "an unregistered descriptor never completed: " << rc_name(rc);
        EXPECT_NE(d->CS.Status & VIP_STATUS_PROTECTION_ERROR, 0u) << "status 0x" << std::hex << d->CS.Status;
    } else {
        EXPECT_RC(VIP_INVALID_PARAMETER, rc);
    }
    teardown_vi(a);
    teardown_vi(b);
    std::free(raw);
}

// Sends on a VI that is not connected.
TEST_F(Vipl, PostSendOnIdleVi) {
    VIP_VI_HANDLE a = make_vi();
    Buffer ds(nic, 4096, tag);
    fill(ds.desc(0), nullptr, 0, 0);
    EXPECT_RC(VIP_INVALID_STATE, VipPostSend(a, ds.desc(0), ds.mh));
    VIP_DESCRIPTOR *d;
    EXPECT_RC(VIP_NOT_DONE, VipSendDone(a, &d));
    EXPECT_RC(VIP_SUCCESS, VipDestroyVi(a));
}

// Zero-length messages are legal (a descriptor with no data segment).
TEST_F(Vipl, ZeroLengthSendIsDelivered) {
    VIP_VI_HANDLE a = make_vi(), b = make_vi();
    connect(a, b);
    Buffer ds(nic, 4096, tag), data(nic, 4096, tag);
    fill(ds.desc(0), data.p, data.mh, 64);
    ASSERT_OK(VipPostRecv(b, ds.desc(0), ds.mh));
    fill(ds.desc(1), nullptr, 0, 0);
    ASSERT_OK(VipPostSend(a, ds.desc(1), ds.mh));
    VIP_DESCRIPTOR *d = nullptr;
    ASSERT_OK(VipRecvWait(b, kWaitMs, &d));
    EXPECT_EQ(d, ds.desc(0));
    EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u);
    EXPECT_EQ(d->CS.Length, 0u);
    ASSERT_OK(VipSendWait(a, kWaitMs, &d));
    EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u);
    // A data segment of length 0 with a length-0 total is legal too.
    fill(ds.desc(2), data.p, data.mh, 0);
    ds.desc(2)->CS.SegCount = 1;
    ds.desc(2)->DS[0].Local.Data.Address = data.p;
    ds.desc(2)->DS[0].Local.Handle = data.mh;
    fill(ds.desc(3), data.p, data.mh, 64);
    ASSERT_OK(VipPostRecv(b, ds.desc(3), ds.mh));
    ASSERT_OK(VipPostSend(a, ds.desc(2), ds.mh));
    ASSERT_OK(VipRecvWait(b, kWaitMs, &d));
    EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u);
    ASSERT_OK(VipSendWait(a, kWaitMs, &d));
    EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u);
    teardown_vi(a);
    teardown_vi(b);
}

// A descriptor posted again while it is still on a work queue.
TEST_F(Vipl, DescriptorRepostedWhileInFlight) {
    VIP_VI_HANDLE a = make_vi(), b = make_vi();
    connect(a, b);
    Buffer ds(nic, 4096, tag), data(nic, 4096, tag);
    fill(ds.desc(0), data.p, data.mh, 64);
    ASSERT_OK(VipPostRecv(b, ds.desc(0), ds.mh));
    VIP_RETURN rc = VipPostRecv(b, ds.desc(0), ds.mh);
    EXPECT_RC(VIP_INVALID_PARAMETER, rc) << "a receive descriptor posted twice";
    // Exactly one message is received into it, and the queue holds it once.
    fill(ds.desc(1), data.p + 1024, data.mh, 8);
    ASSERT_OK(VipPostSend(a, ds.desc(1), ds.mh));
    VIP_DESCRIPTOR *d = nullptr;
    ASSERT_OK(VipRecvWait(b, kWaitMs, &d));
    EXPECT_EQ(d, ds.desc(0));
    EXPECT_RC(VIP_NOT_DONE, VipRecvDone(b, &d)) << "the reposted descriptor completed twice";
    ASSERT_OK(VipSendWait(a, kWaitMs, &d));
    // A send posted again before it was reaped (complete or not).
    fill(ds.desc(2), data.p, data.mh, 8);
    fill(ds.desc(3), data.p + 64, data.mh, 64);
    ASSERT_OK(VipPostRecv(b, ds.desc(3), ds.mh));
    ASSERT_OK(VipPostSend(a, ds.desc(2), ds.mh));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipPostSend(a, ds.desc(2), ds.mh)) << "a send descriptor posted twice";
    ASSERT_OK(VipRecvWait(b, kWaitMs, &d));
    ASSERT_OK(VipSendWait(a, kWaitMs, &d));
    EXPECT_RC(VIP_NOT_DONE, VipSendDone(a, &d)) << "the reposted send completed twice";
    // Reaped descriptors may be posted again, also when a notify handler got them.
    static std::atomic<VIP_DESCRIPTOR *> notified{nullptr};
    notified = nullptr;
    ASSERT_OK(VipPostRecv(b, ds.desc(0), ds.mh));
    ASSERT_OK(
        VipRecvNotify(b, nullptr, [](VIP_PVOID, VIP_NIC_HANDLE, VIP_VI_HANDLE, VIP_DESCRIPTOR *r) { notified = r; }));
    ASSERT_OK(VipPostSend(a, ds.desc(1), ds.mh));
    for (int i = 0; i < 5000 && !notified; i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(notified.load(), ds.desc(0)) << "the receive notify handler did not run";
    ASSERT_OK(VipSendWait(a, kWaitMs, &d));
    ds.desc(0)->CS.Status = 0; // as programs reset it before reposting
    EXPECT_RC(VIP_SUCCESS, VipPostRecv(b, ds.desc(0), ds.mh)) << "a descriptor handed back by notify";
    teardown_vi(a);
    teardown_vi(b);
}

// More descriptors than a work queue holds.
TEST_F(Vipl, WorkQueueFull) {
    VIP_VI_HANDLE a = make_vi();
    ASSERT_NE(a, nullptr);
    const VIP_ULONG n = attr.MaxDescriptorsPerQueue;
    if (n > 4096) GTEST_SKIP() << "MaxDescriptorsPerQueue " << n << " is too many to fill here";
    Buffer ds(nic, 128 * (n + 1), tag), data(nic, 64, tag);
    for (VIP_ULONG i = 0; i < n; i++) {
        fill(ds.desc(int(i)), data.p, data.mh, 64);
        ASSERT_OK(VipPostRecv(a, ds.desc(int(i)), ds.mh)) << "receive " << i;
    }
    fill(ds.desc(int(n)), data.p, data.mh, 64);
    EXPECT_RC(VIP_ERROR_RESOURCE, VipPostRecv(a, ds.desc(int(n)), ds.mh));
    VipDisconnect(a);
    VIP_ULONG flushed = 0;
    VIP_DESCRIPTOR *d;
    while (VipRecvWait(a, 500, &d) == VIP_SUCCESS) {
        EXPECT_NE(d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR, 0u);
        flushed++;
    }
    EXPECT_EQ(flushed, n) << "every posted receive comes back, flushed";
    EXPECT_RC(VIP_SUCCESS, VipDestroyVi(a));
}

// More completions than the CQ has entries: the spec makes CQ overrun a
// catastrophic error of the CQ.  Either the CQ held them all, or the error
// callback reports it; the descriptors themselves complete either way.
TEST_F(Vipl, CompletionQueueOverflow) {
    ErrorLog log;
    ASSERT_OK(VipErrorCallback(nic, &log, on_error));
    VIP_CQ_HANDLE cq = nullptr;
    ASSERT_OK(VipCreateCQ(nic, 2, &cq));
    VIP_VI_HANDLE a = make_vi(), b = make_vi(nullptr, cq);
    connect(a, b);
    const int n = 8;
    Buffer ds(nic, 128 * 2 * n, tag), data(nic, 64 * n, tag);
    for (int i = 0; i < n; i++) {
        fill(ds.desc(i), data.p + 64 * i, data.mh, 64);
        ASSERT_OK(VipPostRecv(b, ds.desc(i), ds.mh));
    }
    for (int i = 0; i < n; i++) {
        fill(ds.desc(n + i), data.p, data.mh, 8);
        ASSERT_OK(VipPostSend(a, ds.desc(n + i), ds.mh));
        VIP_DESCRIPTOR *d;
        ASSERT_OK(VipSendWait(a, kWaitMs, &d));
    }
    int received = 0;
    VIP_DESCRIPTOR *d;
    for (int i = 0; i < n; i++)
        if (VipRecvWait(b, kWaitMs, &d) == VIP_SUCCESS) received++;
    EXPECT_EQ(received, n) << "every message is received (the CQ only names queues)";
    int entries = 0;
    VIP_VI_HANDLE v;
    VIP_BOOLEAN rq;
    while (VipCQDone(cq, &v, &rq) == VIP_SUCCESS) entries++;
    // The error callback may run on a provider thread: give it a moment.
    bool overrun = false;
    for (int i = 0; i < 200 && !overrun && entries != n; i++) {
        for (const auto &e : log.copy())
            overrun |= e.ErrorCode == VIP_ERROR_CATASTROPHIC && e.ResourceCode == VIP_RESOURCE_CQ && e.CQHandle == cq;
        if (!overrun) {
            VipxProgress(nic);
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    std::string seen;
    for (const auto &e : log.copy())
        seen += " (error " + std::to_string(e.ErrorCode) + " resource " + std::to_string(e.ResourceCode) +
            (e.CQHandle == cq ? " this CQ)" : " another CQ)");
    EXPECT_TRUE(entries == n || overrun) << entries << " of " << n
                                         << " CQ entries and no CQ overrun reported; errors:" << seen;
    teardown_vi(a);
    teardown_vi(b);
    EXPECT_RC(VIP_SUCCESS, VipDestroyCQ(cq));
    ASSERT_OK(VipErrorCallback(nic, nullptr, nullptr));
}

// Destroying a VI with receives still posted (not connected: idle).
TEST_F(Vipl, DestroyViWithPostedDescriptors) {
    VIP_VI_HANDLE a = make_vi();
    Buffer ds(nic, 4096, tag), data(nic, 64, tag);
    fill(ds.desc(0), data.p, data.mh, 64);
    ASSERT_OK(VipPostRecv(a, ds.desc(0), ds.mh));
    EXPECT_RC(VIP_INVALID_STATE, VipDestroyVi(a)) << "a receive is still posted";
    VipDisconnect(a);
    VIP_DESCRIPTOR *d = nullptr;
    ASSERT_OK(VipRecvWait(a, kWaitMs, &d));
    EXPECT_EQ(d, ds.desc(0));
    EXPECT_NE(d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR, 0u);
    EXPECT_RC(VIP_SUCCESS, VipDestroyVi(a));
}

void notify_desc(VIP_PVOID, VIP_NIC_HANDLE, VIP_VI_HANDLE, VIP_DESCRIPTOR *) {}
void notify_cq(VIP_PVOID, VIP_NIC_HANDLE, VIP_VI_HANDLE, VIP_BOOLEAN) {}

TEST_F(Vipl, NotifyBadArguments) {
    VIP_VI_HANDLE a = make_vi();
    VIP_CQ_HANDLE cq = nullptr;
    ASSERT_OK(VipCreateCQ(nic, 4, &cq));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipSendNotify(a, nullptr, nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipRecvNotify(a, nullptr, nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipSendNotify(forged(), nullptr, notify_desc));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipRecvNotify(cq, nullptr, notify_desc));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCQNotify(cq, nullptr, nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCQNotify(a, nullptr, notify_cq));
    EXPECT_RC(VIP_SUCCESS, VipDestroyVi(a));
    EXPECT_RC(VIP_SUCCESS, VipDestroyCQ(cq));
}

// ---- completion queues ----------------------------------------------------------------
TEST_F(Vipl, CompletionQueueBadArguments) {
    VIP_CQ_HANDLE cq = nullptr;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCreateCQ(forged(), 4, &cq));
    ASSERT_OK(VipCreateCQ(nic, 4, &cq));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipResizeCQ(cq, 0));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipResizeCQ(forged(), 8));
    VIP_RETURN rc = VipResizeCQ(cq, attr.MaxCQEntries + 1);
    EXPECT_TRUE(rc == VIP_INVALID_PARAMETER || rc == VIP_ERROR_RESOURCE) << rc_name(rc);
    VIP_VI_HANDLE v;
    VIP_BOOLEAN rq;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCQDone(cq, nullptr, &rq));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCQDone(cq, &v, nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCQWait(cq, 0, nullptr, &rq));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCQWait(cq, 0, &v, nullptr));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCQWait(forged(), 0, &v, &rq));
    EXPECT_RC(VIP_TIMEOUT, VipCQWait(cq, 0, &v, &rq));
    EXPECT_RC(VIP_NOT_DONE, VipCQDone(cq, &v, &rq));
    EXPECT_RC(VIP_SUCCESS, VipDestroyCQ(cq));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipResizeCQ(cq, 8)) << "stale CQ";
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCQWait(cq, 0, &v, &rq)) << "stale CQ";
    EXPECT_RC(VIP_INVALID_PARAMETER, VipCQNotify(cq, nullptr, notify_cq)) << "stale CQ";
}

// ---- errors, name service, management ---------------------------------------------------
TEST_F(Vipl, ErrorCallbackBadArguments) {
    ErrorLog log;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipErrorCallback(forged(), &log, on_error));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipErrorCallback(nullptr, &log, on_error));
    EXPECT_RC(VIP_SUCCESS, VipErrorCallback(nic, nullptr, nullptr)) << "NULL restores the default";
}

TEST_F(Vipl, NameServiceBadArguments) {
    EXPECT_RC(VIP_INVALID_PARAMETER, VipNSInit(forged(), nullptr));
    ASSERT_OK(VipNSInit(nic, nullptr));
    std::vector<uint8_t> out(VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, VIP_MAX_DISCRIMINATOR_LEN));
    char name[] = "node0";
    EXPECT_RC(VIP_INVALID_PARAMETER, VipNSGetHostByName(forged(), name, na(out), 0));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipNSGetHostByName(nic, nullptr, na(out), 0));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipNSGetHostByName(nic, name, nullptr, 0));
    char empty[] = "";
    EXPECT_RC(VIP_ERROR_NAMESERVICE, VipNSGetHostByName(nic, empty, na(out), 0));
    char far[] = "node65000";
    EXPECT_RC(VIP_ERROR_NAMESERVICE, VipNSGetHostByName(nic, far, na(out), 0)) << "a rank outside the job";
    EXPECT_RC(VIP_ERROR_NAMESERVICE, VipNSGetHostByName(nic, name, na(out), 1000)) << "NameIndex past the names";

    auto self = address("");
    char buf[256];
    VIP_ULONG len = sizeof buf;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipNSGetHostByAddr(forged(), na(self), buf, &len));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipNSGetHostByAddr(nic, nullptr, buf, &len));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipNSGetHostByAddr(nic, na(self), nullptr, &len));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipNSGetHostByAddr(nic, na(self), buf, nullptr));
    len = 1;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipNSGetHostByAddr(nic, na(self), buf, &len)) << "buffer too small";
    EXPECT_GT(len, 1u) << "the length needed is reported";
    std::vector<uint8_t> bogus(VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN + 1, 0));
    na(bogus)->HostAddressLen = VIP_MAX_HOST_ADDRESS_LEN + 1;
    na(bogus)->DiscriminatorLen = 0;
    len = sizeof buf;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipNSGetHostByAddr(nic, na(bogus), buf, &len));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipNSShutdown(forged()));
    EXPECT_RC(VIP_SUCCESS, VipNSShutdown(nic));
}

TEST_F(Vipl, SystemManagementAndExtensionsBadArguments) {
    VIP_AUTODISCOVERY_LIST list{};
    EXPECT_RC(VIP_INVALID_PARAMETER, VipQuerySystemManagementInfo(forged(), VIP_SMI_AUTODISCOVERY, &list));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipQuerySystemManagementInfo(nic, VIP_SMI_AUTODISCOVERY, nullptr));
    VIP_RETURN rc = VipQuerySystemManagementInfo(nic, 12345, &list);
    EXPECT_TRUE(rc == VIP_INVALID_PARAMETER || rc == VIP_ERROR_NOT_SUPPORTED) << rc_name(rc);
    EXPECT_NE(VipxReturnString(VIP_RETURN(9999)), nullptr);
    EXPECT_NE(VipxReturnString(VIP_RETURN(-1)), nullptr);
    char small[4];
    const char *s = VipxStatusString(0xffffffffu, small, sizeof small);
    EXPECT_EQ(s, small);
    EXPECT_LT(std::strlen(small), sizeof small) << "truncated and terminated";
    EXPECT_NE(VipxStatusString(VIP_STATUS_DONE, nullptr, 0), nullptr);
    EXPECT_EQ(VipxNicRank(forged()), -1);
    EXPECT_EQ(VipxNicRank(nullptr), -1);
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxProgress(forged()));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxProgress(nullptr));
    VIP_BOOLEAN pins = VIP_FALSE;
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxRegistrationPins(forged(), &pins));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxRegistrationPins(nullptr, &pins));
    EXPECT_RC(VIP_INVALID_PARAMETER, VipxRegistrationPins(nic, nullptr));
    EXPECT_RC(VIP_SUCCESS, VipxRegistrationPins(nic, &pins));
}

} // namespace
