// The JSON report (schema viastack-logp/1): stable keys, round trip, errors.
#include "report_fixture.hpp"
#include "results_json.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <unistd.h>

using namespace logp;
using nlohmann::json;

namespace {

// Every key path in the document; array elements collapse to "[]".
void key_paths(const json &j, const std::string &at, std::set<std::string> &out) {
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it) {
            std::string p = at.empty() ? it.key() : at + "." + it.key();
            out.insert(p);
            key_paths(it.value(), p, out);
        }
    } else if (j.is_array()) {
        for (const auto &e : j) key_paths(e, at + "[]", out);
    }
}

// The documented schema (docs/logp.md).  Changing a key breaks consumers:
// add keys freely (and here), never rename or remove them.
const std::set<std::string> kSchemaV1 = {"schema",
                                         "run",
                                         "run.date_utc",
                                         "run.host",
                                         "run.command",
                                         "run.quick",
                                         "run.iterations",
                                         "run.warmup",
                                         "run.tsc_ghz",
                                         "run.max_spread",
                                         "run.instr_scope_ns",
                                         "run.timer_ns",
                                         "run.tsc_vs_monotonic",
                                         "provider",
                                         "provider.name",
                                         "provider.device",
                                         "provider.profile",
                                         "provider.profile_source",
                                         "profile",
                                         "layers",
                                         "layers[].layer",
                                         "layers[].status",
                                         "layers[].status.state",
                                         "layers[].status.note",
                                         "vi_baseline",
                                         "vi_baseline.status",
                                         "vi_baseline.status.state",
                                         "vi_baseline.status.note",
                                         "vi_baseline.min_bytes",
                                         "vi_baseline.rtt_half_min_us",
                                         "vi_baseline.rtt_half_16_us",
                                         "vi_baseline.peak_mb_s",
                                         "vi_baseline.peak_at_bytes",
                                         "vi_baseline.spread",
                                         "logp",
                                         "logp[].layer",
                                         "logp[].status",
                                         "logp[].status.state",
                                         "logp[].status.note",
                                         "logp[].rtt_half_us",
                                         "logp[].delta_us",
                                         "logp[].L_us",
                                         "logp[].o_s_us",
                                         "logp[].o_r_us",
                                         "logp[].o_r_reply_us",
                                         "logp[].o_r_lines_local",
                                         "logp[].o_r_cold_us",
                                         "logp[].o_r_lines_us",
                                         "logp[].g_us",
                                         "logp[].o_s_delay_us",
                                         "logp[].rtt_half_min_us",
                                         "logp[].L_state",
                                         "logp[].L_raw_us",
                                         "logp[].L_resolution_us",
                                         "logp[].spread",
                                         "logp[].spread.rtt",
                                         "logp[].spread.o_s",
                                         "logp[].spread.o_r",
                                         "logp[].spread.g",
                                         "logp[].expected",
                                         "logp[].expected.L_us",
                                         "logp[].expected.o_s_us",
                                         "logp[].expected.o_r_us",
                                         "logp[].expected.g_us",
                                         "logp[].warnings",
                                         "splitc_ops",
                                         "splitc_ops[].op",
                                         "splitc_ops[].status",
                                         "splitc_ops[].status.state",
                                         "splitc_ops[].status.note",
                                         "splitc_ops[].us",
                                         "splitc_ops[].spread",
                                         "bandwidth",
                                         "bandwidth[].layer",
                                         "bandwidth[].method",
                                         "bandwidth[].status",
                                         "bandwidth[].status.state",
                                         "bandwidth[].status.note",
                                         "bandwidth[].points",
                                         "bandwidth[].points[].bytes",
                                         "bandwidth[].points[].us_per_msg",
                                         "bandwidth[].points[].mb_s",
                                         "bandwidth[].points[].spread",
                                         "bandwidth[].fm",
                                         "bandwidth[].fm.t0_us",
                                         "bandwidth[].fm.r_inf_mb_s",
                                         "bandwidth[].fm.n_half_bytes",
                                         "bandwidth[].fm.n_half_model_bytes",
                                         "bandwidth[].fm.n_half_from_model",
                                         "bandwidth[].fm.r_peak_mb_s",
                                         "bandwidth[].fm.fit_r2",
                                         "breakdown",
                                         "breakdown[].name",
                                         "breakdown[].layer",
                                         "breakdown[].status",
                                         "breakdown[].status.state",
                                         "breakdown[].status.note",
                                         "breakdown[].operations",
                                         "breakdown[].host_ns",
                                         "breakdown[].host_cycles",
                                         "breakdown[].firmware_ns",
                                         "breakdown[].wait_ns",
                                         "breakdown[].categories",
                                         "breakdown[].categories[].category",
                                         "breakdown[].categories[].ns",
                                         "breakdown[].categories[].cycles",
                                         "breakdown[].categories[].percent",
                                         "breakdown[].categories[].paper_percent",
                                         "breakdown[].items",
                                         "breakdown[].items[].operation",
                                         "breakdown[].items[].category",
                                         "breakdown[].items[].count_per_op",
                                         "breakdown[].items[].ns",
                                         "breakdown[].items[].cycles",
                                         "breakdown[].items[].percent",
                                         "breakdown[].items[].paper_percent",
                                         "breakdown[].inner",
                                         "breakdown[].inner[].operation",
                                         "breakdown[].inner[].category",
                                         "breakdown[].inner[].count_per_op",
                                         "breakdown[].inner[].ns",
                                         "breakdown[].inner[].cycles",
                                         "bulk_difference",
                                         "bulk_difference.status",
                                         "bulk_difference.status.state",
                                         "bulk_difference.status.note",
                                         "bulk_difference.bytes",
                                         "bulk_difference.layer",
                                         "bulk_difference.per_msg_difference_us",
                                         "bulk_difference.paper_difference_us",
                                         "bulk_difference.components",
                                         "bulk_difference.components[].component",
                                         "bulk_difference.components[].us",
                                         "bulk_difference.components[].paper_us",
                                         "bulk_difference.components_total_us",
                                         "peers",
                                         "peers[].tool",
                                         "peers[].status",
                                         "peers[].status.state",
                                         "peers[].status.note",
                                         "peers[].transport",
                                         "peers[].metrics",
                                         "peers[].metrics[].metric",
                                         "peers[].metrics[].test",
                                         "peers[].metrics[].compared_with",
                                         "peers[].metrics[].bytes",
                                         "peers[].metrics[].peer",
                                         "peers[].metrics[].ours",
                                         "peers[].metrics[].ratio",
                                         "peers[].bandwidth",
                                         "peers[].bandwidth[].bytes",
                                         "peers[].bandwidth[].us_per_msg",
                                         "peers[].bandwidth[].mb_s",
                                         "peers[].bandwidth[].spread",
                                         "interleaved",
                                         "interleaved.status",
                                         "interleaved.status.state",
                                         "layering",
                                         "layering.status",
                                         "layering.status.state",
                                         "layering.status.note",
                                         "layering.rounds",
                                         "layering.mbytes",
                                         "layering.bip_eager",
                                         "layering.rows",
                                         "layering.pairs",
                                         "interleaved.status.note",
                                         "interleaved.rounds",
                                         "interleaved.comparisons",
                                         "interleaved.comparisons[].peer",
                                         "interleaved.comparisons[].metric",
                                         "interleaved.comparisons[].test",
                                         "interleaved.comparisons[].layer",
                                         "interleaved.comparisons[].bytes",
                                         "interleaved.comparisons[].ours",
                                         "interleaved.comparisons[].peer_values",
                                         "interleaved.comparisons[].ratios",
                                         "interleaved.comparisons[].rounds",
                                         "interleaved.comparisons[].ratio_median",
                                         "interleaved.comparisons[].ratio_min",
                                         "interleaved.comparisons[].ratio_max",
                                         "warnings",
                                         "interleaved.comparisons[].line_ns",
                                         "interleaved.comparisons[].line_ns_peer",
                                         "interleaved.comparisons[].placement",
                                         "interleaved.comparisons[].by_placement",
                                         "interleaved.comparisons[].by_placement.fast",
                                         "interleaved.comparisons[].by_placement.fast.rounds",
                                         "interleaved.comparisons[].by_placement.fast.ratio_median",
                                         "interleaved.comparisons[].by_placement.fast.ratio_min",
                                         "interleaved.comparisons[].by_placement.fast.ratio_max",
                                         "interleaved.comparisons[].by_placement.slow",
                                         "interleaved.comparisons[].by_placement.slow.rounds",
                                         "interleaved.comparisons[].by_placement.slow.ratio_median",
                                         "interleaved.comparisons[].by_placement.slow.ratio_min",
                                         "interleaved.comparisons[].by_placement.slow.ratio_max",
                                         "interleaved.comparisons[].by_placement.mixed_rounds",
                                         "interleaved.placement",
                                         "interleaved.placement.line_threshold_ns",
                                         "interleaved.placement.threshold_source",
                                         "interleaved.placement.rounds_fast",
                                         "interleaved.placement.rounds_slow",
                                         "interleaved.placement.rounds_mixed",
                                         "rate_sweep",
                                         "rate_sweep[].layer",
                                         "rate_sweep[].method",
                                         "rate_sweep[].peer",
                                         "rate_sweep[].status",
                                         "rate_sweep[].status.state",
                                         "rate_sweep[].status.note",
                                         "rate_sweep[].points",
                                         "rate_sweep[].points[].window",
                                         "rate_sweep[].points[].us_per_msg",
                                         "rate_sweep[].points[].msg_rate_m_s",
                                         "rate_sweep[].points[].spread"};

} // namespace

TEST(LogPJson, SchemaKeysAreStable) {
    std::set<std::string> keys;
    key_paths(to_json(full_report()), "", keys);
    for (const auto &k : kSchemaV1) EXPECT_TRUE(keys.count(k)) << "schema key missing: " << k;
    for (const auto &k : keys)
        EXPECT_TRUE(kSchemaV1.count(k)) << "undocumented key: " << k << " (add it to docs/logp.md and here)";
    EXPECT_EQ(to_json(full_report())["schema"], "viastack-logp/1");
}

TEST(LogPJson, LogpRowsCarryTheIssueFields) {
    json j = to_json(full_report());
    ASSERT_TRUE(j["logp"].is_array());
    for (const auto &row : j["logp"])
        for (const char *k : {"layer", "rtt_half_us", "delta_us", "L_us", "o_s_us", "o_r_us", "g_us"})
            EXPECT_TRUE(row.contains(k)) << k;
    for (const char *k : {"provider", "profile", "breakdown", "bandwidth"}) EXPECT_TRUE(j.contains(k)) << k;
}

TEST(LogPJson, RoundTripIsLossless) {
    json once = to_json(full_report());
    json twice = to_json(report_from_json(once));
    EXPECT_EQ(once, twice) << once.dump(1) << "\n----\n" << twice.dump(1);
}

TEST(LogPJson, NotMeasuredIsNull) {
    json j = to_json(full_report());
    const json &sc = j["logp"][2];
    EXPECT_EQ(sc["layer"], "splitc");
    EXPECT_TRUE(sc["rtt_half_us"].is_null());
    EXPECT_EQ(sc["status"]["state"], "not built");
    Report back = report_from_json(j);
    EXPECT_TRUE(std::isnan(back.logp[2].g_us));
}

TEST(LogPJson, RateSweepRoundTripsAndOldReportsHaveNone) {
    json j = to_json(full_report());
    ASSERT_EQ(j["rate_sweep"].size(), 3u);
    EXPECT_EQ(j["rate_sweep"][2]["peer"], true);
    EXPECT_EQ(j["rate_sweep"][0]["points"][0]["window"], 1);
    Report back = report_from_json(j);
    ASSERT_EQ(back.rate_sweep.size(), 3u);
    EXPECT_EQ(back.rate_sweep[0].points.size(), 7u);
    EXPECT_DOUBLE_EQ(back.rate_sweep[0].points[6].msg_rate_m_s, full_report().rate_sweep[0].points[6].msg_rate_m_s);
    j.erase("rate_sweep"); // a report written before the sweep existed
    EXPECT_TRUE(report_from_json(j).rate_sweep.empty());
}

TEST(LogPJson, LatencyStateRoundTrips) {
    Report r = full_report();
    r.logp[1].L_state = "below resolution";
    r.logp[1].L_us = 0;
    r.logp[1].L_raw_us = -0.069;
    r.logp[1].L_resolution_us = 0.1;
    json j = to_json(r);
    EXPECT_EQ(j["logp"][1]["L_state"], "below resolution");
    EXPECT_DOUBLE_EQ(j["logp"][1]["L_raw_us"].get<double>(), -0.069);
    Report back = report_from_json(j);
    EXPECT_EQ(back.logp[1].L_state, "below resolution");
    EXPECT_DOUBLE_EQ(back.logp[1].L_resolution_us, 0.1);
}

TEST(LogPJson, RejectsOtherDocuments) {
    EXPECT_THROW(report_from_json(json::object()), std::runtime_error);
    EXPECT_THROW(report_from_json(json{{"schema", "something-else/9"}}), std::runtime_error);
    EXPECT_THROW(report_from_json(json::array()), std::runtime_error);
    json bad = to_json(full_report());
    bad["logp"][0]["g_us"] = "fast";
    EXPECT_THROW(report_from_json(bad), std::runtime_error);
}

TEST(LogPJson, FilesRoundTripAndErrorsNameThePath) {
    std::string path = ::testing::TempDir() + "logp_rt_" + std::to_string(getpid()) + ".json";
    write_json_file(full_report(), path);
    Report r = read_json_file(path);
    EXPECT_EQ(r.logp.size(), 3u);
    std::remove(path.c_str());
    try {
        read_json_file(path);
        FAIL() << "reading a missing file must throw";
    } catch (const std::runtime_error &e) { EXPECT_NE(std::string(e.what()).find(path), std::string::npos); }
    EXPECT_THROW(write_json_file(full_report(), "/proc/no-such-dir/x.json"), std::runtime_error);
}

TEST(LogPJson, FileKeepsEverySchemaKeyAndAddsTables) {
    std::set<std::string> keys;
    key_paths(report_json(full_report()), "", keys);
    for (const auto &k : kSchemaV1) EXPECT_TRUE(keys.count(k)) << "schema key missing from the file: " << k;
    for (const auto &k : keys)
        EXPECT_TRUE(kSchemaV1.count(k) || k.rfind("tables", 0) == 0) << "undocumented key: " << k;
    for (const char *k : {"tables[].id", "tables[].columns[].header", "tables[].rows[].kind",
                          "tables[].rows[].cells[].text", "tables[].rows[].cells[].value", "tables[].notes"})
        EXPECT_TRUE(keys.count(k)) << k;
}
