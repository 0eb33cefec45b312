// results.hpp - everything one run of `logp` produces, in the shape of the
// JSON schema "viastack-logp/1" (documented in docs/logp.md).  Numbers that
// were not measured are NaN here and null in the JSON.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace logp {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr const char *kSchemaName = "viastack-logp/1";

// Status of a layer or section: "measured", "not built", "skipped", "failed".
struct Status {
    std::string state = "not built";
    std::string note; // why (for anything but "measured")
    bool measured() const { return state == "measured"; }
};

struct RunInfo {
    std::string date_utc, host, command;
    bool quick = false;
    int iterations = 0, warmup = 0;
    double tsc_ghz = kNaN;
    double max_spread = 0.25;
    double instr_scope_ns = kNaN; // cost of one timed scope with instrumentation on
    double timer_ns = kNaN;       // one clock-read pair (subtracted from single timed operations)
    // Time of the whole run by the TSC (at the calibrated rate) over the same
    // interval by CLOCK_MONOTONIC: 1 when the calibration holds (the check of
    // an emulated clock; see docs/logp.md).
    double tsc_vs_monotonic = kNaN;
};

struct ProviderInfo {
    std::string name;           // "nicfw", "verbs", "synthetic"
    std::string device;         // NIC name as VipQueryNic reports it
    std::string profile;        // timing profile ("none", "lanai4", ...; or the synthetic parameters)
    std::string profile_source; // where the profile came from (env variable, option)
};

struct LayerStatus {
    std::string layer;
    Status status;
};

struct ViBaseline {
    Status status;
    std::size_t min_bytes = 4;
    double rtt_half_min_us = kNaN; // RTT/2 for the minimal message
    double rtt_half_16_us = kNaN;  // RTT/2 for 16 bytes (the Delta reference of Table 2)
    double peak_mb_s = kNaN;       // peak one-sided streaming bandwidth
    std::size_t peak_at_bytes = 0;
    double spread = 0;
};

struct LogPRow {
    std::string layer; // "vi", "am-v3", "am-v1", "splitc", "synthetic"
    Status status;
    double rtt_half_us = kNaN, delta_us = kNaN, L_us = kNaN, o_s_us = kNaN, g_us = kNaN;
    double o_r_us = kNaN;       // o_r(request): the receive without the send path inside it
    double o_r_reply_us = kNaN; // o_r(reply+credit): what the receive spends sending back (0: sends nothing)
    // o_r_us is timed with the message's cache lines local to the receiver when
    // o_r_lines_local (the ranks bound); o_r_cold_us is the request's receive
    // with the lines pulled from the sender's CPU, o_r_lines_us the difference,
    // which is part of L (NaN when not measured).
    bool o_r_lines_local = false;
    double o_r_cold_us = kNaN, o_r_lines_us = kNaN;
    double o_s_delay_us = kNaN;    // cross-check of o_s from delayed long bursts
    double rtt_half_min_us = kNaN; // half the fastest round trip (the median is RTT/2)
    // L is never negative (logp_method.hpp, LatencyState): L_us is the raw
    // figure when >= 0, 0 when it is below the resolution, NaN when the
    // figures are inconsistent; the raw difference and the resolution are kept.
    std::string L_state = "measured"; // "measured", "below resolution", "inconsistent"
    double L_raw_us = kNaN, L_resolution_us = kNaN;
    double spread_rtt = 0, spread_o_s = 0, spread_o_r = 0, spread_g = 0;
    std::vector<std::string> warnings;
    // The known answers of a synthetic run (NaN otherwise).
    double expect_L_us = kNaN, expect_o_s_us = kNaN, expect_o_r_us = kNaN, expect_g_us = kNaN;
};

struct SplitcOp {
    std::string op; // read, write, get, put, store
    Status status;
    double us = kNaN;
    double spread = 0;
};

struct BandwidthPoint {
    std::size_t bytes = 0;
    double us_per_msg = kNaN;
    double mb_s = kNaN;
    double spread = 0;
};

struct BandwidthCurve {
    std::string layer;
    std::string method; // how it was measured ("RDMA-write stream, one-sided", "AM_RequestXfer", ...)
    Status status;
    std::vector<BandwidthPoint> points;
    // FM metrics (Pakin, Lauria, Chien)
    double t0_us = kNaN, r_inf_mb_s = kNaN, n_half_bytes = kNaN, n_half_model_bytes = kNaN;
    bool n_half_from_model = false;
    double r_peak_mb_s = kNaN, fit_r2 = kNaN;
};

// Message rate against the number of messages in flight (a window of W
// 16-byte messages sent back to back, then the receiver's confirmation, as
// OSU's osu_mbw_mr; for ucx_perftest, -O W uncompleted sends).
struct RatePoint {
    int window = 0;
    double us_per_msg = kNaN;   // median over the timed streams
    double msg_rate_m_s = kNaN; // million messages per second (1 / us_per_msg)
    double spread = 0;
};

struct RateSweep {
    std::string layer;  // our layer ("vi", "am-v3", "splitc", ...) or the peer's test ("ucx_perftest ucp_am_bw")
    std::string method; // what one message is and how the window is kept
    bool peer = false;
    Status status;
    std::vector<RatePoint> points;
};

// The sweeps in report order: ours first, then the peers' (the peers run
// between our layers, so the JSON interleaves them).
inline std::vector<const RateSweep *> ours_then_peers(const std::vector<RateSweep> &all) {
    std::vector<const RateSweep *> out;
    for (const auto &s : all)
        if (!s.peer) out.push_back(&s);
    for (const auto &s : all)
        if (s.peer) out.push_back(&s);
    return out;
}

struct BreakdownItem {
    std::string operation;
    std::string category;
    double count_per_op = 0;   // how many times it ran per measured operation
    double ns = 0, cycles = 0; // per measured operation
    double percent = 0;        // of the host overhead
    double paper_percent = kNaN;
};

struct BreakdownCategory {
    std::string category;
    double ns = 0, cycles = 0, percent = 0;
    double paper_percent = kNaN;
};

struct Breakdown {
    std::string name; // "am-request-reply" (Table 3), "splitc-get" (Table 4)
    std::string layer;
    Status status;
    std::uint64_t operations = 0;        // measured operations the totals are divided by
    double host_ns = 0, host_cycles = 0; // host overhead per operation (Firmware excluded)
    double firmware_ns = 0;              // NIC firmware time per operation (reported apart)
    double wait_ns = 0;                  // host time waiting for what had not arrived (latency, not overhead)
    std::vector<BreakdownCategory> categories;
    std::vector<BreakdownItem> items;
    // Counters of lower layers (the VIPL API, the NIC firmware) timed inside
    // the layer's own primitives: shown for information, not added to the
    // totals (their time is already part of the items above).
    std::vector<BreakdownItem> inner;
};

struct BulkComponent {
    std::string component; // "Memory copy", "Short network receive"
    double us = kNaN;
    double paper_us = kNaN;
};

struct BulkDifference {
    Status status;
    std::size_t bytes = 1024;
    std::string layer;                   // the layer compared with native VI
    double per_msg_difference_us = kNaN; // layer minus VI per-message time at `bytes`
    double paper_difference_us = kNaN;
    std::vector<BulkComponent> components;
    double components_total_us = kNaN;
};

struct PeerMetric {
    std::string metric;        // "rtt_half_us", "g_us", "bandwidth_mb_s"
    std::string test;          // the peer's test name ("ucp_am_lat")
    std::string compared_with; // our row ("vi", "am-v3") it is set against
    std::size_t bytes = 0;
    double peer = kNaN, ours = kNaN, ratio = kNaN; // ratio = ours / peer
};

struct PeerResult {
    std::string tool; // "ucx_perftest", "ib_send_lat", ...
    Status status;
    std::string transport; // "UCX_TLS=sm,self"
    std::vector<PeerMetric> metrics;
    std::vector<BandwidthPoint> bandwidth; // the peer's curve (same sizes as ours where run)
};

// One metric of ours set against one peer's, round by round: the rounds
// alternate (ours, peer, ours, peer, ...), so drift of the machine (other
// load, frequency, cache state) falls on both sides alike, and the ratio of
// each round is a paired comparison.  ratio = ours / peer (for times, below
// 1 is better for ours; for bandwidth, above 1).
// The per-round ratios of a set of rounds: how many, their median, min, max.
struct RatioSummary {
    int rounds = 0;
    double median = kNaN, min = kNaN, max = kNaN;
};

struct RoundComparison {
    std::string peer;   // the peer tool ("ucx_perftest", "fi_shm_bench", ...)
    std::string metric; // "rtt_half_us", "g_us", "bandwidth_mb_s"
    std::string test;   // the peer's test ("ucp_am_lat", "fi_write", ...)
    std::string layer;  // our layer it is set against ("vi", "am-v3")
    std::size_t bytes = 0;
    std::vector<double> ours, peer_values, ratios; // one per round; NaN where a half was not measured
    int rounds = 0;                                // rounds with both halves measured
    double ratio_median = kNaN, ratio_min = kNaN, ratio_max = kNaN;
    // The raw cross-core cache line, one way (LineProbe), per round: measured
    // right before our half (line_ns) and right before this peer's run
    // (line_ns_peer).  NaN: not measured (older reports, single process).
    std::vector<double> line_ns, line_ns_peer;
    // Derived (classify_placements): per round "fast", "slow", "mixed" (the two
    // measurements fell in different classes) or "" (unknown); and the ratios
    // of the paired rounds of each class.
    std::vector<std::string> placement;
    RatioSummary fast, slow;
    int mixed_rounds = 0;
};

struct Interleaved {
    Status status{"skipped", "no peers (--no-peers)"};
    int rounds = 0; // rounds run (each: ours, then every peer)
    std::vector<RoundComparison> comparisons;
    // How rounds were put into placement classes (derived, classify_placements):
    // a line at or above the threshold is the slow placement.
    double line_threshold_ns = kNaN;
    std::string line_threshold_source;                      // "gap" (from this run's line_ns) or "fixed" (no clear gap)
    int rounds_fast = 0, rounds_slow = 0, rounds_mixed = 0; // every measurement of the round in one class, or not
};

// The layering study (layering_study.hpp): layering_bw's raw rows and the
// pairings made of them.
struct LayeringRow {
    std::string layer; // "fm", "mp-fm2", "vi-send", ...
    std::size_t bytes = 0;
    int round = 0;
    double mb_s = kNaN;
};
struct LayeringPair {
    std::string layer, below; // "mp-fm2" over "fm"; below "vi" picks vi-send or vi-rdma by size
    std::string label;        // for the table and the plot
    std::vector<std::size_t> bytes;
    std::vector<std::string> below_used;                  // per size: the row of the layer below it was set against
    std::vector<double> layer_mb_s, below_mb_s, fraction; // medians; fraction 1 = all of it
    std::vector<int> rounds;                              // rounds with both measured
};
struct LayeringStudy {
    Status status{"skipped", "not run"};
    int rounds = 0;
    double mbytes = 0;
    std::size_t bip_eager = 16384;
    std::vector<LayeringRow> rows;
    std::vector<LayeringPair> pairs; // derived (tabulate_layering)
};

struct Report {
    RunInfo run;
    ProviderInfo provider;
    std::vector<LayerStatus> layers;
    ViBaseline vi_baseline;
    std::vector<LogPRow> logp;
    std::vector<SplitcOp> splitc_ops;
    std::vector<BandwidthCurve> bandwidth;
    std::vector<RateSweep> rate_sweep; // ours per layer, then the peers'
    std::vector<Breakdown> breakdown;
    BulkDifference bulk_difference;
    std::vector<PeerResult> peers;
    Interleaved interleaved;
    LayeringStudy layering;
    std::vector<std::string> warnings;
};

} // namespace logp
