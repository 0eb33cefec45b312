// The single-producer ring of vipl/providers/common/spsc_ring.hpp (nicfw's
// doorbells, the CQ FIFO underneath): the logical capacity is what push
// refuses beyond, also when it is not a power of two; order across wraps and
// resizes; the consumers' state on head's cache line; one producer and one
// consumer thread.
#include <gtest/gtest.h>
#include <sched.h>

#include <cstdint>
#include <thread>

#include "spsc_ring.hpp"

using vipl::common::SpscRing;

TEST(SpscRing, NonPowerOfTwoCapacityIsTheLimit) {
    for (size_t cap : {1u, 3u, 5u, 63u, 64u, 65u, 100u, 4095u}) {
        SpscRing<int> r(cap);
        EXPECT_EQ(r.capacity(), cap);
        EXPECT_TRUE(r.empty());
        for (size_t i = 0; i < cap; ++i) ASSERT_TRUE(r.push(static_cast<int>(i))) << "cap " << cap << " item " << i;
        EXPECT_EQ(r.size(), cap);
        EXPECT_FALSE(r.push(-1)) << "push beyond the logical capacity " << cap << " must be refused";
        int v = -1;
        ASSERT_TRUE(r.pop(&v));
        EXPECT_EQ(v, 0);
        EXPECT_TRUE(r.push(static_cast<int>(cap))) << "room again after a pop";
        EXPECT_FALSE(r.push(-1));
        for (size_t i = 1; i <= cap; ++i) {
            ASSERT_TRUE(r.pop(&v));
            EXPECT_EQ(v, static_cast<int>(i));
        }
        EXPECT_FALSE(r.pop(&v));
        EXPECT_EQ(r.front(), nullptr);
    }
}

TEST(SpscRing, ZeroCapacityMeansOne) {
    SpscRing<int> r(0);
    EXPECT_EQ(r.capacity(), 1u);
    EXPECT_TRUE(r.push(1));
    EXPECT_FALSE(r.push(2));
}

TEST(SpscRing, OrderKeptAcrossManyWraps) {
    SpscRing<uint64_t> r(5); // 8 physical slots, 5 usable: head and tail drift across the mask
    uint64_t next_in = 0, next_out = 0;
    for (int round = 0; round < 10000; ++round) {
        const int n = round % 6; // 0..5 items in flight
        for (int i = 0; i < n; ++i) ASSERT_TRUE(r.push(next_in++));
        ASSERT_EQ(r.size(), static_cast<size_t>(n));
        const uint64_t *f = r.front();
        if (n) {
            ASSERT_NE(f, nullptr);
            EXPECT_EQ(*f, next_out);
        }
        uint64_t v;
        while (r.pop(&v)) ASSERT_EQ(v, next_out++);
    }
    EXPECT_EQ(next_in, next_out);
}

TEST(SpscRing, ResetChangesCapacityAndEmpties) {
    SpscRing<int> r(4);
    for (int i = 0; i < 3; ++i) r.push(i);
    r.reset(6);
    EXPECT_TRUE(r.empty());
    EXPECT_EQ(r.capacity(), 6u);
    for (int i = 0; i < 6; ++i) ASSERT_TRUE(r.push(i));
    EXPECT_FALSE(r.push(6));
}

TEST(SpscRing, ResizeKeepsEntriesInOrderAcrossTheWrap) {
    SpscRing<int> r(3); // 4 slots
    int v = -1;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(r.push(i));
    ASSERT_TRUE(r.pop(&v));
    ASSERT_TRUE(r.pop(&v));
    ASSERT_TRUE(r.push(3));
    ASSERT_TRUE(r.push(4)); // 2, 3, 4 held, the tail past the wrap
    ASSERT_TRUE(r.resize(7));
    EXPECT_EQ(r.capacity(), 7u);
    EXPECT_EQ(r.size(), 3u);
    for (int i = 5; i < 9; ++i) ASSERT_TRUE(r.push(i));
    EXPECT_FALSE(r.push(9));
    for (int want = 2; want < 9; ++want) {
        ASSERT_TRUE(r.pop(&v));
        EXPECT_EQ(v, want);
    }
    EXPECT_TRUE(r.consumer_empty());
}

TEST(SpscRing, ResizeBelowWhatItHoldsIsRefused) {
    SpscRing<int> r(4);
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(r.push(i));
    EXPECT_FALSE(r.resize(3));
    EXPECT_EQ(r.capacity(), 4u) << "a refused resize changes nothing";
    EXPECT_TRUE(r.resize(4));
    int v = -1;
    for (int i = 0; i < 4; ++i) {
        ASSERT_TRUE(r.pop(&v));
        EXPECT_EQ(v, i);
    }
}

// The consumers' state shares head's cache line; head and tail have one each.
struct alignas(8) ConsumerWord {
    uint64_t w = 0;
};
TEST(SpscRing, HeadAndTailOnTheirOwnCacheLines) {
    SpscRing<int> plain(1);
    SpscRing<int, ConsumerWord> with_state(1);
    EXPECT_EQ(sizeof plain, sizeof with_state) << "the consumers' state takes no line of its own";
    EXPECT_GE(sizeof plain, 3 * 64u) << "the cold fields, head and tail: a line each";
    const auto *base = reinterpret_cast<const char *>(&with_state);
    const auto *state = reinterpret_cast<const char *>(&with_state.consumer_state());
    EXPECT_EQ(size_t(state - base) / 64, 1u) << "the consumers' state is on head's line";
}

TEST(SpscRing, ProducerConsumerThreads) {
    constexpr uint64_t kItems = 300000;
    SpscRing<uint64_t> r(100); // not a power of two
    std::thread producer([&] {
        for (uint64_t i = 0; i < kItems; ++i) {
            int spins = 0;
            while (!r.push(i * 2654435761u))
                if (++spins % 32 == 0) sched_yield();
        }
    });
    uint64_t expect = 0, wrong = 0, max_size = 0;
    int spins = 0;
    while (expect < kItems) {
        const size_t sz = r.size();
        if (sz > max_size) max_size = sz;
        uint64_t v;
        if (!r.pop(&v)) {
            if (++spins % 32 == 0) sched_yield();
            continue;
        }
        if (v != expect * 2654435761u) ++wrong;
        ++expect;
    }
    producer.join();
    EXPECT_EQ(wrong, 0u);
    EXPECT_LE(max_size, 100u) << "the ring held more than its capacity";
    EXPECT_TRUE(r.empty());
}
