// tables_peers.cpp - the interleaved comparison with the peers (see
// peer_rounds.hpp), built into the table model like every other table.
#include "tables.hpp"

#include "peer_rounds.hpp"

#include <fmt/format.h>

namespace logp {
namespace {

std::string metric_label(const RoundComparison &c) {
    if (c.metric == "rtt_half_us") return "RTT/2 (us)";
    if (c.metric == "g_us") return "g (us)";
    if (c.metric == "bandwidth_mb_s") return "bandwidth (MB/s)";
    return c.metric;
}

std::string bytes_label(std::size_t b) {
    if (b >= (1u << 20) && b % (1u << 20) == 0) return fmt::format("{} MB", b >> 20);
    if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KB", b >> 10);
    return fmt::format("{} B", b);
}

Cell count_cell(int n) { return Cell{std::to_string(n), double(n)}; }

// What the placement classes were and how many rounds fell in each.
std::vector<std::string> placement_notes(const Interleaved &x) {
    std::vector<std::string> notes;
    if (!(x.line_threshold_ns > 0) || x.rounds_fast + x.rounds_slow + x.rounds_mixed == 0) {
        notes.push_back("placement: no raw cache-line times in this report (line_ns), so the rounds are not classed.");
        return notes;
    }
    notes.push_back(fmt::format(
        "placement: each round measures the raw cross-core cache line (one way) on our two CPUs right before our "
        "half and before every peer; a line at or above {:.0f} ns is the slow placement, below it the fast one "
        "(threshold {}).  'fast' and 'slow' are the medians of the rounds whose two line times both fell in that "
        "class (n rounds); a round whose line changed class between our half and the peer's is mixed and only in the "
        "overall median.",
        x.line_threshold_ns,
        x.line_threshold_source == "gap"
            ? fmt::format("from this run's own line times: the geometric mean of the widest gap between them, at "
                          "least {:.0f}x",
                          kPlacementGap)
            : fmt::format("fixed: this run's line times show no gap of {:.0f}x or more, so they are one class",
                          kPlacementGap)));
    notes.push_back(fmt::format("rounds: {} fast, {} slow, {} mixed (a round is mixed when any of its line times "
                                "fell in the other class).",
                                x.rounds_fast, x.rounds_slow, x.rounds_mixed));
    const int total = x.rounds_fast + x.rounds_slow + x.rounds_mixed;
    if (x.rounds_fast == total || x.rounds_slow == total)
        notes.push_back(
            fmt::format("All {} rounds of this run fell in the {} placement: its ratios say nothing about the "
                        "{} one.",
                        total, x.rounds_fast == total ? "fast" : "slow", x.rounds_fast == total ? "slow" : "fast"));
    return notes;
}

} // namespace

Table interleaved_table(const Report &r) {
    const Interleaved &x = r.interleaved;
    Table t;
    t.id = "interleaved";
    t.title = fmt::format("Ours against the peers, interleaved: ratio ours/peer per round, {} round{}", x.rounds,
                          x.rounds == 1 ? "" : "s");
    t.caption =
        "Each round measures our layer, then every peer, on the same machine state; the ratio of a round is "
        "ours divided by the peer's figure of that round.  For RTT/2 and g below 1 means ours is faster; for "
        "bandwidth above 1 means ours moves more.  median, min and max are over the rounds in which both "
        "were measured (column 'rounds'); 'fast' and 'slow' split them by the placement of the VM's vCPUs the round "
        "saw (see the notes).";
    if (!x.status.measured()) t.status = status_text(x.status);
    t.columns = {{"peer", Align::left, 13},   {"metric", Align::left, 16}, {"size", Align::right, 6},
                 {"test", Align::left, 10},   {"ours", Align::left, 5},    {"rounds", Align::right, 6},
                 {"median", Align::right, 7}, {"min", Align::right, 7},    {"max", Align::right, 7},
                 {"spread", Align::right, 6}, {"fast", Align::right, 6},   {"n", Align::right, 2},
                 {"slow", Align::right, 6},   {"n", Align::right, 2}};
    bool beyond_bulk = false;
    for (const RoundComparison &c : x.comparisons) {
        Row row{RowKind::peer, 0, {}, ""};
        const double spread = c.rounds > 0 && c.ratio_median > 0 ? (c.ratio_max - c.ratio_min) / c.ratio_median : kNaN;
        row.cells = {Cell::label(c.peer),
                     Cell::label(metric_label(c)),
                     Cell{bytes_label(c.bytes), double(c.bytes)},
                     Cell::label(c.test),
                     Cell::label(c.layer),
                     Cell{std::to_string(c.rounds), double(c.rounds)},
                     ratio_cell(c.ratio_median),
                     ratio_cell(c.ratio_min),
                     ratio_cell(c.ratio_max),
                     std::isfinite(spread) ? Cell{fmt::format("{:.0f}%", 100 * spread), spread} : Cell::number(kNaN, 0),
                     ratio_cell(c.fast.median),
                     count_cell(c.fast.rounds),
                     ratio_cell(c.slow.median),
                     count_cell(c.slow.rounds)};
        beyond_bulk |= c.metric == "bandwidth_mb_s" && c.rounds == 0;
        t.rows.push_back(row);
    }
    t.notes.push_back("spread = (max - min) / median of the per-round ratios.");
    for (auto &n : placement_notes(x)) t.notes.push_back(n);
    if (beyond_bulk)
        t.notes.push_back("A size with 0 rounds is beyond our layer's largest bulk message (1 MB), or the peer did "
                          "not measure it (see its status in the peers table).");
    return t;
}

} // namespace logp
