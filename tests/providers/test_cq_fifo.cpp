// The completion-queue FIFO of vipl/providers/common/cq_fifo.hpp.
#include <gtest/gtest.h>

#include <thread>

#include "cq_fifo.hpp"

namespace vc = vipl::common;

namespace {
struct Entry {
    int vi = 0;
    bool recv = false;
};
} // namespace

TEST(CqFifo, RoundUpToPowersOfTwo) {
    EXPECT_EQ(vc::CqFifo<Entry>::round_up(0), 1u);
    EXPECT_EQ(vc::CqFifo<Entry>::round_up(1), 1u);
    EXPECT_EQ(vc::CqFifo<Entry>::round_up(5), 8u);
    EXPECT_EQ(vc::CqFifo<Entry>::round_up(64), 64u);
}

TEST(CqFifo, FirstInFirstOutAndFullAtExactlyItsSize) {
    vc::CqFifo<Entry> f;
    ASSERT_TRUE(f.resize(3)); // a CQ of 3 entries overruns at the 4th, not at the 5th
    EXPECT_EQ(f.capacity(), 3u);
    Entry e;
    EXPECT_FALSE(f.pop(&e));
    for (int i = 0; i < 3; i++) EXPECT_TRUE(f.push({i, i % 2 == 1}));
    EXPECT_FALSE(f.push({9, false}));
    EXPECT_EQ(f.size(), 3u);
    for (int i = 0; i < 3; i++) {
        ASSERT_TRUE(f.pop(&e));
        EXPECT_EQ(e.vi, i);
        EXPECT_EQ(e.recv, i % 2 == 1);
    }
    EXPECT_TRUE(f.empty());
}

TEST(CqFifo, ResizeKeepsEntriesInOrderAcrossTheWrap) {
    vc::CqFifo<Entry> f;
    ASSERT_TRUE(f.resize(4));
    Entry e;
    for (int i = 0; i < 3; i++) f.push({i});
    f.pop(&e);
    f.pop(&e);
    for (int i = 3; i < 6; i++) f.push({i}); // entries 2..5, wrapped around the end
    ASSERT_TRUE(f.resize(16));
    EXPECT_EQ(f.capacity(), 16u);
    for (int i = 2; i < 6; i++) {
        ASSERT_TRUE(f.pop(&e));
        EXPECT_EQ(e.vi, i);
    }
}

TEST(CqFifo, ResizeBelowWhatItHoldsIsRefused) {
    vc::CqFifo<Entry> f;
    ASSERT_TRUE(f.resize(8));
    for (int i = 0; i < 5; i++) f.push({i});
    EXPECT_FALSE(f.resize(4));
    EXPECT_EQ(f.capacity(), 8u);
    EXPECT_EQ(f.size(), 5u);
    EXPECT_TRUE(f.resize(5)); // shrinking to what it holds keeps everything
    EXPECT_EQ(f.capacity(), 5u);
    EXPECT_FALSE(f.push({9})) << "full at its new size";
    EXPECT_FALSE(f.resize(0));
    Entry e;
    ASSERT_TRUE(f.pop(&e));
    EXPECT_EQ(e.vi, 0);
}

TEST(CqFifo, RemoveIfDropsADestroyedVisEntries) {
    vc::CqFifo<Entry> f;
    ASSERT_TRUE(f.resize(8));
    Entry e;
    f.push({0});
    f.pop(&e); // head no longer at slot 0
    for (int v : {1, 2, 1, 3, 1}) f.push({v});
    f.remove_if([](const Entry &x) { return x.vi == 1; });
    EXPECT_EQ(f.size(), 2u);
    ASSERT_TRUE(f.pop(&e));
    EXPECT_EQ(e.vi, 2);
    ASSERT_TRUE(f.pop(&e));
    EXPECT_EQ(e.vi, 3);
    EXPECT_TRUE(f.push({4})); // still usable
}

// A producer thread (a firmware) and a consumer (VipCQDone).
TEST(CqFifo, OneProducerOneConsumer) {
    constexpr int kN = 5000;
    vc::CqFifo<Entry> f;
    ASSERT_TRUE(f.resize(32));
    std::thread producer([&] {
        for (int i = 0; i < kN; i++)
            while (!f.push({i})) std::this_thread::yield();
    });
    int next = 0;
    Entry e;
    while (next < kN) {
        if (f.pop(&e)) {
            ASSERT_EQ(e.vi, next);
            next++;
        } else {
            std::this_thread::yield();
        }
    }
    producer.join();
}
