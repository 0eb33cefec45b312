// Derived numbers, breakdowns, peer parsing, the terminal report and the
// report directory.
#include "breakdown.hpp"
#include "paper.hpp"
#include "peer_ucx.hpp"
#include "report.hpp"
#include "report_fixture.hpp"
#include "vipl_instr.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace logp;

TEST(Paper, FiguresAreLoadedWithTheirSource) {
    const auto &p = paper_figures();
    EXPECT_NE(paper_citation().find("Begel"), std::string::npos);
    EXPECT_NE(fm_citation().find("Fast Messages"), std::string::npos);
    const nlohmann::json *am3 = paper_logp_row("am-v3");
    ASSERT_NE(am3, nullptr);
    EXPECT_DOUBLE_EQ(paper_number(*am3, "rtt_half_us"), 35.6);
    EXPECT_DOUBLE_EQ(paper_number(*am3, "g_us"), 30.0);
    EXPECT_DOUBLE_EQ(paper_number(*paper_logp_row("am-v1"), "rtt_half_us"), 39.2); // the LANai 7 row
    EXPECT_EQ(paper_logp_row("vi"), nullptr);
    EXPECT_DOUBLE_EQ(paper_number(p["table3_am_request_reply"]["categories"], "Event Notification"), 44.2);
    EXPECT_DOUBLE_EQ(paper_number(p, "vi_rtt_half_16B_us"), 32.0);
    EXPECT_TRUE(std::isnan(paper_number(p, "no_such_key")));
    // Category percentages of Tables 3 and 4 add up to 100.
    for (const char *t : {"table3_am_request_reply", "table4_splitc_get"}) {
        double sum = 0;
        for (auto &[k, v] : p[t]["categories"].items()) sum += v.get<double>();
        EXPECT_NEAR(sum, 100.0, 0.05) << t;
    }
}

TEST(Paper, OperationNamesMatchAcrossSpellings) {
    EXPECT_EQ(normalize_operation("VipCQDone (Receive)"), normalize_operation("am.VipCQDone(recv)"));
    EXPECT_EQ(normalize_operation("VipPostReceive"), normalize_operation("splitc.VipPostRecv"));
    EXPECT_EQ(normalize_operation("Push msg on req/rep queue"),
              normalize_operation("splitc.Push msg on req/rep queue"));
    EXPECT_NE(normalize_operation("VipSendDone"), normalize_operation("VipRecvDone"));
}

TEST(Breakdown, GroupsPerOperationWithPaperShares) {
    std::vector<CounterTotal> c = {
        {"am.VipPostSend", VIPL_INSTR_BASE_VI, 200, 26000},
        {"am.VipCQDone (Receive)", VIPL_INSTR_EVENT, 400, 52000},
        {"am.Send bookkeeping", VIPL_INSTR_FLOW_CONTROL, 200, 13000},
        {"am.Act on message", VIPL_INSTR_SEMANTICS, 200, 13000},
        {"vipl.VipPostSend", VIPL_INSTR_BASE_VI, 200, 20000}, // nested inside am.VipPostSend
        {"firmware.send", VIPL_INSTR_FIRMWARE, 200, 99000},
        {"am.never", VIPL_INSTR_OTHER, 0, 0},
    };
    const auto &paper = paper_figures()["table3_am_request_reply"];
    Breakdown b = make_breakdown("am-request-reply", "am-v3", c, 100, 2.6, &paper, "am.");
    ASSERT_EQ(b.status.state, "measured");
    EXPECT_NEAR(b.host_cycles, 1040, 1e-9); // (26000+52000+13000+13000)/100, nested and firmware left out
    EXPECT_NEAR(b.host_ns, 400, 1e-9);
    EXPECT_NEAR(b.firmware_ns, 990 / 2.6, 1e-9);
    ASSERT_EQ(b.items.size(), 4u);
    EXPECT_EQ(b.items[0].category, "Base VI"); // table order
    EXPECT_NEAR(b.items[0].percent, 25.0, 1e-9);
    EXPECT_NEAR(b.items[0].count_per_op, 2.0, 1e-9);
    EXPECT_NEAR(b.items[0].paper_percent, 6.1, 1e-9);
    EXPECT_EQ(b.inner.size(), 2u);
    double sum = 0;
    for (const auto &cat : b.categories) sum += cat.percent;
    EXPECT_NEAR(sum, 100.0, 1e-9);
    EXPECT_NEAR(b.categories[1].paper_percent, 44.2, 1e-9);
}

TEST(Breakdown, NothingInstrumentedFailsWithAReason) {
    Breakdown b = make_breakdown("splitc-get", "splitc", {}, 10, 2.6, nullptr, "splitc.");
    EXPECT_EQ(b.status.state, "failed");
    EXPECT_NE(b.status.note.find("VIASTACK_INSTR"), std::string::npos);
    EXPECT_EQ(make_breakdown("x", "y", {}, 0, 2.6, nullptr).status.state, "failed");
}

TEST(Breakdown, InstrumentationCostIsMeasured) {
    double ns = measure_instr_scope_ns();
    EXPECT_GT(ns, 0.0);
    EXPECT_LT(ns, 5000.0);
}

TEST(PeerUcx, ParsesCsvOutput) {
    const char *out = "+----+\n| API: protocol layer |\n"
                      "iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr\n"
                      "20000,0.264,0.276,0.276,55.22,55.22,3619211,3619211\n";
    UcxMeasurement m = parse_ucx_perftest_csv(out);
    ASSERT_TRUE(m.ok) << m.error;
    EXPECT_DOUBLE_EQ(m.lat_us, 0.264);
    EXPECT_NEAR(m.bw_mb_s, 55.22 * 1.048576, 1e-9); // 2^20 -> 10^6 bytes
    EXPECT_DOUBLE_EQ(m.msg_rate, 3619211);
}

// Captured from `ucx_perftest localhost -t ucp_put_bw -s 1048576 -n 256 -w 64 -v`
// (UCX_TLS=sm,self, Debian 12): the iteration count is padded to 4 columns, so
// the result line starts with a space.  The parser used to skip it and record
// the 1 MB put as failed although it had printed its result.
TEST(PeerUcx, ParsesResultLineWithPaddedIterationCount) {
    const char *out = "iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr\n"
                      " 256,21.821,39.094,39.094,25579.29,25579.29,25579,25579\n";
    UcxMeasurement m = parse_ucx_perftest_csv(out);
    ASSERT_TRUE(m.ok) << m.error;
    EXPECT_DOUBLE_EQ(m.lat_us, 21.821);
    EXPECT_NEAR(m.bw_mb_s, 25579.29 * 1.048576, 1e-6);
    EXPECT_DOUBLE_EQ(m.msg_rate, 25579);
}

// Captured from `ucx_perftest localhost -t ucp_am_bw -s 16 -n 20000 -w 2000 -O 4 -v`:
// a thread's progress line comes before the final line; the final line counts.
TEST(PeerUcx, SkipsThreadProgressLines) {
    const char *out = "iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr\n"
                      "[thread 0]18853,0.160,54.934,54.934,0.28,0.28,18204,18204\n"
                      "20000,0.020,533.636,82.387,0.03,0.19,1874,12138\n";
    UcxMeasurement m = parse_ucx_perftest_csv(out);
    ASSERT_TRUE(m.ok) << m.error;
    EXPECT_DOUBLE_EQ(m.msg_rate, 12138);
}

TEST(PeerUcx, ReportsMissingOutput) {
    EXPECT_FALSE(parse_ucx_perftest_csv("").ok);
    UcxMeasurement m = parse_ucx_perftest_csv("iterations,50.0_percentile_lat\nerror: connection refused\n");
    EXPECT_FALSE(m.ok);
    EXPECT_FALSE(m.error.empty());
}

TEST(PeerUcx, MissingToolIsNotInstalled) {
    UcxPlan plan;
    plan.binary = "";
    std::string old = getenv("PATH") ? getenv("PATH") : "";
    setenv("PATH", "/nonexistent", 1);
    PeerResult p = run_ucx_peer(plan);
    RateSweep s = run_ucx_rate_sweep(plan, {1, 2, 4});
    setenv("PATH", old.c_str(), 1);
    EXPECT_EQ(p.status.state, "not installed");
    EXPECT_NE(p.status.note.find("ucx-utils"), std::string::npos);
    EXPECT_EQ(s.status.state, "not installed");
    EXPECT_TRUE(s.peer);
    EXPECT_TRUE(s.points.empty());
}

// A binary that is not ucx_perftest: every window fails, and the sweep says
// why instead of reporting rates.
TEST(PeerUcx, RateSweepOfABrokenToolFails) {
    UcxPlan plan;
    plan.binary = "/bin/false";
    plan.timeout_s = 5;
    RateSweep s = run_ucx_rate_sweep(plan, {1, 2});
    EXPECT_EQ(s.status.state, "failed");
    EXPECT_NE(s.status.note.find("ucp_am_bw"), std::string::npos) << s.status.note;
    EXPECT_TRUE(s.points.empty());
}

TEST(Report, FinalizeDerivesDeltaRatiosAndTable5) {
    Report r = full_report();
    finalize_report(r, 0.05);
    EXPECT_NEAR(r.logp[0].delta_us, 0.0, 1e-12);       // VI against itself
    EXPECT_NEAR(r.logp[1].delta_us, 2.6 - 1.6, 1e-12); // AM over the 16-byte VI RTT/2
    EXPECT_TRUE(std::isnan(r.logp[2].delta_us));       // not built
    // Peer ratios: one per measured layer for RTT/2, one bandwidth point against VI.
    int rtt = 0, bw = 0;
    for (const auto &m : r.peers[0].metrics) {
        if (m.compared_with.empty()) continue;
        if (m.metric == "rtt_half_us") {
            ++rtt;
            EXPECT_NEAR(m.ratio, m.ours / 0.3, 1e-12);
        }
        if (m.metric.rfind("bandwidth", 0) == 0) ++bw;
    }
    EXPECT_EQ(rtt, 2);
    EXPECT_EQ(bw, 0); // the raw metrics hold no bandwidth entry in the fixture
    // Table 5 from the curves: AM minus VI at 1 KB, and the 32-byte VI time.
    EXPECT_EQ(r.bulk_difference.status.state, "measured");
    EXPECT_NEAR(r.bulk_difference.per_msg_difference_us, 2.0, 1e-9);
    ASSERT_EQ(r.bulk_difference.components.size(), 2u);
    EXPECT_NEAR(r.bulk_difference.components[1].us, 1.0 + 32.0 / 1000.0, 1e-9);
    // Idempotent: a second pass does not duplicate derived rows.
    std::size_t n = r.peers[0].metrics.size();
    finalize_report(r, 0.05);
    EXPECT_EQ(r.peers[0].metrics.size(), n);
}

TEST(Report, TerminalReportHasEveryTable) {
    Report r = full_report();
    finalize_report(r, 0.05);
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    print_report(r, f);
    fclose(f);
    std::string s(buf, len);
    free(buf);
    for (const char *want : {"Table 1", "Table 2", "Figure 2", "Figure 5", "Table 3", "Table 4", "Table 5", "35.6",
                             /* the paper's AMVIAv3 RTT/2 */ "ucx_perftest", "not built", "Warnings"})
        EXPECT_NE(s.find(want), std::string::npos) << want;
}

TEST(Report, DirectoryHasMarkdownJsonAndPlots) {
    namespace fs = std::filesystem;
    Report r = full_report();
    finalize_report(r, 0.05);
    fs::path dir = fs::path(::testing::TempDir()) / ("logp_report_" + std::to_string(getpid()));
    ReportFiles files = write_report_files(r, dir.string());
    EXPECT_TRUE(fs::exists(dir / "report.md"));
    EXPECT_TRUE(fs::exists(dir / "logp.json"));
    std::ifstream md(dir / "report.md");
    std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("## Table 2"), std::string::npos);
    if (files.problems.empty()) { // gnuplot installed: every plot in both formats, embedded
        for (const char *stem : {"bandwidth", "logp", "breakdown", "splitc", "rate"}) {
            EXPECT_TRUE(fs::exists(dir / (std::string(stem) + ".svg"))) << stem;
            EXPECT_TRUE(fs::exists(dir / (std::string(stem) + ".png"))) << stem;
            EXPECT_NE(text.find(std::string("(") + stem + ".svg)"), std::string::npos) << stem;
        }
    }
    fs::remove_all(dir);
    EXPECT_THROW(write_report_files(r, "/proc/no/such/dir"), std::runtime_error);
}

// One bandwidth plot: our layers' curves (to 1 MB) beside every bandwidth test
// of every peer (ucp_put_bw and ucp_am_bw here); the rate plot: every sweep.
TEST(Report, PlotsPutOursBesideEveryPeerCurve) {
    namespace fs = std::filesystem;
    Report r = full_report();
    r.peers[0].metrics.push_back({"bandwidth_mb_s:ucp_put_bw", "ucp_put_bw", "", 1024, 2048, kNaN, kNaN});
    r.peers[0].metrics.push_back({"bandwidth_mb_s:ucp_am_bw", "ucp_am_bw", "", 1048576, 9000, kNaN, kNaN});
    r.peers[0].metrics.push_back({"bandwidth_mb_s:ucp_am_bw", "ucp_am_bw", "", 4096, 3000, kNaN, kNaN});
    r.bandwidth[0].points.push_back({1048576, 500, 1048576 / 500.0, 0});
    finalize_report(r, 0.05);
    fs::path dir = fs::path(::testing::TempDir()) / ("logp_plots_" + std::to_string(getpid()));
    write_report_files(r, dir.string());
    auto slurp = [&](const char *name) {
        std::ifstream in(dir / name);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    const std::string dat = slurp("bandwidth.dat"), gp = slurp("bandwidth.gp");
    for (const char *curve :
         {"# vi (ours, RDMA write)", "# am-v3 (ours, AM long)", "# ucx_perftest ucp_put_bw (UCX_TLS=sm,self)",
          "# ucx_perftest ucp_am_bw (UCX_TLS=sm,self)"})
        EXPECT_NE(dat.find(curve), std::string::npos) << curve;
    EXPECT_NE(dat.find("1048576 2097.152"), std::string::npos);        // our 1 MB point
    EXPECT_NE(dat.find("4096 3000\n1048576 9000"), std::string::npos); // a peer curve in size order
    EXPECT_NE(gp.find("index 3"), std::string::npos);                  // four curves
    EXPECT_NE(gp.find("2097152"), std::string::npos);                  // the x axis reaches 1 MB
    const std::string rate = slurp("rate.dat");
    for (const char *s : {"# vi (ours)", "# am-v3 (ours)", "# ucx_perftest ucp_am_bw", "64 8"})
        EXPECT_NE(rate.find(s), std::string::npos) << s;
    fs::remove_all(dir);
}

TEST(Report, MemcpyTimeIsPlausible) {
    double us = measure_memcpy_us(1024);
    EXPECT_GT(us, 0.0);
    EXPECT_LT(us, 100.0);
}

#include "peer_perftest.hpp"

TEST(PeerPerftest, ParsesLatencyTable) {
    const char *out =
        "---------------------------------------------------------------------------------------\n"
        "                    Send Latency Test\n"
        " Dual-port       : OFF\t\tDevice         : rxe0\n"
        "---------------------------------------------------------------------------------------\n"
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
        "99% percentile[usec]   99.9% percentile[usec] \n"
        " 16       1000          7.13           40.95        8.02                8.52             1.73            "
        "14.02                   40.95  \n"
        "---------------------------------------------------------------------------------------\n";
    PerftestMeasurement m = parse_perftest_output(out);
    ASSERT_TRUE(m.ok) << m.error;
    EXPECT_DOUBLE_EQ(m.lat_typical_us, 8.02);
}

TEST(PeerPerftest, ParsesBandwidthTable) {
    const char *out = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
                      " 4096       5000             812.34             798.10               0.204314\n";
    PerftestMeasurement m = parse_perftest_output(out);
    ASSERT_TRUE(m.ok) << m.error;
    EXPECT_DOUBLE_EQ(m.bw_avg_mb_s, 798.10);
    EXPECT_FALSE(parse_perftest_output("Couldn't connect to localhost:18515\n").ok);
}

TEST(PeerPerftest, MissingToolIsNotInstalled) {
    std::string old = getenv("PATH") ? getenv("PATH") : "";
    setenv("PATH", "/nonexistent", 1);
    PeerResult p = run_perftest_peer(PerftestPlan{"rxe0", 100, {}, 5});
    setenv("PATH", old.c_str(), 1);
    EXPECT_EQ(p.status.state, "not installed");
    EXPECT_NE(p.status.note.find("perftest"), std::string::npos);
}

#include "measure.hpp"

TEST(FitCurve, FlatCurveKeepsT0AndSaysWhy) {
    BandwidthCurve c;
    c.status = {"measured", ""};
    for (std::size_t n = 4; n <= 32768; n *= 2) c.points.push_back({n, 5.0, double(n) / 5.0, 0});
    fit_curve(c);
    EXPECT_DOUBLE_EQ(c.t0_us, 5.0);
    EXPECT_TRUE(std::isnan(c.r_inf_mb_s));
    EXPECT_NE(c.status.note.find("beyond the measured sizes"), std::string::npos);
    EXPECT_DOUBLE_EQ(c.r_peak_mb_s, 32768 / 5.0);

    BandwidthCurve good;
    for (std::size_t n = 4; n <= 32768; n *= 2) good.points.push_back({n, 2.0 + double(n) / 500.0, 0, 0});
    fit_curve(good);
    EXPECT_NEAR(good.t0_us, 2.0, 1e-9);
    EXPECT_NEAR(good.r_inf_mb_s, 500.0, 1e-6);
    EXPECT_TRUE(good.status.note.empty());
}
