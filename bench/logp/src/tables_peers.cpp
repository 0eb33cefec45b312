// tables_peers.cpp - the interleaved comparison with the peers (see
// peer_rounds.hpp), built into the table model like every other table.
#include "tables.hpp"

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

}  // namespace

Table interleaved_table(const Report &r) {
    const Interleaved &x = r.interleaved;
    Table t;
    t.id = "interleaved";
    t.title = fmt::format("Ours against the peers, interleaved: ratio ours/peer per round, {} round{}", x.rounds,
                          x.rounds == 1 ? "" : "s");
    t.caption = "Each round measures our layer, then every peer, on the same machine state; the ratio of a round is "
                "ours divided by the peer's figure of that round.  For RTT/2 and g below 1 means ours is faster; for "
                "bandwidth above 1 means ours moves more.  median, min and max are over the rounds in which both "
                "were measured (column 'rounds').";
    if (!x.status.measured()) t.status = status_text(x.status);
    t.columns = {{"peer", Align::left, 13},  {"metric", Align::left, 16}, {"size", Align::right, 6},
                 {"test", Align::left, 10},  {"ours", Align::left, 5},    {"rounds", Align::right, 6},
                 {"median", Align::right, 7}, {"min", Align::right, 7},   {"max", Align::right, 7},
                 {"spread", Align::right, 6}};
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
                     std::isfinite(spread) ? Cell{fmt::format("{:.0f}%", 100 * spread), spread} : Cell::number(kNaN, 0)};
        beyond_bulk |= c.metric == "bandwidth_mb_s" && c.rounds == 0;
        t.rows.push_back(row);
    }
    t.notes.push_back("spread = (max - min) / median of the per-round ratios.");
    if (beyond_bulk)
        t.notes.push_back("A size with 0 rounds is beyond our layer's largest bulk message (1 MB), or the peer did "
                          "not measure it (see its status in the peers table).");
    return t;
}

}  // namespace logp
