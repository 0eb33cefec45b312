// The LogP extraction (Culler, Liu, Martin, Yoshikawa) on synthetic timings
// with known o_s, o_r, g, L: exact machines, noisy machines, and the limits.
#include "logp_method.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace logp;

namespace {

// Timings a benchmark would record on `m`: bursts of the usual sizes without
// and with a delay, round trips, receive timings; multiplicative noise + a
// few descheduled outliers when noisy.
LogPInputs record(const LogPMachine &m, double noise, unsigned seed, double delay_ns) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> jitter(1.0, noise);
    std::uniform_real_distribution<double> coin(0, 1);
    auto obs = [&](double t) {
        double v = noise > 0 ? t * std::max(0.5, jitter(rng)) : t;
        if (noise > 0 && coin(rng) < 0.03) v += 50000; // a context switch
        return v + 20;                                 // constant timer cost
    };
    LogPInputs in;
    in.short_max_m = m.window;
    in.long_min_m = 4 * m.window;
    std::vector<int> ms = {1, 2, 4, m.window, 4 * m.window, 8 * m.window, 16 * m.window};
    for (int rep = 0; rep < 41; ++rep) {
        for (int k : ms) in.bursts.push_back({k, 0.0, obs(simulate_burst_ns(m, k, 0.0))});
        for (int k : ms)
            if (k >= in.long_min_m) in.bursts.push_back({k, delay_ns, obs(simulate_burst_ns(m, k, delay_ns))});
        in.rtt_ns.push_back(obs(simulate_rtt_ns(m)));
        in.recv_ns.push_back(obs(m.o_r_ns));
    }
    return in;
}

} // namespace

TEST(LogPMachine, BurstShapes) {
    LogPMachine m{2000, 3000, 8000, 10000, 8};
    // Short bursts cost o_s each; long ones approach g per message.
    EXPECT_DOUBLE_EQ(simulate_burst_ns(m, 1, 0), 2000);
    EXPECT_DOUBLE_EQ(simulate_burst_ns(m, 8, 0), 16000);
    double slope = (simulate_burst_ns(m, 256, 0) - simulate_burst_ns(m, 128, 0)) / 128;
    EXPECT_NEAR(slope, 8000, 1e-6);
    // A delay above g - o_s makes the sender the bottleneck: o_s + dt.
    double slope_d = (simulate_burst_ns(m, 256, 9000) - simulate_burst_ns(m, 128, 9000)) / 128;
    EXPECT_NEAR(slope_d, 11000, 1e-6);
    EXPECT_DOUBLE_EQ(simulate_rtt_ns(m), 30000);
    EXPECT_DOUBLE_EQ(simulate_burst_ns(m, 0, 0), 0);
}

TEST(LogPExtract, ExactMachineGivesExactAnswers) {
    LogPMachine m{2000, 3000, 8000, 10000, 8};
    LogPEstimate e = extract_logp(record(m, 0, 1, 12000), SpreadPolicy{});
    EXPECT_NEAR(e.o_s_ns, 2000, 1);
    EXPECT_NEAR(e.g_ns, 8000, 1);
    EXPECT_NEAR(e.o_r_ns, 3020, 1); // the receive timing includes the timer cost
    EXPECT_NEAR(e.rtt_half_ns, 15010, 1);
    EXPECT_NEAR(e.L_ns, 15010 - 2000 - 3020, 2);
    EXPECT_NEAR(e.o_s_delay_ns, 2000, 1);
    EXPECT_TRUE(e.warnings.empty()) << e.warnings.front();
}

TEST(LogPExtract, NoisyMachinesWithinFivePercent) {
    const LogPMachine machines[] = {
        {2000, 3000, 8000, 10000, 8},  // gap-bound NIC
        {3100, 2900, 30000, 29600, 8}, // the paper's AMVIAv3 on LANai 7
        {500, 700, 1500, 4000, 16},    // a fast modern NIC
        {2700, 5300, 48000, 45000, 4}, // AMVIAv1 on LANai 4
    };
    unsigned seed = 7;
    for (const LogPMachine &m : machines) {
        LogPEstimate e = extract_logp(record(m, 0.02, seed++, 1.5 * m.g_ns), SpreadPolicy{});
        SCOPED_TRACE(testing::Message() << "o_s=" << m.o_s_ns << " g=" << m.g_ns);
        EXPECT_NEAR(e.o_s_ns, m.o_s_ns, 0.05 * m.o_s_ns);
        EXPECT_NEAR(e.g_ns, m.g_ns, 0.05 * m.g_ns);
        EXPECT_NEAR(e.o_r_ns, m.o_r_ns, 0.05 * m.o_r_ns + 20);
        EXPECT_NEAR(e.L_ns, m.L_ns, 0.05 * (m.L_ns + m.o_s_ns + m.o_r_ns));
        EXPECT_NEAR(e.o_s_delay_ns, m.o_s_ns, 0.1 * m.o_s_ns);
        EXPECT_GE(e.rtt_half_ns, e.o_s_ns + e.o_r_ns);
    }
}

TEST(LogPExtract, SenderBoundMachineReportsGAsOs) {
    // o_s > g: the NIC is never the bottleneck, so the long-burst slope is o_s.
    LogPMachine m{5000, 1000, 2000, 8000, 8};
    LogPEstimate e = extract_logp(record(m, 0, 3, 3000), SpreadPolicy{});
    EXPECT_NEAR(e.o_s_ns, 5000, 1);
    EXPECT_NEAR(e.g_ns, 5000, 1);
}

TEST(LogPExtract, ShortDelayIsFlagged) {
    LogPMachine m{2000, 3000, 8000, 10000, 8};
    LogPEstimate e = extract_logp(record(m, 0, 1, 1000), SpreadPolicy{}); // 1 us < g - o_s
    bool flagged = false;
    for (const auto &w : e.warnings) flagged |= w.find("shorter than g - o_s") != std::string::npos;
    EXPECT_TRUE(flagged);
}

static bool has_warning(const LogPEstimate &e, const std::string &text) {
    for (const auto &w : e.warnings)
        if (w.find(text) != std::string::npos) return true;
    return false;
}

// Overheads that exceed the one-way time by far more than the series scatter:
// L is not reported (never a negative figure), and the warning says why.
TEST(LogPExtract, InconsistentFiguresGiveNoLatency) {
    LogPMachine m{2000, 3000, 8000, 10000, 8};
    LogPInputs in = record(m, 0, 1, 12000);
    for (double &r : in.rtt_ns) r = 6000; // RTT/2 = 3 us < o_s + o_r = 5 us, exact series (no scatter)
    LogPEstimate e = extract_logp(in, SpreadPolicy{});
    EXPECT_LT(e.L_raw_ns, 0);
    EXPECT_TRUE(std::isnan(e.L_ns));
    EXPECT_EQ(e.L_state, LatencyState::inconsistent);
    EXPECT_TRUE(has_warning(e, "inconsistent figures"));
    EXPECT_FALSE(has_warning(e, "whole round trip")); // 5 us < RTT = 6 us: not beyond any round trip
}

// The verbs rows in the soft-RoCE guest: o_s alone above RTT/2, and o_s + o_r
// above the whole round trip.  The report must say that no noise explains it.
TEST(LogPExtract, OverheadsBeyondAWholeRoundTripBlameTheClock) {
    LogPMachine m{27000, 27000, 30000, 0, 8};
    LogPInputs in = record(m, 0, 1, 45000);
    for (double &r : in.rtt_ns) r = 36000; // RTT/2 18 us
    LogPEstimate e = extract_logp(in, SpreadPolicy{});
    EXPECT_EQ(e.L_state, LatencyState::inconsistent);
    EXPECT_TRUE(std::isnan(e.L_ns));
    EXPECT_TRUE(has_warning(e, "whole round trip"));
    EXPECT_TRUE(has_warning(e, "clock"));
}

// nicfw's wire is one shared cache line: L is about 0 and the difference of
// three separately measured medians scatters around it.  A small negative
// difference within the series' scatter is "below resolution": L = 0.
TEST(LogPExtract, SmallNegativeDifferenceIsBelowResolution) {
    LogPMachine m{150, 200, 300, 0, 8};
    LogPInputs in = record(m, 0, 1, 1000);
    in.timer_ns = 20;
    // RTT/2 70 ns short of o_s + o_r (AM-v3 in a quick run: -0.069 us), round trips scattered by +-300 ns.
    for (std::size_t i = 0; i < in.rtt_ns.size(); ++i) in.rtt_ns[i] = 2 * (350 - 70) + 20 + (double(i % 5) - 2) * 150;
    LogPEstimate e = extract_logp(in, SpreadPolicy{});
    EXPECT_NEAR(e.L_raw_ns, -70, 1);
    EXPECT_GT(e.L_resolution_ns, 70);
    EXPECT_EQ(e.L_state, LatencyState::below_resolution);
    EXPECT_DOUBLE_EQ(e.L_ns, 0);
    EXPECT_TRUE(has_warning(e, "below the resolution"));
    // The same difference with tight round trips is more than the scatter explains.
    for (double &r : in.rtt_ns) r = 2 * (350 - 70) + 20;
    LogPEstimate tight = extract_logp(in, SpreadPolicy{});
    EXPECT_EQ(tight.L_state, LatencyState::inconsistent);
}

// The clock's own cost is inside every timed round trip and timed receive
// (not in burst slopes): subtracted, an exact machine gives its L back.
TEST(LogPExtract, TimerCostIsNotChargedToTheOverheads) {
    LogPMachine m{900, 400, 1500, 5, 8};
    LogPInputs in = record(m, 0, 1, 3000); // +20 ns on every timing
    LogPEstimate raw = extract_logp(in, SpreadPolicy{});
    EXPECT_NEAR(raw.L_raw_ns, 5 - 10, 1); // +10 in RTT/2, +20 in o_r: L 10 ns short
    in.timer_ns = 20;
    LogPEstimate e = extract_logp(in, SpreadPolicy{});
    EXPECT_NEAR(e.o_r_ns, 400, 1);
    EXPECT_NEAR(e.rtt_half_ns, 1305, 1);
    EXPECT_NEAR(e.L_ns, 5, 1);
    EXPECT_EQ(e.L_state, LatencyState::measured);
    LogPInputs bad = in;
    bad.timer_ns = -1;
    EXPECT_THROW(extract_logp(bad, SpreadPolicy{}), std::invalid_argument);
}

// Never negative, on any input: noisy machines of many shapes.
TEST(LogPExtract, LatencyIsNeverNegative) {
    for (unsigned seed = 1; seed <= 40; ++seed) {
        LogPMachine m{100.0 + seed * 10, 150.0 + seed * 7, 400, double(seed % 3) * 20, 8};
        LogPInputs in = record(m, 0.2, seed, 2000);
        LogPEstimate e = extract_logp(in, SpreadPolicy{});
        EXPECT_TRUE(std::isnan(e.L_ns) || e.L_ns >= 0) << "seed " << seed << " L " << e.L_ns;
    }
}

// An AM-like layer: the receive that takes a request also sends the reply
// that returns its credit (o_s of the way back).  With AM's figures on this
// VM (o_s 0.9 us, RTT/2 2.1 us) charging that send to o_r gave L < 0.
TEST(LogPExtract, ReplyInsideTheReceiveIsNotChargedToL) {
    LogPMachine m{900, 400, 1500, 800, 8}; // o_s, o_r(request), g, L
    const double reply = 900;              // the receive's send path: an implicit reply, o_s
    LogPInputs in = record(m, 0, 1, 3000);
    for (double &r : in.recv_ns) r += reply; // what the timed receive sees
    // Before the split the reduction charged it to o_r, and L came out negative.
    LogPEstimate before = extract_logp(in, SpreadPolicy{});
    EXPECT_LT(before.L_raw_ns, 0);
    EXPECT_NEAR(before.L_raw_ns, m.L_ns - reply - 10, 1);
    EXPECT_EQ(before.L_state, LatencyState::inconsistent); // timer cost: +10 in RTT/2, +20 in o_r
    EXPECT_DOUBLE_EQ(before.o_r_reply_ns, 0);
    // With the send path measured apart: o_r(request), o_r(reply), and L again.
    in.recv_reply_ns.assign(in.recv_ns.size(), reply);
    LogPEstimate e = extract_logp(in, SpreadPolicy{});
    EXPECT_NEAR(e.o_r_ns, m.o_r_ns + 20, 1); // the timer cost stays with the request
    EXPECT_NEAR(e.o_r_reply_ns, reply, 1e-9);
    EXPECT_NEAR(e.o_r_total_ns, m.o_r_ns + reply + 20, 1);
    EXPECT_GE(e.L_ns, 0);
    EXPECT_NEAR(e.L_ns, m.L_ns - 10, 1);
    for (const auto &w : e.warnings) EXPECT_EQ(w.find("negative"), std::string::npos) << w;
}

TEST(LogPExtract, ReplyLongerThanTheReceiveLeavesNoRequestPart) {
    LogPMachine m{900, 400, 1500, 800, 8};
    LogPInputs in = record(m, 0, 1, 3000);
    in.recv_reply_ns.assign(1, 5000); // from a separate (instrumented) series: can exceed the receive
    LogPEstimate e = extract_logp(in, SpreadPolicy{});
    EXPECT_DOUBLE_EQ(e.o_r_ns, 0);
    EXPECT_DOUBLE_EQ(e.o_r_reply_ns, e.o_r_total_ns);
    bool flagged = false;
    for (const auto &w : e.warnings) flagged |= w.find("o_r(reply)") != std::string::npos;
    EXPECT_TRUE(flagged);
}

TEST(LogPExtract, WideSpreadIsWarned) {
    LogPMachine m{2000, 3000, 8000, 10000, 8};
    LogPInputs in = record(m, 0, 1, 12000);
    for (std::size_t i = 0; i < in.rtt_ns.size(); ++i) in.rtt_ns[i] *= 1 + double(i % 4);
    LogPEstimate e = extract_logp(in, SpreadPolicy{});
    bool flagged = false;
    for (const auto &w : e.warnings) flagged |= w.rfind("RTT:", 0) == 0;
    EXPECT_TRUE(flagged);
}

TEST(LogPExtract, MissingSeriesAreErrors) {
    LogPMachine m{2000, 3000, 8000, 10000, 8};
    LogPInputs in = record(m, 0, 1, 12000);
    LogPInputs no_rtt = in;
    no_rtt.rtt_ns.clear();
    EXPECT_THROW(extract_logp(no_rtt, SpreadPolicy{}), std::invalid_argument);
    LogPInputs no_recv = in;
    no_recv.recv_ns.clear();
    EXPECT_THROW(extract_logp(no_recv, SpreadPolicy{}), std::invalid_argument);
    LogPInputs no_long = in;
    no_long.bursts.erase(std::remove_if(no_long.bursts.begin(), no_long.bursts.end(),
                                        [&](const BurstSample &b) { return b.m >= in.long_min_m; }),
                         no_long.bursts.end());
    EXPECT_THROW(extract_logp(no_long, SpreadPolicy{}), std::invalid_argument);
    LogPInputs bad = in;
    bad.long_min_m = bad.short_max_m;
    EXPECT_THROW(extract_logp(bad, SpreadPolicy{}), std::invalid_argument);
}

// On one host the wire is the packet's cache line, pulled by the receiver's
// first read inside the timed receive: o_s + o_r(whole) exceeds RTT/2 and L is
// not reported.  With the line's transfer given, it moves from o_r to L, and
// o_s + o_r + L = RTT/2 again.
TEST(LogPExtract, LineTransferMovesFromTheReceiveToL) {
    LogPMachine m{120, 100, 150, 0, 8}; // the wire itself costs nothing beyond the line
    const double line = 200;            // one cross-core line, one way
    LogPInputs in = record(m, 0, 1, 1000);
    for (double &r : in.rtt_ns) r += 2 * line;   // each way the receiver pulls the line while polling
    for (double &r : in.recv_ns) r += line + 60; // the probe's receive pulls it too, and a little more
    LogPEstimate cold = extract_logp(in, SpreadPolicy{});
    EXPECT_EQ(cold.L_state, LatencyState::inconsistent);
    EXPECT_FALSE(cold.o_r_lines_local);
    in.recv_lines_ns = line;
    LogPEstimate e = extract_logp(in, SpreadPolicy{});
    EXPECT_TRUE(e.o_r_lines_local);
    EXPECT_DOUBLE_EQ(e.o_r_lines_ns, line);
    EXPECT_NEAR(e.o_r_cold_ns, cold.o_r_ns, 1e-9);
    EXPECT_NEAR(e.o_r_ns, cold.o_r_ns - line, 1e-9);
    EXPECT_EQ(e.L_state, LatencyState::measured);
    EXPECT_NEAR(e.L_raw_ns, e.rtt_half_ns - e.o_s_ns - e.o_r_ns, 1e-9);
    EXPECT_NEAR(e.L_raw_ns, cold.L_raw_ns + line, 1e-9);
    EXPECT_NEAR(e.L_ns, 2 * line - line - 60, 15); // the line, less what else the probe's receive pulled
}
