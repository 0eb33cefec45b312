// report.cpp - derived numbers and the terminal report (see report.hpp).
#include "report.hpp"

#include "paper.hpp"
#include "stats.hpp"
#include "timer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

namespace logp {

std::string fmt_num(double v, int precision) {
    if (!std::isfinite(v)) return "-";
    return fmt::format("{:.{}f}", v, precision);
}

namespace {

const LogPRow *find_row(const Report &r, const std::string &layer) {
    for (const auto &row : r.logp)
        if (row.layer == layer && row.status.measured()) return &row;
    return nullptr;
}
const BandwidthCurve *find_curve(const Report &r, const std::string &layer) {
    for (const auto &c : r.bandwidth)
        if (c.layer == layer && c.status.measured()) return &c;
    return nullptr;
}
double point_at(const BandwidthCurve *c, std::size_t bytes) {
    if (!c) return kNaN;
    for (const auto &p : c->points)
        if (p.bytes == bytes) return p.us_per_msg;
    return kNaN;
}
double ratio(double ours, double peer) { return (std::isfinite(ours) && std::isfinite(peer) && peer > 0) ? ours / peer : kNaN; }

}  // namespace

void finalize_report(Report &r, double memcpy_1k_us) {
    // Delta: increase of RTT/2 over native VI for the same 16-byte payload.
    const LogPRow *vi = find_row(r, "vi");
    double vi16 = std::isfinite(r.vi_baseline.rtt_half_16_us) ? r.vi_baseline.rtt_half_16_us : (vi ? vi->rtt_half_us : kNaN);
    for (auto &row : r.logp)
        if (row.status.measured()) row.delta_us = row.layer == "synthetic" ? kNaN : row.rtt_half_us - vi16;

    // VI baseline peak from the native curve.
    if (const BandwidthCurve *c = find_curve(r, "vi")) {
        for (const auto &p : c->points)
            if (std::isfinite(p.mb_s) && !(p.mb_s <= r.vi_baseline.peak_mb_s)) {
                r.vi_baseline.peak_mb_s = p.mb_s;
                r.vi_baseline.peak_at_bytes = p.bytes;
            }
    }

    // Peer ratios: raw metrics have no compared_with; derived ones are rebuilt.
    for (auto &peer : r.peers) {
        std::vector<PeerMetric> raw;
        for (const auto &m : peer.metrics)
            if (m.compared_with.empty()) raw.push_back(m);
        std::vector<PeerMetric> derived;
        for (const auto &m : raw) {
            if (m.metric == "rtt_half_us" || m.metric == "g_us") {
                for (const auto &row : r.logp) {
                    if (!row.status.measured() || row.layer == "synthetic") continue;
                    PeerMetric d = m;
                    d.compared_with = row.layer;
                    d.ours = m.metric == "rtt_half_us" ? row.rtt_half_us : row.g_us;
                    d.ratio = ratio(d.ours, d.peer);
                    derived.push_back(d);
                }
            } else if (m.metric.rfind("bandwidth_mb_s:", 0) == 0) {
                const std::string layer = (m.test == "ucp_put_bw" || m.test == "ib_write_bw") ? "vi" : "am-v3";
                const BandwidthCurve *c = find_curve(r, layer);
                double us = point_at(c, m.bytes);
                if (!std::isfinite(us)) continue;
                PeerMetric d = m;
                d.compared_with = layer;
                d.ours = double(m.bytes) / us;
                d.ratio = ratio(d.ours, d.peer);
                derived.push_back(d);
            }
        }
        peer.metrics = raw;
        peer.metrics.insert(peer.metrics.end(), derived.begin(), derived.end());
    }

    // Table 5: per-message difference at 1 KB between AM (or Split-C) bulk and native VI.
    BulkDifference &d = r.bulk_difference;
    const nlohmann::json &t5 = paper_figures()["table5_bulk_difference"];
    d.bytes = 1024;
    d.paper_difference_us = paper_number(t5, "per_msg_difference_us");
    const BandwidthCurve *vic = find_curve(r, "vi");
    const BandwidthCurve *upper = find_curve(r, "am-v3");
    d.layer = "am-v3";
    if (!upper) {
        upper = find_curve(r, "splitc");
        d.layer = "splitc";
    }
    d.components.clear();
    if (vic && upper) {
        d.per_msg_difference_us = point_at(upper, 1024) - point_at(vic, 1024);
        double short_recv = point_at(vic, 32);  // the paper's estimate: a 32-byte one-sided VI message
        d.components.push_back({"Memory copy", memcpy_1k_us, 4.0});
        d.components.push_back({"Short network receive", short_recv, 14.5});
        for (auto &c : d.components)
            for (const auto &pc : t5["components"])
                if (pc.value("component", "") == c.component) c.paper_us = paper_number(pc, "us");
        d.components_total_us = memcpy_1k_us + short_recv;
        d.status = std::isfinite(d.per_msg_difference_us) ? Status{"measured", ""}
                                                           : Status{"failed", "no 1 KB point on both curves"};
    } else {
        d.layer.clear();
        d.status = {"not built", "needs the native VI curve and an AM or Split-C bulk curve"};
    }

    // Bandwidth points whose streams varied too much.
    for (const auto &c : r.bandwidth) {
        int wide = 0;
        for (const auto &p : c.points) wide += p.spread > r.run.max_spread;
        std::string line = fmt::format("{}: bandwidth: {} of {} message sizes have a spread above {:.0f}%; do not "
                                       "trust those points (rerun on an idle machine)",
                                       c.layer, wide, c.points.size(), 100 * r.run.max_spread);
        if (wide && std::find(r.warnings.begin(), r.warnings.end(), line) == r.warnings.end()) r.warnings.push_back(line);
    }
    // One summary warning per row whose numbers are not to be trusted.
    for (const auto &row : r.logp)
        for (const auto &w : row.warnings) {
            std::string line = row.layer + ": " + w;
            if (std::find(r.warnings.begin(), r.warnings.end(), line) == r.warnings.end()) r.warnings.push_back(line);
        }
}

double measure_memcpy_us(std::size_t bytes) {
    std::vector<char> a(bytes, 1), b(bytes, 0);
    std::vector<double> per;
    for (int rep = 0; rep < 21; ++rep) {
        constexpr int kN = 2000;
        std::uint64_t t0 = ticks();
        for (int i = 0; i < kN; ++i) {
            std::memcpy(b.data(), a.data(), bytes);
            __asm__ volatile("" : : "r"(b.data()) : "memory");
        }
        per.push_back(ticks_to_ns(ticks() - t0) / kN / 1e3);
    }
    return median_of(per);
}

namespace {

void rule(std::string &s, std::size_t n = 100) { s += std::string(n, '-') + "\n"; }

std::string status_text(const Status &st) { return st.note.empty() ? st.state : st.state + ": " + st.note; }

}  // namespace

void print_report(const Report &r, std::FILE *out) {
    const nlohmann::json &paper = paper_figures();
    std::string s;
    s += fmt::format("\nviastack logp report   {}   host {}\n", r.run.date_utc, r.run.host);
    s += fmt::format("provider {} (device {})   timing profile: {}{}\n", r.provider.name,
                     r.provider.device.empty() ? "-" : r.provider.device,
                     r.provider.profile.empty() ? "none" : r.provider.profile,
                     r.provider.profile_source.empty() ? "" : " [" + r.provider.profile_source + "]");
    s += fmt::format("{} run: {} round trips, {} warm-up; TSC {} GHz; numbers are medians, spread = IQR/median; "
                     "warnings above {:.0f}%\n",
                     r.run.quick ? "quick" : "full", r.run.iterations, r.run.warmup, fmt_num(r.run.tsc_ghz, 3),
                     100 * r.run.max_spread);
    s += fmt::format("paper: {}\n", paper_citation());
    s += "layers: ";
    for (const auto &l : r.layers) s += fmt::format("{} [{}]  ", l.layer, status_text(l.status));
    s += "\n\n";

    // ---- Table 1
    s += "Table 1. VI baseline (native VI send/receive)\n";
    rule(s);
    const ViBaseline &b = r.vi_baseline;
    if (!b.status.measured()) s += fmt::format("  {}\n", status_text(b.status));
    s += fmt::format("  {:<34}{:>12}", "", "ours");
    for (const auto &p : paper["table1_vi_baseline"]) s += fmt::format(" {:>13.13}", p.value("system", ""));
    s += "\n";
    s += fmt::format("  {:<34}{:>12}", fmt::format("RTT/2 (us), {} B", b.min_bytes), fmt_num(b.rtt_half_min_us));
    for (const auto &p : paper["table1_vi_baseline"]) s += fmt::format("{:>14}", fmt_num(paper_number(p, "rtt_half_us"), 1));
    s += "\n";
    s += fmt::format("  {:<34}{:>12}{:>14}  (paper: 16-byte VI message, LANai 7)\n", "RTT/2 (us), 16 B",
                     fmt_num(b.rtt_half_16_us), fmt_num(paper_number(paper, "vi_rtt_half_16B_us"), 1));
    s += fmt::format("  {:<34}{:>12}", fmt::format("Peak throughput (MB/s){}", b.peak_at_bytes ? fmt::format(" @ {} B", b.peak_at_bytes) : ""),
                     fmt_num(b.peak_mb_s, 1));
    for (const auto &p : paper["table1_vi_baseline"]) s += fmt::format("{:>14}", fmt_num(paper_number(p, "throughput_mb_s"), 1));
    s += "\n\n";

    // ---- Table 2
    s += "Table 2. LogP parameters (us), Culler/Liu/Martin/Yoshikawa method; Delta = RTT/2 - RTT/2(VI, 16 B)\n";
    rule(s);
    s += fmt::format("  {:<22}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}   {}\n", "layer", "RTT/2", "Delta", "L", "o_s", "o_r", "g",
                     "o_s check (delayed bursts)");
    for (const auto &row : r.logp) {
        if (!row.status.measured()) {
            s += fmt::format("  {:<22}{}\n", row.layer, status_text(row.status));
        } else {
            s += fmt::format("  {:<22}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}   {}\n", row.layer + " (ours)", fmt_num(row.rtt_half_us),
                             fmt_num(row.delta_us), fmt_num(row.L_us), fmt_num(row.o_s_us), fmt_num(row.o_r_us),
                             fmt_num(row.g_us), fmt_num(row.o_s_delay_us));
            if (std::isfinite(row.expect_o_s_us))
                s += fmt::format("  {:<22}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}\n", "  known answer",
                                 fmt_num(row.expect_L_us + row.expect_o_s_us + row.expect_o_r_us), "-",
                                 fmt_num(row.expect_L_us), fmt_num(row.expect_o_s_us), fmt_num(row.expect_o_r_us),
                                 fmt_num(row.expect_g_us));
            s += fmt::format("  {:<22}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}\n", "  spread (%)", fmt_num(100 * row.spread_rtt, 0), "",
                             "", fmt_num(100 * row.spread_o_s, 0), fmt_num(100 * row.spread_o_r, 0), fmt_num(100 * row.spread_g, 0));
        }
        for (const auto &pr : paper["table2_logp"]) {
            if (pr.value("layer", "") != row.layer) continue;
            s += fmt::format("  {:<22}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}\n", "  paper " + pr.value("row", "").substr(8),
                             fmt_num(paper_number(pr, "rtt_half_us"), 1), fmt_num(paper_number(pr, "delta_us"), 1),
                             fmt_num(paper_number(pr, "L_us"), 1), fmt_num(paper_number(pr, "o_s_us"), 1),
                             fmt_num(paper_number(pr, "o_r_us"), 1), fmt_num(paper_number(pr, "g_us"), 1));
        }
        for (const auto &peer : r.peers)
            for (const auto &m : peer.metrics)
                if (m.compared_with == row.layer && (m.metric == "rtt_half_us" || m.metric == "g_us"))
                    s += fmt::format("  {:<22}{} {} {} = {} us; ours/peer = {}\n", "", peer.tool, m.test,
                                     m.metric == "rtt_half_us" ? "RTT/2" : "g", fmt_num(m.peer, 3),
                                     std::isfinite(m.ratio) ? fmt::format("{:.3g}", m.ratio) : "-");
    }
    s += fmt::format("  paper: VI RTT/2 for 16 B = {} us (LANai 7); AMVIAv1 rows also on LANai 4: see paper_figures.json\n\n",
                     fmt_num(paper_number(paper, "vi_rtt_half_16B_us"), 1));

    // ---- Figure 2
    s += "Figure 2. Split-C single-sender short message times (us per operation, int)\n";
    rule(s);
    if (r.splitc_ops.empty()) s += "  Split-C: not built\n";
    for (const auto &op : r.splitc_ops)
        s += fmt::format("  {:<8}{:>10}   {}\n", op.op, op.status.measured() ? fmt_num(op.us) : "-",
                         op.status.measured() ? fmt::format("spread {}%", fmt_num(100 * op.spread, 0)) : status_text(op.status));
    s += "  paper: values only plotted (no numbers in the text); read/write ~ a round trip, get/put ~ the gap\n\n";

    // ---- Figure 5 + FM metrics
    s += "Figure 5. Bulk bandwidth (MB/s, 1 MB = 10^6 B) and FM metrics t0 / r_inf / n_1/2\n";
    rule(s);
    std::vector<std::size_t> sizes;
    for (const auto &c : r.bandwidth)
        for (const auto &p : c.points)
            if (std::find(sizes.begin(), sizes.end(), p.bytes) == sizes.end()) sizes.push_back(p.bytes);
    std::sort(sizes.begin(), sizes.end());
    s += fmt::format("  {:>8}", "bytes");
    for (const auto &c : r.bandwidth) s += fmt::format("{:>12}", c.layer);
    for (const auto &peer : r.peers)
        if (!peer.bandwidth.empty()) s += fmt::format("{:>14}", "ucx put_bw");
    s += "\n";
    for (std::size_t n : sizes) {
        s += fmt::format("  {:>8}", n);
        for (const auto &c : r.bandwidth) {
            std::string v = "-";
            for (const auto &p : c.points)
                if (p.bytes == n) v = fmt_num(p.mb_s, 1) + (p.spread > r.run.max_spread ? "*" : " ");
            s += fmt::format("{:>12}", v);
        }
        for (const auto &peer : r.peers) {
            if (peer.bandwidth.empty()) continue;
            double v = kNaN;
            for (const auto &p : peer.bandwidth)
                if (p.bytes == n) v = p.mb_s;
            s += fmt::format("{:>14}", fmt_num(v, 1));
        }
        s += "\n";
    }
    s += fmt::format("  (* = spread above {:.0f}%: not to be trusted)\n", 100 * r.run.max_spread);
    for (const auto &c : r.bandwidth) {
        if (!c.status.measured()) {
            s += fmt::format("  {}: {}\n", c.layer, status_text(c.status));
            continue;
        }
        s += fmt::format("  {:<10} t0 = {} us, r_inf = {} MB/s, n_1/2 = {} B{} (model t0*r_inf = {} B), peak {} MB/s  [{}]\n",
                         c.layer, fmt_num(c.t0_us), fmt_num(c.r_inf_mb_s, 1), fmt_num(c.n_half_bytes, 0),
                         c.n_half_from_model ? " (from the model)" : "", fmt_num(c.n_half_model_bytes, 0),
                         fmt_num(c.r_peak_mb_s, 1), c.method);
    }
    const auto &f5 = paper["figure5_bandwidth"];
    s += fmt::format("  paper: VI peak {} MB/s; AM and Split-C knee at ~{} MB/s near {} B; VI 32 B one-sided {} MB/s\n",
                     fmt_num(paper_number(f5, "vi_peak_mb_s"), 1), fmt_num(paper_number(f5, "am_splitc_knee_mb_s"), 0),
                     fmt_num(paper_number(f5, "knee_at_bytes"), 0), fmt_num(paper_number(f5, "vi_32B_mb_s"), 1));
    for (const auto &fm : paper["fm_metrics"])
        s += fmt::format("  FM paper ({}): t0 = {} us, r_inf = {} MB/s, n_1/2 = {} B\n", fm.value("system", ""),
                         fmt_num(paper_number(fm, "t0_us"), 1), fmt_num(paper_number(fm, "r_inf_mb_s"), 1),
                         fmt_num(paper_number(fm, "n_half_bytes"), 0));
    s += "\n";

    // ---- Tables 3 and 4
    for (const char *which : {"am-request-reply", "splitc-get"}) {
        bool am = std::strcmp(which, "am-request-reply") == 0;
        s += am ? "Table 3. Host overhead of an AM short request-reply, by primitive\n"
                : "Table 4. Host overhead of a Split-C get, by primitive\n";
        rule(s);
        const Breakdown *bd = nullptr;
        for (const auto &x : r.breakdown)
            if (x.name == which) bd = &x;
        const nlohmann::json &pt = paper[am ? "table3_am_request_reply" : "table4_splitc_get"];
        if (!bd || !bd->status.measured()) {
            s += fmt::format("  {}\n", bd ? status_text(bd->status) : "not built");
            s += "  paper categories:";
            for (auto &[k, v] : pt["categories"].items()) s += fmt::format("  {} {}%", k, fmt_num(v.get<double>(), 1));
            s += "\n\n";
            continue;
        }
        s += fmt::format("  {:<36}{:>10}{:>10}{:>9}{:>9}{:>10}\n", "category / primitive", "ns/op", "cycles", "% ours",
                         "% paper", "count/op");
        for (const auto &c : bd->categories) {
            s += fmt::format("  {:<36}{:>10}{:>10}{:>9}{:>9}\n", c.category, fmt_num(c.ns, 0), fmt_num(c.cycles, 0),
                             fmt_num(c.percent, 1), fmt_num(c.paper_percent, 1));
            for (const auto &it : bd->items)
                if (it.category == c.category)
                    s += fmt::format("    {:<34}{:>10}{:>10}{:>9}{:>9}{:>10}\n", it.operation, fmt_num(it.ns, 0),
                                     fmt_num(it.cycles, 0), fmt_num(it.percent, 1), fmt_num(it.paper_percent, 1),
                                     fmt_num(it.count_per_op, 2));
        }
        if (!bd->inner.empty()) {
            s += "  inside those (lower layers; already included above, not added):\n";
            for (const auto &it : bd->inner)
                s += fmt::format("    {:<34}{:>10}{:>10}{:>9}{:>9}{:>10}\n", it.operation, fmt_num(it.ns, 0),
                                 fmt_num(it.cycles, 0), "", "", fmt_num(it.count_per_op, 2));
        }
        s += fmt::format("  host overhead {} ns/op ({} cycles) over {} operations; NIC firmware {} ns/op (not host); "
                         "each timed primitive adds ~{} ns of instrumentation\n\n",
                         fmt_num(bd->host_ns, 0), fmt_num(bd->host_cycles, 0), bd->operations, fmt_num(bd->firmware_ns, 0),
                         fmt_num(r.run.instr_scope_ns, 0));
    }

    // ---- Table 5
    const BulkDifference &d = r.bulk_difference;
    s += fmt::format("Table 5. Per-message difference, {} bulk vs native VI, {} B messages (us)\n",
                     d.layer.empty() ? "AM/Split-C" : d.layer, d.bytes);
    rule(s);
    if (!d.status.measured()) s += fmt::format("  {}\n", status_text(d.status));
    s += fmt::format("  {:<34}{:>10}{:>10}\n", "component", "ours", "paper");
    for (const auto &c : d.components)
        s += fmt::format("  {:<34}{:>10}{:>10}\n", c.component, fmt_num(c.us), fmt_num(c.paper_us, 1));
    s += fmt::format("  {:<34}{:>10}{:>10}\n", "TOTAL (components)", fmt_num(d.components_total_us), "18.5");
    s += fmt::format("  {:<34}{:>10}{:>10}\n\n", "measured difference", fmt_num(d.per_msg_difference_us),
                     fmt_num(d.paper_difference_us, 1));

    // ---- peers
    s += "Peers measured in the same run\n";
    rule(s);
    if (r.peers.empty()) s += "  none (--no-peers)\n";
    for (const auto &p : r.peers) {
        s += fmt::format("  {} ({}): {}\n", p.tool, p.transport, status_text(p.status));
        for (const auto &m : p.metrics)
            if (!m.compared_with.empty() && m.metric.rfind("bandwidth", 0) == 0)
                s += fmt::format("    {} {:>6} B: peer {} MB/s, ours ({}) {} MB/s, ours/peer {}\n", m.test, m.bytes,
                                 fmt_num(m.peer, 1), m.compared_with, fmt_num(m.ours, 1),
                                 std::isfinite(m.ratio) ? fmt::format("{:.3g}", m.ratio) : "-");
        for (const auto &m : p.metrics)
            if (m.compared_with.empty() && m.metric.rfind("bandwidth", 0) != 0)
                s += fmt::format("    {:<12} {:<12} {:>6} B  {}\n", m.metric, m.test, m.bytes, fmt_num(m.peer, 3));
    }
    s += "\n";

    if (!r.warnings.empty()) {
        s += "Warnings\n";
        rule(s);
        for (const auto &w : r.warnings) s += "  ! " + w + "\n";
        s += "\n";
    }
    std::fputs(s.c_str(), out);
    std::fflush(out);
}

}  // namespace logp
