// The adaptive window of the shared waiting policy (vipl/include/vipl_wait.h),
// driven with given away-times: which evidence halves the window, which
// doubles it, and that a job with a CPU per process adapts too (two of its
// processes put on one CPU by the scheduler: docs/fm.md, "The slow mode").
// No clock is read: the durations are the test's.
#include <gtest/gtest.h>

#include "vipl_wait.h"

namespace {

// Spins the window out (as a wait loop would), reports that the CPU was away
// for `away_ns`, then finds the message after `polls` further idle polls.
void wait_once(vipl_wait::WaitState &w, uint64_t away_ns, uint32_t polls) {
    while (!vipl_wait::idle(w)) {}
    vipl_wait::gave_up_cpu(w, away_ns);
    for (uint32_t i = 0; i < polls; i++) ASSERT_FALSE(vipl_wait::idle(w)) << "window " << w.spin_limit;
    vipl_wait::progress(w);
}

vipl_wait::WaitState fresh(int procs) {
    vipl_wait::WaitState w;
    vipl_wait::init(w, vipl_wait::Mode::yield, procs);
    return w;
}

constexpr uint64_t kEmptyYield = 1200;    // a sched_yield nobody else wanted the CPU in
constexpr uint64_t kPeerTurn = 60000;     // a co-located peer spun its 4096-poll window
constexpr uint64_t kOtherSlice = 3000000; // a program that does not yield ran its slice

TEST(WaitPolicy, CPUPerProcessStartsAtTheLargeWindow) {
    vipl_wait::WaitState w = fresh(1);
    EXPECT_EQ(w.spin_limit, 4096u);
    EXPECT_EQ(w.spin_max, 4096u);
    EXPECT_EQ(w.spin_min, 8u);
}

TEST(WaitPolicy, PeerTurnsOnOurCpuShrinkTheWindowEvenWithACpuPerProcess) {
    vipl_wait::WaitState w = fresh(1); // not oversubscribed: used to stay at 4096
    wait_once(w, kPeerTurn, 0);
    EXPECT_EQ(w.spin_limit, 2048u);
    for (int i = 0; i < 20; i++) wait_once(w, kPeerTurn, 1);
    EXPECT_EQ(w.spin_limit, 8u);
}

TEST(WaitPolicy, AnEmptyYieldGrowsTheWindowBack) {
    // The message came while the yield's system call ran: nobody needed the
    // CPU, the window was merely shorter than a round trip.  Counting this as
    // "at once" kept the window at its minimum before (docs/am.md, "Waiting").
    vipl_wait::WaitState w = fresh(1);
    for (int i = 0; i < 20; i++) wait_once(w, kPeerTurn, 0);
    ASSERT_EQ(w.spin_limit, 8u);
    wait_once(w, kEmptyYield, 0);
    EXPECT_EQ(w.spin_limit, 16u);
    for (int i = 0; i < 20; i++) wait_once(w, kEmptyYield, 1);
    EXPECT_EQ(w.spin_limit, 4096u);
}

TEST(WaitPolicy, AnotherProgramsSliceGrowsTheWindow) {
    // A compiler held our CPU for its slice: the peer (which yields after its
    // window) was not the one on our CPU; yielding sooner only loses it again.
    vipl_wait::WaitState w = fresh(1);
    for (int i = 0; i < 3; i++) wait_once(w, kPeerTurn, 0);
    ASSERT_EQ(w.spin_limit, 512u);
    wait_once(w, kOtherSlice, 0);
    EXPECT_EQ(w.spin_limit, 1024u);
}

TEST(WaitPolicy, ALateMessageGrowsTheWindow) {
    vipl_wait::WaitState w = fresh(1);
    for (int i = 0; i < 3; i++) wait_once(w, kPeerTurn, 0);
    ASSERT_EQ(w.spin_limit, 512u);
    wait_once(w, kPeerTurn, 3); // the peer runs elsewhere and was slow
    EXPECT_EQ(w.spin_limit, 1024u);
}

TEST(WaitPolicy, ThresholdsAreTheBoundsOfAPeersTurn) {
    vipl_wait::WaitState w = fresh(1);
    wait_once(w, vipl_wait::kOtherRanNs - 1, 0);
    EXPECT_EQ(w.spin_limit, 4096u); // doubled, capped
    wait_once(w, vipl_wait::kOtherRanNs, 0);
    EXPECT_EQ(w.spin_limit, 2048u);
    wait_once(w, vipl_wait::kOtherSliceNs - 1, 2);
    EXPECT_EQ(w.spin_limit, 1024u);
    wait_once(w, vipl_wait::kOtherSliceNs, 0);
    EXPECT_EQ(w.spin_limit, 2048u);
}

TEST(WaitPolicy, OversubscribedJobStartsSmall) {
    vipl_wait::WaitState w = fresh(vipl_wait::usable_cpus() + 1);
    EXPECT_EQ(w.spin_limit, 64u);
    for (int i = 0; i < 10; i++) wait_once(w, kPeerTurn, 0);
    EXPECT_EQ(w.spin_limit, 8u);
    for (int i = 0; i < 10; i++) wait_once(w, kEmptyYield, 0);
    EXPECT_EQ(w.spin_limit, 64u);
}

TEST(WaitPolicy, SpinNeverGivesUpAndAFixedWindowNeverMoves) {
    vipl_wait::WaitState w = fresh(1);
    w.mode = vipl_wait::Mode::spin;
    for (int i = 0; i < 100000; i++) ASSERT_FALSE(vipl_wait::idle(w));
    vipl_wait::WaitState f = fresh(1);
    vipl_wait::fix_window(f, 64);
    for (int i = 0; i < 5; i++) wait_once(f, kPeerTurn, 0);
    EXPECT_EQ(f.spin_limit, 64u);
}

TEST(WaitPolicy, GiveUpCpuRecordsTheTimeAway) {
    vipl_wait::WaitState w = fresh(1);
    while (!vipl_wait::idle(w)) {}
    bool ran = false;
    vipl_wait::give_up_cpu(w, [&] { ran = true; });
    EXPECT_TRUE(ran);
    EXPECT_TRUE(w.yielded);
    EXPECT_EQ(w.idle, 0u);
    EXPECT_LT(w.away_ns, uint64_t(1) << 40); // a duration, not garbage
}

// A launcher that binds each rank to a CPU of its own (vipl-run --bind core)
// names the job's CPUs: a rank bound to one CPU is not oversubscribed by a
// job with a CPU per rank, and is by one with more ranks than those CPUs.
TEST(WaitPolicy, BoundRanksCountTheJobsCpusNotTheirOwn) {
    setenv("VIASTACK_JOB_CPUS", "0,1", 1);
    EXPECT_EQ(vipl_wait::job_cpus(), 2);
    EXPECT_EQ(fresh(2).spin_max, 4096u);
    EXPECT_EQ(fresh(3).spin_max, 64u);
    setenv("VIASTACK_JOB_CPUS", "5", 1);
    EXPECT_EQ(vipl_wait::job_cpus(), 1);
    EXPECT_EQ(fresh(2).spin_max, 64u);
    unsetenv("VIASTACK_JOB_CPUS");
    EXPECT_EQ(vipl_wait::job_cpus(), vipl_wait::usable_cpus());
}

} // namespace
