// tables_latency.cpp - the report's head, Table 1 (VI baseline), Table 2
// (LogP parameters) and Figure 2 (Split-C operation times), built from a
// finalized Report (see tables.hpp).
#include "paper.hpp"
#include "report.hpp"
#include "tables.hpp"

#include <fmt/format.h>

namespace logp {

Cell Cell::number(double v, int precision) { return {fmt_num(v, precision), std::isfinite(v) ? v : kNaN}; }

std::string status_text(const Status &st) { return st.note.empty() ? st.state : st.state + ": " + st.note; }

Cell ratio_cell(double ratio) {
    return std::isfinite(ratio) ? Cell{fmt::format("{:.3g}", ratio), ratio} : Cell::number(kNaN, 0);
}

namespace {

Row row(RowKind kind, int level, std::vector<Cell> cells) { return {kind, level, std::move(cells), ""}; }

} // namespace

std::vector<HeadField> report_head(const Report &r) {
    std::string layers;
    for (const auto &l : r.layers)
        layers += fmt::format("{}{} [{}]", layers.empty() ? "" : "  ", l.layer, status_text(l.status));
    return {
        {"date", r.run.date_utc},
        {"host", r.run.host},
        {"provider",
         fmt::format("{} (device {})", r.provider.name, r.provider.device.empty() ? "-" : r.provider.device)},
        {"timing profile",
         (r.provider.profile.empty() ? "none" : r.provider.profile) +
             (r.provider.profile_source.empty() ? "" : " [" + r.provider.profile_source + "]")},
        {"run",
         fmt::format("{}: {} round trips, {} warm-up; TSC {} GHz; numbers are medians, spread = IQR/median; "
                     "warnings above {:.0f}%",
                     r.run.quick ? "quick" : "full", r.run.iterations, r.run.warmup, fmt_num(r.run.tsc_ghz, 3),
                     100 * r.run.max_spread)},
        {"clock",
         fmt::format("one clock read pair {} ns (taken off single timed operations); the run by the TSC / by "
                     "CLOCK_MONOTONIC = {}",
                     fmt_num(r.run.timer_ns, 1), fmt_num(r.run.tsc_vs_monotonic, 4))},
        {"command", r.run.command},
        {"paper", paper_citation() + " (figures in bench/logp/paper_figures.json)"},
        {"layers", layers.empty() ? "none" : layers},
    };
}

Table vi_baseline_table(const Report &r) {
    const nlohmann::json &paper = paper_figures();
    const nlohmann::json &systems = paper["table1_vi_baseline"];
    const ViBaseline &b = r.vi_baseline;
    Table t;
    t.id = "table1";
    t.title = "Table 1. VI baseline (native VI send/receive)";
    if (!b.status.measured()) t.status = status_text(b.status);
    t.columns = {{"", Align::left, 34}, {"ours", Align::right, 11}};
    for (const auto &p : systems) t.columns.push_back({p.value("system", ""), Align::right, 13});

    Row min = row(RowKind::ours, 0,
                  {Cell::label(fmt::format("RTT/2 (us), {} B", b.min_bytes)), Cell::number(b.rtt_half_min_us, 2)});
    // The paper gives the 16-byte figure in its text, for the LANai 7 only.
    Row r16 = row(RowKind::ours, 0, {Cell::label("RTT/2 (us), 16 B"), Cell::number(b.rtt_half_16_us, 2)});
    Row peak = row(RowKind::ours, 0,
                   {Cell::label(fmt::format("Peak throughput (MB/s){}",
                                            b.peak_at_bytes ? fmt::format(" @ {} B", b.peak_at_bytes) : "")),
                    Cell::number(b.peak_mb_s, 1)});
    for (const auto &p : systems) {
        min.cells.push_back(Cell::number(paper_number(p, "rtt_half_us"), 1));
        r16.cells.push_back(p.value("system", "") == "LANai 7 VI"
                                ? Cell::number(paper_number(paper, "vi_rtt_half_16B_us"), 1)
                                : Cell::blank());
        peak.cells.push_back(Cell::number(paper_number(p, "throughput_mb_s"), 1));
    }
    t.rows = {min, r16, peak};
    // Under a cost-model profile: our figures' relative error against the modelled board's.
    const std::string board = profile_board(r.provider.profile);
    for (std::size_t i = 0; i < systems.size() && !board.empty(); ++i) {
        const auto &p = systems[i];
        if (p.value("system", "") != board + " VI") continue;
        const double p16 = board == "LANai 7" ? paper_number(paper, "vi_rtt_half_16B_us") : kNaN;
        const double errs[3] = {relative_error_pct(b.rtt_half_min_us, paper_number(p, "rtt_half_us")),
                                relative_error_pct(b.rtt_half_16_us, p16),
                                relative_error_pct(b.peak_mb_s, paper_number(p, "throughput_mb_s"))};
        const char *what[3] = {"RTT/2 min", "RTT/2 16 B", "peak"};
        std::string note = "error vs " + board + " VI (profile " + r.provider.profile + "):";
        for (int k = 0; k < 3; ++k)
            if (std::isfinite(errs[k])) note += fmt::format(" {} {:+.0f}%", what[k], errs[k]);
        t.notes.push_back(note);
    }
    t.notes.push_back("paper: the columns after ours are Table 1 of Begel et al.; its 16-byte RTT/2 is the text's "
                      "figure for the LANai 7");
    return t;
}

// L: the figure, "0*" below the resolution (the raw difference in the note),
// "n/a" when the figures are inconsistent (the warning says why).
static Cell latency_cell(const LogPRow &x) {
    if (x.L_state == "below resolution") return {"0*", 0.0};
    if (x.L_state == "inconsistent") return {"n/a", kNaN};
    return Cell::number(x.L_us, 2);
}

namespace {

// Where o_r came from: the receive with the message's lines local (the
// transfer in L), or the cold receive (the ranks not bound).
std::vector<std::string> o_r_notes(const Report &r) {
    std::vector<std::string> notes;
    for (const auto &x : r.logp) {
        if (!x.status.measured() || x.layer == "synthetic") continue;
        if (x.layer == "mpi")
            notes.push_back(
                "mpi: measured by logp_mpi under mpirun (Open MPI, mtl:ofi, viastack;ofi_rxm); o_s from "
                "bursts of MPI_Send, o_r the whole MPI_Recv of an arrived message, its cache lines included "
                "(not taken out: an rxm message is not known to be one FIFO slot)");
        if (x.o_r_lines_local)
            notes.push_back(fmt::format("{}: o_r is the receive without the transfer of the packet's cache line from "
                                        "the sender's CPU ({} us, the raw line timed on the same CPUs), which is the "
                                        "wire and part of L; the whole receive is the row 'o_r, lines cold' ({} us)",
                                        x.layer, fmt_num(x.o_r_lines_us, 3), fmt_num(x.o_r_cold_us, 3)));
    }
    return notes;
}

Row lines_cold_row(const LogPRow &x) {
    return row(RowKind::detail, 1,
               {Cell::label("o_r, lines cold"), Cell::blank(), Cell::blank(), Cell::blank(), Cell::blank(),
                Cell::number(x.o_r_cold_us, 2)});
}

} // namespace

Table logp_table(const Report &r) {
    const nlohmann::json &paper = paper_figures();
    Table t;
    t.id = "table2";
    t.title = "Table 2. LogP parameters (us), Culler/Liu/Martin/Yoshikawa method; Delta = RTT/2 - RTT/2(VI, 16 B)";
    t.caption =
        "o_s from short bursts, g from the steady state of long bursts, o_r timed at the receiver and split "
        "into o_r (the request) and o_r(rep) (the reply or credit the receive sends back, the o_s of the way "
        "back), L = RTT/2 - o_s - o_r.  On shared memory (nicfw) the transfer of the packet's cache line from the "
        "sender's CPU is the wire: it is taken out of o_r and is part of L (docs/logp.md)";
    t.columns = {
        {"layer", Align::left, 22},    {"RTT/2", Align::right, 8}, {"Delta", Align::right, 8},
        {"L", Align::right, 8},        {"o_s", Align::right, 8},   {"o_r", Align::right, 8},
        {"o_r(rep)", Align::right, 8}, {"g", Align::right, 8},     {"o_s check (delayed bursts)", Align::left, 0}};
    if (r.logp.empty()) t.status = "no layer measured";
    bool own_paper = false; // an FM or BIP paper row was printed
    for (const auto &x : r.logp) {
        if (!x.status.measured()) {
            t.rows.push_back({RowKind::status, 0, {Cell::label(x.layer)}, status_text(x.status)});
        } else {
            t.rows.push_back(
                row(RowKind::ours, 0,
                    {Cell::label(x.layer + " (ours)"), Cell::number(x.rtt_half_us, 2), Cell::number(x.delta_us, 2),
                     latency_cell(x), Cell::number(x.o_s_us, 2), Cell::number(x.o_r_us, 2),
                     Cell::number(x.o_r_reply_us, 2), Cell::number(x.g_us, 2), Cell::number(x.o_s_delay_us, 2)}));
            if (std::isfinite(x.expect_o_s_us))
                t.rows.push_back(row(
                    RowKind::detail, 1,
                    {Cell::label("known answer"), Cell::number(x.expect_L_us + x.expect_o_s_us + x.expect_o_r_us, 2),
                     Cell::number(kNaN, 2), Cell::number(x.expect_L_us, 2), Cell::number(x.expect_o_s_us, 2),
                     Cell::number(x.expect_o_r_us, 2), Cell::blank(), Cell::number(x.expect_g_us, 2)}));
            t.rows.push_back(
                row(RowKind::detail, 1,
                    {Cell::label("spread (%)"), Cell::number(100 * x.spread_rtt, 0), Cell::blank(), Cell::blank(),
                     Cell::number(100 * x.spread_o_s, 0), Cell::number(100 * x.spread_o_r, 0), Cell::blank(),
                     Cell::number(100 * x.spread_g, 0)}));
            if (x.o_r_lines_local) t.rows.push_back(lines_cold_row(x));
        }
        for (const auto &pr : paper["table2_logp"]) {
            if (pr.value("layer", "") != x.layer) continue;
            t.rows.push_back(
                row(RowKind::paper, 1,
                    {Cell::label("paper " + pr.value("row", "")), Cell::number(paper_number(pr, "rtt_half_us"), 1),
                     Cell::number(paper_number(pr, "delta_us"), 1), Cell::number(paper_number(pr, "L_us"), 1),
                     Cell::number(paper_number(pr, "o_s_us"), 1), Cell::number(paper_number(pr, "o_r_us"), 1),
                     Cell::blank(), Cell::number(paper_number(pr, "g_us"), 1)}));
            // Under a cost-model profile, the relative error against the modelled board's row.
            const std::string board = profile_board(r.provider.profile);
            if (x.status.measured() && !board.empty() && pr.value("row", "").find(board) != std::string::npos) {
                auto err = [&](double ours, const char *key) {
                    const double e = relative_error_pct(ours, paper_number(pr, key));
                    return std::isfinite(e) ? Cell{fmt::format("{:+.0f}%", e), e} : Cell::blank();
                };
                t.rows.push_back(row(RowKind::detail, 2,
                                     {Cell::label("error vs paper"), err(x.rtt_half_us, "rtt_half_us"),
                                      err(x.delta_us, "delta_us"), err(x.L_us, "L_us"), err(x.o_s_us, "o_s_us"),
                                      err(x.o_r_us, "o_r_us"), Cell::blank(), err(x.g_us, "g_us")}));
            }
        }
        // The layer's own paper (FM 1.x, BIP) gives only a short-message latency (fm_metrics_note).
        for (const nlohmann::json *pr : paper_layer_rows(x.layer)) {
            if (!std::isfinite(paper_number(*pr, "rtt_half_us"))) continue;
            own_paper = true;
            t.rows.push_back(
                row(RowKind::paper, 1,
                    {Cell::label(paper_row_label(*pr)), Cell::number(paper_number(*pr, "rtt_half_us"), 1)}));
        }
        // A peer's RTT/2 goes under RTT/2, its g under g; the next row is ours divided by it.
        for (const auto &peer : r.peers)
            for (const auto &m : peer.metrics) {
                if (m.compared_with != x.layer || (m.metric != "rtt_half_us" && m.metric != "g_us")) continue;
                std::size_t col = m.metric == "rtt_half_us" ? 1 : 7;
                Row value = row(RowKind::peer, 1, {Cell::label(peer.tool + " " + m.test)});
                Row ratio = row(RowKind::peer, 1, {Cell::label("ours/peer")});
                value.cells.resize(col + 1);
                ratio.cells.resize(col + 1);
                value.cells[col] = Cell::number(m.peer, 3);
                ratio.cells[col] = ratio_cell(m.ratio);
                t.rows.push_back(value);
                t.rows.push_back(ratio);
            }
    }
    for (const auto &x : r.logp) {
        if (!x.status.measured()) continue;
        if (x.L_state == "below resolution")
            t.notes.push_back(fmt::format("{}: L 0* = below the resolution: RTT/2 - o_s - o_r = {} us lies within the "
                                          "scatter of the three series ({} us); L cannot be negative",
                                          x.layer, fmt_num(x.L_raw_us, 3), fmt_num(x.L_resolution_us, 3)));
        else if (x.L_state == "inconsistent")
            t.notes.push_back(
                fmt::format("{}: L n/a = inconsistent figures: o_s + o_r exceeds RTT/2 by {} us, more than "
                            "the scatter ({} us); see the warnings",
                            x.layer, fmt_num(-x.L_raw_us, 3), fmt_num(x.L_resolution_us, 3)));
    }
    for (auto &n : o_r_notes(r)) t.notes.push_back(n);
    if (own_paper)
        t.notes.push_back(
            "paper [FM1]: one-way latency of short packets (its text); paper [BIP]: Table 1's latency, the median "
            "round trip / 2 (the method of our RTT/2)");
    t.notes.push_back(fmt::format("paper: VI RTT/2 for 16 B = {} us (LANai 7), the reference of its Delta",
                                  fmt_num(paper_number(paper, "vi_rtt_half_16B_us"), 1)));
    t.plot = "logp";
    return t;
}

Table splitc_ops_table(const Report &r) {
    Table t;
    t.id = "figure2";
    t.title = "Figure 2. Split-C single-sender short message times (us per operation, int)";
    if (r.splitc_ops.empty()) t.status = "Split-C: not built";
    t.columns = {{"op", Align::left, 7}, {"us", Align::right, 9}, {"spread", Align::left, 0}};
    for (const auto &op : r.splitc_ops) {
        if (op.status.measured())
            t.rows.push_back(row(RowKind::ours, 0,
                                 {Cell::label(op.op), Cell::number(op.us, 2),
                                  Cell{fmt_num(100 * op.spread, 0) + "%", 100 * op.spread}}));
        else
            t.rows.push_back(row(RowKind::ours, 0,
                                 {Cell::label(op.op), Cell::number(kNaN, 2), Cell::label(status_text(op.status))}));
    }
    t.notes.push_back(
        "paper: values only plotted (no numbers in the text); read/write ~ a round trip, get/put ~ the gap");
    t.plot = "splitc";
    return t;
}

} // namespace logp
