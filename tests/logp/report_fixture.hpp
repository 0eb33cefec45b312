// Reports for the JSON and report tests: one with every section filled, one
// with sections missing (a layer that failed, one not run, a peer tool not
// installed, an empty breakdown).
#pragma once

#include "peer_rounds.hpp"
#include "results.hpp"

inline logp::Report full_report() {
    using namespace logp;
    Report r;
    r.run = {"2026-01-01 00:00:00 UTC", "host", "logp --quick", true, 200, 20, 2.6, 0.25, 27.0};
    r.provider = {"nicfw", "nicfw0", "none", "default"};
    r.layers = {{"vi", {"measured", ""}}, {"am-v3", {"measured", ""}}, {"splitc", {"not built", "no compiler-rt"}}};
    r.vi_baseline.status = {"measured", ""};
    r.vi_baseline.rtt_half_min_us = 1.5;
    r.vi_baseline.rtt_half_16_us = 1.6;
    r.vi_baseline.peak_mb_s = 900;
    r.vi_baseline.peak_at_bytes = 32768;
    LogPRow vi;
    vi.layer = "vi";
    vi.status = {"measured", ""};
    vi.rtt_half_us = 1.6, vi.L_us = 1.0, vi.o_s_us = 0.2, vi.o_r_us = 0.4, vi.g_us = 0.5, vi.o_s_delay_us = 0.21,
    vi.rtt_half_min_us = 1.4;
    LogPRow am = vi;
    am.layer = "am-v3";
    am.rtt_half_us = 2.6, am.L_us = 1.5, am.o_s_us = 0.5, am.o_r_us = 0.6, am.g_us = 0.9;
    am.warnings = {"RTT: spread 30% exceeds 25%"};
    LogPRow sc;
    sc.layer = "splitc";
    sc.status = {"not built", "no compiler-rt"};
    r.logp = {vi, am, sc};
    r.splitc_ops = {{"read", {"measured", ""}, 5.0, 0.1}, {"get", {"measured", ""}, 1.0, 0.05}};
    BandwidthCurve c;
    c.layer = "vi";
    c.method = "RDMA-write stream";
    c.status = {"measured", ""};
    for (std::size_t n = 4; n <= 32768; n *= 2)
        c.points.push_back({n, 1.0 + double(n) / 1000.0, double(n) / (1.0 + double(n) / 1000.0), 0.02});
    c.t0_us = 1.0, c.r_inf_mb_s = 1000, c.n_half_bytes = 1000, c.n_half_model_bytes = 1000, c.r_peak_mb_s = 970,
    c.fit_r2 = 1;
    BandwidthCurve a = c;
    a.layer = "am-v3";
    for (auto &p : a.points) p.us_per_msg += 2, p.mb_s = double(p.bytes) / p.us_per_msg;
    r.bandwidth = {c, a};
    // Message rate by window: two layers of ours and ucx_perftest's ucp_am_bw.
    for (const char *layer : {"vi", "am-v3"}) {
        RateSweep s;
        s.layer = layer;
        s.method = "windows of W 16-byte messages then the receiver's confirmation";
        s.status = {"measured", ""};
        for (int w = 1; w <= 64; w *= 2) {
            double us = (layer[0] == 'v' ? 0.2 : 0.4) + 1.0 / w; // g + a share of the confirmation
            s.points.push_back({w, us, 1 / us, w == 4 ? 0.3 : 0.05});
        }
        r.rate_sweep.push_back(s);
    }
    RateSweep ucx;
    ucx.layer = "ucx_perftest ucp_am_bw";
    ucx.peer = true;
    ucx.method = "ucp_am_bw 16 B, -O W";
    ucx.status = {"measured", ""};
    for (int w = 1; w <= 64; w *= 2) ucx.points.push_back({w, 0.125, 8.0, 0});
    r.rate_sweep.push_back(ucx);
    Breakdown b;
    b.name = "am-request-reply";
    b.layer = "am-v3";
    b.status = {"measured", ""};
    b.operations = 100;
    b.host_ns = 1000, b.host_cycles = 2600, b.firmware_ns = 300;
    b.categories = {{"Base VI", 400, 1040, 40, 32.5}, {"Event Notification", 600, 1560, 60, 44.2}};
    b.items = {{"am.VipPostSend", "Base VI", 2, 400, 1040, 40, 6.1},
               {"am.VipCQDone (Receive)", "Event Notification", 2, 600, 1560, 60, 22.1}};
    b.inner = {{"vipl.VipPostSend", "Base VI", 2, 300, 780, 0, kNaN}};
    r.breakdown = {b};
    r.bulk_difference.status = {"measured", ""};
    r.bulk_difference.layer = "am-v3";
    r.bulk_difference.per_msg_difference_us = 2;
    r.bulk_difference.paper_difference_us = 18;
    r.bulk_difference.components = {{"Memory copy", 0.05, 4}, {"Short network receive", 1.0, 14.5}};
    r.bulk_difference.components_total_us = 1.05;
    PeerResult p;
    p.tool = "ucx_perftest";
    p.status = {"measured", ""};
    p.transport = "UCX_TLS=sm,self";
    p.metrics = {{"rtt_half_us", "ucp_am_lat", "", 16, 0.3, kNaN, kNaN}};
    p.bandwidth = {{1024, 0.5, 2048, 0}};
    r.peers = {p};
    r.interleaved.status = {"measured", ""};
    r.interleaved.rounds = 2;
    RoundComparison rc;
    rc.peer = "ucx_perftest";
    rc.metric = "rtt_half_us";
    rc.test = "ucp_am_lat";
    rc.layer = "vi";
    rc.bytes = 16;
    rc.ours = {0.6, 0.7};
    rc.peer_values = {0.3, 0.35};
    rc.ratios = {2.0, 2.0};
    rc.rounds = 2;
    rc.ratio_median = rc.ratio_min = rc.ratio_max = 2.0;
    rc.line_ns = {210, 60}; // round 0 in the slow placement, round 1 in the fast one
    rc.line_ns_peer = {205, 62};
    r.interleaved.comparisons = {rc};
    summarize_rounds(r.interleaved);
    r.warnings = {"am-v3: RTT: spread 30% exceeds 25%"};
    return r;
}

// full_report() with holes: am-v3 failed, its curve skipped, no Split-C
// operations, the breakdown failed, ucx_perftest not installed.
inline logp::Report report_with_missing_data() {
    using namespace logp;
    Report r = full_report();
    r.logp[1].status = {"failed", "timeout"};
    r.splitc_ops.clear();
    r.bandwidth[1].status = {"skipped", "--layers"};
    r.bandwidth[1].points.clear();
    r.breakdown[0].status = {"failed", "no counters"};
    r.peers[0].status = {"not installed", "apt-get install ucx-utils"};
    r.peers[0].metrics.clear();
    r.peers[0].bandwidth.clear();
    r.rate_sweep[1].status = {"failed", "no confirmation from the peer"};
    r.rate_sweep[1].points.clear();
    r.rate_sweep[2].status = {"not installed", "ucx_perftest not found on PATH (Debian: apt-get install ucx-utils)"};
    r.rate_sweep[2].points.clear();
    r.warnings.clear();
    return r;
}
