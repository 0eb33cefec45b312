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
    EXPECT_DOUBLE_EQ(paper_number(*paper_logp_row("am-v1"), "rtt_half_us"), 39.2);  // the LANai 7 row
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
    EXPECT_EQ(normalize_operation("Push msg on req/rep queue"), normalize_operation("splitc.Push msg on req/rep queue"));
    EXPECT_NE(normalize_operation("VipSendDone"), normalize_operation("VipRecvDone"));
}

TEST(Breakdown, GroupsPerOperationWithPaperShares) {
    std::vector<CounterTotal> c = {
        {"am.VipPostSend", VIPL_INSTR_BASE_VI, 200, 26000},
        {"am.VipCQDone (Receive)", VIPL_INSTR_EVENT, 400, 52000},
        {"am.Send bookkeeping", VIPL_INSTR_FLOW_CONTROL, 200, 13000},
        {"am.Act on message", VIPL_INSTR_SEMANTICS, 200, 13000},
        {"vipl.VipPostSend", VIPL_INSTR_BASE_VI, 200, 20000},  // nested inside am.VipPostSend
        {"firmware.send", VIPL_INSTR_FIRMWARE, 200, 99000},
        {"am.never", VIPL_INSTR_OTHER, 0, 0},
    };
    const auto &paper = paper_figures()["table3_am_request_reply"];
    Breakdown b = make_breakdown("am-request-reply", "am-v3", c, 100, 2.6, &paper, "am.");
    ASSERT_EQ(b.status.state, "measured");
    EXPECT_NEAR(b.host_cycles, 1040, 1e-9);  // (26000+52000+13000+13000)/100, nested and firmware left out
    EXPECT_NEAR(b.host_ns, 400, 1e-9);
    EXPECT_NEAR(b.firmware_ns, 990 / 2.6, 1e-9);
    ASSERT_EQ(b.items.size(), 4u);
    EXPECT_EQ(b.items[0].category, "Base VI");  // table order
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
    const char *out =
        "+----+\n| API: protocol layer |\n"
        "iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr\n"
        "20000,0.264,0.276,0.276,55.22,55.22,3619211,3619211\n";
    UcxMeasurement m = parse_ucx_perftest_csv(out);
    ASSERT_TRUE(m.ok) << m.error;
    EXPECT_DOUBLE_EQ(m.lat_us, 0.264);
    EXPECT_NEAR(m.bw_mb_s, 55.22 * 1.048576, 1e-9);  // 2^20 -> 10^6 bytes
    EXPECT_DOUBLE_EQ(m.msg_rate, 3619211);
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
    setenv("PATH", old.c_str(), 1);
    EXPECT_EQ(p.status.state, "not installed");
    EXPECT_NE(p.status.note.find("ucx-utils"), std::string::npos);
}

TEST(Report, FinalizeDerivesDeltaRatiosAndTable5) {
    Report r = full_report();
    finalize_report(r, 0.05);
    EXPECT_NEAR(r.logp[0].delta_us, 0.0, 1e-12);        // VI against itself
    EXPECT_NEAR(r.logp[1].delta_us, 2.6 - 1.6, 1e-12);  // AM over the 16-byte VI RTT/2
    EXPECT_TRUE(std::isnan(r.logp[2].delta_us));        // not built
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
    EXPECT_EQ(bw, 0);  // the raw metrics hold no bandwidth entry in the fixture
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
    for (const char *want : {"Table 1", "Table 2", "Figure 2", "Figure 5", "Table 3", "Table 4", "Table 5",
                             "35.6", /* the paper's AMVIAv3 RTT/2 */ "ucx_perftest", "not built", "Warnings"})
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
    if (files.problems.empty()) {  // gnuplot installed: every plot in both formats, embedded
        for (const char *stem : {"bandwidth", "logp", "breakdown", "splitc"}) {
            EXPECT_TRUE(fs::exists(dir / (std::string(stem) + ".svg"))) << stem;
            EXPECT_TRUE(fs::exists(dir / (std::string(stem) + ".png"))) << stem;
            EXPECT_NE(text.find(std::string("(") + stem + ".svg)"), std::string::npos) << stem;
        }
    }
    fs::remove_all(dir);
    EXPECT_THROW(write_report_files(r, "/proc/no/such/dir"), std::runtime_error);
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
    const char *out =
        " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
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
