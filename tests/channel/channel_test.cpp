// channel_test.cpp - the channel library (channel/include/viastack/channel.hpp)
// on two VIs of this process's NIC connected to each other: sizing, slot
// layout, pre-posting, credits, send/reap/recycle and receive/repost, the
// gather form, and tear-down.  Provider-neutral (VipOpenNic(NULL)).
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "viastack/channel.hpp"
#include "viastack/regcache.hpp"
#include "vipl_test_util.hpp"

namespace {

using viastack::channel::Channel;
using viastack::channel::Instr;
using viastack::channel::Layout;
using viastack::channel::Region;
using viastack::channel::Slot;

VIASTACK_CHANNEL_INSTR(kInstr, "channel_test", false);

constexpr uint32_t kCredits = 4;
constexpr uint32_t kBuf = 256;

TEST(ChannelLayout, SlotsFor2kPlus1Receives) {
    Layout l = viastack::channel::layout_for(8, 4096);
    EXPECT_EQ(l.credits, 8u);
    EXPECT_EQ(l.nsend, 16u);
    EXPECT_EQ(l.nrecv, 17u);
    Layout s = viastack::channel::layout_for(8, 4096, 2);
    EXPECT_EQ(s.nsend, 18u);
    EXPECT_EQ(s.nrecv, 17u);
    EXPECT_GE(Channel::region_bytes(l), size_t(l.nsend + l.nrecv) * (sizeof(Slot) + 4096));
    EXPECT_EQ(Channel::region_bytes(l) % 64, 0u);
}

// Credits of replyless requests come back in batches of k/2, never more than a
// message carries, never 0 (a batch of 0 would never be due).
TEST(ChannelCredits, BatchIsHalfOfKWithinWhatAMessageCarries) {
    EXPECT_EQ(Channel::credit_batch(8, 4), 4u);
    EXPECT_EQ(Channel::credit_batch(8, 255), 4u);
    EXPECT_EQ(Channel::credit_batch(64, 4), 4u);
    EXPECT_EQ(Channel::credit_batch(64, 255), 32u);
    EXPECT_EQ(Channel::credit_batch(3, 4), 1u);
    EXPECT_EQ(Channel::credit_batch(1, 4), 1u);
    static_assert(Channel::credit_batch(8, 4) == 4, "usable where a constant is needed");
}

// A message carries at most what its credit field holds; the rest stays owed.
TEST(ChannelCredits, TakeOwedUpToWhatFitsLeavesTheRest) {
    Channel c;
    for (int i = 0; i < 5; i++) c.owe_one(100);
    EXPECT_EQ(c.owed(), 5u);
    EXPECT_EQ(c.take_owed(3), 3u);
    EXPECT_EQ(c.owed(), 2u);
    EXPECT_EQ(c.take_owed(3), 2u);
    EXPECT_EQ(c.take_owed(3), 0u);
    EXPECT_EQ(c.owed(), 0u);
}

// Two channels over two connected VIs of the same NIC.
class ChannelPair : public ::testing::Test {
protected:
    void SetUp() override {
        if (!(vt::nic_attr().ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_DELIVERY))
            GTEST_SKIP() << "NIC lacks reliable delivery";
        ASSERT_EQ(VipCreatePtag(vt::nic(), &ptag), VIP_SUCCESS);
        layout = viastack::channel::layout_for(kCredits, kBuf);
        size_t per = Channel::region_bytes(layout);
        std::string why;
        ASSERT_TRUE(region.allocate(vt::nic(), ptag, 2 * per, &why)) << why;
        a.attach(layout, region.base(), region.handle());
        b.attach(layout, region.base() + per, region.handle());
        VIP_VI_ATTRIBUTES va = vt::vi_attr(VIP_SERVICE_RELIABLE_DELIVERY, ptag);
        va.MaxTransferSize = 4096;
        ASSERT_EQ(VipCreateVi(vt::nic(), &va, nullptr, nullptr, &via), VIP_SUCCESS);
        ASSERT_EQ(VipCreateVi(vt::nic(), &va, nullptr, nullptr, &vib), VIP_SUCCESS);
        ASSERT_EQ(a.prepost(via), VIP_SUCCESS);
        ASSERT_EQ(b.prepost(vib), VIP_SUCCESS);
        ASSERT_TRUE(vt::connect_loopback(via, vib));
    }
    void TearDown() override {
        if (via) VipDisconnect(via);
        if (vib) VipDisconnect(vib);
        a.drain();
        b.drain();
        if (via) VipDestroyVi(via);
        if (vib) VipDestroyVi(vib);
        region.release();
        if (ptag) VipDestroyPtag(vt::nic(), ptag);
    }

    // Sends `text` from a as one message (taking a credit and a slot).
    void send_from_a(const std::string &text) {
        ASSERT_TRUE(a.has_credit());
        ASSERT_TRUE(a.has_free_send());
        a.take_credit();
        Slot *s = a.take_send();
        std::memcpy(s->buf, text.data(), text.size());
        Channel::set_message(s, uint32_t(text.size()));
        ASSERT_EQ(a.post_send(s, kInstr), VIP_SUCCESS);
    }
    // Waits for b's next receive.
    Slot *receive_on_b() {
        VIP_DESCRIPTOR *d = nullptr;
        VIP_RETURN rc = VipRecvWait(vib, vt::kWaitMs, &d);
        EXPECT_EQ(rc, VIP_SUCCESS) << vt::rc_str(rc);
        return rc == VIP_SUCCESS ? viastack::channel::slot_of(d) : nullptr;
    }
    // Reaps a's completed sends (waiting for the first); returns how many.
    int reap_a() {
        VIP_DESCRIPTOR *d;
        int n = 0;
        if (VipSendWait(via, vt::kWaitMs, &d) != VIP_SUCCESS) return 0;
        do {
            EXPECT_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0u);
            a.recycle_send(viastack::channel::slot_of(d), kInstr, [](Slot *) {});
            n++;
        } while (Channel::send_done(via, &d, kInstr) == VIP_SUCCESS);
        return n;
    }

    VIP_PROTECTION_HANDLE ptag = nullptr;
    Layout layout;
    Region region;
    Channel a, b;
    VIP_VI_HANDLE via = nullptr, vib = nullptr;
};

TEST_F(ChannelPair, AttachLaysSlotsOutInTheRegion) {
    EXPECT_EQ(a.free_sends(), layout.nsend);
    EXPECT_EQ(a.in_flight(), 0u);
    EXPECT_EQ(a.credits(), int(kCredits));
    uint8_t *lo = region.base(), *hi = region.base() + region.size();
    for (uint32_t i = 0; i < layout.nsend; i++) {
        Slot *s = a.send_slot(i);
        EXPECT_EQ(s->ch, &a);
        EXPECT_EQ(s->desc.DS[0].Local.Data.Address, s->buf);
        EXPECT_EQ(s->desc.DS[0].Local.Handle, region.handle());
        EXPECT_TRUE(s->buf >= lo && s->buf + kBuf <= hi);
        EXPECT_EQ(s->pin, -1);
    }
    // Buffers of one channel do not overlap the other's.
    EXPECT_LE(a.recv_slot(layout.nrecv - 1)->buf + kBuf, reinterpret_cast<uint8_t *>(b.send_slot(0)));
}

TEST_F(ChannelPair, MessageArrivesAndBothSidesRecycle) {
    send_from_a("hello channel");
    EXPECT_EQ(a.credits(), int(kCredits) - 1);
    EXPECT_EQ(a.in_flight(), 1u);
    Slot *r = receive_on_b();
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->ch, &b);
    ASSERT_EQ(r->desc.CS.Length, 13u);
    EXPECT_EQ(std::string(reinterpret_cast<char *>(r->buf), 13), "hello channel");
    EXPECT_EQ(b.repost_recv(r, kInstr), VIP_SUCCESS);
    EXPECT_EQ(r->desc.CS.Status, 0u);
    EXPECT_EQ(reap_a(), 1);
    EXPECT_EQ(a.in_flight(), 0u);
    EXPECT_EQ(a.free_sends(), layout.nsend);
}

// 2k+1 pre-posted receives take a burst of 2k+1 messages with nothing
// reposted in between: the receive queue the credits protect is never empty.
TEST_F(ChannelPair, PrePostedReceivesTakeAFullBurst) {
    for (uint32_t i = 0; i < layout.nrecv; i++) {
        if (!a.has_credit()) a.return_credits(int(kCredits)); // as the peer's replies would
        if (!a.has_free_send()) { ASSERT_GT(reap_a(), 0); }
        send_from_a(std::to_string(1000 + i));
    }
    for (uint32_t i = 0; i < layout.nrecv; i++) {
        Slot *r = receive_on_b();
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(r->desc.CS.Status & VIP_STATUS_ERROR_MASK, 0u);
        EXPECT_EQ(std::string(reinterpret_cast<char *>(r->buf), r->desc.CS.Length), std::to_string(1000 + i));
    }
}

TEST_F(ChannelPair, CreditsRunOutAndComeBack) {
    for (uint32_t i = 0; i < kCredits; i++) a.take_credit();
    EXPECT_FALSE(a.has_credit());
    a.return_credits(1);
    EXPECT_TRUE(a.has_credit());
    EXPECT_EQ(a.credits(), 1);
    // Replyless requests are credited back in batches of `every`.
    EXPECT_FALSE(b.owe_one(3));
    EXPECT_FALSE(b.owe_one(3));
    EXPECT_TRUE(b.owe_one(3));
    EXPECT_EQ(b.take_owed(), 3u);
    EXPECT_EQ(b.take_owed(), 0u);
}

TEST_F(ChannelPair, GatherSendIsMadePlainAgainWhenReaped) {
    // A payload from registered memory outside the slots (the second segment).
    alignas(64) static char payload[512];
    std::memset(payload, 'x', sizeof payload);
    VIP_MEM_ATTRIBUTES ma{};
    ma.Ptag = ptag;
    VIP_MEM_HANDLE pmh;
    ASSERT_EQ(VipRegisterMem(vt::nic(), payload, sizeof payload, &ma, &pmh), VIP_SUCCESS);
    a.take_credit();
    Slot *s = a.take_send();
    std::memcpy(s->buf, "hdr:", 4);
    Channel::set_gather(s, 4, payload, pmh, 100);
    EXPECT_EQ(s->desc.CS.SegCount, 2u);
    ASSERT_EQ(a.post_send(s, kInstr), VIP_SUCCESS);
    Slot *r = receive_on_b();
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->desc.CS.Length, 104u);
    EXPECT_EQ(std::memcmp(r->buf, "hdr:", 4), 0);
    EXPECT_EQ(r->buf[4], 'x');
    EXPECT_EQ(r->buf[103], 'x');
    EXPECT_EQ(reap_a(), 1);
    EXPECT_EQ(s->desc.CS.SegCount, 1u);
    EXPECT_EQ(s->desc.DS[0].Local.Data.Address, s->buf);
    EXPECT_EQ(s->desc.DS[0].Local.Length, kBuf);
    EXPECT_EQ(s->rdma, 0);
    VipDeregisterMem(vt::nic(), payload, pmh);
}

TEST_F(ChannelPair, RecycleRunsTheLayersCheckForEverySlot) {
    send_from_a("one");
    send_from_a("two");
    int checked = 0;
    VIP_DESCRIPTOR *d;
    while (checked < 2) {
        ASSERT_EQ(VipSendWait(via, vt::kWaitMs, &d), VIP_SUCCESS);
        a.recycle_send(viastack::channel::slot_of(d), kInstr, [&](Slot *s) {
            EXPECT_EQ(s->ch, &a);
            checked++;
        });
    }
    EXPECT_EQ(a.free_sends(), layout.nsend);
}

TEST_F(ChannelPair, DrainTakesBackWhatTheViHeld) {
    send_from_a("last");
    ASSERT_NE(receive_on_b(), nullptr);
    VipDisconnect(via);
    int seen = 0;
    VIP_DESCRIPTOR *d;
    // The send may already be complete or flushed; either way drain gets it back.
    ASSERT_EQ(VipSendWait(via, vt::kWaitMs, &d), VIP_SUCCESS);
    a.recycle_send(viastack::channel::slot_of(d), kInstr, [&](Slot *) { seen++; });
    a.drain([&](Slot *) { seen++; });
    EXPECT_EQ(seen, 1);
    EXPECT_EQ(a.free_sends(), layout.nsend);
}

// n whole pages of heap memory for the registration cache tests (misses
// register whole pages, so each page is an entry of its own).
struct Pages {
    static constexpr size_t kPage = 4096;
    std::vector<uint8_t> mem;
    uint8_t *base;
    explicit Pages(size_t n)
        : mem((n + 1) * kPage),
          base(reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(mem.data()) + kPage - 1) & ~(kPage - 1))) {}
};

// The registration cache (regcache.hpp) on this process's NIC: a range inside
// a cached registration is a hit on the same handle; misses register whole
// pages; only unpinned entries are evicted (least recently used first), and
// with every entry pinned the caller's wait runs until one is released;
// forget() drops what overlaps; a registration the NIC refuses says why.
TEST_F(ChannelPair, RegistrationCacheHitsPinsEvictsAndForgets) {
    using viastack::channel::RegCache;
    RegCache cache;
    cache.init(vt::nic(), ptag);
    const size_t page = Pages::kPage, n = RegCache::kEntries + 1;
    Pages pages(n);
    uint8_t *base = pages.base;
    int waits = 0;
    auto no_wait = [&] { waits++; };
    VIP_MEM_HANDLE h0, h;
    int e0 = cache.acquire(base + 10, 100, &h0, no_wait);
    ASSERT_GE(e0, 0) << cache.last_error();
    EXPECT_EQ(cache.acquire(base + 4000, 96, &h, no_wait), e0); // same page: a hit
    EXPECT_EQ(h, h0);
    cache.release(e0);
    cache.release(e0);
    // Fill every entry with one page each, all pinned.
    std::vector<int> es{e0};
    cache.pin(e0);
    for (size_t i = 1; i < size_t(RegCache::kEntries); i++) {
        int e = cache.acquire(base + i * page, 1, &h, no_wait);
        ASSERT_GE(e, 0) << cache.last_error();
        es.push_back(e);
    }
    EXPECT_EQ(waits, 0);
    // A miss with every entry pinned waits; releasing page 1's entry in the
    // wait makes room, and that entry (the only unpinned one) is reused.
    int got = cache.acquire(base + n * page, 1, &h, [&] {
        if (waits++ == 2) cache.release(es[1]);
    });
    EXPECT_EQ(waits, 3);
    EXPECT_EQ(got, es[1]);
    // forget() drops page 0's entry even while pinned (the memory is going).
    cache.forget(base, 1);
    // Its entry is free again: the next miss takes it without waiting.
    int waited = 0;
    int again = cache.acquire(base + 10, 1, &h, [&] { waited++; });
    EXPECT_EQ(again, e0);
    EXPECT_EQ(waited, 0);
    // Memory the NIC cannot register (a NULL range) fails with a reason.
    RegCache bad;
    bad.init(nullptr, nullptr);
    EXPECT_EQ(bad.acquire(base, 1, &h, no_wait), RegCache::kNone);
    EXPECT_NE(std::string(bad.last_error()).find("VIP_INVALID_PARAMETER"), std::string::npos) << bad.last_error();
    cache.clear();
}

// acquire(..., pins) pins the entry that many times at once (a layer posting
// that many descriptors that read it): it stays pinned until as many
// releases; release(entry, n) drops n at once.  With every other entry pinned,
// a miss can take this entry only once its last pin is gone.
TEST_F(ChannelPair, RegistrationCacheTakesSeveralPinsAtOnce) {
    using viastack::channel::RegCache;
    RegCache cache;
    cache.init(vt::nic(), ptag);
    const size_t page = Pages::kPage, n = RegCache::kEntries + 1;
    Pages pages(n + 2);
    uint8_t *base = pages.base;
    VIP_MEM_HANDLE h;
    int waits = 0;
    auto no_wait = [&] { waits++; };
    const int e0 = cache.acquire(base, 1, &h, no_wait, 3);
    ASSERT_GE(e0, 0) << cache.last_error();
    for (size_t i = 1; i < size_t(RegCache::kEntries); i++)
        ASSERT_GE(cache.acquire(base + i * page, 1, &h, no_wait), 0);
    cache.release(e0, 2); // one pin left: a miss must wait
    int released_in_wait = 0;
    int got = cache.acquire(base + n * page, 1, &h, [&] {
        if (waits++ == 1) {
            cache.release(e0); // the last pin
            released_in_wait++;
        }
    });
    EXPECT_EQ(released_in_wait, 1);
    EXPECT_EQ(got, e0);
    // More releases than pins leave it at none, not below: the next miss
    // takes it at once.
    cache.release(got, 5);
    int again = -1;
    EXPECT_NO_THROW(again = cache.acquire(base + (n + 1) * page, 1, &h, [] {
        throw std::runtime_error("a miss waited: the entry is still pinned");
    }));
    EXPECT_EQ(again, got);
    cache.clear();
}

} // namespace
