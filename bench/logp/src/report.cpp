// report.cpp - derived numbers, and the terminal report from the table model (see report.hpp).
#include "report.hpp"

#include "paper.hpp"
#include "peer_rounds.hpp"
#include "render.hpp"
#include "stats.hpp"
#include "tables.hpp"
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
double ratio(double ours, double peer) {
    return (std::isfinite(ours) && std::isfinite(peer) && peer > 0) ? ours / peer : kNaN;
}

} // namespace

void finalize_report(Report &r, double memcpy_1k_us) {
    // Delta: increase of RTT/2 over native VI for the same 16-byte payload.
    const LogPRow *vi = find_row(r, "vi");
    double vi16 =
        std::isfinite(r.vi_baseline.rtt_half_16_us) ? r.vi_baseline.rtt_half_16_us : (vi ? vi->rtt_half_us : kNaN);
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
                const std::string layer = layer_for_bandwidth_test(m.test);
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
    d.per_msg_difference_us = d.components_total_us = kNaN; // a report re-read from JSON may hold old ones
    if (vic && upper) {
        d.per_msg_difference_us = point_at(upper, 1024) - point_at(vic, 1024);
        double short_recv = point_at(vic, 32); // the paper's estimate: a 32-byte one-sided VI message
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
        if (wide && std::find(r.warnings.begin(), r.warnings.end(), line) == r.warnings.end())
            r.warnings.push_back(line);
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

void print_report(const Report &r, std::FILE *out) {
    std::fputs(render_text(build_document(r)).c_str(), out);
    std::fflush(out);
}

} // namespace logp
