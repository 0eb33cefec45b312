// am_spmd_bad_input_test - bad input to the calls of am_spmd.h: calls before
// start-up, bad start-up arguments (which must leave nothing half started, so
// a good start-up afterwards still works), and bad arguments afterwards.  The
// tests run in order; main ends with the collective AM_SPMDExit.  Runs as a
// job of one and under vipl-run.  Rows in docs/bad-input.md.
#include <gtest/gtest.h>

#include <vector>

#include "am_spmd.h"

namespace {

eb_t g_eb;
ep_t g_ep;

TEST(Spmd, BeforeStartup) {
    EXPECT_EQ(AM_SPMDMyProc(), -1);
    EXPECT_EQ(AM_SPMDNumProcs(), -1);
    EXPECT_EQ(AM_SPMDGetTag(), tag_t(0));
    EXPECT_EQ(AM_SPMDBarrier(), AM_ERR_NOT_INIT);
    int x = 1, y[64];
    EXPECT_EQ(AM_SPMDAllGather(&x, y, sizeof x), AM_ERR_NOT_INIT);
    EXPECT_EQ(AM_SPMDgetenvMaster("PATH"), nullptr);
    EXPECT_EQ(AM_SPMDgetenvMaster(nullptr), nullptr);
    EXPECT_EQ(AM_SPMDSetExitCallback(nullptr), AM_OK);
    (void)AM_SPMDIsWorker(nullptr);
}

TEST(Spmd, StartupArguments) {
    eb_t eb;
    ep_t ep;
    EXPECT_EQ(AM_SPMDStartup(nullptr, nullptr, nullptr, &ep), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SPMDStartup(nullptr, nullptr, &eb, nullptr), AM_ERR_BAD_ARG);
    EXPECT_EQ(AMVIA_SPMDStartup(nullptr, nullptr, -1, nullptr, &eb, &ep), AM_ERR_BAD_ARG);
    static uint8_t seg[4096];
    EXPECT_EQ(AM_SPMDStartupSeg(nullptr, nullptr, nullptr, sizeof seg, &eb, &ep), AM_ERR_BAD_ARG)
        << "a length without a segment";
    EXPECT_EQ(AM_SPMDStartupSeg(nullptr, nullptr, seg, 0, &eb, &ep), AM_ERR_BAD_ARG) << "a segment of 0 bytes";
    EXPECT_EQ(AM_SPMDMyProc(), -1) << "a refused start-up started nothing";
    // Nothing was left half started: a good start-up works.
    ASSERT_EQ(AM_SPMDStartupSeg(nullptr, nullptr, seg, sizeof seg, &g_eb, &g_ep), AM_OK);
    EXPECT_GE(AM_SPMDMyProc(), 0);
    void *base;
    uintptr_t len;
    ASSERT_EQ(AM_GetSeg(g_ep, &base, &len), AM_OK);
    EXPECT_EQ(base, seg);
    EXPECT_EQ(len, sizeof seg);
}

TEST(Spmd, AfterStartup) {
    eb_t eb;
    ep_t ep;
    EXPECT_EQ(AM_SPMDStartup(nullptr, nullptr, &eb, &ep), AM_ERR_RESOURCE) << "already started";
    int x = 1;
    std::vector<int> all(static_cast<size_t>(AM_SPMDNumProcs()));
    EXPECT_EQ(AM_SPMDAllGather(nullptr, all.data(), sizeof x), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SPMDAllGather(&x, nullptr, sizeof x), AM_ERR_BAD_ARG);
    EXPECT_EQ(AM_SPMDgetenvMaster(nullptr), nullptr);
    EXPECT_EQ(AM_SPMDgetenvMaster(""), nullptr);
    // Still in step: a good all-gather and a barrier.
    x = AM_SPMDMyProc();
    ASSERT_EQ(AM_SPMDAllGather(&x, all.data(), sizeof x), AM_OK);
    for (int r = 0; r < AM_SPMDNumProcs(); r++) EXPECT_EQ(all[size_t(r)], r);
    EXPECT_EQ(AM_SPMDBarrier(), AM_OK);
}

} // namespace

int main(int argc, char **argv) {
    testing::InitGoogleTest(&argc, argv);
    int rc = RUN_ALL_TESTS();
    if (AM_SPMDMyProc() >= 0) AM_SPMDExit(rc); // collective
    return rc;
}
