// The interleaved comparison with the peers: per-round ratios, their median
// and spread, the peers' merged figures, the shm peers' output, the table in
// every rendering, and the JSON round trip.
#include "peer_rounds.hpp"
#include "peer_shm.hpp"
#include "render.hpp"
#include "results_json.hpp"
#include "tables.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

using namespace logp;

namespace {

std::vector<OurFigure> ours(double rtt_vi, double rtt_am, double bw_vi_4k) {
    return {{"vi", "rtt_half_us", 16, rtt_vi},
            {"am-v3", "rtt_half_us", 16, rtt_am},
            {"vi", "bandwidth_mb_s", 4096, bw_vi_4k},
            {"vi", "bandwidth_mb_s", 1048576, kNaN}}; // beyond our largest bulk message
}

std::vector<PeerMetric> peer(double rtt, double put_4k, double put_1m) {
    return {{"rtt_half_us", "fi_send", "", 16, rtt, kNaN, kNaN},
            {"bandwidth_mb_s:fi_write", "fi_write", "", 4096, put_4k, kNaN, kNaN},
            {"bandwidth_mb_s:fi_write", "fi_write", "", 1048576, put_1m, kNaN, kNaN}};
}

const RoundComparison &find(const Interleaved &x, const std::string &metric, const std::string &layer,
                            std::size_t bytes) {
    for (const auto &c : x.comparisons)
        if (c.metric == metric && c.layer == layer && c.bytes == bytes) return c;
    throw std::runtime_error("no comparison " + metric + " " + layer);
}

Interleaved three_rounds() {
    Interleaved x;
    add_round(x, 0, ours(2.0, 3.0, 500), "fi_shm_bench", peer(4.0, 1000, 2000));
    add_round(x, 1, ours(3.0, 3.0, 900), "fi_shm_bench", peer(4.0, 1000, 2000));
    // Round 2: the peer did not report its RTT (a failed half).
    add_round(x, 2, ours(9.0, 9.0, 700), "fi_shm_bench",
              {{"bandwidth_mb_s:fi_write", "fi_write", "", 4096, 1000, kNaN, kNaN}});
    x.rounds = 3;
    summarize_rounds(x);
    x.status = {"measured", ""};
    return x;
}

} // namespace

TEST(PeerRounds, RatiosArePairedPerRound) {
    Interleaved x = three_rounds();
    const RoundComparison &vi = find(x, "rtt_half_us", "vi", 16);
    ASSERT_EQ(vi.ratios.size(), 3u);
    EXPECT_DOUBLE_EQ(vi.ratios[0], 0.5);
    EXPECT_DOUBLE_EQ(vi.ratios[1], 0.75);
    EXPECT_TRUE(std::isnan(vi.ratios[2])); // round 2 has no peer RTT: not paired with another round's
    EXPECT_EQ(vi.rounds, 2);
    EXPECT_DOUBLE_EQ(vi.ratio_median, 0.625);
    EXPECT_DOUBLE_EQ(vi.ratio_min, 0.5);
    EXPECT_DOUBLE_EQ(vi.ratio_max, 0.75);
    // RTT/2 is set against every layer of ours; bandwidth of a one-sided write only against VI.
    EXPECT_DOUBLE_EQ(find(x, "rtt_half_us", "am-v3", 16).ratio_median, 0.75);
    const RoundComparison &bw = find(x, "bandwidth_mb_s", "vi", 4096);
    EXPECT_EQ(bw.rounds, 3);
    EXPECT_DOUBLE_EQ(bw.ratio_median, 0.7);
    EXPECT_EQ(bw.test, "fi_write");
    for (const auto &c : x.comparisons) EXPECT_NE(c.layer == "am-v3" && c.metric == "bandwidth_mb_s", true);
    // A size we cannot send has rows with no paired round.
    EXPECT_EQ(find(x, "bandwidth_mb_s", "vi", 1048576).rounds, 0);
}

TEST(PeerRounds, BandwidthTestsPickTheMatchingLayer) {
    EXPECT_EQ(layer_for_bandwidth_test("ucp_put_bw"), "vi");
    EXPECT_EQ(layer_for_bandwidth_test("fi_write"), "vi");
    EXPECT_EQ(layer_for_bandwidth_test("ib_write_bw"), "vi");
    EXPECT_EQ(layer_for_bandwidth_test("ucp_am_bw"), "am-v3");
    EXPECT_EQ(layer_for_bandwidth_test("MPI_Isend"), "am-v3");
}

TEST(PeerRounds, PeerFiguresAreMediansOverRounds) {
    PeerResult a{"fi_shm_bench", {"measured", ""}, "shm", peer(4.0, 1000, 2000), {}};
    PeerResult b{"fi_shm_bench", {"measured", ""}, "shm", peer(6.0, 3000, 2000), {}};
    PeerResult c{"fi_shm_bench", {"failed", "exit 1"}, "shm", {}, {}};
    PeerResult m = merge_peer_rounds({a, b, c});
    EXPECT_TRUE(m.status.measured()); // one failed round does not undo the measured ones
    ASSERT_EQ(m.metrics.size(), 3u);
    EXPECT_DOUBLE_EQ(m.metrics[0].peer, 5.0);
    ASSERT_EQ(m.bandwidth.size(), 2u);
    EXPECT_DOUBLE_EQ(m.bandwidth[0].mb_s, 2000.0);
    EXPECT_FALSE(merge_peer_rounds({c}).status.measured());
}

TEST(PeerShm, ParsesTheProgramsJsonLines) {
    const std::string out =
        "some mpirun noise\n"
        "{\"peer\":\"openmpi-shm\",\"tool\":\"mpi_shm_bench\",\"metric\":\"rtt_half_us\",\"bytes\":16,\"median\":0.41,"
        "\"min\":0.40,\"max\":0.45,\"rounds\":1}\n"
        "{\"metric\":\"gap_us\",\"bytes\":16,\"median\":0.46,\"min\":0.4,\"max\":0.5,\"rounds\":1}\n"
        "{\"metric\":\"bw_MBps\",\"bytes\":4096,\"median\":318.8,\"min\":300,\"max\":320,\"rounds\":1}\n"
        "{\"metric\":\"bw_MBps\",\"bytes\":8192,\"median\":null}\n"
        "{not json\n";
    auto m = parse_shm_bench_output(ShmPeer::openmpi, out);
    ASSERT_EQ(m.size(), 3u);
    EXPECT_EQ(m[0].metric, "rtt_half_us");
    EXPECT_EQ(m[0].test, "MPI_Send");
    EXPECT_DOUBLE_EQ(m[0].peer, 0.41);
    EXPECT_EQ(m[1].metric, "g_us");
    EXPECT_EQ(m[2].metric, "bandwidth_mb_s:MPI_Isend");
    EXPECT_EQ(m[2].bytes, 4096u);
    auto f = parse_shm_bench_output(ShmPeer::libfabric,
                                    "{\"metric\":\"put_bw_MBps\",\"bytes\":1048576,\"median\":1343.3}\n");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].metric, "bandwidth_mb_s:fi_write");
}

TEST(PeerShm, MissingProgramIsNotInstalled) {
    const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
    setenv("PATH", "/nonexistent", 1);
    setenv("LOGP_PEER_DIR", "/nonexistent", 1);
    // The build tree's bench/peers may hold them; only check what is found is executable.
    std::string fi = find_peer_program("fi_shm_bench");
    if (fi.empty()) EXPECT_EQ(run_shm_peer(ShmPeer::libfabric, 10).status.state, "not installed");
    EXPECT_EQ(find_peer_program("no_such_peer_program"), "");
    unsetenv("LOGP_PEER_DIR");
    setenv("PATH", path.c_str(), 1);
}

// Five rounds: 0, 2 and 4 in the slow placement (line ~210 ns), 1 in the fast
// one (~55 ns), 3 mixed (the line changed class between our half and the peer).
Interleaved five_rounds_two_placements() {
    Interleaved x;
    const double line_ours[] = {212, 55, 208, 58, 215};
    const double line_peer[] = {205, 57, 210, 200, 209};
    const double peer_rtt[] = {0.50, 0.25, 0.52, 0.26, 0.50};
    const double our_rtt[] = {0.40, 0.30, 0.42, 0.40, 0.45};
    for (int i = 0; i < 5; ++i)
        add_round(x, i, ours(our_rtt[i], 1.0, 500), "ucx_perftest",
                  {{"rtt_half_us", "ucp_am_lat", "", 16, peer_rtt[i], kNaN, kNaN}}, line_ours[i], line_peer[i]);
    x.rounds = 5;
    summarize_rounds(x);
    x.status = {"measured", ""};
    return x;
}

TEST(PeerRounds, LineThresholdComesFromTheRunsGapOrIsFixed) {
    std::string source;
    // Two groups: the threshold is the geometric mean of the gap's ends.
    EXPECT_NEAR(line_threshold({210, 60, 205, 58, 220}, &source), std::sqrt(60.0 * 205.0), 1e-9);
    EXPECT_EQ(source, "gap");
    // One group (scatter below 2x): the fixed threshold.
    EXPECT_DOUBLE_EQ(line_threshold({210, 180, 260, 205}, &source), kFixedLineThresholdNs);
    EXPECT_EQ(source, "fixed");
    EXPECT_DOUBLE_EQ(line_threshold({}, &source), kFixedLineThresholdNs);
    EXPECT_EQ(source, "fixed");
    // NaN (not measured) lines are ignored.
    EXPECT_NEAR(line_threshold({kNaN, 50, 200}, &source), 100.0, 1e-9);
    EXPECT_EQ(source, "gap");
}

TEST(PeerRounds, RatiosAreGivenPerPlacementClass) {
    Interleaved x = five_rounds_two_placements();
    EXPECT_EQ(x.line_threshold_source, "gap");
    EXPECT_EQ(x.rounds_slow, 3);
    EXPECT_EQ(x.rounds_fast, 1);
    EXPECT_EQ(x.rounds_mixed, 1);
    const RoundComparison &vi = find(x, "rtt_half_us", "vi", 16);
    ASSERT_EQ(vi.line_ns.size(), 5u);
    EXPECT_DOUBLE_EQ(vi.line_ns[3], 58);
    EXPECT_DOUBLE_EQ(vi.line_ns_peer[3], 200);
    EXPECT_EQ(vi.placement, (std::vector<std::string>{"slow", "fast", "slow", "mixed", "slow"}));
    EXPECT_EQ(vi.slow.rounds, 3); // 0.8, 0.8077, 0.9
    EXPECT_NEAR(vi.slow.median, 0.42 / 0.52, 1e-12);
    EXPECT_EQ(vi.fast.rounds, 1);
    EXPECT_DOUBLE_EQ(vi.fast.median, 1.2);
    EXPECT_EQ(vi.mixed_rounds, 1);
    EXPECT_EQ(vi.rounds, 5); // the overall median keeps every paired round

    Report r;
    r.interleaved = x;
    Table t = interleaved_table(r);
    EXPECT_EQ(t.rows[0].cells[10].text, "1.2"); // fast median
    EXPECT_EQ(t.rows[0].cells[11].text, "1");
    EXPECT_EQ(t.rows[0].cells[13].text, "3");
    std::string notes;
    for (const auto &n : t.notes) notes += n + "\n";
    EXPECT_NE(notes.find("1 fast, 3 slow, 1 mixed"), std::string::npos) << notes;
    EXPECT_EQ(notes.find("All "), std::string::npos);
    // The classes survive the JSON (derived again from line_ns on reading).
    Report back = report_from_json(to_json(r));
    EXPECT_EQ(find(back.interleaved, "rtt_half_us", "vi", 16).placement, vi.placement);
    EXPECT_EQ(to_json(back)["interleaved"], to_json(r)["interleaved"]);
}

TEST(PeerRounds, ARunInOnePlacementSaysSo) {
    Interleaved x;
    for (int i = 0; i < 3; ++i)
        add_round(x, i, ours(0.4, 0.4, 500), "ucx_perftest", {{"rtt_half_us", "ucp_am_lat", "", 16, 0.5, kNaN, kNaN}},
                  205 + i, 210 - i);
    x.rounds = 3;
    summarize_rounds(x);
    EXPECT_EQ(x.line_threshold_source, "fixed");
    EXPECT_EQ(x.rounds_slow, 3);
    Report r;
    r.interleaved = x;
    std::string notes;
    for (const auto &n : interleaved_table(r).notes) notes += n + "\n";
    EXPECT_NE(notes.find("All 3 rounds of this run fell in the slow placement"), std::string::npos) << notes;
    // Without line times (an older report) the rounds are not classed.
    Interleaved old = three_rounds();
    EXPECT_EQ(old.rounds_fast + old.rounds_slow + old.rounds_mixed, 0);
    r.interleaved = old;
    notes.clear();
    for (const auto &n : interleaved_table(r).notes) notes += n + "\n";
    EXPECT_NE(notes.find("not classed"), std::string::npos) << notes;
}

TEST(PeerRounds, TableIsRenderedEveryWayAndSurvivesJson) {
    Report r;
    r.interleaved = three_rounds();
    Table t = interleaved_table(r);
    EXPECT_NE(t.title.find("3 rounds"), std::string::npos);
    EXPECT_EQ(t.rows.size(), r.interleaved.comparisons.size());
    EXPECT_EQ(t.rows[0].cells[5].text, "2");     // rounds
    EXPECT_EQ(t.rows[0].cells[6].text, "0.625"); // median ratio
    EXPECT_EQ(t.rows[0].cells[9].text, "40%");   // (0.75 - 0.5) / 0.625
    std::string text = render_text(t);
    EXPECT_NE(text.find("0.625"), std::string::npos);
    std::string md = render_markdown(t, {});
    EXPECT_NE(md.find("| fi_shm_bench"), std::string::npos);
    nlohmann::json js = render_json(std::vector<Table>{t});
    EXPECT_EQ(js[0]["id"], "interleaved");

    Report back = report_from_json(to_json(r));
    ASSERT_EQ(back.interleaved.comparisons.size(), r.interleaved.comparisons.size());
    EXPECT_EQ(back.interleaved.rounds, 3);
    const RoundComparison &vi = find(back.interleaved, "rtt_half_us", "vi", 16);
    EXPECT_TRUE(std::isnan(vi.ratios[2]));
    EXPECT_DOUBLE_EQ(vi.ratio_median, 0.625);

    Report none;
    EXPECT_NE(interleaved_table(none).status.find("skipped"), std::string::npos);
}

namespace logp {
// One-sided puts are set against every layer that moves bulk data by RDMA
// (issue #15's bar for AM long and Split-C bulk_put); message streams against AM.
TEST(PeerRounds, PutBandwidthPairsWithEveryRdmaLayer) {
    for (const char *layer : {"vi", "am-v3", "splitc"}) {
        EXPECT_TRUE(compares_bandwidth("ucp_put_bw", layer)) << layer;
        EXPECT_TRUE(compares_bandwidth("fi_write", layer)) << layer;
    }
    EXPECT_FALSE(compares_bandwidth("ucp_put_bw", "fm"));
    EXPECT_TRUE(compares_bandwidth("ucp_am_bw", "am-v3"));
    EXPECT_FALSE(compares_bandwidth("ucp_am_bw", "vi"));
    EXPECT_FALSE(compares_bandwidth("MPI_Isend", "splitc"));
}
} // namespace logp
