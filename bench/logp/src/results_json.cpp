// results_json.cpp - see results_json.hpp; the schema itself is documented in docs/logp.md.
#include "results_json.hpp"

#include "peer_rounds.hpp"

#include "render.hpp"
#include "tables.hpp"
#include "layering_study.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace logp {
namespace {

using json = nlohmann::json;

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

double get_num(const json &j, const char *key) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return kNaN;
    if (!it->is_number()) throw std::runtime_error(std::string("field '") + key + "' is not a number");
    return it->get<double>();
}
template <class T>
T get_or(const json &j, const char *key, T def) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return def;
    return it->get<T>();
}
const json &arr(const json &j, const char *key) {
    static const json empty = json::array();
    auto it = j.find(key);
    return (it == j.end() || !it->is_array()) ? empty : *it;
}
const json &obj(const json &j, const char *key) {
    static const json empty = json::object();
    auto it = j.find(key);
    return (it == j.end() || !it->is_object()) ? empty : *it;
}

json status_json(const Status &s) { return {{"state", s.state}, {"note", s.note}}; }
Status status_from(const json &j) {
    Status s;
    s.state = get_or<std::string>(j, "state", "not built");
    s.note = get_or<std::string>(j, "note", "");
    return s;
}

json points_json(const std::vector<BandwidthPoint> &pts) {
    json a = json::array();
    for (const auto &p : pts)
        a.push_back(
            {{"bytes", p.bytes}, {"us_per_msg", num(p.us_per_msg)}, {"mb_s", num(p.mb_s)}, {"spread", p.spread}});
    return a;
}
std::vector<BandwidthPoint> points_from(const json &a) {
    std::vector<BandwidthPoint> out;
    for (const auto &p : a) {
        BandwidthPoint b;
        b.bytes = get_or<std::size_t>(p, "bytes", 0);
        b.us_per_msg = get_num(p, "us_per_msg");
        b.mb_s = get_num(p, "mb_s");
        b.spread = get_or<double>(p, "spread", 0);
        out.push_back(b);
    }
    return out;
}

json nums_json(const std::vector<double> &v) {
    json a = json::array();
    for (double x : v) a.push_back(num(x));
    return a;
}
std::vector<double> nums_from(const json &c, const char *key) {
    std::vector<double> v;
    if (!c.contains(key)) return v; // keys added later (line_ns) are absent in older reports
    for (const auto &e : arr(c, key)) v.push_back(e.is_number() ? e.get<double>() : kNaN);
    return v;
}

json ratio_summary_json(const RatioSummary &s) {
    return {
        {"rounds", s.rounds}, {"ratio_median", num(s.median)}, {"ratio_min", num(s.min)}, {"ratio_max", num(s.max)}};
}

json comparison_json(const RoundComparison &c) {
    return {{"peer", c.peer},
            {"metric", c.metric},
            {"test", c.test},
            {"layer", c.layer},
            {"bytes", c.bytes},
            {"ours", nums_json(c.ours)},
            {"peer_values", nums_json(c.peer_values)},
            {"ratios", nums_json(c.ratios)},
            {"rounds", c.rounds},
            {"ratio_median", num(c.ratio_median)},
            {"ratio_min", num(c.ratio_min)},
            {"ratio_max", num(c.ratio_max)},
            {"line_ns", nums_json(c.line_ns)},
            {"line_ns_peer", nums_json(c.line_ns_peer)},
            {"placement", c.placement},
            {"by_placement",
             {{"fast", ratio_summary_json(c.fast)},
              {"slow", ratio_summary_json(c.slow)},
              {"mixed_rounds", c.mixed_rounds}}}};
}

json logp_row_json(const LogPRow &row) {
    return {
        {"layer", row.layer},
        {"status", status_json(row.status)},
        {"rtt_half_us", num(row.rtt_half_us)},
        {"delta_us", num(row.delta_us)},
        {"L_us", num(row.L_us)},
        {"o_s_us", num(row.o_s_us)},
        {"o_r_us", num(row.o_r_us)},
        {"o_r_reply_us", num(row.o_r_reply_us)},
        {"o_r_lines_local", row.o_r_lines_local},
        {"o_r_cold_us", num(row.o_r_cold_us)},
        {"o_r_lines_us", num(row.o_r_lines_us)},
        {"g_us", num(row.g_us)},
        {"o_s_delay_us", num(row.o_s_delay_us)},
        {"rtt_half_min_us", num(row.rtt_half_min_us)},
        {"L_state", row.L_state},
        {"L_raw_us", num(row.L_raw_us)},
        {"L_resolution_us", num(row.L_resolution_us)},
        {"spread", {{"rtt", row.spread_rtt}, {"o_s", row.spread_o_s}, {"o_r", row.spread_o_r}, {"g", row.spread_g}}},
        {"expected",
         {{"L_us", num(row.expect_L_us)},
          {"o_s_us", num(row.expect_o_s_us)},
          {"o_r_us", num(row.expect_o_r_us)},
          {"g_us", num(row.expect_g_us)}}},
        {"warnings", row.warnings}};
}

LogPRow logp_row_from(const json &x) {
    LogPRow row;
    row.layer = get_or<std::string>(x, "layer", "");
    row.status = status_from(obj(x, "status"));
    row.rtt_half_us = get_num(x, "rtt_half_us");
    row.delta_us = get_num(x, "delta_us");
    row.L_us = get_num(x, "L_us");
    row.o_s_us = get_num(x, "o_s_us");
    row.o_r_us = get_num(x, "o_r_us");
    row.o_r_reply_us = get_num(x, "o_r_reply_us");
    row.o_r_lines_local = get_or<bool>(x, "o_r_lines_local", false); // these three are absent in older reports
    row.o_r_cold_us = x.contains("o_r_cold_us") ? get_num(x, "o_r_cold_us") : row.o_r_us;
    row.o_r_lines_us = x.contains("o_r_lines_us") ? get_num(x, "o_r_lines_us") : kNaN;
    row.g_us = get_num(x, "g_us");
    row.o_s_delay_us = get_num(x, "o_s_delay_us");
    row.rtt_half_min_us = get_num(x, "rtt_half_min_us");
    row.L_state = get_or<std::string>(x, "L_state", "measured");
    row.L_raw_us = get_num(x, "L_raw_us");
    row.L_resolution_us = get_num(x, "L_resolution_us");
    const json &sp = obj(x, "spread");
    row.spread_rtt = get_or<double>(sp, "rtt", 0);
    row.spread_o_s = get_or<double>(sp, "o_s", 0);
    row.spread_o_r = get_or<double>(sp, "o_r", 0);
    row.spread_g = get_or<double>(sp, "g", 0);
    const json &ex = obj(x, "expected");
    row.expect_L_us = get_num(ex, "L_us");
    row.expect_o_s_us = get_num(ex, "o_s_us");
    row.expect_o_r_us = get_num(ex, "o_r_us");
    row.expect_g_us = get_num(ex, "g_us");
    row.warnings = get_or<std::vector<std::string>>(x, "warnings", {});
    return row;
}

json interleaved_to_json(const Interleaved &x) {
    json cmps = json::array();
    for (const auto &c : x.comparisons) cmps.push_back(comparison_json(c));
    return {{"status", status_json(x.status)},
            {"rounds", x.rounds},
            {"comparisons", cmps},
            {"placement",
             {{"line_threshold_ns", num(x.line_threshold_ns)},
              {"threshold_source", x.line_threshold_source},
              {"rounds_fast", x.rounds_fast},
              {"rounds_slow", x.rounds_slow},
              {"rounds_mixed", x.rounds_mixed}}}};
}

// The measured keys; the placement classes and every summary are derived again.
Interleaved interleaved_from_json(const json &x) {
    Interleaved out;
    out.status = status_from(obj(x, "status"));
    out.rounds = get_or<int>(x, "rounds", 0);
    for (const auto &c : arr(x, "comparisons")) {
        RoundComparison rc;
        rc.peer = get_or<std::string>(c, "peer", "");
        rc.metric = get_or<std::string>(c, "metric", "");
        rc.test = get_or<std::string>(c, "test", "");
        rc.layer = get_or<std::string>(c, "layer", "");
        rc.bytes = get_or<std::size_t>(c, "bytes", 0);
        rc.ours = nums_from(c, "ours");
        rc.peer_values = nums_from(c, "peer_values");
        rc.ratios = nums_from(c, "ratios");
        rc.line_ns = nums_from(c, "line_ns");
        rc.line_ns_peer = nums_from(c, "line_ns_peer");
        out.comparisons.push_back(rc);
    }
    summarize_rounds(out);
    return out;
}

} // namespace

// One section of the report each, to JSON and back; the schema is in docs/logp.md.
namespace {

json run_json(const RunInfo &run) {
    return {{"date_utc", run.date_utc},
            {"host", run.host},
            {"command", run.command},
            {"quick", run.quick},
            {"iterations", run.iterations},
            {"warmup", run.warmup},
            {"tsc_ghz", num(run.tsc_ghz)},
            {"max_spread", run.max_spread},
            {"instr_scope_ns", num(run.instr_scope_ns)},
            {"timer_ns", num(run.timer_ns)},
            {"tsc_vs_monotonic", num(run.tsc_vs_monotonic)}};
}

RunInfo run_from(const json &run) {
    RunInfo r;
    r.date_utc = get_or<std::string>(run, "date_utc", "");
    r.host = get_or<std::string>(run, "host", "");
    r.command = get_or<std::string>(run, "command", "");
    r.quick = get_or<bool>(run, "quick", false);
    r.iterations = get_or<int>(run, "iterations", 0);
    r.warmup = get_or<int>(run, "warmup", 0);
    r.tsc_ghz = get_num(run, "tsc_ghz");
    r.max_spread = get_or<double>(run, "max_spread", 0.25);
    r.instr_scope_ns = get_num(run, "instr_scope_ns");
    r.timer_ns = get_num(run, "timer_ns");
    r.tsc_vs_monotonic = get_num(run, "tsc_vs_monotonic");
    return r;
}

json provider_json(const ProviderInfo &p) {
    return {{"name", p.name}, {"device", p.device}, {"profile", p.profile}, {"profile_source", p.profile_source}};
}

ProviderInfo provider_from(const json &prov) {
    ProviderInfo p;
    p.name = get_or<std::string>(prov, "name", "");
    p.device = get_or<std::string>(prov, "device", "");
    p.profile = get_or<std::string>(prov, "profile", "");
    p.profile_source = get_or<std::string>(prov, "profile_source", "");
    return p;
}

json vi_baseline_json(const ViBaseline &b) {
    return {{"status", status_json(b.status)},
            {"min_bytes", b.min_bytes},
            {"rtt_half_min_us", num(b.rtt_half_min_us)},
            {"rtt_half_16_us", num(b.rtt_half_16_us)},
            {"peak_mb_s", num(b.peak_mb_s)},
            {"peak_at_bytes", b.peak_at_bytes},
            {"spread", b.spread}};
}

ViBaseline vi_baseline_from(const json &b) {
    ViBaseline v;
    v.status = status_from(obj(b, "status"));
    v.min_bytes = get_or<std::size_t>(b, "min_bytes", 4);
    v.rtt_half_min_us = get_num(b, "rtt_half_min_us");
    v.rtt_half_16_us = get_num(b, "rtt_half_16_us");
    v.peak_mb_s = get_num(b, "peak_mb_s");
    v.peak_at_bytes = get_or<std::size_t>(b, "peak_at_bytes", 0);
    v.spread = get_or<double>(b, "spread", 0);
    return v;
}

json bandwidth_json(const BandwidthCurve &c) {
    return {{"layer", c.layer},
            {"method", c.method},
            {"status", status_json(c.status)},
            {"points", points_json(c.points)},
            {"fm",
             {{"t0_us", num(c.t0_us)},
              {"r_inf_mb_s", num(c.r_inf_mb_s)},
              {"n_half_bytes", num(c.n_half_bytes)},
              {"n_half_model_bytes", num(c.n_half_model_bytes)},
              {"n_half_from_model", c.n_half_from_model},
              {"r_peak_mb_s", num(c.r_peak_mb_s)},
              {"fit_r2", num(c.fit_r2)}}}};
}

BandwidthCurve bandwidth_from(const json &x) {
    BandwidthCurve c;
    c.layer = get_or<std::string>(x, "layer", "");
    c.method = get_or<std::string>(x, "method", "");
    c.status = status_from(obj(x, "status"));
    c.points = points_from(arr(x, "points"));
    const json &fm = obj(x, "fm");
    c.t0_us = get_num(fm, "t0_us");
    c.r_inf_mb_s = get_num(fm, "r_inf_mb_s");
    c.n_half_bytes = get_num(fm, "n_half_bytes");
    c.n_half_model_bytes = get_num(fm, "n_half_model_bytes");
    c.n_half_from_model = get_or<bool>(fm, "n_half_from_model", false);
    c.r_peak_mb_s = get_num(fm, "r_peak_mb_s");
    c.fit_r2 = get_num(fm, "fit_r2");
    return c;
}

json rate_sweep_json(const RateSweep &s) {
    json pts = json::array();
    for (const auto &p : s.points)
        pts.push_back({{"window", p.window},
                       {"us_per_msg", num(p.us_per_msg)},
                       {"msg_rate_m_s", num(p.msg_rate_m_s)},
                       {"spread", p.spread}});
    return {
        {"layer", s.layer}, {"method", s.method}, {"peer", s.peer}, {"status", status_json(s.status)}, {"points", pts}};
}

RateSweep rate_sweep_from(const json &x) {
    RateSweep s;
    s.layer = get_or<std::string>(x, "layer", "");
    s.method = get_or<std::string>(x, "method", "");
    s.peer = get_or<bool>(x, "peer", false);
    s.status = status_from(obj(x, "status"));
    for (const auto &p : arr(x, "points"))
        s.points.push_back({get_or<int>(p, "window", 0), get_num(p, "us_per_msg"), get_num(p, "msg_rate_m_s"),
                            get_or<double>(p, "spread", 0)});
    return s;
}

json breakdown_json(const Breakdown &x) {
    json cats = json::array(), items = json::array(), inner = json::array();
    for (const auto &c : x.categories)
        cats.push_back({{"category", c.category},
                        {"ns", c.ns},
                        {"cycles", c.cycles},
                        {"percent", c.percent},
                        {"paper_percent", num(c.paper_percent)}});
    for (const auto &i : x.items)
        items.push_back({{"operation", i.operation},
                         {"category", i.category},
                         {"count_per_op", i.count_per_op},
                         {"ns", i.ns},
                         {"cycles", i.cycles},
                         {"percent", i.percent},
                         {"paper_percent", num(i.paper_percent)}});
    for (const auto &i : x.inner)
        inner.push_back({{"operation", i.operation},
                         {"category", i.category},
                         {"count_per_op", i.count_per_op},
                         {"ns", i.ns},
                         {"cycles", i.cycles}});
    return {{"name", x.name},
            {"layer", x.layer},
            {"status", status_json(x.status)},
            {"operations", x.operations},
            {"host_ns", x.host_ns},
            {"host_cycles", x.host_cycles},
            {"firmware_ns", x.firmware_ns},
            {"wait_ns", x.wait_ns},
            {"categories", cats},
            {"items", items},
            {"inner", inner}};
}

Breakdown breakdown_from(const json &x) {
    Breakdown bd;
    bd.name = get_or<std::string>(x, "name", "");
    bd.layer = get_or<std::string>(x, "layer", "");
    bd.status = status_from(obj(x, "status"));
    bd.operations = get_or<std::uint64_t>(x, "operations", 0);
    bd.host_ns = get_or<double>(x, "host_ns", 0);
    bd.host_cycles = get_or<double>(x, "host_cycles", 0);
    bd.firmware_ns = get_or<double>(x, "firmware_ns", 0);
    bd.wait_ns = get_or<double>(x, "wait_ns", 0);
    for (const auto &c : arr(x, "categories"))
        bd.categories.push_back({get_or<std::string>(c, "category", ""), get_or<double>(c, "ns", 0),
                                 get_or<double>(c, "cycles", 0), get_or<double>(c, "percent", 0),
                                 get_num(c, "paper_percent")});
    for (const auto &i : arr(x, "items"))
        bd.items.push_back({get_or<std::string>(i, "operation", ""), get_or<std::string>(i, "category", ""),
                            get_or<double>(i, "count_per_op", 0), get_or<double>(i, "ns", 0),
                            get_or<double>(i, "cycles", 0), get_or<double>(i, "percent", 0),
                            get_num(i, "paper_percent")});
    for (const auto &i : arr(x, "inner"))
        bd.inner.push_back({get_or<std::string>(i, "operation", ""), get_or<std::string>(i, "category", ""),
                            get_or<double>(i, "count_per_op", 0), get_or<double>(i, "ns", 0),
                            get_or<double>(i, "cycles", 0), 0, kNaN});
    return bd;
}

json bulk_difference_json(const BulkDifference &d) {
    json comps = json::array();
    for (const auto &c : d.components)
        comps.push_back({{"component", c.component}, {"us", num(c.us)}, {"paper_us", num(c.paper_us)}});
    return {{"status", status_json(d.status)},
            {"bytes", d.bytes},
            {"layer", d.layer},
            {"per_msg_difference_us", num(d.per_msg_difference_us)},
            {"paper_difference_us", num(d.paper_difference_us)},
            {"components", comps},
            {"components_total_us", num(d.components_total_us)}};
}

BulkDifference bulk_difference_from(const json &d) {
    BulkDifference b;
    b.status = status_from(obj(d, "status"));
    b.bytes = get_or<std::size_t>(d, "bytes", 1024);
    b.layer = get_or<std::string>(d, "layer", "");
    b.per_msg_difference_us = get_num(d, "per_msg_difference_us");
    b.paper_difference_us = get_num(d, "paper_difference_us");
    b.components_total_us = get_num(d, "components_total_us");
    for (const auto &c : arr(d, "components"))
        b.components.push_back({get_or<std::string>(c, "component", ""), get_num(c, "us"), get_num(c, "paper_us")});
    return b;
}

json peer_json(const PeerResult &p) {
    json ms = json::array();
    for (const auto &m : p.metrics)
        ms.push_back({{"metric", m.metric},
                      {"test", m.test},
                      {"compared_with", m.compared_with},
                      {"bytes", m.bytes},
                      {"peer", num(m.peer)},
                      {"ours", num(m.ours)},
                      {"ratio", num(m.ratio)}});
    return {{"tool", p.tool},
            {"status", status_json(p.status)},
            {"transport", p.transport},
            {"metrics", ms},
            {"bandwidth", points_json(p.bandwidth)}};
}

PeerResult peer_from(const json &x) {
    PeerResult p;
    p.tool = get_or<std::string>(x, "tool", "");
    p.status = status_from(obj(x, "status"));
    p.transport = get_or<std::string>(x, "transport", "");
    for (const auto &m : arr(x, "metrics"))
        p.metrics.push_back({get_or<std::string>(m, "metric", ""), get_or<std::string>(m, "test", ""),
                             get_or<std::string>(m, "compared_with", ""), get_or<std::size_t>(m, "bytes", 0),
                             get_num(m, "peer"), get_num(m, "ours"), get_num(m, "ratio")});
    p.bandwidth = points_from(arr(x, "bandwidth"));
    return p;
}

// A JSON array of f(x) for every x of a report's list.
template <class List, class F>
json array_of(const List &list, F f) {
    json a = json::array();
    for (const auto &x : list) a.push_back(f(x));
    return a;
}

} // namespace

json to_json(const Report &r) {
    json j;
    j["schema"] = kSchemaName;
    j["run"] = run_json(r.run);
    j["provider"] = provider_json(r.provider);
    j["profile"] = r.provider.profile;
    j["layers"] = array_of(r.layers, [](const LayerStatus &l) -> json {
        return {{"layer", l.layer}, {"status", status_json(l.status)}};
    });
    j["vi_baseline"] = vi_baseline_json(r.vi_baseline);
    j["logp"] = array_of(r.logp, logp_row_json);
    j["splitc_ops"] = array_of(r.splitc_ops, [](const SplitcOp &op) -> json {
        return {{"op", op.op}, {"status", status_json(op.status)}, {"us", num(op.us)}, {"spread", op.spread}};
    });
    j["bandwidth"] = array_of(r.bandwidth, bandwidth_json);
    j["rate_sweep"] = array_of(r.rate_sweep, rate_sweep_json);
    j["breakdown"] = array_of(r.breakdown, breakdown_json);
    j["bulk_difference"] = bulk_difference_json(r.bulk_difference);
    j["peers"] = array_of(r.peers, peer_json);
    j["interleaved"] = interleaved_to_json(r.interleaved);
    j["layering"] = layering_to_json(r.layering);
    j["warnings"] = r.warnings;
    return j;
}

Report report_from_json(const json &j) {
    if (!j.is_object() || j.value("schema", "") != kSchemaName)
        throw std::runtime_error(std::string("not a ") + kSchemaName + " report (missing or different \"schema\")");
    Report r;
    r.run = run_from(obj(j, "run"));
    r.provider = provider_from(obj(j, "provider"));
    for (const auto &l : arr(j, "layers"))
        r.layers.push_back({get_or<std::string>(l, "layer", ""), status_from(obj(l, "status"))});
    r.vi_baseline = vi_baseline_from(obj(j, "vi_baseline"));
    for (const auto &x : arr(j, "logp")) r.logp.push_back(logp_row_from(x));
    for (const auto &x : arr(j, "splitc_ops"))
        r.splitc_ops.push_back({get_or<std::string>(x, "op", ""), status_from(obj(x, "status")), get_num(x, "us"),
                                get_or<double>(x, "spread", 0)});
    for (const auto &x : arr(j, "bandwidth")) r.bandwidth.push_back(bandwidth_from(x));
    if (j.contains("rate_sweep")) // absent from reports written before the sweep
        for (const auto &x : arr(j, "rate_sweep")) r.rate_sweep.push_back(rate_sweep_from(x));
    for (const auto &x : arr(j, "breakdown")) r.breakdown.push_back(breakdown_from(x));
    r.bulk_difference = bulk_difference_from(obj(j, "bulk_difference"));
    for (const auto &x : arr(j, "peers")) r.peers.push_back(peer_from(x));
    if (j.contains("interleaved"))
        r.interleaved = interleaved_from_json(obj(j, "interleaved"));           // absent in older reports
    if (j.contains("layering")) r.layering = layering_from_json(j["layering"]); // absent before the layering study
    r.warnings = get_or<std::vector<std::string>>(j, "warnings", {});
    return r;
}

json report_json(const Report &r) {
    json j = to_json(r);
    j["tables"] = render_json(build_document(r).tables);
    return j;
}

void write_json_file(const Report &r, const std::string &path) {
    std::error_code ec;
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec); // a failure shows up just below
    std::ofstream out(path, std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + path + ": check that its directory exists and is writable");
    out << report_json(r).dump(2) << '\n';
    if (!out.flush()) throw std::runtime_error("writing " + path + " failed (disk full?)");
}

Report read_json_file(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    json j;
    try {
        j = json::parse(in);
    } catch (const json::exception &e) { throw std::runtime_error(path + " is not valid JSON: " + e.what()); }
    return report_from_json(j);
}

} // namespace logp
