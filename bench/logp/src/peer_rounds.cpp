// peer_rounds.cpp - see peer_rounds.hpp.
#include "peer_rounds.hpp"

#include "stats.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace logp {
namespace {

bool finite(double v) { return std::isfinite(v); }

// "bandwidth_mb_s:ucp_put_bw" -> "bandwidth_mb_s"
std::string base_metric(const std::string &metric) { return metric.substr(0, metric.find(':')); }

RoundComparison &comparison_for(Interleaved &cmp, const std::string &peer, const PeerMetric &m,
                                const std::string &layer) {
    const std::string metric = base_metric(m.metric);
    for (auto &c : cmp.comparisons)
        if (c.peer == peer && c.metric == metric && c.test == m.test && c.layer == layer && c.bytes == m.bytes)
            return c;
    RoundComparison c;
    c.peer = peer;
    c.metric = metric;
    c.test = m.test;
    c.layer = layer;
    c.bytes = m.bytes;
    cmp.comparisons.push_back(c);
    return cmp.comparisons.back();
}

// The finite ratios of the rounds `take` selects.
template <class Take>
RatioSummary summary_of(const std::vector<double> &ratios, Take take) {
    std::vector<double> r;
    for (std::size_t i = 0; i < ratios.size(); ++i)
        if (finite(ratios[i]) && take(i)) r.push_back(ratios[i]);
    RatioSummary out;
    out.rounds = int(r.size());
    if (r.empty()) return out;
    out.median = median_of(r);
    out.min = *std::min_element(r.begin(), r.end());
    out.max = *std::max_element(r.begin(), r.end());
    return out;
}

void set_at(std::vector<double> &v, int round, double x) {
    if (int(v.size()) <= round) v.resize(std::size_t(round) + 1, kNaN);
    v[std::size_t(round)] = x;
}

} // namespace

const std::vector<std::size_t> &comparison_sizes() {
    static const std::vector<std::size_t> sizes = {4096, 32768, 262144, 1048576};
    return sizes;
}

std::string layer_for_bandwidth_test(const std::string &test) {
    if (test == "ucp_put_bw" || test == "fi_write" || test == "ib_write_bw") return "vi";
    return "am-v3";
}

bool compares_bandwidth(const std::string &test, const std::string &layer) {
    // logp_mpi's stream over vader or tcp against the same stream over viastack only.
    if (layer == "mpi" || test == kMpiStreamTest) return layer == "mpi" && test == kMpiStreamTest;
    if (layer_for_bandwidth_test(test) == "vi") return layer == "vi" || layer == "am-v3" || layer == "splitc";
    return layer == "am-v3";
}

void add_round(Interleaved &cmp, int round, const std::vector<OurFigure> &ours, const std::string &peer_tool,
               const std::vector<PeerMetric> &peer_metrics, double line_ours_ns, double line_peer_ns) {
    for (const PeerMetric &m : peer_metrics) {
        if (!m.compared_with.empty()) continue; // a derived metric, not the peer's own
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
            set_at(c.line_ns, round, line_ours_ns);
            set_at(c.line_ns_peer, round, line_peer_ns);
        }
    }
}

void summarize_rounds(Interleaved &cmp) {
    for (auto &c : cmp.comparisons) {
        // Every series as long as the run (a peer that failed a round has NaN there).
        for (auto *v : {&c.ours, &c.peer_values, &c.ratios, &c.line_ns, &c.line_ns_peer})
            if (int(v->size()) < cmp.rounds) v->resize(std::size_t(cmp.rounds), kNaN);
        const RatioSummary all = summary_of(c.ratios, [](std::size_t) { return true; });
        c.rounds = all.rounds;
        c.ratio_median = all.median;
        c.ratio_min = all.min;
        c.ratio_max = all.max;
    }
    classify_placements(cmp);
}

void classify_placements(Interleaved &cmp) {
    std::vector<double> all;
    for (const auto &c : cmp.comparisons)
        for (const auto *v : {&c.line_ns, &c.line_ns_peer}) all.insert(all.end(), v->begin(), v->end());
    cmp.line_threshold_ns = line_threshold(all, &cmp.line_threshold_source);
    const double th = cmp.line_threshold_ns;
    auto class_of = [th](double x) { return !finite(x) ? "" : x >= th ? "slow" : "fast"; };
    // A round of the run is in a class when every line measured in it is.
    std::vector<std::string> round_class(std::size_t(std::max(0, cmp.rounds)));
    std::vector<bool> round_seen(round_class.size(), false), round_mixed(round_class.size(), false);
    for (auto &c : cmp.comparisons) {
        c.placement.assign(c.ratios.size(), "");
        for (std::size_t i = 0; i < c.ratios.size(); ++i) {
            const std::string a = i < c.line_ns.size() ? class_of(c.line_ns[i]) : "";
            const std::string b = i < c.line_ns_peer.size() ? class_of(c.line_ns_peer[i]) : "";
            c.placement[i] = a.empty() || b.empty() ? "" : a == b ? a : "mixed";
            if (i >= round_class.size() || c.placement[i].empty()) continue;
            if (round_seen[i] && round_class[i] != c.placement[i]) round_mixed[i] = true;
            round_seen[i] = true;
            round_class[i] = c.placement[i];
        }
        c.fast = summary_of(c.ratios, [&](std::size_t i) { return c.placement[i] == "fast"; });
        c.slow = summary_of(c.ratios, [&](std::size_t i) { return c.placement[i] == "slow"; });
        c.mixed_rounds = summary_of(c.ratios, [&](std::size_t i) { return c.placement[i] == "mixed"; }).rounds;
    }
    cmp.rounds_fast = cmp.rounds_slow = cmp.rounds_mixed = 0;
    for (std::size_t i = 0; i < round_class.size(); ++i) {
        if (!round_seen[i]) continue;
        const std::string k = round_mixed[i] ? "mixed" : round_class[i];
        cmp.rounds_fast += k == "fast";
        cmp.rounds_slow += k == "slow";
        cmp.rounds_mixed += k == "mixed";
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

} // namespace logp
