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
        a.push_back({{"bytes", p.bytes}, {"us_per_msg", num(p.us_per_msg)}, {"mb_s", num(p.mb_s)}, {"spread", p.spread}});
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
    if (!c.contains(key)) return v;  // keys added later (line_ns) are absent in older reports
    for (const auto &e : arr(c, key)) v.push_back(e.is_number() ? e.get<double>() : kNaN);
    return v;
}

json ratio_summary_json(const RatioSummary &s) {
    return {{"rounds", s.rounds}, {"ratio_median", num(s.median)}, {"ratio_min", num(s.min)}, {"ratio_max", num(s.max)}};
}

json comparison_json(const RoundComparison &c) {
    return {{"peer", c.peer}, {"metric", c.metric}, {"test", c.test}, {"layer", c.layer}, {"bytes", c.bytes},
            {"ours", nums_json(c.ours)}, {"peer_values", nums_json(c.peer_values)}, {"ratios", nums_json(c.ratios)},
            {"rounds", c.rounds}, {"ratio_median", num(c.ratio_median)}, {"ratio_min", num(c.ratio_min)},
            {"ratio_max", num(c.ratio_max)}, {"line_ns", nums_json(c.line_ns)}, {"line_ns_peer", nums_json(c.line_ns_peer)},
            {"placement", c.placement},
            {"by_placement", {{"fast", ratio_summary_json(c.fast)}, {"slow", ratio_summary_json(c.slow)},
                              {"mixed_rounds", c.mixed_rounds}}}};
}

json logp_row_json(const LogPRow &row) {
    return {{"layer", row.layer},
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
            {"expected", {{"L_us", num(row.expect_L_us)}, {"o_s_us", num(row.expect_o_s_us)},
                          {"o_r_us", num(row.expect_o_r_us)}, {"g_us", num(row.expect_g_us)}}},
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
    row.o_r_lines_local = get_or<bool>(x, "o_r_lines_local", false);  // these three are absent in older reports
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
    return {{"status", status_json(x.status)}, {"rounds", x.rounds}, {"comparisons", cmps},
            {"placement", {{"line_threshold_ns", num(x.line_threshold_ns)}, {"threshold_source", x.line_threshold_source},
                           {"rounds_fast", x.rounds_fast}, {"rounds_slow", x.rounds_slow},
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

}  // namespace

json to_json(const Report &r) {
    json j;
    j["schema"] = kSchemaName;
    j["run"] = {{"date_utc", r.run.date_utc},     {"host", r.run.host},
                {"command", r.run.command},       {"quick", r.run.quick},
                {"iterations", r.run.iterations}, {"warmup", r.run.warmup},
                {"tsc_ghz", num(r.run.tsc_ghz)},  {"max_spread", r.run.max_spread},
                {"instr_scope_ns", num(r.run.instr_scope_ns)}, {"timer_ns", num(r.run.timer_ns)},
                {"tsc_vs_monotonic", num(r.run.tsc_vs_monotonic)}};
    j["provider"] = {{"name", r.provider.name},
                     {"device", r.provider.device},
                     {"profile", r.provider.profile},
                     {"profile_source", r.provider.profile_source}};
    j["profile"] = r.provider.profile;
    json layers = json::array();
    for (const auto &l : r.layers) layers.push_back({{"layer", l.layer}, {"status", status_json(l.status)}});
    j["layers"] = layers;

    const ViBaseline &b = r.vi_baseline;
    j["vi_baseline"] = {{"status", status_json(b.status)},       {"min_bytes", b.min_bytes},
                        {"rtt_half_min_us", num(b.rtt_half_min_us)}, {"rtt_half_16_us", num(b.rtt_half_16_us)},
                        {"peak_mb_s", num(b.peak_mb_s)},         {"peak_at_bytes", b.peak_at_bytes},
                        {"spread", b.spread}};

    json logp = json::array();
    for (const auto &row : r.logp) logp.push_back(logp_row_json(row));
    j["logp"] = logp;

    json ops = json::array();
    for (const auto &op : r.splitc_ops)
        ops.push_back({{"op", op.op}, {"status", status_json(op.status)}, {"us", num(op.us)}, {"spread", op.spread}});
    j["splitc_ops"] = ops;

    json bw = json::array();
    for (const auto &c : r.bandwidth)
        bw.push_back({{"layer", c.layer},
                      {"method", c.method},
                      {"status", status_json(c.status)},
                      {"points", points_json(c.points)},
                      {"fm", {{"t0_us", num(c.t0_us)},
                              {"r_inf_mb_s", num(c.r_inf_mb_s)},
                              {"n_half_bytes", num(c.n_half_bytes)},
                              {"n_half_model_bytes", num(c.n_half_model_bytes)},
                              {"n_half_from_model", c.n_half_from_model},
                              {"r_peak_mb_s", num(c.r_peak_mb_s)},
                              {"fit_r2", num(c.fit_r2)}}}});
    j["bandwidth"] = bw;

    json rates = json::array();
    for (const auto &s : r.rate_sweep) {
        json pts = json::array();
        for (const auto &p : s.points)
            pts.push_back({{"window", p.window}, {"us_per_msg", num(p.us_per_msg)}, {"msg_rate_m_s", num(p.msg_rate_m_s)},
                           {"spread", p.spread}});
        rates.push_back({{"layer", s.layer}, {"method", s.method}, {"peer", s.peer}, {"status", status_json(s.status)},
                         {"points", pts}});
    }
    j["rate_sweep"] = rates;

    json bd = json::array();
    for (const auto &x : r.breakdown) {
        json cats = json::array(), items = json::array(), inner = json::array();
        for (const auto &c : x.categories)
            cats.push_back({{"category", c.category}, {"ns", c.ns}, {"cycles", c.cycles}, {"percent", c.percent},
                            {"paper_percent", num(c.paper_percent)}});
        for (const auto &i : x.items)
            items.push_back({{"operation", i.operation}, {"category", i.category}, {"count_per_op", i.count_per_op},
                             {"ns", i.ns}, {"cycles", i.cycles}, {"percent", i.percent},
                             {"paper_percent", num(i.paper_percent)}});
        for (const auto &i : x.inner)
            inner.push_back({{"operation", i.operation}, {"category", i.category}, {"count_per_op", i.count_per_op},
                             {"ns", i.ns}, {"cycles", i.cycles}});
        bd.push_back({{"name", x.name}, {"layer", x.layer}, {"status", status_json(x.status)},
                      {"operations", x.operations}, {"host_ns", x.host_ns}, {"host_cycles", x.host_cycles},
                      {"firmware_ns", x.firmware_ns}, {"wait_ns", x.wait_ns}, {"categories", cats}, {"items", items}, {"inner", inner}});
    }
    j["breakdown"] = bd;

    const BulkDifference &d = r.bulk_difference;
    json comps = json::array();
    for (const auto &c : d.components)
        comps.push_back({{"component", c.component}, {"us", num(c.us)}, {"paper_us", num(c.paper_us)}});
    j["bulk_difference"] = {{"status", status_json(d.status)},
                            {"bytes", d.bytes},
                            {"layer", d.layer},
                            {"per_msg_difference_us", num(d.per_msg_difference_us)},
                            {"paper_difference_us", num(d.paper_difference_us)},
                            {"components", comps},
                            {"components_total_us", num(d.components_total_us)}};

    json peers = json::array();
    for (const auto &p : r.peers) {
        json ms = json::array();
        for (const auto &m : p.metrics)
            ms.push_back({{"metric", m.metric}, {"test", m.test}, {"compared_with", m.compared_with},
                          {"bytes", m.bytes}, {"peer", num(m.peer)}, {"ours", num(m.ours)}, {"ratio", num(m.ratio)}});
        peers.push_back({{"tool", p.tool}, {"status", status_json(p.status)}, {"transport", p.transport},
                         {"metrics", ms}, {"bandwidth", points_json(p.bandwidth)}});
    }
    j["peers"] = peers;
    j["interleaved"] = interleaved_to_json(r.interleaved);
    j["layering"] = layering_to_json(r.layering);
    j["warnings"] = r.warnings;
    return j;
}

Report report_from_json(const json &j) {
    if (!j.is_object() || j.value("schema", "") != kSchemaName)
        throw std::runtime_error(std::string("not a ") + kSchemaName + " report (missing or different \"schema\")");
    Report r;
    const json &run = obj(j, "run");
    r.run.date_utc = get_or<std::string>(run, "date_utc", "");
    r.run.host = get_or<std::string>(run, "host", "");
    r.run.command = get_or<std::string>(run, "command", "");
    r.run.quick = get_or<bool>(run, "quick", false);
    r.run.iterations = get_or<int>(run, "iterations", 0);
    r.run.warmup = get_or<int>(run, "warmup", 0);
    r.run.tsc_ghz = get_num(run, "tsc_ghz");
    r.run.max_spread = get_or<double>(run, "max_spread", 0.25);
    r.run.instr_scope_ns = get_num(run, "instr_scope_ns");
    r.run.timer_ns = get_num(run, "timer_ns");
    r.run.tsc_vs_monotonic = get_num(run, "tsc_vs_monotonic");
    const json &prov = obj(j, "provider");
    r.provider.name = get_or<std::string>(prov, "name", "");
    r.provider.device = get_or<std::string>(prov, "device", "");
    r.provider.profile = get_or<std::string>(prov, "profile", "");
    r.provider.profile_source = get_or<std::string>(prov, "profile_source", "");
    for (const auto &l : arr(j, "layers")) r.layers.push_back({get_or<std::string>(l, "layer", ""), status_from(obj(l, "status"))});

    const json &b = obj(j, "vi_baseline");
    r.vi_baseline.status = status_from(obj(b, "status"));
    r.vi_baseline.min_bytes = get_or<std::size_t>(b, "min_bytes", 4);
    r.vi_baseline.rtt_half_min_us = get_num(b, "rtt_half_min_us");
    r.vi_baseline.rtt_half_16_us = get_num(b, "rtt_half_16_us");
    r.vi_baseline.peak_mb_s = get_num(b, "peak_mb_s");
    r.vi_baseline.peak_at_bytes = get_or<std::size_t>(b, "peak_at_bytes", 0);
    r.vi_baseline.spread = get_or<double>(b, "spread", 0);

    for (const auto &x : arr(j, "logp")) r.logp.push_back(logp_row_from(x));
    for (const auto &x : arr(j, "splitc_ops"))
        r.splitc_ops.push_back({get_or<std::string>(x, "op", ""), status_from(obj(x, "status")), get_num(x, "us"),
                                get_or<double>(x, "spread", 0)});
    for (const auto &x : arr(j, "bandwidth")) {
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
        r.bandwidth.push_back(c);
    }
    if (j.contains("rate_sweep"))  // absent from reports written before the sweep
        for (const auto &x : arr(j, "rate_sweep")) {
            RateSweep s;
            s.layer = get_or<std::string>(x, "layer", "");
            s.method = get_or<std::string>(x, "method", "");
            s.peer = get_or<bool>(x, "peer", false);
            s.status = status_from(obj(x, "status"));
            for (const auto &p : arr(x, "points"))
                s.points.push_back({get_or<int>(p, "window", 0), get_num(p, "us_per_msg"), get_num(p, "msg_rate_m_s"),
                                    get_or<double>(p, "spread", 0)});
            r.rate_sweep.push_back(s);
        }
    for (const auto &x : arr(j, "breakdown")) {
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
        r.breakdown.push_back(bd);
    }
    const json &d = obj(j, "bulk_difference");
    r.bulk_difference.status = status_from(obj(d, "status"));
    r.bulk_difference.bytes = get_or<std::size_t>(d, "bytes", 1024);
    r.bulk_difference.layer = get_or<std::string>(d, "layer", "");
    r.bulk_difference.per_msg_difference_us = get_num(d, "per_msg_difference_us");
    r.bulk_difference.paper_difference_us = get_num(d, "paper_difference_us");
    r.bulk_difference.components_total_us = get_num(d, "components_total_us");
    for (const auto &c : arr(d, "components"))
        r.bulk_difference.components.push_back(
            {get_or<std::string>(c, "component", ""), get_num(c, "us"), get_num(c, "paper_us")});
    for (const auto &x : arr(j, "peers")) {
        PeerResult p;
        p.tool = get_or<std::string>(x, "tool", "");
        p.status = status_from(obj(x, "status"));
        p.transport = get_or<std::string>(x, "transport", "");
        for (const auto &m : arr(x, "metrics"))
            p.metrics.push_back({get_or<std::string>(m, "metric", ""), get_or<std::string>(m, "test", ""),
                                 get_or<std::string>(m, "compared_with", ""), get_or<std::size_t>(m, "bytes", 0),
                                 get_num(m, "peer"), get_num(m, "ours"), get_num(m, "ratio")});
        p.bandwidth = points_from(arr(x, "bandwidth"));
        r.peers.push_back(p);
    }
    if (j.contains("interleaved")) r.interleaved = interleaved_from_json(obj(j, "interleaved"));  // absent in older reports
    if (j.contains("layering")) r.layering = layering_from_json(j["layering"]);  // absent before the layering study
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
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // a failure shows up just below
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
    } catch (const json::exception &e) {
        throw std::runtime_error(path + " is not valid JSON: " + e.what());
    }
    return report_from_json(j);
}

}  // namespace logp
