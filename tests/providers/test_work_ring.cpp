// The in-order work ring of vipl/providers/common/work_ring.hpp: descriptors
// come back in posting order, only once complete, with the provider's poll
// called when the oldest is not; posting and reaping on two threads.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "work_ring.hpp"

namespace vc = vipl::common;

namespace {
struct Info {
    int tag = 0;
};
std::vector<VIP_DESCRIPTOR> descriptors(size_t n) { return std::vector<VIP_DESCRIPTOR>(n); }
} // namespace

TEST(WorkRing, EmptyRingHasNothingAndDoesNotPoll) {
    vc::WorkRing<> ring;
    ring.reset(4);
    int polls = 0;
    VIP_DESCRIPTOR *out = nullptr;
    EXPECT_EQ(ring.reap(&out, [&] { polls++; }), VIP_NOT_DONE);
    EXPECT_EQ(polls, 0);
    EXPECT_TRUE(ring.empty());
    EXPECT_EQ(ring.oldest(), nullptr);
}

TEST(WorkRing, ClaimClearsStatusAndIsUnseenUntilPublished) {
    vc::WorkRing<Info> ring;
    ring.reset(4);
    auto d = descriptors(1);
    d[0].CS.Status = VIP_STATUS_DONE | VIP_STATUS_FORMAT_ERROR; // left over from its last use
    auto &s = ring.claim(&d[0]);
    s.info.tag = 7;
    EXPECT_EQ(d[0].CS.Status, 0u);
    EXPECT_TRUE(ring.empty());
    ring.publish();
    EXPECT_EQ(ring.posted(), 1u);
    EXPECT_EQ(ring.oldest(), &d[0]);
    EXPECT_EQ(ring.slot(0).info.tag, 7);
}

TEST(WorkRing, HandsBackInPostingOrderOnlyWhenTheOldestIsDone) {
    vc::WorkRing<> ring;
    ring.reset(4);
    auto d = descriptors(3);
    for (auto &x : d) {
        ring.claim(&x);
        ring.publish();
    }
    EXPECT_FALSE(ring.all_complete());
    vc::complete_descriptor(&d[1], VIP_STATUS_OP_SEND); // the second completes first
    VIP_DESCRIPTOR *out = nullptr;
    int polls = 0;
    EXPECT_EQ(ring.reap(&out, [&] { polls++; }), VIP_NOT_DONE);
    EXPECT_EQ(polls, 1);
    // The poll completes the oldest: the same call hands it back.
    EXPECT_EQ(ring.reap(&out, [&] { vc::complete_descriptor(&d[0], VIP_STATUS_OP_SEND); }), VIP_SUCCESS);
    EXPECT_EQ(out, &d[0]);
    EXPECT_EQ(d[0].CS.Status, uint32_t(VIP_STATUS_DONE | VIP_STATUS_OP_SEND));
    EXPECT_EQ(ring.reap(&out, [] {}), VIP_SUCCESS);
    EXPECT_EQ(out, &d[1]);
    EXPECT_EQ(ring.reap(&out, [] {}), VIP_NOT_DONE);
    EXPECT_FALSE(ring.all_complete());
    vc::complete_descriptor(&d[2], VIP_STATUS_PROTECTION_ERROR);
    EXPECT_TRUE(ring.all_complete());
    EXPECT_EQ(ring.reap(&out, [] {}), VIP_SUCCESS);
    EXPECT_EQ(out, &d[2]);
    EXPECT_TRUE(ring.empty());
}

TEST(WorkRing, FullAtDepthAndReusableAfterReaping) {
    vc::WorkRing<> ring;
    ring.reset(2);
    auto d = descriptors(3);
    ring.claim(&d[0]);
    ring.publish();
    ring.claim(&d[1]);
    ring.publish();
    EXPECT_TRUE(ring.full());
    vc::complete_descriptor(&d[0], 0);
    VIP_DESCRIPTOR *out = nullptr;
    ASSERT_EQ(ring.reap(&out, [] {}), VIP_SUCCESS);
    EXPECT_FALSE(ring.full());
    ring.claim(&d[2]); // wraps around onto slot 0
    ring.publish();
    vc::complete_descriptor(&d[1], 0);
    vc::complete_descriptor(&d[2], 0);
    ASSERT_EQ(ring.reap(&out, [] {}), VIP_SUCCESS);
    EXPECT_EQ(out, &d[1]);
    ASSERT_EQ(ring.reap(&out, [] {}), VIP_SUCCESS);
    EXPECT_EQ(out, &d[2]);
}

// post(): claim and publish in one, refused (nothing changed) when full.
TEST(WorkRing, PostIsClaimAndPublishAndRefusesWhenFull) {
    vc::WorkRing<> ring;
    ring.reset(2);
    auto d = descriptors(3);
    for (auto &x : d) x.CS.Status = VIP_STATUS_DONE; // left over from a last use
    ASSERT_TRUE(ring.post(&d[0]));
    EXPECT_EQ(d[0].CS.Status, 0u);
    EXPECT_EQ(ring.oldest(), &d[0]);
    ASSERT_TRUE(ring.post(&d[1]));
    EXPECT_TRUE(ring.full());
    EXPECT_FALSE(ring.post(&d[2]));
    EXPECT_EQ(d[2].CS.Status, uint32_t(VIP_STATUS_DONE)) << "a refused post must not touch the descriptor";
    EXPECT_EQ(ring.posted(), 2u);
    vc::complete_descriptor(&d[0], 0);
    VIP_DESCRIPTOR *out = nullptr;
    ASSERT_EQ(ring.reap(&out, [] {}), VIP_SUCCESS);
    EXPECT_EQ(out, &d[0]);
    ASSERT_TRUE(ring.post(&d[2])); // wraps around onto slot 0
    vc::complete_descriptor(&d[1], 0);
    vc::complete_descriptor(&d[2], 0);
    ASSERT_EQ(ring.reap(&out, [] {}), VIP_SUCCESS);
    EXPECT_EQ(out, &d[1]);
    ASSERT_EQ(ring.reap(&out, [] {}), VIP_SUCCESS);
    EXPECT_EQ(out, &d[2]);
    EXPECT_TRUE(ring.empty());
}

// One thread posts (and completes at once, as a provider does for a rejected
// descriptor), another reaps: every descriptor comes back once, in order.
TEST(WorkRing, PosterAndReaperOnTwoThreads) {
    constexpr int kN = 5000;
    vc::WorkRing<> ring;
    ring.reset(64);
    auto d = descriptors(kN);
    std::thread poster([&] {
        for (int i = 0; i < kN; i++) {
            while (ring.full()) std::this_thread::yield();
            ring.claim(&d[i]);
            d[i].CS.Length = uint32_t(i);
            vc::complete_descriptor(&d[i], VIP_STATUS_OP_SEND);
            ring.publish();
        }
    });
    int next = 0;
    while (next < kN) {
        VIP_DESCRIPTOR *out = nullptr;
        if (ring.reap(&out, [] {}) == VIP_SUCCESS) {
            ASSERT_EQ(out, &d[next]);
            ASSERT_EQ(out->CS.Length, uint32_t(next));
            next++;
        } else {
            std::this_thread::yield(); // two cores shared by many: let the poster run
        }
    }
    poster.join();
    EXPECT_TRUE(ring.empty());
}
