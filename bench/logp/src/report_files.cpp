// report_files.cpp - the report directory: gnuplot data + scripts + SVG/PNG
// plots, and report.md embedding them (see report.hpp).
#include "paper.hpp"
#include "report.hpp"
#include "results_json.hpp"
#include "subprocess.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

namespace logp {
namespace {

namespace fs = std::filesystem;

void write_text(const fs::path &p, const std::string &text) {
    std::ofstream out(p, std::ios::trunc);
    if (!out || !(out << text) || !out.flush()) throw std::runtime_error("cannot write " + p.string());
}

std::string gp_quoted(const std::string &s) {
    std::string o = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') o += '\\';
        o += c;
    }
    return o + "\"";
}

// A title for gnuplot's enhanced text mode: '_' and '^' are literal.
std::string gp_title(const std::string &s) {
    std::string o;
    for (char c : s) {
        if (c == '_' || c == '^') o += "\\";
        o += c;
    }
    return gp_quoted(o);
}

// Every plot is drawn twice from one script: SVG, then PNG.
std::string two_terminals(const std::string &stem, const std::string &body) {
    return fmt::format("set terminal svg size 900,540 dynamic enhanced font 'Helvetica,12' background rgb 'white'\n"
                       "set output '{0}.svg'\n{1}\n"
                       "set terminal pngcairo size 900,540 enhanced font 'Helvetica,11'\n"
                       "set output '{0}.png'\nreplot\nset output\n",
                       stem, body);
}

struct Plot {
    std::string stem, title;
};

std::vector<Plot> write_plot_sources(const Report &r, const fs::path &dir) {
    std::vector<Plot> plots;
    const nlohmann::json &paper = paper_figures();

    // Bandwidth curves.
    {
        std::string data, plot;
        int index = 0;
        auto add_curve = [&](const std::string &name, const std::vector<BandwidthPoint> &pts, const char *style) {
            if (pts.empty()) return;
            data += "# " + name + "\n";
            for (const auto &p : pts)
                if (std::isfinite(p.mb_s)) data += fmt::format("{} {}\n", p.bytes, p.mb_s);
            data += "\n\n";
            plot += fmt::format("{}'bandwidth.dat' index {} with linespoints {} title {}", plot.empty() ? "plot " : ", \\\n     ",
                                index++, style, gp_title(name));
        };
        for (const auto &c : r.bandwidth)
            if (c.status.measured()) add_curve(c.layer + " (ours)", c.points, "lw 2 pt 7");
        for (const auto &p : r.peers)
            if (p.status.measured()) add_curve(p.tool + (p.tool == "ucx_perftest" ? " ucp_put_bw (" : " ib_write_bw (") + p.transport + ")", p.bandwidth,
                          "lw 1 dt 2 pt 6");
        if (!plot.empty()) {
            double vi_peak = paper_number(paper["figure5_bandwidth"], "vi_peak_mb_s");
            double knee = paper_number(paper["figure5_bandwidth"], "am_splitc_knee_mb_s");
            plot += fmt::format(", \\\n     {} with lines lc rgb 'dark-gray' lw 1.5 dt 3 title 'paper: VI peak {} MB/s (LANai 7)'", vi_peak, vi_peak);
            plot += fmt::format(", \\\n     {} with lines lc rgb 'gray40' dt 4 title 'paper: AM/Split-C knee {} MB/s'", knee, knee);
            write_text(dir / "bandwidth.dat", data);
            write_text(dir / "bandwidth.gp",
                       two_terminals("bandwidth", "set title 'Bulk bandwidth (Figure 5)'\nset logscale xy 2\n"
                                                  "set xlabel 'message size (bytes)'\nset ylabel 'MB/s (10^6 B/s)'\n"
                                                  "set key left top\nset grid\nset xrange [2:65536]\n" +
                                                      plot));
            plots.push_back({"bandwidth", "Bulk bandwidth (Figure 5)"});
        }
    }

    // LogP bars: ours per layer, and the paper's LANai 7 rows.
    {
        std::string data = "# group L o_s o_r g\n";
        int rows = 0;
        for (const auto &row : r.logp) {
            if (!row.status.measured()) continue;
            data += fmt::format("{} {} {} {} {}\n", gp_quoted(row.layer + " ours"), row.L_us, row.o_s_us, row.o_r_us, row.g_us);
            ++rows;
            if (const nlohmann::json *p = paper_logp_row(row.layer)) {
                data += fmt::format("{} {} {} {} {}\n", gp_quoted(row.layer + " paper"), paper_number(*p, "L_us"),
                                    paper_number(*p, "o_s_us"), paper_number(*p, "o_r_us"), paper_number(*p, "g_us"));
                ++rows;
            }
        }
        if (rows) {
            write_text(dir / "logp.dat", data);
            write_text(dir / "logp.gp",
                       two_terminals("logp", "set title 'LogP parameters (Table 2; log scale, values <= 0 not drawn)'\nset style data histograms\n"
                                             "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
                                             "set ylabel 'microseconds'\nset logscale y\nset grid ytics\nset key top left\n"
                                             "set xtics rotate by -20\n"
                                             "plot 'logp.dat' using 2:xtic(1) title 'L', '' using 3 title 'o_s', "
                                             "'' using 4 title 'o_r', '' using 5 title 'g'"));
            plots.push_back({"logp", "LogP parameters (Table 2), ours and the paper's"});
        }
    }

    // Breakdown stacked bars (percent of host overhead), ours next to the paper's.
    {
        const char *cats[] = {"Base VI", "Event Notification", "Flow Control", "Semantics"};
        std::string data = "# column BaseVI Event FlowControl Semantics Other\n";
        int rows = 0;
        for (const auto &bd : r.breakdown) {
            if (!bd.status.measured()) continue;
            std::map<std::string, double> pct;
            double known = 0;
            for (const auto &c : bd.categories) pct[c.category] = c.percent;
            data += gp_quoted(bd.name + " ours");
            for (const char *c : cats) {
                data += fmt::format(" {}", pct[c]);
                known += pct[c];
            }
            data += fmt::format(" {}\n", std::max(0.0, 100 - known));
            ++rows;
            const char *key = bd.name == "am-request-reply" ? "table3_am_request_reply" : "table4_splitc_get";
            if (paper.contains(key)) {
                data += gp_quoted(bd.name + " paper");
                for (const char *c : cats) data += fmt::format(" {}", paper_number(paper[key]["categories"], c));
                data += " 0\n";
                ++rows;
            }
        }
        if (rows) {
            write_text(dir / "breakdown.dat", data);
            write_text(dir / "breakdown.gp",
                       two_terminals("breakdown", "set title 'Host overhead by category (Tables 3 and 4)'\n"
                                                  "set style data histograms\nset style histogram rowstacked\n"
                                                  "set style fill solid 0.85 border -1\nset boxwidth 0.6\n"
                                                  "set ylabel '% of host overhead'\nset yrange [0:100]\n"
                                                  "set key outside right\nset xtics rotate by -15\n"
                                                  "plot 'breakdown.dat' using 2:xtic(1) title 'Base VI', "
                                                  "'' using 3 title 'Event Notification', '' using 4 title 'Flow Control', "
                                                  "'' using 5 title 'Semantics', '' using 6 title 'Other'"));
            plots.push_back({"breakdown", "Host overhead breakdowns (Tables 3 and 4)"});
        }
    }

    // Split-C operation times.
    {
        std::string data;
        for (const auto &op : r.splitc_ops)
            if (op.status.measured()) data += fmt::format("{} {}\n", op.op, op.us);
        if (!data.empty()) {
            write_text(dir / "splitc.dat", data);
            write_text(dir / "splitc.gp",
                       two_terminals("splitc", "set title 'Split-C single-sender short message times (Figure 2)'\n"
                                               "set style data histograms\nset style fill solid 0.8 border -1\n"
                                               "set ylabel 'microseconds per operation'\nset grid ytics\n"
                                               "plot 'splitc.dat' using 2:xtic(1) notitle"));
            plots.push_back({"splitc", "Split-C operation times (Figure 2)"});
        }
    }
    return plots;
}

std::string md_num(double v, int prec = 2) { return fmt_num(v, prec); }

std::string markdown(const Report &r, const std::vector<Plot> &plots, const std::vector<std::string> &drawn) {
    const nlohmann::json &paper = paper_figures();
    auto has = [&](const std::string &stem) { return std::find(drawn.begin(), drawn.end(), stem) != drawn.end(); };
    std::string m;
    m += "# viastack LogP report\n\n";
    m += fmt::format("- date: {}; host: {}\n- provider: **{}** (device {}); timing profile: {}\n- run: {} ({} round trips, {} warm-up); TSC {} GHz\n",
                     r.run.date_utc, r.run.host, r.provider.name, r.provider.device.empty() ? "-" : r.provider.device,
                     r.provider.profile.empty() ? "none" : r.provider.profile, r.run.quick ? "quick" : "full",
                     r.run.iterations, r.run.warmup, md_num(r.run.tsc_ghz, 3));
    m += fmt::format("- command: `{}`\n- published figures: {} (bench/logp/paper_figures.json)\n\n", r.run.command, paper_citation());
    m += "| layer | status |\n|---|---|\n";
    for (const auto &l : r.layers) m += fmt::format("| {} | {}{} |\n", l.layer, l.status.state, l.status.note.empty() ? "" : " — " + l.status.note);

    const ViBaseline &b = r.vi_baseline;
    m += "\n## Table 1 — VI baseline\n\n| | ours |";
    for (const auto &p : paper["table1_vi_baseline"]) m += fmt::format(" {} (paper) |", p.value("system", ""));
    m += "\n|---|---|";
    for (std::size_t i = 0; i < paper["table1_vi_baseline"].size(); ++i) m += "---|";
    m += fmt::format("\n| RTT/2 (µs), {} B | {} |", b.min_bytes, md_num(b.rtt_half_min_us));
    for (const auto &p : paper["table1_vi_baseline"]) m += fmt::format(" {} |", md_num(paper_number(p, "rtt_half_us"), 1));
    m += fmt::format("\n| Peak throughput (MB/s) | {} |", md_num(b.peak_mb_s, 1));
    for (const auto &p : paper["table1_vi_baseline"]) m += fmt::format(" {} |", md_num(paper_number(p, "throughput_mb_s"), 1));
    m += fmt::format("\n\nRTT/2 for a 16-byte VI message: ours {} µs, paper {} µs (LANai 7).\n",
                     md_num(b.rtt_half_16_us), md_num(paper_number(paper, "vi_rtt_half_16B_us"), 1));

    m += "\n## Table 2 — LogP parameters (µs)\n\nMethod of Culler, Liu, Martin and Yoshikawa (IEEE Micro 1996): o_s from short bursts, "
         "g from the steady state of long bursts, o_r timed at the receiver, L = RTT/2 − o_s − o_r; Δ = RTT/2 − RTT/2(VI, 16 B).\n\n"
         "| row | RTT/2 | Δ | L | o_s | o_r | g |\n|---|---|---|---|---|---|---|\n";
    for (const auto &row : r.logp) {
        if (row.status.measured())
            m += fmt::format("| **{}** (ours) | {} | {} | {} | {} | {} | {} |\n", row.layer, md_num(row.rtt_half_us),
                             md_num(row.delta_us), md_num(row.L_us), md_num(row.o_s_us), md_num(row.o_r_us), md_num(row.g_us));
        else
            m += fmt::format("| **{}** | {} {} | | | | | |\n", row.layer, row.status.state, row.status.note);
        if (std::isfinite(row.expect_o_s_us))
            m += fmt::format("| {} known answer | {} | | {} | {} | {} | {} |\n", row.layer,
                             md_num(row.expect_L_us + row.expect_o_s_us + row.expect_o_r_us), md_num(row.expect_L_us),
                             md_num(row.expect_o_s_us), md_num(row.expect_o_r_us), md_num(row.expect_g_us));
        for (const auto &pr : paper["table2_logp"])
            if (pr.value("layer", "") == row.layer)
                m += fmt::format("| paper {} | {} | {} | {} | {} | {} | {} |\n", pr.value("row", ""),
                                 md_num(paper_number(pr, "rtt_half_us"), 1), md_num(paper_number(pr, "delta_us"), 1),
                                 md_num(paper_number(pr, "L_us"), 1), md_num(paper_number(pr, "o_s_us"), 1),
                                 md_num(paper_number(pr, "o_r_us"), 1), md_num(paper_number(pr, "g_us"), 1));
        for (const auto &peer : r.peers)
            for (const auto &pm : peer.metrics)
                if (pm.compared_with == row.layer && pm.metric == "rtt_half_us")
                    m += fmt::format("| {} {} (peer) | {} | | | | | |\n| ratio ours/peer | {} | | | | | |\n", peer.tool, pm.test,
                                     md_num(pm.peer, 3), std::isfinite(pm.ratio) ? fmt::format("{:.3g}", pm.ratio) : "-");
    }
    if (has("logp")) m += "\n![LogP parameters](logp.svg)\n";

    m += "\n## Figure 2 — Split-C single-sender times (µs)\n\n";
    if (r.splitc_ops.empty()) m += "Split-C: not built.\n";
    else {
        m += "| op | ours | spread |\n|---|---|---|\n";
        for (const auto &op : r.splitc_ops)
            m += fmt::format("| {} | {} | {} |\n", op.op, op.status.measured() ? md_num(op.us) : op.status.state,
                             op.status.measured() ? md_num(100 * op.spread, 0) + "%" : op.status.note);
    }
    m += "\nThe paper plots these without giving values in its text (read/write ≈ a round trip, get/put ≈ the gap).\n";
    if (has("splitc")) m += "\n![Split-C times](splitc.svg)\n";

    m += "\n## Figure 5 — bulk bandwidth, and FM's t0 / r∞ / n½\n\n| layer | method | t0 (µs) | r∞ (MB/s) | n½ (B) | peak (MB/s) |\n|---|---|---|---|---|---|\n";
    for (const auto &c : r.bandwidth)
        m += c.status.measured()
                 ? fmt::format("| {} | {} | {} | {} | {}{} | {} |\n", c.layer, c.method, md_num(c.t0_us), md_num(c.r_inf_mb_s, 1),
                               md_num(c.n_half_bytes, 0), c.n_half_from_model ? " (model)" : "", md_num(c.r_peak_mb_s, 1))
                 : fmt::format("| {} | {} {} | | | | |\n", c.layer, c.status.state, c.status.note);
    for (const auto &fm : paper["fm_metrics"])
        m += fmt::format("| paper: {} | FM 1.x (Pakin et al.) | {} | {} | {} | |\n", fm.value("system", ""), md_num(paper_number(fm, "t0_us"), 1),
                         md_num(paper_number(fm, "r_inf_mb_s"), 1), md_num(paper_number(fm, "n_half_bytes"), 0));
    if (has("bandwidth")) m += "\n![Bandwidth](bandwidth.svg)\n";

    m += "\n## Tables 3 and 4 — host overhead breakdowns\n\n";
    for (const auto &bd : r.breakdown) {
        m += fmt::format("### {} ({})\n\n", bd.name, bd.layer);
        if (!bd.status.measured()) {
            m += fmt::format("{}: {}\n\n", bd.status.state, bd.status.note);
            continue;
        }
        m += "| category / primitive | ns/op | cycles/op | % ours | % paper | count/op |\n|---|---|---|---|---|---|\n";
        for (const auto &c : bd.categories) {
            m += fmt::format("| **{}** | {} | {} | {} | {} | |\n", c.category, md_num(c.ns, 0), md_num(c.cycles, 0),
                             md_num(c.percent, 1), md_num(c.paper_percent, 1));
            for (const auto &it : bd.items)
                if (it.category == c.category)
                    m += fmt::format("| {} | {} | {} | {} | {} | {} |\n", it.operation, md_num(it.ns, 0), md_num(it.cycles, 0),
                                     md_num(it.percent, 1), md_num(it.paper_percent, 1), md_num(it.count_per_op, 2));
        }
        if (!bd.inner.empty()) {
            m += "\nTimed inside those (lower layers; already included above, not added):\n\n| operation | category | ns/op | count/op |\n|---|---|---|---|\n";
            for (const auto &it : bd.inner)
                m += fmt::format("| {} | {} | {} | {} |\n", it.operation, it.category, md_num(it.ns, 0), md_num(it.count_per_op, 2));
        }
        m += fmt::format("\nHost overhead {} ns per operation; NIC firmware {} ns (not host); instrumentation adds ~{} ns per timed primitive.\n\n",
                         md_num(bd.host_ns, 0), md_num(bd.firmware_ns, 0), md_num(r.run.instr_scope_ns, 0));
    }
    if (r.breakdown.empty()) m += "Not built (needs AM and Split-C).\n\n";
    if (has("breakdown")) m += "![Breakdowns](breakdown.svg)\n\n";

    const BulkDifference &d = r.bulk_difference;
    m += fmt::format("## Table 5 — per-message difference at {} B ({} vs native VI)\n\n", d.bytes, d.layer.empty() ? "AM/Split-C" : d.layer);
    if (!d.status.measured()) m += fmt::format("{}: {}\n\n", d.status.state, d.status.note);
    m += "| component | ours (µs) | paper (µs) |\n|---|---|---|\n";
    for (const auto &c : d.components) m += fmt::format("| {} | {} | {} |\n", c.component, md_num(c.us), md_num(c.paper_us, 1));
    m += fmt::format("| TOTAL (components) | {} | 18.5 |\n| measured difference | {} | {} |\n\n", md_num(d.components_total_us),
                     md_num(d.per_msg_difference_us), md_num(d.paper_difference_us, 1));

    m += "## Peers\n\n";
    for (const auto &p : r.peers) {
        m += fmt::format("- **{}** ({}): {}{}\n", p.tool, p.transport, p.status.state, p.status.note.empty() ? "" : " — " + p.status.note);
        for (const auto &pm : p.metrics)
            if (!pm.compared_with.empty())
                m += fmt::format("  - {} {} {} B: peer {}, ours ({}) {}, ratio ours/peer {}\n", pm.metric, pm.test, pm.bytes,
                                 md_num(pm.peer, 3), pm.compared_with, md_num(pm.ours, 3),
                                 std::isfinite(pm.ratio) ? fmt::format("{:.3g}", pm.ratio) : "-");
    }
    if (r.peers.empty()) m += "None run.\n";
    if (!r.warnings.empty()) {
        m += "\n## Warnings\n\n";
        for (const auto &w : r.warnings) m += "- " + w + "\n";
    }
    (void)plots;
    return m;
}

}  // namespace

ReportFiles write_report_files(const Report &r, const std::string &dir_name) {
    ReportFiles out;
    fs::path dir(dir_name);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw std::runtime_error("cannot create report directory " + dir_name + ": " + ec.message());
    write_json_file(r, (dir / "logp.json").string());
    std::vector<Plot> plots = write_plot_sources(r, dir);
    std::vector<std::string> drawn;
    std::string gnuplot = find_on_path("gnuplot");
    if (gnuplot.empty() && !plots.empty())
        out.problems.push_back("gnuplot not found: plots skipped (Debian: apt-get install gnuplot-nox); the .gp scripts are in " + dir_name);
    for (const Plot &p : plots) {
        if (gnuplot.empty()) break;
        // gnuplot runs in the report directory so the scripts use plain file names.
        std::string abs = fs::absolute(dir).string();
        ProcessResult res = run_process({gnuplot, "-e", "cd " + gp_quoted(abs), (fs::path(abs) / (p.stem + ".gp")).string()}, {}, 60);
        if (res.exit_code == 0 && fs::exists(dir / (p.stem + ".svg")) && fs::exists(dir / (p.stem + ".png"))) {
            drawn.push_back(p.stem);
            out.images.push_back((dir / (p.stem + ".svg")).string());
            out.images.push_back((dir / (p.stem + ".png")).string());
        } else {
            out.problems.push_back("gnuplot failed on " + p.stem + ".gp: " + res.output.substr(0, 300));
        }
    }
    out.markdown = (dir / "report.md").string();
    write_text(out.markdown, markdown(r, plots, drawn));
    return out;
}

}  // namespace logp
