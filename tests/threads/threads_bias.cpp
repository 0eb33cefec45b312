// threads_bias.cpp - the synchronisation a lone thread does not pay for
// (vipl/providers/common/owner_bias.hpp, spin_lock.hpp; vipl/src/in_call.hpp,
// handles.hpp), at the moment it matters: a second thread arriving.
//
//  * A fresh SpinLock taken by two threads at once, again and again: one
//    becomes its owner and takes it with plain stores, the other turns it
//    shared.  A switch that let the owner's unlocked section overlap the other
//    thread's locked one shows as two threads inside at once (and as a lost
//    increment of the unprotected counter).
//  * Handle uses racing destroy and re-create: two threads take uses of the
//    newest handle (nested two deep, as a call that uses a VI and a CQ does)
//    while a third closes, destroys and re-creates the object, and short-lived
//    threads come and go (their in-call records are given back and taken
//    again).  A use must never see a destroyed object.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "fake_vi.hpp"
#include "handles.hpp"
#include "spin_lock.hpp"

namespace {

using vipl::test::FakeVi;

TEST(OwnerBias, SecondThreadTurnsAFreshLockShared) {
    constexpr int kRounds = 1000, kTakes = 200;
    for (int round = 0; round < kRounds; ++round) {
        vipl::common::SpinLock lock;
        std::atomic<int> inside{0}, ready{0};
        std::atomic<bool> overlap{false};
        long counter = 0; // protected by the lock alone
        auto hammer = [&] {
            ready.fetch_add(1);
            while (ready.load() < 2) std::this_thread::yield(); // both start together
            for (int i = 0; i < kTakes; ++i) {
                vipl::common::SpinGuard g(lock);
                if (inside.fetch_add(1, std::memory_order_relaxed) != 0) overlap.store(true);
                const long c = counter;
                // A section long enough for the other thread's arrival (or a
                // preemption) to land in it.
                for (int p = 0; p < 100; ++p) __builtin_ia32_pause();
                counter = c + 1;
                inside.fetch_sub(1, std::memory_order_relaxed);
            }
        };
        std::thread a(hammer), b(hammer);
        a.join();
        b.join();
        ASSERT_FALSE(overlap.load()) << "round " << round << ": two threads inside the lock";
        ASSERT_EQ(counter, 2L * kTakes) << "round " << round;
    }
}

TEST(OwnerBias, OwnerAloneNeverShares) {
    vipl::common::SpinLock lock;
    for (int i = 0; i < 1000; ++i) { vipl::common::SpinGuard g(lock); }
    // A second thread after the owner's sections: it shares, then both take it.
    long counter = 0;
    std::thread t([&] {
        for (int i = 0; i < 10000; ++i) {
            vipl::common::SpinGuard g(lock);
            ++counter;
        }
    });
    for (int i = 0; i < 10000; ++i) {
        vipl::common::SpinGuard g(lock);
        ++counter;
    }
    t.join();
    EXPECT_EQ(counter, 20000);
}

TEST(InCallRecords, UsesRacingDestroyAndRecreate) {
    vipl::api::HandleTable<vipl::prov::Vi> table(vipl::api::Kind::Vi);
    vipl::api::NicEntry nic;
    FakeVi pinned(-1); // a second object each use nests with
    void *pinned_h = table.insert(&pinned, &nic);
    std::atomic<void *> current{table.insert(new FakeVi(0), &nic)};
    std::atomic<bool> stop{false};
    std::atomic<long> held{0}, dead_seen{0};

    auto user = [&] {
        while (!stop.load(std::memory_order_relaxed)) {
            void *h = current.load(std::memory_order_acquire);
            const vipl::api::ViUse outer(table, pinned_h);
            const vipl::api::ViUse vi(table, h);
            if (!outer || !vi) continue;
            auto *f = static_cast<FakeVi *>(vi.get());
            if (!f->alive.load(std::memory_order_relaxed)) dead_seen.fetch_add(1);
            held.fetch_add(1, std::memory_order_relaxed);
        }
    };
    std::vector<std::thread> users;
    users.emplace_back(user);
    users.emplace_back(user);
    // Threads that make a few calls and exit: records given back and reused.
    std::thread churn([&] {
        while (!stop.load(std::memory_order_relaxed)) {
            std::thread t([&] {
                for (int i = 0; i < 50; ++i) {
                    const vipl::api::ViUse vi(table, current.load(std::memory_order_acquire));
                    if (vi && !static_cast<FakeVi *>(vi.get())->alive.load()) dead_seen.fetch_add(1);
                }
            });
            t.join();
        }
    });

    // At least kCycles destroys, and on until the users have held enough uses
    // (on a loaded machine they may not run at all during the first ones).
    constexpr int kCycles = 3000;
    for (int i = 1; i <= kCycles || held.load(std::memory_order_relaxed) < 2000; ++i) {
        if (i > kCycles) std::this_thread::yield();
        void *h = current.load();
        vipl::prov::Vi *v = table.close(h);
        ASSERT_NE(v, nullptr);
        auto *f = static_cast<FakeVi *>(v);
        f->alive.store(false, std::memory_order_relaxed); // what a use must never see
        ASSERT_EQ(table.remove(h), v);
        delete f;
        current.store(table.insert(new FakeVi(i), &nic), std::memory_order_release);
    }
    stop.store(true);
    for (auto &t : users) t.join();
    churn.join();
    EXPECT_EQ(dead_seen.load(), 0) << "a use saw a destroyed object";
    EXPECT_GT(held.load(), 0);
    void *h = current.load();
    table.close(h);
    delete static_cast<FakeVi *>(table.remove(h));
    table.close(pinned_h);
    table.remove(pinned_h);
}

} // namespace
