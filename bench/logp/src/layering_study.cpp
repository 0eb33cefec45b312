// layering_study.cpp - the layering study inside a logp run (see
// layering_study.hpp): running layering_bw's jobs, tabulating the fractions,
// the table, the plot and the JSON.
#include "layering_study.hpp"

#include "job.hpp"
#include "progress.hpp"
#include "stats.hpp"
#include "subprocess.hpp"
#include "tables.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace logp {
namespace {

double finite_median(std::vector<double> v) {
    v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
    if (v.empty()) return kNaN;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct PairSpec {
    const char *layer, *below, *label;
};
// The pairings of the issue; "vi" below picks the raw primitive by size.
constexpr PairSpec kPairs[] = {
    {"mp-fm1", "fm", "tagged layer as FM 1.x client / FM"},
    {"mp-fm2", "fm", "tagged layer with FM 2.x features / FM"},
    {"bip", "vi", "BIP / raw VI (send; RDMA above the switch point)"},
    {"am-medium", "vi", "AM-2 medium / raw VI (send; RDMA above 4 KB)"},
    {"am-long", "vi-rdma", "AM-2 long / raw VI RDMA write"},
};

std::string below_for(const LayeringStudy &s, const std::string &layer, const std::string &below, std::size_t bytes) {
    if (below != "vi") return below;
    const std::size_t switch_point = layer == "bip" ? s.bip_eager : 4096;
    return bytes <= switch_point ? "vi-send" : "vi-rdma";
}

} // namespace

std::string find_layering_bw(const std::string &logp_exe) {
    if (const char *e = std::getenv("LOGP_LAYERING_BW"); e && *e) return find_on_path(e);
    const fs::path dir = fs::path(logp_exe).parent_path();
    for (const fs::path &cand : {dir / "layering_bw", dir / "../layering/layering_bw"}) {
        std::error_code ec;
        if (fs::exists(cand, ec) && access(cand.c_str(), X_OK) == 0) return fs::weakly_canonical(cand, ec).string();
    }
    return find_on_path("layering_bw");
}

bool parse_layering_rows(const std::string &output, int round, LayeringStudy &study, std::string *why) {
    std::istringstream in(output);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("ERROR", 0) == 0) {
            *why = line;
            return false;
        }
        std::istringstream f(line);
        LayeringRow row;
        int count = 0;
        if (!(f >> row.layer >> row.bytes >> row.round >> count >> row.mb_s)) continue; // launcher or other chatter
        if (round >= 0) row.round = round;
        study.rows.push_back(row);
    }
    return true;
}

void tabulate_layering(LayeringStudy &s) {
    s.pairs.clear();
    std::map<std::tuple<std::string, std::size_t, int>, double> bw;
    std::set<std::size_t> sizes;
    int nrounds = 0;
    for (const auto &r : s.rows) {
        bw[{r.layer, r.bytes, r.round}] = r.mb_s;
        sizes.insert(r.bytes);
        nrounds = std::max(nrounds, r.round + 1);
    }
    auto value = [&](const std::string &l, std::size_t n, int round) {
        auto it = bw.find({l, n, round});
        return it == bw.end() ? kNaN : it->second;
    };
    for (const PairSpec &p : kPairs) {
        LayeringPair pair;
        pair.layer = p.layer;
        pair.below = p.below;
        pair.label = p.label;
        for (std::size_t n : sizes) {
            const std::string below = below_for(s, p.layer, p.below, n);
            std::vector<double> up, lo, ratio;
            for (int r = 0; r < nrounds; r++) {
                const double a = value(p.layer, n, r), b = value(below, n, r);
                if (std::isfinite(a)) up.push_back(a);
                if (std::isfinite(b)) lo.push_back(b);
                if (std::isfinite(a) && std::isfinite(b) && b > 0) ratio.push_back(a / b);
            }
            if (up.empty()) continue; // this layer does not go to this size (AM past its maximum)
            pair.bytes.push_back(n);
            pair.below_used.push_back(below);
            pair.layer_mb_s.push_back(finite_median(up));
            pair.below_mb_s.push_back(finite_median(lo));
            pair.fraction.push_back(finite_median(ratio));
            pair.rounds.push_back(int(ratio.size()));
        }
        if (!pair.bytes.empty()) s.pairs.push_back(pair);
    }
}

void run_layering_phase(const Job &job, const LayeringPlan &plan, Report &r, Progress &progress) {
    LayeringStudy &s = r.layering;
    s.rounds = plan.rounds;
    s.mbytes = plan.mbytes;
    s.bip_eager = plan.bip_eager;
    if (plan.layering_bw.empty()) {
        s.status = {"not built", "layering_bw (bench/layering) was not found next to logp nor on PATH"};
        return;
    }
    job.barrier(); // rank 1 waits in the next barrier while rank 0 runs the jobs
    if (job.is_root()) {
        const std::string mb = fmt::format("{}", plan.mbytes);
        auto run = [&](const std::string &mode, int rounds, int as_round) -> bool {
            ProcessResult res =
                run_process({plan.vipl_run, "-n", "2", "--timeout", fmt::format("{}", int(plan.timeout_s)),
                             plan.layering_bw, mode, "-r", std::to_string(rounds), "-m", mb},
                            {}, plan.timeout_s + 30);
            std::string why;
            if (!res.started || res.timed_out || res.exit_code != 0) {
                s.status = {"failed",
                            fmt::format("layering_bw {}: {}", mode,
                                        !res.started        ? res.error
                                            : res.timed_out ? std::string("timed out")
                                                            : last_line(res.output))};
                return false;
            }
            if (!parse_layering_rows(res.output, as_round, s, &why)) {
                s.status = {"failed", "layering_bw " + mode + ": " + why};
                return false;
            }
            return true;
        };
        progress.begin("layering study", 1 + 3 * plan.rounds);
        // FM and its two clients in one job (interleaved inside it, size by
        // size and round by round); then VI, BIP and AM jobs in turn, round
        // by round, so drift falls on a layer and the layer below alike.
        bool ok = run("fm", plan.rounds, -1);
        progress.step("fm, mp-fm1, mp-fm2");
        for (int round = 0; ok && round < plan.rounds; round++)
            for (const char *mode : {"vi", "bip", "am"}) {
                if (!(ok = run(mode, 1, round))) break;
                progress.step(fmt::format("round {}/{}: {}", round + 1, plan.rounds, mode));
            }
        progress.end();
        if (ok) s.status = {"measured", ""};
        tabulate_layering(s);
    }
    job.barrier();
}

Table layering_table(const Report &r) {
    const LayeringStudy &s = r.layering;
    Table t;
    t.id = "layering";
    t.title = "Layering study ([FM2] Figures 4 and 6): % of the layer below's bandwidth delivered upward";
    t.caption = fmt::format(
        "One-way streaming bandwidth (MB/s) of each layer and of the layer below it, by message size "
        "(bench/layering's layering_bw, {} rounds of {} MB per size; FM and its two clients interleaved in one job, "
        "VI, BIP and AM jobs in turn round by round).  Bandwidths are medians over the rounds; each % is the median "
        "over the rounds of the ratio measured within the round.  BIP is set against raw VI sends up to its switch "
        "point ({} B) and RDMA writes above; AM medium against sends up to 4 KB",
        s.rounds, s.mbytes, s.bip_eager);
    if (!s.status.measured()) t.status = status_text(s.status);
    std::set<std::size_t> sizes;
    for (const auto &p : s.pairs) sizes.insert(p.bytes.begin(), p.bytes.end());
    t.columns = {{"pairing", Align::left, 30}};
    for (std::size_t n : sizes)
        t.columns.push_back({n >= 1024 ? fmt::format("{}K", n / 1024) : fmt::format("{}", n), Align::right, 7});
    for (const auto &p : s.pairs) {
        Row pct{RowKind::ours, 0, {Cell::label(p.layer + " / " + p.below + " (%)")}, ""};
        Row up{RowKind::detail, 1, {Cell::label(p.layer + " MB/s")}, ""};
        Row lo{RowKind::detail, 1, {Cell::label("below MB/s")}, ""};
        for (std::size_t n : sizes) {
            auto it = std::find(p.bytes.begin(), p.bytes.end(), n);
            if (it == p.bytes.end()) {
                pct.cells.push_back(Cell::blank());
                up.cells.push_back(Cell::blank());
                lo.cells.push_back(Cell::blank());
                continue;
            }
            const std::size_t i = std::size_t(it - p.bytes.begin());
            pct.cells.push_back(Cell::number(100 * p.fraction[i], 0));
            up.cells.push_back(Cell::number(p.layer_mb_s[i], 1));
            lo.cells.push_back(Cell::number(p.below_mb_s[i], 1));
        }
        t.rows.push_back(pct);
        t.rows.push_back(up);
        t.rows.push_back(lo);
    }
    t.notes.push_back("[FM2]: MPI-FM delivered at most 35% of FM 1.x's bandwidth and 70-90% of FM 2.x's; the issue "
                      "asks >= 90% for the FM 2.x-style layer from 4 KB.");
    for (const auto &p : s.pairs) {
        if (p.layer != "mp-fm2") continue;
        double worst = kNaN;
        for (std::size_t i = 0; i < p.bytes.size(); i++)
            if (p.bytes[i] >= 4096 && std::isfinite(p.fraction[i]))
                worst = std::isfinite(worst) ? std::min(worst, p.fraction[i]) : p.fraction[i];
        if (std::isfinite(worst))
            t.notes.push_back(fmt::format("Acceptance: mp-fm2 / fm from 4 KB: lowest {:.0f}% - {}", 100 * worst,
                                          worst >= 0.9 ? "met" : "NOT met"));
    }
    t.plot = "layering";
    return t;
}

std::string layering_plot_data(const LayeringStudy &s) {
    std::string data;
    for (const auto &p : s.pairs) {
        data += "# " + p.layer + " / " + p.below + "\n";
        for (std::size_t i = 0; i < p.bytes.size(); i++)
            if (std::isfinite(p.fraction[i])) data += fmt::format("{} {:.2f}\n", p.bytes[i], 100 * p.fraction[i]);
        data += "\n\n";
    }
    return data;
}

std::string layering_plot_body(const LayeringStudy &s) {
    if (s.pairs.empty()) return "";
    std::string plot;
    int index = 0;
    for (const auto &p : s.pairs)
        plot += fmt::format("{}'layering.dat' index {} with linespoints lw 2 pt 7 title '{}'",
                            plot.empty() ? "plot " : ", \\\n     ", index++, p.label);
    plot += ", \\\n     90 with lines lc rgb 'gray40' dt 2 title '90%'";
    return "set title '% of the layer below delivered upward (one-way streaming)'\nset logscale x 2\n"
           "set xlabel 'message size (bytes)'\nset ylabel '% of the layer below'\nset yrange [0:*]\n"
           "set key left top\nset grid\n" +
        plot;
}

nlohmann::json layering_to_json(const LayeringStudy &s) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto &r : s.rows) rows.push_back({r.layer, r.bytes, r.round, r.mb_s});
    nlohmann::json pairs = nlohmann::json::array();
    for (const auto &p : s.pairs) {
        nlohmann::json pts = nlohmann::json::array();
        for (std::size_t i = 0; i < p.bytes.size(); i++)
            pts.push_back(
                {{"bytes", p.bytes[i]},
                 {"below", p.below_used[i]},
                 {"layer_mb_s", std::isfinite(p.layer_mb_s[i]) ? nlohmann::json(p.layer_mb_s[i]) : nlohmann::json()},
                 {"below_mb_s", std::isfinite(p.below_mb_s[i]) ? nlohmann::json(p.below_mb_s[i]) : nlohmann::json()},
                 {"fraction", std::isfinite(p.fraction[i]) ? nlohmann::json(p.fraction[i]) : nlohmann::json()},
                 {"rounds", p.rounds[i]}});
        pairs.push_back({{"layer", p.layer}, {"below", p.below}, {"points", pts}});
    }
    return {{"status", {{"state", s.status.state}, {"note", s.status.note}}},
            {"rounds", s.rounds},
            {"mbytes", s.mbytes},
            {"bip_eager", s.bip_eager},
            {"rows", rows},
            {"pairs", pairs}};
}

LayeringStudy layering_from_json(const nlohmann::json &j) {
    LayeringStudy s;
    if (!j.is_object()) return s;
    const auto &st = j.value("status", nlohmann::json::object());
    s.status = {st.value("state", std::string("skipped")), st.value("note", std::string())};
    s.rounds = j.value("rounds", 0);
    s.mbytes = j.value("mbytes", 0.0);
    s.bip_eager = j.value("bip_eager", std::size_t(16384));
    for (const auto &r : j.value("rows", nlohmann::json::array()))
        if (r.is_array() && r.size() == 4 && r[3].is_number())
            s.rows.push_back({r[0].get<std::string>(), r[1].get<std::size_t>(), r[2].get<int>(), r[3].get<double>()});
    tabulate_layering(s); // the pairs are derived from the rows
    return s;
}

} // namespace logp
