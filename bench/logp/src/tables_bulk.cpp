// tables_bulk.cpp - Figure 5 (bandwidth curves and FM's metrics), Tables 3
// and 4 (host overhead by primitive), Table 5 (bulk per-message difference),
// the peers, and the whole document (see tables.hpp).
#include "paper.hpp"
#include "report.hpp"
#include "tables.hpp"
#include "layering_study.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace logp {
namespace {

Row row(RowKind kind, int level, std::vector<Cell> cells) { return {kind, level, std::move(cells), ""}; }

Row paper_fm_row(const nlohmann::json &fm, int level) {
    return row(RowKind::paper, level,
               {Cell::label(paper_row_label(fm)), Cell::label(fm.value("system", "")),
                Cell::number(paper_number(fm, "t0_us"), 1), Cell::number(paper_number(fm, "r_inf_mb_s"), 1),
                Cell::number(paper_number(fm, "n_half_bytes"), 0)});
}

std::string peer_curve_name(const PeerResult &p) {
    return p.tool == "ucx_perftest" ? "ucx put_bw" : p.tool + " write_bw";
}

} // namespace

Table bandwidth_table(const Report &r) {
    const nlohmann::json &f5 = paper_figures()["figure5_bandwidth"];
    Table t;
    t.id = "figure5";
    t.title = "Figure 5. Bulk bandwidth (MB/s, 1 MB = 10^6 B)";
    if (r.bandwidth.empty()) t.status = "no curve measured";
    std::vector<std::size_t> sizes;
    for (const auto &c : r.bandwidth)
        for (const auto &p : c.points)
            if (std::find(sizes.begin(), sizes.end(), p.bytes) == sizes.end()) sizes.push_back(p.bytes);
    std::sort(sizes.begin(), sizes.end());
    t.columns = {{"bytes", Align::right, 8}};
    for (const auto &c : r.bandwidth) t.columns.push_back({c.layer, Align::right, 11});
    for (const auto &peer : r.peers)
        if (!peer.bandwidth.empty()) t.columns.push_back({peer_curve_name(peer), Align::right, 13});
    for (std::size_t n : sizes) {
        Row x = row(RowKind::ours, 0, {Cell{std::to_string(n), double(n)}});
        for (const auto &c : r.bandwidth) {
            Cell v = Cell::number(kNaN, 1);
            for (const auto &p : c.points)
                if (p.bytes == n) {
                    v = Cell::number(p.mb_s, 1);
                    if (p.spread > r.run.max_spread) v.text += "*";
                }
            x.cells.push_back(v);
        }
        for (const auto &peer : r.peers) {
            if (peer.bandwidth.empty()) continue;
            double v = kNaN;
            for (const auto &p : peer.bandwidth)
                if (p.bytes == n) v = p.mb_s;
            x.cells.push_back(Cell::number(v, 1));
        }
        t.rows.push_back(x);
    }
    t.notes.push_back(fmt::format("(* = spread above {:.0f}%: not to be trusted)", 100 * r.run.max_spread));
    t.notes.push_back(
        fmt::format("paper: VI peak {} MB/s; AM and Split-C knee at ~{} MB/s near {} B; VI 32 B one-sided {} MB/s",
                    fmt_num(paper_number(f5, "vi_peak_mb_s"), 1), fmt_num(paper_number(f5, "am_splitc_knee_mb_s"), 0),
                    fmt_num(paper_number(f5, "knee_at_bytes"), 0), fmt_num(paper_number(f5, "vi_32B_mb_s"), 1)));
    t.plot = "bandwidth";
    return t;
}

Table fm_metrics_table(const Report &r) {
    Table t;
    t.id = "fm";
    t.title = "Figure 5, FM metrics of each curve: t0 / r_inf / n_1/2 (Pakin, Lauria, Chien)";
    t.columns = {{"curve", Align::left, 10},        {"method", Align::left, 0},     {"t0 (us)", Align::right, 8},
                 {"r_inf (MB/s)", Align::right, 8}, {"n_1/2 (B)", Align::right, 8}, {"t0*r_inf (B)", Align::right, 8},
                 {"peak (MB/s)", Align::right, 8}};
    for (const auto &c : r.bandwidth) {
        if (!c.status.measured()) {
            t.rows.push_back({RowKind::status, 0, {Cell::label(c.layer)}, status_text(c.status)});
            continue;
        }
        Cell n_half = Cell::number(c.n_half_bytes, 0);
        if (c.n_half_from_model) n_half.text += " (from the model)";
        t.rows.push_back(
            row(RowKind::ours, 0,
                {Cell::label(c.layer), Cell::label(c.method), Cell::number(c.t0_us, 2), Cell::number(c.r_inf_mb_s, 1),
                 n_half, Cell::number(c.n_half_model_bytes, 0), Cell::number(c.r_peak_mb_s, 1)}));
        // The layer's own paper (FM 1.x under fm, BIP under bip) right under our curve.
        for (const nlohmann::json *p : paper_layer_rows(c.layer)) t.rows.push_back(paper_fm_row(*p, 1));
    }
    // The rest: the FM paper's comparison (Myricom API), and a layer's paper when its curve is not in this run.
    for (const auto &fm : paper_figures()["fm_metrics"]) {
        const std::string layer = fm.value("layer", "");
        bool shown = !layer.empty() &&
            std::any_of(r.bandwidth.begin(), r.bandwidth.end(),
                        [&](const BandwidthCurve &c) { return c.layer == layer && c.status.measured(); });
        if (!shown) t.rows.push_back(paper_fm_row(fm, 0));
    }
    t.notes.push_back("paper [FM1]: " + fm_citation() + "; paper [BIP]: " + bip_citation() +
                      " (Table 1; it gives no t0, its latency is in Table 2 here)");
    return t;
}

Table breakdown_table(const Report &r, const std::string &name) {
    bool am = name == "am-request-reply";
    const nlohmann::json &paper = paper_figures()[am ? "table3_am_request_reply" : "table4_splitc_get"];
    const Breakdown *bd = nullptr;
    for (const auto &x : r.breakdown)
        if (x.name == name) bd = &x;
    Table t;
    t.id = am ? "table3" : "table4";
    t.title = am ? "Table 3. Host overhead of an AM short request-reply, by primitive"
                 : "Table 4. Host overhead of a Split-C get, by primitive";
    t.columns = {{"category / primitive", Align::left, 36},
                 {"ns/op", Align::right, 9},
                 {"cycles", Align::right, 9},
                 {"% ours", Align::right, 8},
                 {"% paper", Align::right, 8},
                 {"count/op", Align::right, 9}};
    if (!am) t.plot = "breakdown"; // one plot for both tables, after the second
    if (!bd || !bd->status.measured()) {
        // Nothing of ours to show: the paper's categories still say what the table would hold.
        t.status = bd ? status_text(bd->status) : "not built";
        for (auto &[category, percent] : paper["categories"].items())
            t.rows.push_back(row(RowKind::paper, 0,
                                 {Cell::label(category), Cell::blank(), Cell::blank(), Cell::blank(),
                                  Cell::number(percent.get<double>(), 1)}));
        return t;
    }
    for (const auto &c : bd->categories) {
        t.rows.push_back(row(RowKind::ours, 0,
                             {Cell::label(c.category), Cell::number(c.ns, 0), Cell::number(c.cycles, 0),
                              Cell::number(c.percent, 1), Cell::number(c.paper_percent, 1)}));
        for (const auto &it : bd->items)
            if (it.category == c.category)
                t.rows.push_back(row(RowKind::detail, 1,
                                     {Cell::label(it.operation), Cell::number(it.ns, 0), Cell::number(it.cycles, 0),
                                      Cell::number(it.percent, 1), Cell::number(it.paper_percent, 1),
                                      Cell::number(it.count_per_op, 2)}));
    }
    std::string diff;
    for (const auto &c : bd->categories)
        if (std::isfinite(c.paper_percent))
            diff += fmt::format("{}{} {:+.1f}", diff.empty() ? "" : ", ", c.category, c.percent - c.paper_percent);
    if (!diff.empty()) t.notes.push_back("ours - paper, percentage points: " + diff);
    if (!bd->inner.empty()) {
        t.rows.push_back({RowKind::heading, 0, {}, "inside those (lower layers; already included above, not added):"});
        for (const auto &it : bd->inner)
            t.rows.push_back(row(RowKind::detail, 1,
                                 {Cell::label(it.operation), Cell::number(it.ns, 0), Cell::number(it.cycles, 0),
                                  Cell::blank(), Cell::blank(), Cell::number(it.count_per_op, 2)}));
    }
    t.notes.push_back(
        fmt::format("host overhead {} ns/op ({} cycles) over {} operations; NIC firmware {} ns/op (not host); "
                    "waiting for messages not yet arrived {} ns/op (latency, not counted); "
                    "each timed primitive adds ~{} ns of instrumentation",
                    fmt_num(bd->host_ns, 0), fmt_num(bd->host_cycles, 0), bd->operations, fmt_num(bd->firmware_ns, 0),
                    fmt_num(bd->wait_ns, 0), fmt_num(r.run.instr_scope_ns, 0)));
    return t;
}

Table bulk_difference_table(const Report &r) {
    const BulkDifference &d = r.bulk_difference;
    const nlohmann::json &paper = paper_figures()["table5_bulk_difference"];
    Table t;
    t.id = "table5";
    t.title = fmt::format("Table 5. Per-message difference, {} bulk vs native VI, {} B messages (us)",
                          d.layer.empty() ? "AM/Split-C" : d.layer, d.bytes);
    if (!d.status.measured()) t.status = status_text(d.status);
    t.columns = {{"component", Align::left, 34}, {"ours", Align::right, 9}, {"paper", Align::right, 9}};
    for (const auto &c : d.components)
        t.rows.push_back(
            row(RowKind::ours, 0, {Cell::label(c.component), Cell::number(c.us, 2), Cell::number(c.paper_us, 1)}));
    t.rows.push_back(row(RowKind::ours, 0,
                         {Cell::label("TOTAL (components)"), Cell::number(d.components_total_us, 2),
                          Cell::number(paper_number(paper, "total_us"), 1)}));
    t.rows.push_back(row(RowKind::ours, 0,
                         {Cell::label("measured difference"), Cell::number(d.per_msg_difference_us, 2),
                          Cell::number(d.paper_difference_us, 1)}));
    return t;
}

Table peers_table(const Report &r) {
    Table t;
    t.id = "peers";
    t.title = "Peers measured in the same run";
    if (r.peers.empty()) t.status = "none (--no-peers)";
    t.columns = {{"metric", Align::left, 14},   {"test", Align::left, 12}, {"bytes", Align::right, 6},
                 {"peer", Align::right, 9},     {"ours", Align::right, 9}, {"layer", Align::left, 7},
                 {"ours/peer", Align::right, 9}};
    for (const auto &p : r.peers) {
        t.rows.push_back(
            {RowKind::heading, 0, {}, fmt::format("{} ({}): {}", p.tool, p.transport, status_text(p.status))});
        // The peer's own figures first (those not set against any row of ours
        // below), then each comparison with a row of ours.
        auto compared_below = [&](const PeerMetric &raw) {
            return std::any_of(p.metrics.begin(), p.metrics.end(), [&](const PeerMetric &m) {
                return !m.compared_with.empty() && m.metric == raw.metric && m.test == raw.test && m.bytes == raw.bytes;
            });
        };
        for (bool compared : {false, true})
            for (const auto &m : p.metrics) {
                if (m.compared_with.empty() == compared || (!compared && compared_below(m))) continue;
                int precision = m.metric.rfind("bandwidth", 0) == 0 ? 1 : 3;
                Row x = row(RowKind::peer, 1,
                            {Cell::label(m.metric), Cell::label(m.test), Cell{std::to_string(m.bytes), double(m.bytes)},
                             Cell::number(m.peer, precision)});
                if (compared) {
                    x.cells.push_back(Cell::number(m.ours, precision));
                    x.cells.push_back(Cell::label(m.compared_with));
                    x.cells.push_back(ratio_cell(m.ratio));
                }
                t.rows.push_back(x);
            }
    }
    return t;
}

ReportDocument build_document(const Report &r) {
    ReportDocument d;
    d.head = report_head(r);
    d.tables = {vi_baseline_table(r),
                logp_table(r),
                splitc_ops_table(r),
                bandwidth_table(r),
                fm_metrics_table(r),
                rate_table(r),
                layering_table(r),
                breakdown_table(r, "am-request-reply"),
                breakdown_table(r, "splitc-get"),
                mpi_breakdown_table(r),
                bulk_difference_table(r),
                peers_table(r),
                interleaved_table(r)};
    d.warnings = r.warnings;
    return d;
}

} // namespace logp
