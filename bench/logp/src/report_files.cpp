// report_files.cpp - the report directory: gnuplot data + scripts + SVG/PNG
// plots, report.md (render_markdown of the table model) embedding them, and
// logp.json (see report.hpp).
#include "layering_study.hpp"
#include "paper.hpp"
#include "render.hpp"
#include "report.hpp"
#include "results_json.hpp"
#include "subprocess.hpp"
#include "tables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
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

// What a layer's bulk curve moves (for the legend).
std::string layer_bulk_label(const std::string &layer) {
    if (layer == "vi") return "RDMA write";
    if (layer == "am-v3" || layer == "am-v1") return "AM long";
    if (layer == "splitc") return "bulk_put";
    return "bulk";
}

// A peer's bandwidth curves, one per test, from its raw metrics
// ("bandwidth_mb_s:<test>"; the ratio rows set against ours are skipped).
std::vector<std::pair<std::string, std::vector<BandwidthPoint>>> peer_bandwidth_curves(const PeerResult &p) {
    std::vector<std::pair<std::string, std::vector<BandwidthPoint>>> out;
    for (const auto &m : p.metrics) {
        if (!m.compared_with.empty() || m.metric.rfind("bandwidth_mb_s:", 0) != 0 || !std::isfinite(m.peer)) continue;
        auto it = std::find_if(out.begin(), out.end(), [&](const auto &c) { return c.first == m.test; });
        if (it == out.end()) it = out.insert(out.end(), {m.test, {}});
        it->second.push_back({m.bytes, double(m.bytes) / m.peer, m.peer, 0});
    }
    for (auto &c : out)
        std::sort(c.second.begin(), c.second.end(), [](const auto &a, const auto &b) { return a.bytes < b.bytes; });
    if (out.empty() && !p.bandwidth.empty()) out.push_back({"bandwidth", p.bandwidth});
    return out;
}

// Bandwidth curves.
void plot_bandwidth(const Report &r, const fs::path &dir, const nlohmann::json &paper, std::vector<Plot> &plots) {
    std::string data, plot;
    int index = 0;
    auto add_curve = [&](const std::string &name, const std::vector<BandwidthPoint> &pts, const char *style) {
        if (pts.empty()) return;
        data += "# " + name + "\n";
        for (const auto &p : pts)
            if (std::isfinite(p.mb_s)) data += fmt::format("{} {}\n", p.bytes, p.mb_s);
        data += "\n\n";
        plot += fmt::format("{}'bandwidth.dat' index {} with linespoints {} title {}",
                            plot.empty() ? "plot " : ", \\\n     ", index++, style, gp_title(name));
    };
    for (const auto &c : r.bandwidth)
        if (c.status.measured())
            add_curve(c.layer + " (ours, " + layer_bulk_label(c.layer) + ")", c.points, "lw 2 pt 7");
    // Every bandwidth test of every peer (ucp_put_bw, ucp_am_bw, fi_write,
    // MPI_Isend, ib_write_bw) as its own curve, from the peer's raw metrics.
    for (const auto &p : r.peers) {
        if (!p.status.measured()) continue;
        for (const auto &[test, pts] : peer_bandwidth_curves(p))
            add_curve(p.tool + " " + test + (p.transport.empty() ? "" : " (" + p.transport + ")"), pts,
                      "lw 1 dt 2 pt 6");
    }
    if (!plot.empty()) {
        double vi_peak = paper_number(paper["figure5_bandwidth"], "vi_peak_mb_s");
        double knee = paper_number(paper["figure5_bandwidth"], "am_splitc_knee_mb_s");
        plot += fmt::format(
            ", \\\n     {} with lines lc rgb 'dark-gray' lw 1.5 dt 3 title 'paper: VI peak {} MB/s (LANai 7)'", vi_peak,
            vi_peak);
        plot += fmt::format(", \\\n     {} with lines lc rgb 'gray40' dt 4 title 'paper: AM/Split-C knee {} MB/s'",
                            knee, knee);
        write_text(dir / "bandwidth.dat", data);
        write_text(
            dir / "bandwidth.gp",
            two_terminals("bandwidth",
                          "set title 'Bulk bandwidth (Figure 5 to 1 MB), ours and the peers'\nset logscale xy 2\n"
                          "set xlabel 'message size (bytes)'\nset ylabel 'MB/s (10^6 B/s)'\n"
                          "set key left top font ',9'\nset grid\nset xrange [2:2097152]\n"
                          "set xtics (\"4\" 4, \"32\" 32, \"256\" 256, \"2K\" 2048, \"16K\" 16384, "
                          "\"128K\" 131072, \"1M\" 1048576)\n" +
                              plot));
        plots.push_back({"bandwidth", "Bulk bandwidth (Figure 5 to 1 MB), ours beside the peers"});
    }
}

// Message rate by window: ours per layer, and the peers'.
void plot_rate(const Report &r, const fs::path &dir, std::vector<Plot> &plots) {
    std::string data, plot;
    int index = 0;
    for (const RateSweep *sp : ours_then_peers(r.rate_sweep)) {
        const RateSweep &s = *sp;
        if (!s.status.measured() || s.points.empty()) continue;
        const std::string name = s.peer ? s.layer : s.layer + " (ours)";
        data += "# " + name + "\n";
        for (const auto &p : s.points)
            if (std::isfinite(p.msg_rate_m_s)) data += fmt::format("{} {}\n", p.window, p.msg_rate_m_s);
        data += "\n\n";
        plot +=
            fmt::format("{}'rate.dat' index {} with linespoints {} title {}", plot.empty() ? "plot " : ", \\\n     ",
                        index++, s.peer ? "lw 1 dt 2 pt 6" : "lw 2 pt 7", gp_title(name));
    }
    if (!plot.empty()) {
        write_text(dir / "rate.dat", data);
        write_text(dir / "rate.gp",
                   two_terminals("rate",
                                 "set title 'Message rate by window (16-byte messages)'\nset logscale x 2\n"
                                 "set xlabel 'messages in flight (window W)'\n"
                                 "set ylabel 'million messages / s'\nset yrange [0:*]\n"
                                 "set key left top\nset grid\nset xrange [0.8:80]\n" +
                                     plot));
        plots.push_back({"rate", "Message rate by window, ours beside ucp_am_bw"});
    }
}

// The layering study: % of the layer below delivered upward, per pairing.
void plot_layering(const Report &r, const fs::path &dir, std::vector<Plot> &plots) {
    if (const std::string body = layering_plot_body(r.layering); !body.empty()) {
        write_text(dir / "layering.dat", layering_plot_data(r.layering));
        write_text(dir / "layering.gp", two_terminals("layering", body));
        plots.push_back({"layering", "Layering study: % of the layer below delivered upward"});
    }
}

// LogP bars: ours per layer, and the paper's LANai 7 rows.
void plot_logp(const Report &r, const fs::path &dir, const nlohmann::json &paper, std::vector<Plot> &plots) {
    std::string data = "# group L o_s o_r g\n";
    int rows = 0;
    for (const auto &row : r.logp) {
        if (!row.status.measured()) continue;
        data +=
            fmt::format("{} {} {} {} {}\n", gp_quoted(row.layer + " ours"), row.L_us, row.o_s_us, row.o_r_us, row.g_us);
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
                   two_terminals("logp",
                                 "set title 'LogP parameters (Table 2; log scale, values <= 0 not drawn)'\n"
                                 // L not reported (n/a) is written as nan: a gap, not an error when it is the only row
                                 "set datafile missing 'nan'\nset style data histograms\n"
                                 "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
                                 "set ylabel 'microseconds'\nset logscale y\nset grid ytics\nset key top left\n"
                                 "set xtics rotate by -20\n"
                                 "plot 'logp.dat' using 2:xtic(1) title 'L', '' using 3 title 'o_s', "
                                 "'' using 4 title 'o_r', '' using 5 title 'g'"));
        plots.push_back({"logp", "LogP parameters (Table 2), ours and the paper's"});
    }
}

// Breakdown stacked bars (percent of host overhead), ours next to the paper's.
void plot_breakdown(const Report &r, const fs::path &dir, const nlohmann::json &paper, std::vector<Plot> &plots) {
    const char *cats[] = {"Base VI", "Event Notification", "Flow Control", "Semantics"};
    std::string data = "# column BaseVI Event FlowControl Semantics Other\n";
    int rows = 0;
    for (const auto &bd : r.breakdown) {
        // Tables 3 and 4 only (the mpi breakdown has its own parts, not the paper's categories).
        if (!bd.status.measured() || (bd.name != "am-request-reply" && bd.name != "splitc-get")) continue;
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
                   two_terminals("breakdown",
                                 "set title 'Host overhead by category (Tables 3 and 4)'\n"
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
void plot_splitc(const Report &r, const fs::path &dir, std::vector<Plot> &plots) {
    std::string data;
    for (const auto &op : r.splitc_ops)
        if (op.status.measured()) data += fmt::format("{} {}\n", op.op, op.us);
    if (!data.empty()) {
        write_text(dir / "splitc.dat", data);
        write_text(dir / "splitc.gp",
                   two_terminals("splitc",
                                 "set title 'Split-C single-sender short message times (Figure 2)'\n"
                                 "set style data histograms\nset style fill solid 0.8 border -1\n"
                                 "set ylabel 'microseconds per operation'\nset grid ytics\n"
                                 "plot 'splitc.dat' using 2:xtic(1) notitle"));
        plots.push_back({"splitc", "Split-C operation times (Figure 2)"});
    }
}

// The plots' data and gnuplot sources, each written only when the report has its numbers.
std::vector<Plot> write_plot_sources(const Report &r, const fs::path &dir) {
    std::vector<Plot> plots;
    const nlohmann::json &paper = paper_figures();
    plot_bandwidth(r, dir, paper, plots);
    plot_rate(r, dir, plots);
    plot_layering(r, dir, plots);
    plot_logp(r, dir, paper, plots);
    plot_breakdown(r, dir, paper, plots);
    plot_splitc(r, dir, plots);
    return plots;
}

} // namespace

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
        out.problems.push_back(
            "gnuplot not found: plots skipped (Debian: apt-get install gnuplot-nox); the .gp scripts are in " +
            dir_name);
    for (const Plot &p : plots) {
        if (gnuplot.empty()) break;
        // gnuplot runs in the report directory so the scripts use plain file names.
        std::string abs = fs::absolute(dir).string();
        ProcessResult res =
            run_process({gnuplot, "-e", "cd " + gp_quoted(abs), (fs::path(abs) / (p.stem + ".gp")).string()}, {}, 60);
        if (res.exit_code == 0 && fs::exists(dir / (p.stem + ".svg")) && fs::exists(dir / (p.stem + ".png"))) {
            drawn.push_back(p.stem);
            out.images.push_back((dir / (p.stem + ".svg")).string());
            out.images.push_back((dir / (p.stem + ".png")).string());
        } else {
            out.problems.push_back("gnuplot failed on " + p.stem + ".gp: " + res.output.substr(0, 300));
        }
    }
    out.markdown = (dir / "report.md").string();
    write_text(out.markdown, render_markdown(build_document(r), drawn));
    return out;
}

} // namespace logp
