// fault_test.cpp - nicfw fault-ish paths through vipl.h, in one process (the VIs
// of this process's NIC connected to each other): a VI destroyed while its peer
// still sends, NIC close and reopen, two handles on one NIC, VI and region table
// exhaustion, a bad setting refused at VipOpenNic.
#include <gtest/gtest.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nicfw_vipl_util.hpp"

using namespace nt;

namespace {

// The settings a test changes; the others (mode, doorbell, progress) come from
// the environment ctest gives the binary, so the suite runs in every firmware mode.
const char *const kVars[] = {"VIPL_NICFW_PROFILE", "VIPL_NICFW_RING_KB", "VIPL_NICFW_CRC", "VIPL_NICFW_FAULTS",
                             "VIPL_NICFW_RETRANSMIT"};
std::string g_mode = [] {
    const char *m = std::getenv("VIPL_NICFW_MODE");
    return std::string(m ? m : "");
}();
void restore_mode() {
    if (g_mode.empty()) unsetenv("VIPL_NICFW_MODE");
    else setenv("VIPL_NICFW_MODE", g_mode.c_str(), 1);
}

struct ErrorSeen {
    VIP_PVOID ctx;
    VIP_NIC_HANDLE nic;
    VIP_VI_HANDLE vi;
    VIP_ERROR_CODE code;
};
std::mutex g_err_mu;
std::vector<ErrorSeen> g_errors;

void record_error(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e) {
    std::lock_guard<std::mutex> g(g_err_mu);
    g_errors.push_back(ErrorSeen{ctx, e->NicHandle, e->ViHandle, e->ErrorCode});
}

// Waits (driving progress on `nic`) until an error with this code on `vi` was recorded.
bool wait_error(VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi, VIP_ERROR_CODE code, ErrorSeen *out, int ms = 3000) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
        VipxProgress(nic);
        {
            std::lock_guard<std::mutex> g(g_err_mu);
            for (auto &e : g_errors)
                if (e.vi == vi && e.code == code) {
                    *out = e;
                    return true;
                }
        }
        sched_yield();
    }
    return false;
}

class NicfwFault : public ::testing::Test {
protected:
    void SetUp() override {
        for (const char *v : kVars) unsetenv(v);
        restore_mode();
        std::lock_guard<std::mutex> g(g_err_mu);
        g_errors.clear();
    }
    void TearDown() override {
        for (const char *v : kVars) unsetenv(v);
        restore_mode();
    }
};

// Two connected VIs with buffers on (possibly different) handles of the NIC.
struct Pair {
    VIP_NIC_HANDLE nic_a, nic_b;
    VIP_PROTECTION_HANDLE tag_a = nullptr, tag_b = nullptr;
    std::unique_ptr<Buffers> buf_a, buf_b;
    VIP_VI_HANDLE a = nullptr, b = nullptr;
};

void make_pair(Pair &p, VIP_NIC_HANDLE na, VIP_NIC_HANDLE nb, VIP_RELIABILITY_LEVEL level) {
    p.nic_a = na;
    p.nic_b = nb;
    NT_ASSERT_OK(VipCreatePtag(na, &p.tag_a));
    NT_ASSERT_OK(VipCreatePtag(nb, &p.tag_b));
    p.buf_a = std::make_unique<Buffers>(na, p.tag_a, 32, 256);
    p.buf_b = std::make_unique<Buffers>(nb, p.tag_b, 32, 256);
    NT_ASSERT_OK(p.buf_a->rc());
    NT_ASSERT_OK(p.buf_b->rc());
    VIP_VI_ATTRIBUTES aa = vi_attr(p.tag_a, level), ba = vi_attr(p.tag_b, level);
    NT_ASSERT_OK(VipCreateVi(na, &aa, nullptr, nullptr, &p.a));
    NT_ASSERT_OK(VipCreateVi(nb, &ba, nullptr, nullptr, &p.b));
    ASSERT_TRUE(connect_loopback(na, p.a, nb, p.b));
}

// Sends `n` messages from x to y (receives posted first) and checks their bytes.
void exchange(VIP_VI_HANDLE x, Buffers &bx, VIP_VI_HANDLE y, Buffers &by, int n, uint32_t seed) {
    for (int i = 0; i < n; ++i) NT_ASSERT_OK(VipPostRecv(y, by.recv(i), by.mh()));
    for (int i = 0; i < n; ++i) {
        const uint32_t len = 16 + 40 * i;
        fill(bx.data(i), len, seed + i);
        NT_ASSERT_OK(VipPostSend(x, bx.send(i, len), bx.mh()));
    }
    for (int i = 0; i < n; ++i) {
        VIP_DESCRIPTOR *d = nullptr;
        NT_ASSERT_OK(VipSendWait(x, kWaitMs, &d));
        EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u);
        NT_ASSERT_OK(VipRecvWait(y, kWaitMs, &d));
        ASSERT_EQ(d, by.desc(i)) << "receives complete in order";
        EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u);
        const uint32_t len = 16 + 40 * i;
        EXPECT_EQ(d->CS.Length, len);
        EXPECT_TRUE(check(by.data(i), len, seed + i)) << "message " << i << " corrupted";
    }
}

// Orderly teardown: a disconnects, b sees the loss and disconnects, both destroyed.
void destroy_pair(Pair &p) {
    if (p.a && vi_state(p.a) != VIP_STATE_IDLE) { NT_EXPECT_RC(VIP_SUCCESS, VipDisconnect(p.a)); }
    if (p.b && vi_state(p.b) != VIP_STATE_IDLE) { NT_EXPECT_RC(VIP_SUCCESS, VipDisconnect(p.b)); }
    VIP_DESCRIPTOR *d;
    for (VIP_VI_HANDLE v : {p.a, p.b}) {
        if (!v) continue;
        while (VipRecvDone(v, &d) == VIP_SUCCESS) {}
        while (VipSendDone(v, &d) == VIP_SUCCESS) {}
        NT_EXPECT_RC(VIP_SUCCESS, VipDestroyVi(v));
    }
    p.a = p.b = nullptr;
    p.buf_a.reset();
    p.buf_b.reset();
    if (p.tag_a) { NT_EXPECT_RC(VIP_SUCCESS, VipDestroyPtag(p.nic_a, p.tag_a)); }
    if (p.tag_b) { NT_EXPECT_RC(VIP_SUCCESS, VipDestroyPtag(p.nic_b, p.tag_b)); }
    p.tag_a = p.tag_b = nullptr;
}

} // namespace

TEST_F(NicfwFault, BadSettingIsRefusedAtOpenAndTheNextOpenWorks) {
    VIP_NIC_HANDLE nic = nullptr;
    setenv("VIPL_NICFW_MODE", "bogus", 1);
    NT_EXPECT_RC(VIP_ERROR_RESOURCE, VipOpenNic("nicfw0", &nic));
    restore_mode();
    setenv("VIPL_NICFW_PROFILE", "synthetic:Q=1", 1);
    NT_EXPECT_RC(VIP_ERROR_RESOURCE, VipOpenNic("nicfw0", &nic));
    unsetenv("VIPL_NICFW_PROFILE");
    // Faults: a probability out of range, an unknown key, and the CRC turned off under faults.
    for (const char *bad : {"drop=1.5", "drop=0.1,bogus=1", "kill=1", "drop=0.6,dup=0.6"}) {
        setenv("VIPL_NICFW_FAULTS", bad, 1);
        NT_EXPECT_RC(VIP_ERROR_RESOURCE, VipOpenNic("nicfw0", &nic)) << bad;
    }
    setenv("VIPL_NICFW_FAULTS", "drop=0.1", 1);
    setenv("VIPL_NICFW_CRC", "0", 1);
    NT_EXPECT_RC(VIP_ERROR_RESOURCE, VipOpenNic("nicfw0", &nic));
    unsetenv("VIPL_NICFW_CRC");
    unsetenv("VIPL_NICFW_FAULTS");
    setenv("VIPL_NICFW_RETRANSMIT", "yes", 1);
    NT_EXPECT_RC(VIP_ERROR_RESOURCE, VipOpenNic("nicfw0", &nic));
    unsetenv("VIPL_NICFW_RETRANSMIT");
    NT_ASSERT_OK(VipOpenNic("nicfw0", &nic));
    NT_EXPECT_RC(VIP_SUCCESS, VipCloseNic(nic));
}

TEST_F(NicfwFault, CloseAndReopenInTheSameProcess) {
    VIP_NIC_HANDLE old = nullptr;
    for (int cycle = 0; cycle < 3; ++cycle) {
        VIP_NIC_HANDLE nic = nullptr;
        NT_ASSERT_OK(VipOpenNic("nicfw0", &nic));
        if (old) {
            VIP_NIC_ATTRIBUTES at;
            NT_EXPECT_RC(VIP_INVALID_PARAMETER, VipQueryNic(old, &at)) << "a closed handle must stay dead";
        }
        Pair p;
        make_pair(p, nic, nic, VIP_SERVICE_RELIABLE_RECEPTION);
        NT_EXPECT_RC(VIP_INVALID_STATE, VipCloseNic(nic)) << "objects are still live";
        exchange(p.a, *p.buf_a, p.b, *p.buf_b, 4, 100 * cycle);
        exchange(p.b, *p.buf_b, p.a, *p.buf_a, 4, 100 * cycle + 50);
        destroy_pair(p);
        NT_ASSERT_OK(VipCloseNic(nic)) << "cycle " << cycle;
        old = nic;
    }
}

TEST_F(NicfwFault, TwoHandlesShareOneNic) {
    VIP_NIC_HANDLE h1 = nullptr, h2 = nullptr;
    NT_ASSERT_OK(VipOpenNic("nicfw0", &h1));
    NT_ASSERT_OK(VipOpenNic("nicfw0", &h2));
    EXPECT_NE(h1, h2);
    VIP_NIC_ATTRIBUTES a1, a2;
    NT_ASSERT_OK(VipQueryNic(h1, &a1));
    NT_ASSERT_OK(VipQueryNic(h2, &a2));
    EXPECT_STREQ(a1.Name, a2.Name);
    ASSERT_EQ(a1.NicAddressLen, a2.NicAddressLen);
    EXPECT_EQ(0, std::memcmp(a1.LocalNicAddress, a2.LocalNicAddress, a1.NicAddressLen)) << "one NIC, one address";

    Pair p;
    make_pair(p, h1, h2, VIP_SERVICE_RELIABLE_DELIVERY); // a made through h1, b through h2
    // A ptag belongs to the handle it was made through.
    VIP_VI_ATTRIBUTES wrong = vi_attr(p.tag_a, VIP_SERVICE_RELIABLE_DELIVERY);
    VIP_VI_HANDLE v = nullptr;
    NT_EXPECT_RC(VIP_INVALID_PTAG, VipCreateVi(h2, &wrong, nullptr, nullptr, &v));
    exchange(p.a, *p.buf_a, p.b, *p.buf_b, 5, 7);
    exchange(p.b, *p.buf_b, p.a, *p.buf_a, 5, 9);
    NT_EXPECT_RC(VIP_INVALID_STATE, VipCloseNic(h1));

    // Close h1 (its objects first); the NIC lives on for h2.
    NT_EXPECT_RC(VIP_SUCCESS, VipDisconnect(p.a));
    VIP_DESCRIPTOR *d;
    while (VipRecvDone(p.a, &d) == VIP_SUCCESS) {}
    NT_EXPECT_RC(VIP_SUCCESS, VipDestroyVi(p.a));
    p.a = nullptr;
    p.buf_a.reset();
    NT_EXPECT_RC(VIP_SUCCESS, VipDestroyPtag(h1, p.tag_a));
    p.tag_a = nullptr;
    NT_ASSERT_OK(VipCloseNic(h1));
    destroy_pair(p);

    Pair q;
    make_pair(q, h2, h2, VIP_SERVICE_RELIABLE_RECEPTION);
    exchange(q.a, *q.buf_a, q.b, *q.buf_b, 5, 11);
    destroy_pair(q);
    NT_EXPECT_RC(VIP_SUCCESS, VipCloseNic(h2));
}

// VipErrorCallback registers a handler for one NIC handle; the error descriptor
// names the NIC handle the failing VI was made through.
TEST_F(NicfwFault, ErrorCallbackBelongsToTheHandle) {
    VIP_NIC_HANDLE h1 = nullptr, h2 = nullptr;
    NT_ASSERT_OK(VipOpenNic("nicfw0", &h1));
    NT_ASSERT_OK(VipOpenNic("nicfw0", &h2));
    int ctx1 = 1, ctx2 = 2;
    NT_ASSERT_OK(VipErrorCallback(h1, &ctx1, record_error));
    NT_ASSERT_OK(VipErrorCallback(h2, &ctx2, record_error));
    Pair p;
    make_pair(p, h1, h2, VIP_SERVICE_RELIABLE_DELIVERY);
    // A send naming memory that is not registered: a descriptor error on a
    // reliable VI breaks the connection (POST_DESC on a, CONN_LOST on b).
    VIP_DESCRIPTOR *bad = p.buf_a->send(0, 16);
    bad->DS[0].Local.Handle = p.buf_a->mh() ^ 0x7fff0000u;
    NT_ASSERT_OK(VipPostSend(p.a, bad, p.buf_a->mh()));
    VIP_DESCRIPTOR *d = nullptr;
    NT_ASSERT_OK(VipSendWait(p.a, kWaitMs, &d));
    EXPECT_TRUE(d->CS.Status & VIP_STATUS_PROTECTION_ERROR);
    ErrorSeen ea{}, eb{};
    ASSERT_TRUE(wait_error(h1, p.a, VIP_ERROR_POST_DESC, &ea)) << "no POST_DESC error reported for a";
    ASSERT_TRUE(wait_error(h2, p.b, VIP_ERROR_CONN_LOST, &eb)) << "no CONN_LOST error reported for b";
    EXPECT_EQ(ea.nic, h1) << "nicfw BUG: the error on a VI made through handle 1 names another NIC handle";
    EXPECT_EQ(ea.ctx, &ctx1) << "nicfw BUG: the error on a VI made through handle 1 went to handle 2's callback "
                                "(provider.cpp error_callback keeps one handler per NIC, the last registered)";
    EXPECT_EQ(eb.nic, h2) << "nicfw BUG: the error on a VI made through handle 2 names handle 1 "
                             "(nic.cpp report_error uses NicHw::owner, the first handle opened)";
    EXPECT_EQ(eb.ctx, &ctx2);
    destroy_pair(p);
    VipErrorCallback(h1, nullptr, nullptr);
    VipErrorCallback(h2, nullptr, nullptr);
    NT_EXPECT_RC(VIP_SUCCESS, VipCloseNic(h1));
    NT_EXPECT_RC(VIP_SUCCESS, VipCloseNic(h2));
}

// A handle that registered an error callback is closed; errors on the VIs of
// the NIC's other handle must not reach that callback (its context may be gone).
TEST_F(NicfwFault, ClosedHandlesErrorCallbackIsNotCalled) {
    VIP_NIC_HANDLE h1 = nullptr, h2 = nullptr;
    NT_ASSERT_OK(VipOpenNic("nicfw0", &h1));
    NT_ASSERT_OK(VipOpenNic("nicfw0", &h2));
    int ctx1 = 1;
    NT_ASSERT_OK(VipErrorCallback(h1, &ctx1, record_error));
    NT_ASSERT_OK(VipCloseNic(h1));
    Pair p;
    make_pair(p, h2, h2, VIP_SERVICE_RELIABLE_DELIVERY);
    VIP_DESCRIPTOR *bad = p.buf_a->send(0, 16);
    bad->DS[0].Local.Handle = p.buf_a->mh() ^ 0x7fff0000u;
    NT_ASSERT_OK(VipPostSend(p.a, bad, p.buf_a->mh()));
    VIP_DESCRIPTOR *d = nullptr;
    NT_ASSERT_OK(VipSendWait(p.a, kWaitMs, &d));
    EXPECT_TRUE(d->CS.Status & VIP_STATUS_PROTECTION_ERROR);
    ErrorSeen e{};
    const bool called = wait_error(h2, p.a, VIP_ERROR_POST_DESC, &e, 500);
    EXPECT_FALSE(called && e.ctx == &ctx1)
        << "nicfw BUG: an error on a VI of handle 2 called the callback registered by handle 1 after handle 1 "
           "was closed (provider.cpp: the NicHw keeps err_handler/err_ctx after the handle that set them closes)";
    destroy_pair(p);
    VipErrorCallback(h2, nullptr, nullptr);
    NT_EXPECT_RC(VIP_SUCCESS, VipCloseNic(h2));
}

// b is disconnected and destroyed while a's packets to it are still on the wire
// (a 20 ms wire latency holds them), and a keeps sending: no crash, a's packets
// are dropped at the NIC, a learns the connection is gone (error state,
// CONN_LOST), every descriptor a posted completes, and a new VI that takes b's
// slot receives none of a's stale packets.
class DestroyUnderSender : public NicfwFault, public ::testing::WithParamInterface<VIP_RELIABILITY_LEVEL> {};

TEST_P(DestroyUnderSender, PeerDestroyedWhileSending) {
    const VIP_RELIABILITY_LEVEL level = GetParam();
    setenv("VIPL_NICFW_PROFILE", "synthetic:L=20000000", 1);
    VIP_NIC_HANDLE nic = nullptr;
    NT_ASSERT_OK(VipOpenNic("nicfw0", &nic));
    NT_ASSERT_OK(VipErrorCallback(nic, nullptr, record_error));
    Pair p;
    make_pair(p, nic, nic, level);
    Buffers &ba = *p.buf_a;
    const auto t_first_send = std::chrono::steady_clock::now();
    for (int i = 0; i < 10; ++i) {
        fill(ba.data(i), 64, i);
        NT_ASSERT_OK(VipPostSend(p.a, ba.send(i, 64), ba.mh()));
    }
    // b goes away with a's packets in flight.
    NT_ASSERT_OK(VipDisconnect(p.b));
    NT_ASSERT_OK(VipDestroyVi(p.b));
    p.b = nullptr;
    if (std::chrono::steady_clock::now() - t_first_send > std::chrono::milliseconds(20))
        std::printf("note: b was destroyed more than L = 20 ms after a's first send (slow machine); "
                    "some of a's packets may have reached b before it went away\n");
    // a does not know yet and keeps sending.
    for (int i = 10; i < 20; ++i) NT_ASSERT_OK(VipPostSend(p.a, ba.send(i, 64), ba.mh()));

    // A new VI pair; c most likely takes b's slot.  Its receives must stay untouched.
    VIP_VI_ATTRIBUTES at = vi_attr(p.tag_b, level);
    VIP_VI_HANDLE c = nullptr, dvi = nullptr;
    NT_ASSERT_OK(VipCreateVi(nic, &at, nullptr, nullptr, &c));
    NT_ASSERT_OK(VipCreateVi(nic, &at, nullptr, nullptr, &dvi));
    Buffers &bb = *p.buf_b;
    for (int i = 0; i < 4; ++i) NT_ASSERT_OK(VipPostRecv(c, bb.recv(i), bb.mh()));
    ASSERT_TRUE(connect_loopback(nic, c, nic, dvi));

    // Every send of a completes (none hangs waiting for an answer from b).
    for (int i = 0; i < 20; ++i) {
        VIP_DESCRIPTOR *d = nullptr;
        NT_ASSERT_OK(VipSendWait(p.a, kWaitMs, &d)) << "send " << i << " never completed";
        ASSERT_EQ(d, ba.desc(i));
        if (level == VIP_SERVICE_RELIABLE_RECEPTION) {
            EXPECT_TRUE(d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR)
                << "reliable reception: b never acknowledged, so the send must be flushed";
        }
    }
    ErrorSeen e{};
    EXPECT_TRUE(wait_error(nic, p.a, VIP_ERROR_CONN_LOST, &e)) << "a was never told its peer is gone";
    EXPECT_EQ(vi_state(p.a), VIP_STATE_ERROR);
    // Posting on the broken VI is accepted and flushed.
    NT_ASSERT_OK(VipPostSend(p.a, ba.send(20, 16), ba.mh()));
    VIP_DESCRIPTOR *d = nullptr;
    NT_ASSERT_OK(VipSendWait(p.a, kWaitMs, &d));
    EXPECT_TRUE(d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR);

    // Nothing of a's reached c; c and d work.
    for (int i = 0; i < 50; ++i) VipxProgress(nic);
    NT_EXPECT_RC(VIP_NOT_DONE, VipRecvDone(c, &d)) << "a stale packet of a was delivered to a new VI";
    auto dbuf = std::make_unique<Buffers>(nic, p.tag_b, 2, 256);
    NT_ASSERT_OK(dbuf->rc());
    fill(dbuf->data(0), 100, 4321);
    NT_ASSERT_OK(VipPostSend(dvi, dbuf->send(0, 100), dbuf->mh()));
    NT_ASSERT_OK(VipRecvWait(c, kWaitMs, &d));
    EXPECT_EQ(d, bb.desc(0));
    EXPECT_EQ(d->CS.Length, 100u);
    EXPECT_TRUE(check(bb.data(0), 100, 4321));
    NT_ASSERT_OK(VipSendWait(dvi, kWaitMs, &d));

    NT_EXPECT_RC(VIP_SUCCESS, VipDisconnect(c));
    NT_EXPECT_RC(VIP_SUCCESS, VipDisconnect(dvi));
    while (VipRecvDone(c, &d) == VIP_SUCCESS) {}
    NT_EXPECT_RC(VIP_SUCCESS, VipDestroyVi(c));
    NT_EXPECT_RC(VIP_SUCCESS, VipDestroyVi(dvi));
    dbuf.reset();
    destroy_pair(p);
    VipErrorCallback(nic, nullptr, nullptr);
    NT_EXPECT_RC(VIP_SUCCESS, VipCloseNic(nic));
}

INSTANTIATE_TEST_SUITE_P(Levels, DestroyUnderSender,
                         ::testing::Values(VIP_SERVICE_UNRELIABLE, VIP_SERVICE_RELIABLE_DELIVERY,
                                           VIP_SERVICE_RELIABLE_RECEPTION),
                         [](const auto &i) {
                             return i.param == VIP_SERVICE_UNRELIABLE       ? std::string("Unreliable")
                                 : i.param == VIP_SERVICE_RELIABLE_DELIVERY ? std::string("ReliableDelivery")
                                                                            : std::string("ReliableReception");
                         });

TEST_F(NicfwFault, ThousandViCreateDestroyLeaksNoSlot) {
    VIP_NIC_HANDLE nic = nullptr;
    NT_ASSERT_OK(VipOpenNic("nicfw0", &nic));
    VIP_NIC_ATTRIBUTES na;
    NT_ASSERT_OK(VipQueryNic(nic, &na));
    VIP_PROTECTION_HANDLE tag = nullptr;
    NT_ASSERT_OK(VipCreatePtag(nic, &tag));
    auto buf = std::make_unique<Buffers>(nic, tag, 8, 256), buf2 = std::make_unique<Buffers>(nic, tag, 8, 256);
    NT_ASSERT_OK(buf->rc());
    NT_ASSERT_OK(buf2->rc());
    VIP_VI_ATTRIBUTES at = vi_attr(tag, VIP_SERVICE_RELIABLE_DELIVERY);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) {
        VIP_VI_HANDLE v = nullptr;
        ASSERT_EQ(VipCreateVi(nic, &at, nullptr, nullptr, &v), VIP_SUCCESS) << "iteration " << i;
        if (i % 100 == 0) { // now and then a real connection and a message
            VIP_VI_HANDLE w = nullptr;
            NT_ASSERT_OK(VipCreateVi(nic, &at, nullptr, nullptr, &w));
            ASSERT_TRUE(connect_loopback(nic, v, nic, w));
            exchange(v, *buf, w, *buf2, 1, i);
            NT_ASSERT_OK(VipDisconnect(v));
            NT_ASSERT_OK(VipDisconnect(w));
            NT_ASSERT_OK(VipDestroyVi(w));
        }
        ASSERT_EQ(VipDestroyVi(v), VIP_SUCCESS) << "iteration " << i;
    }
    const auto t1 = std::chrono::steady_clock::now();
    // Every slot is free again: the full table can be created, and no more.
    std::vector<VIP_VI_HANDLE> all;
    for (VIP_ULONG i = 0; i < na.MaxVI; ++i) {
        VIP_VI_HANDLE v = nullptr;
        const VIP_RETURN rc = VipCreateVi(nic, &at, nullptr, nullptr, &v);
        ASSERT_EQ(rc, VIP_SUCCESS) << "VI " << i << " of MaxVI " << na.MaxVI << ": " << rc_name(rc);
        all.push_back(v);
    }
    VIP_VI_HANDLE extra = nullptr;
    NT_EXPECT_RC(VIP_ERROR_RESOURCE, VipCreateVi(nic, &at, nullptr, nullptr, &extra));
    NT_ASSERT_OK(VipDestroyVi(all.back()));
    all.pop_back();
    NT_EXPECT_RC(VIP_SUCCESS, VipCreateVi(nic, &at, nullptr, nullptr, &extra));
    all.push_back(extra);
    const auto t2 = std::chrono::steady_clock::now();
    for (auto v : all) ASSERT_EQ(VipDestroyVi(v), VIP_SUCCESS);
    const auto t3 = std::chrono::steady_clock::now();
    using ms = std::chrono::duration<double, std::milli>;
    std::printf("1000 create/destroy (10 with a connection): %.1f ms; %zu creates: %.1f ms; %zu destroys: %.1f ms\n",
                ms(t1 - t0).count(), all.size(), ms(t2 - t1).count(), all.size(), ms(t3 - t2).count());
    buf.reset();
    buf2.reset();
    NT_EXPECT_RC(VIP_SUCCESS, VipDestroyPtag(nic, tag));
    NT_EXPECT_RC(VIP_SUCCESS, VipCloseNic(nic));
}

TEST_F(NicfwFault, RegionTableHolds65535RegionsThenRefuses) {
    VIP_NIC_HANDLE nic = nullptr;
    NT_ASSERT_OK(VipOpenNic("nicfw0", &nic));
    VIP_NIC_ATTRIBUTES na;
    NT_ASSERT_OK(VipQueryNic(nic, &na));
    ASSERT_EQ(na.MaxRegisterRegions, 65535u);
    VIP_PROTECTION_HANDLE tag = nullptr;
    NT_ASSERT_OK(VipCreatePtag(nic, &tag));
    const size_t n = na.MaxRegisterRegions;
    std::vector<uint8_t> mem((n + 1) * 64);
    std::vector<VIP_MEM_HANDLE> mh(n + 1);
    VIP_MEM_ATTRIBUTES ma{tag, VIP_FALSE, VIP_FALSE};
    for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(VipRegisterMem(nic, &mem[i * 64], 64, &ma, &mh[i]), VIP_SUCCESS) << "region " << i;
    NT_EXPECT_RC(VIP_ERROR_RESOURCE, VipRegisterMem(nic, &mem[n * 64], 64, &ma, &mh[n]));
    // Handles are distinct.
    std::vector<VIP_MEM_HANDLE> sorted(mh.begin(), mh.begin() + static_cast<long>(n));
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
    // Freeing one makes room for exactly one.
    NT_ASSERT_OK(VipDeregisterMem(nic, &mem[1234 * 64], mh[1234]));
    NT_EXPECT_RC(VIP_SUCCESS, VipRegisterMem(nic, &mem[n * 64], 64, &ma, &mh[1234]));
    VIP_MEM_HANDLE more;
    NT_EXPECT_RC(VIP_ERROR_RESOURCE, VipRegisterMem(nic, &mem[0], 64, &ma, &more));
    NT_EXPECT_RC(VIP_INVALID_STATE, VipDestroyPtag(nic, tag)) << "regions still use the ptag";
    for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(VipDeregisterMem(nic, i == 1234 ? &mem[n * 64] : &mem[i * 64], mh[i]), VIP_SUCCESS) << i;
    NT_EXPECT_RC(VIP_SUCCESS, VipDestroyPtag(nic, tag));
    NT_EXPECT_RC(VIP_SUCCESS, VipCloseNic(nic));
}
