// End to end through the real measurement loops: the synthetic LogP machine
// busy-waits known costs, and the suite must report them back.
//
// Busy-waits can only run long (the OS may take the CPU), never short, so the
// tolerances are tight below and wider above; and on a machine shared with
// other jobs a whole run can be swamped, so each check gets a few attempts
// and passes when one run finds the known answers.  A wrong method fails every
// attempt.
#include "layer_synthetic.hpp"
#include "measure.hpp"

#include <gtest/gtest.h>

#include <sstream>

using namespace logp;

namespace {
constexpr int kAttempts = 4;
bool near(double got, double want) { return got > want * 0.97 - 0.05 && got < want * 1.25 + 0.3; }
}  // namespace

TEST(Synthetic, ParsesParameters) {
    SyntheticParams p = parse_synthetic("o_s=1.5,g=9,L=12,o_r=2.5,window=4,t0=3,r_inf=150");
    EXPECT_DOUBLE_EQ(p.o_s_us, 1.5);
    EXPECT_DOUBLE_EQ(p.g_us, 9);
    EXPECT_DOUBLE_EQ(p.L_us, 12);
    EXPECT_DOUBLE_EQ(p.o_r_us, 2.5);
    EXPECT_EQ(p.window, 4);
    EXPECT_DOUBLE_EQ(p.t0_us, 3);
    EXPECT_DOUBLE_EQ(p.r_inf_mb_s, 150);
    EXPECT_EQ(parse_synthetic(format_synthetic(p)).g_us, 9);
    EXPECT_THROW(parse_synthetic("o_s"), std::invalid_argument);
    EXPECT_THROW(parse_synthetic("o_s=-1"), std::invalid_argument);
    EXPECT_THROW(parse_synthetic("speed=3"), std::invalid_argument);
    EXPECT_THROW(parse_synthetic("window=0"), std::invalid_argument);
    EXPECT_THROW(parse_synthetic("o_s=abc"), std::invalid_argument);
}

TEST(Synthetic, SuiteRecoversKnownLogP) {
    SyntheticLayer layer(parse_synthetic("o_s=2,o_r=3,g=7,L=9,window=8"));
    Progress quiet(false);
    std::ostringstream last;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
        LogPRow row = measure_logp(layer, Job::single(), quick_config(), quiet);
        ASSERT_EQ(row.status.state, "measured");
        last.str("");
        last << "o_s " << row.o_s_us << " o_r " << row.o_r_us << " g " << row.g_us << " RTT/2 " << row.rtt_half_us
             << " L " << row.L_us << " o_s(delayed) " << row.o_s_delay_us;
        if (near(row.o_s_us, 2) && near(row.o_r_us, 3) && near(row.g_us, 7) && near(row.rtt_half_us, 14) &&
            std::abs(row.L_us - 9) < 1.5 && near(row.o_s_delay_us, 2))
            return;
    }
    FAIL() << "no run recovered o_s=2 o_r=3 g=7 L=9; last: " << last.str();
}

TEST(Synthetic, SuiteRecoversKnownBandwidthMetrics) {
    SyntheticLayer layer(parse_synthetic("t0=5,r_inf=100"));
    Progress quiet(false);
    std::ostringstream last;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
        BandwidthCurve c = measure_bandwidth(layer, Job::single(), quick_config(), quiet);
        ASSERT_EQ(c.status.state, "measured");
        ASSERT_EQ(c.points.size(), 14u);  // 4 B .. 32 KB
        // Each point on the model curve n / (t0 + n / r_inf): never above it, at most 15% below.
        bool on_curve = true;
        last.str("");
        for (const auto &pt : c.points) {
            double model = double(pt.bytes) / (5.0 + double(pt.bytes) / 100.0);
            if (pt.mb_s > model * 1.02 || pt.mb_s < model * 0.85) {
                on_curve = false;
                last << pt.bytes << " B: " << pt.mb_s << " MB/s (model " << model << "); ";
            }
        }
        last << "t0 " << c.t0_us << " r_inf " << c.r_inf_mb_s << " n_1/2 " << c.n_half_bytes;
        if (on_curve && std::abs(c.t0_us - 5) < 0.5 && std::abs(c.r_inf_mb_s - 100) < 8 &&
            std::abs(c.n_half_bytes - 500) < 75)
            return;
    }
    FAIL() << "no run recovered t0=5 r_inf=100 n_1/2=500; last: " << last.str();
}

// The message-rate sweep on a machine with known o_s, g, L: a window of W
// costs o_s + W*g + L (the sends drain at g, the confirmation arrives L after
// the last), so the time per message is g + (o_s + L) / W.
TEST(Synthetic, RateSweepRecoversTheWindowModel) {
    SyntheticLayer layer(parse_synthetic("o_s=1,o_r=1,g=4,L=10,window=8"));
    Progress quiet(false);
    MeasureConfig cfg = quick_config();
    cfg.rate_msgs = 64;  // short streams (~1 ms at W = 1): a loaded machine preempts few of them
    cfg.bw_reps = 9;
    std::ostringstream last;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
        RateSweep s = measure_rate_sweep(layer, Job::single(), cfg, quiet);
        ASSERT_EQ(s.status.state, "measured");
        ASSERT_EQ(s.points.size(), 7u);  // W = 1 ... 64
        bool ok = true;
        last.str("");
        for (const auto &p : s.points) {
            const double model = 4 + 11.0 / p.window;
            EXPECT_NEAR(p.msg_rate_m_s, 1 / p.us_per_msg, 1e-9);
            if (std::abs(p.us_per_msg - model) > 0.15 * model) ok = false;
            last << "W=" << p.window << ": " << p.us_per_msg << " us (model " << model << "); ";
        }
        if (ok) return;
    }
    FAIL() << "no run followed g + (o_s + L) / W; last: " << last.str();
}
