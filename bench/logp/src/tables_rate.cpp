// tables_rate.cpp - the message-rate sweep (measure_rate.cpp; ucx_perftest's
// ucp_am_bw -O W beside it) built into the table model: one row per layer or
// peer test with the rate at every window, and a detail row in us/message.
#include "report.hpp"
#include "tables.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace logp {

Table rate_table(const Report &r) {
    Table t;
    t.id = "rate";
    t.title = "Message rate by window (16-byte messages; million messages/s, us/message below)";
    t.caption = "Window W: our layers send W messages back to back, then wait for the receiver's confirmation "
                "(osu_mbw_mr's scheme), so at W = 1 every message pays a round trip and at large W the rate "
                "approaches 1/g.  ucx_perftest ucp_am_bw -O W instead bounds the sends not yet completed (a sliding "
                "window of local completions; a short AM over shared memory completes when it is copied out).";
    if (r.rate_sweep.empty()) t.status = "not measured";
    std::vector<int> windows;
    for (const auto &s : r.rate_sweep)
        for (const auto &p : s.points)
            if (std::find(windows.begin(), windows.end(), p.window) == windows.end()) windows.push_back(p.window);
    std::sort(windows.begin(), windows.end());
    t.columns = {{"layer", Align::left, 24}};
    for (int w : windows) t.columns.push_back({fmt::format("W={}", w), Align::right, 7});
    bool wide = false;
    for (const RateSweep *sp : ours_then_peers(r.rate_sweep)) {
        const RateSweep &s = *sp;
        const std::string name = s.peer ? s.layer : s.layer + " (ours)";
        if (!s.status.measured()) {
            t.rows.push_back({RowKind::status, 0, {Cell::label(name)}, status_text(s.status)});
            continue;
        }
        Row rate{s.peer ? RowKind::peer : RowKind::ours, 0, {Cell::label(name)}, ""};
        Row us{RowKind::detail, 1, {Cell::label("us/message")}, ""};
        for (int w : windows) {
            const RatePoint *pt = nullptr;
            for (const auto &p : s.points)
                if (p.window == w) pt = &p;
            Cell c = Cell::number(pt ? pt->msg_rate_m_s : kNaN, 2);
            if (pt && pt->spread > r.run.max_spread) {
                c.text += "*";
                wide = true;
            }
            rate.cells.push_back(c);
            us.cells.push_back(Cell::number(pt ? pt->us_per_msg : kNaN, 3));
        }
        t.rows.push_back(rate);
        t.rows.push_back(us);
    }
    if (wide) t.notes.push_back(fmt::format("(* = spread above {:.0f}%: not to be trusted)", 100 * r.run.max_spread));
    std::vector<std::string> methods; // one note per distinct method
    for (const auto &s : r.rate_sweep) {
        if (!s.status.measured() || s.method.empty()) continue;
        const std::string note = (s.peer ? s.layer : std::string("ours")) + ": " + s.method;
        if (std::find(methods.begin(), methods.end(), note) == methods.end()) methods.push_back(note);
    }
    t.notes.insert(t.notes.end(), methods.begin(), methods.end());
    t.plot = "rate";
    return t;
}

} // namespace logp
