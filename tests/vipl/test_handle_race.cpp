// The handle table's lock-free lookup (vipl/src/handles.hpp) racing a remove
// and re-insert of the same slot: what VipPostSend's handle lookup meets when
// another thread runs VipDestroyVi and VipCreateVi.  A lookup must return the
// object its handle named while it was live, or nullptr -- never the slot's
// next object -- and, under ThreadSanitizer (VIASTACK_TSAN=ON), must not be a
// data race: the test then fails on TSan's report (exit code 66).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "fake_vi.hpp"
#include "handles.hpp"

using vipl::test::FakeVi;

// Handle k of the slot (its k-th insert) has generation 2k+1 (handles.hpp's
// encoding: bits 24..55) and names objs[k % 4], made through nics[k % 4].
TEST(HandleTable, LookupRacingRemoveAndReuse) {
    vipl::api::HandleTable<vipl::prov::Vi> table(vipl::api::Kind::Vi); // one slot, reused
    FakeVi objs[4] = {FakeVi(0), FakeVi(1), FakeVi(2), FakeVi(3)};
    vipl::api::NicEntry nics[4];
    auto expected = [](const void *h) {
        const uint32_t gen = uint32_t((reinterpret_cast<uint64_t>(h) >> 24) & 0xffffffff);
        return int((gen / 2) % 4);
    };

    constexpr int kCycles = 20000;
    std::atomic<void *> current{nullptr}; // the newest handle (possibly removed already)
    std::atomic<bool> stop{false};
    std::atomic<long> hits{0}, wrong{0};
    std::thread poster([&] {
        // VipPostSend's lookup, over and over, with whatever handle is newest.
        while (!stop.load(std::memory_order_relaxed)) {
            void *h = current.load(std::memory_order_acquire);
            if (h == nullptr) continue;
            vipl::api::NicEntry *owner = nullptr;
            vipl::prov::Vi *v = table.lookup(h, &owner);
            if (v == nullptr) continue; // removed: the caller gets VIP_INVALID_PARAMETER
            const int k = expected(h);
            if (v != &objs[k] || owner != &nics[k]) wrong.fetch_add(1, std::memory_order_relaxed);
            else hits.fetch_add(1, std::memory_order_relaxed);
        }
    });
    // VipCreateVi + VipDestroyVi on another thread, the slot reused every time.
    for (int i = 0; i < kCycles; i++) {
        void *h = table.insert(&objs[i % 4], &nics[i % 4]);
        ASSERT_NE(h, nullptr);
        ASSERT_EQ(expected(h), i % 4);
        current.store(h, std::memory_order_release);
        if (i % 16 == 0) std::this_thread::yield(); // on a shared machine, let the poster see it live
        ASSERT_EQ(table.remove(h), &objs[i % 4]);
    }
    stop.store(true);
    poster.join();
    EXPECT_EQ(wrong.load(), 0) << "a lookup returned an object its handle did not name";
    EXPECT_EQ(table.lookup(current.load()), nullptr); // a removed handle stays dead
}
