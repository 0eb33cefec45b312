// stepper_test.cpp - Stepper (nicfw/src/stepper.hpp) in thread mode: host
// threads that quiesce the firmware at the same time (VipDestroyVi on two
// threads at once) each get the firmware parked for their whole section, and
// none waits forever for a pause another one's release cancelled.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "stepper.hpp"

namespace {

// The firmware side the Stepper drives: it notes every step taken while a
// quiescer is inside its section.
struct FakeFw {
    std::atomic<int> inside{0};
    std::atomic<uint64_t> steps{0}, steps_inside{0};
    void step() { thread_step(); }
    bool thread_step() {
        steps.fetch_add(1, std::memory_order_relaxed);
        if (inside.load(std::memory_order_acquire)) steps_inside.fetch_add(1, std::memory_order_relaxed);
        return true; // keep stepping: the pause must stop a busy firmware
    }
    uint32_t sleep_prepare() { return 0; }
    bool has_work() { return true; }
    void sleep_cancel() {}
    void sleep_commit(uint32_t) {}
    void wake() {}
};

TEST(Stepper, ConcurrentQuiescersEachParkTheFirmware) {
    FakeFw fw;
    nicfw::Stepper<FakeFw> s(nicfw::Mode::Thread, fw);
    s.start();
    while (fw.steps.load() == 0) std::this_thread::yield();

    std::atomic<bool> done{false};
    std::thread watchdog([&] { // a quiescer left waiting for a cancelled pause never returns
        for (int i = 0; i < 600 && !done.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (!done.load()) {
            std::fprintf(stderr, "stepper_test: a quiescer is still waiting after 30 s\n");
            std::abort();
        }
    });
    constexpr int kThreads = 4, kRounds = 300;
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
        ts.emplace_back([&] {
            for (int r = 0; r < kRounds; ++r) {
                auto q = s.quiesce();
                fw.inside.fetch_add(1, std::memory_order_acq_rel);
                const uint64_t before = fw.steps.load(std::memory_order_acquire);
                std::this_thread::yield(); // let the firmware thread run, if it is not parked
                const uint64_t after = fw.steps.load(std::memory_order_acquire);
                fw.inside.fetch_sub(1, std::memory_order_acq_rel);
                EXPECT_EQ(before, after) << "the firmware stepped inside a quiesced section";
            }
        });
    for (auto &t : ts) t.join();
    done.store(true);
    watchdog.join();
    EXPECT_EQ(fw.steps_inside.load(), 0u);
    s.stop_thread();
}

} // namespace
