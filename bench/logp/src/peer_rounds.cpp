// peer_rounds.cpp - see peer_rounds.hpp.
#include "peer_rounds.hpp"

#include "stats.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace logp {
namespace {

bool finite(double v) { return std::isfinite(v); }

// "bandwidth_mb_s:ucp_put_bw" -> "bandwidth_mb_s"
std::string base_metric(const std::string &metric) { return metric.substr(0, metric.find(':')); }

RoundComparison &comparison_for(Interleaved &cmp, const std::string &peer, const PeerMetric &m, const std::string &layer) {
    const std::string metric = base_metric(m.metric);
    for (auto &c : cmp.comparisons)
        if (c.peer == peer && c.metric == metric && c.test == m.test && c.layer == layer && c.bytes == m.bytes) return c;
    RoundComparison c;
    c.peer = peer;
    c.metric = metric;
    c.test = m.test;
    c.layer = layer;
    c.bytes = m.bytes;
    cmp.comparisons.push_back(c);
    return cmp.comparisons.back();
}

void set_at(std::vector<double> &v, int round, double x) {
    if (int(v.size()) <= round) v.resize(std::size_t(round) + 1, kNaN);
    v[std::size_t(round)] = x;
}

}  // namespace

const std::vector<std::size_t> &comparison_sizes() {
    static const std::vector<std::size_t> sizes = {4096, 32768, 262144, 1048576};
    return sizes;
}

std::string layer_for_bandwidth_test(const std::string &test) {
    if (test == "ucp_put_bw" || test == "fi_write" || test == "ib_write_bw") return "vi";
    return "am-v3";
}

bool compares_bandwidth(const std::string &test, const std::string &layer) {
    if (layer_for_bandwidth_test(test) == "vi") return layer == "vi" || layer == "am-v3" || layer == "splitc";
    return layer == "am-v3";
}

void add_round(Interleaved &cmp, int round, const std::vector<OurFigure> &ours, const std::string &peer_tool,
               const std::vector<PeerMetric> &peer_metrics) {
    for (const PeerMetric &m : peer_metrics) {
        if (!m.compared_with.empty()) continue;  // a derived metric, not the peer's own
        const std::string metric = base_metric(m.metric);
        const bool bandwidth = metric == "bandwidth_mb_s";
        if (!bandwidth && metric != "rtt_half_us" && metric != "g_us") continue;
        for (const OurFigure &f : ours) {
            if (f.metric != metric) continue;
            if (bandwidth && (f.bytes != m.bytes || !compares_bandwidth(m.test, f.layer))) continue;
            RoundComparison &c = comparison_for(cmp, peer_tool, m, f.layer);
            const double ratio = finite(f.value) && finite(m.peer) && m.peer > 0 ? f.value / m.peer : kNaN;
            set_at(c.ours, round, f.value);
            set_at(c.peer_values, round, m.peer);
            set_at(c.ratios, round, ratio);
        }
    }
}

void summarize_rounds(Interleaved &cmp) {
    for (auto &c : cmp.comparisons) {
        // Every series as long as the run (a peer that failed a round has NaN there).
        for (auto *v : {&c.ours, &c.peer_values, &c.ratios})
            if (int(v->size()) < cmp.rounds) v->resize(std::size_t(cmp.rounds), kNaN);
        std::vector<double> r;
        for (double x : c.ratios)
            if (finite(x)) r.push_back(x);
        c.rounds = int(r.size());
        c.ratio_median = c.ratio_min = c.ratio_max = kNaN;
        if (r.empty()) continue;
        c.ratio_median = median_of(r);
        c.ratio_min = *std::min_element(r.begin(), r.end());
        c.ratio_max = *std::max_element(r.begin(), r.end());
    }
}

PeerResult merge_peer_rounds(const std::vector<PeerResult> &rounds) {
    PeerResult out;
    if (rounds.empty()) return out;
    out.tool = rounds.front().tool;
    out.transport = rounds.front().transport;
    out.status = rounds.back().status;
    std::map<std::tuple<std::string, std::string, std::size_t>, std::vector<double>> values;
    std::vector<std::tuple<std::string, std::string, std::size_t>> order;
    for (const PeerResult &p : rounds) {
        if (p.status.measured()) out.status = p.status;
        for (const PeerMetric &m : p.metrics) {
            if (!m.compared_with.empty() || !finite(m.peer)) continue;
            auto key = std::make_tuple(m.metric, m.test, m.bytes);
            if (!values.count(key)) order.push_back(key);
            values[key].push_back(m.peer);
        }
    }
    for (const auto &key : order) {
        const auto &[metric, test, bytes] = key;
        const double v = median_of(values[key]);
        out.metrics.push_back({metric, test, "", bytes, v, kNaN, kNaN});
        if (layer_for_bandwidth_test(test) == "vi" && metric.rfind("bandwidth_mb_s", 0) == 0)
            out.bandwidth.push_back({bytes, double(bytes) / v, v, 0});
    }
    return out;
}

}  // namespace logp
