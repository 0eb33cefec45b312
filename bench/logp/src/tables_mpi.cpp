// tables_mpi.cpp - the mpi layer's breakdown: where the time of a 16-byte
// MPI message goes, in MPI_Send (the o_s side) and MPI_Recv (the o_r side),
// below viastack's libfabric provider (VIPL's calls) and above it (Open MPI,
// ofi_rxm and the provider).  See tables.hpp and docs/logp.md.
#include "layer_mpi.hpp"
#include "report.hpp"
#include "tables.hpp"

#include <fmt/format.h>

namespace logp {

Table mpi_breakdown_table(const Report &r) {
    const Breakdown *bd = nullptr;
    for (const auto &x : r.breakdown)
        if (x.name == kMpiBreakdownName) bd = &x;
    Table t;
    t.id = "mpi_breakdown";
    t.title = "MPI over viastack: where a 16-byte message's o_s and o_r go";
    t.caption = "time in MPI_Send and in MPI_Recv of an arrived message, per message, with VIPL's instrumentation on";
    t.columns = {{"part", Align::left, 40},
                 {"ns/msg", Align::right, 9},
                 {"% of o_s + o_r", Align::right, 14},
                 {"count/msg", Align::right, 9}};
    if (!bd || !bd->status.measured()) {
        t.status = bd ? status_text(bd->status) : "not measured (--layers mpi)";
        return t;
    }
    for (const auto &c : bd->categories) {
        t.rows.push_back(
            {RowKind::ours, 0, {Cell::label(c.category), Cell::number(c.ns, 0), Cell::number(c.percent, 1)}, ""});
        for (const auto &it : bd->items)
            if (it.category == c.category)
                t.rows.push_back({RowKind::detail,
                                  1,
                                  {Cell::label(it.operation), Cell::number(it.ns, 0), Cell::number(it.percent, 1),
                                   Cell::number(it.count_per_op, 2)},
                                  ""});
    }
    if (!bd->inner.empty()) {
        t.rows.push_back({RowKind::heading, 0, {}, "inside VIPL's calls (already included above, not added):"});
        for (const auto &it : bd->inner)
            t.rows.push_back(
                {RowKind::detail,
                 1,
                 {Cell::label(it.operation), Cell::number(it.ns, 0), Cell::blank(), Cell::number(it.count_per_op, 2)},
                 ""});
    }
    t.notes.push_back(
        fmt::format("o_s + o_r = {} ns per message over {} messages ({}); the rest, MPI + rxm + provider, "
                    "is that total less VIPL's calls and VIPL's polls that found nothing; each timed VIPL "
                    "call adds ~{} ns of instrumentation, counted in VIPL's part",
                    fmt_num(bd->host_ns, 0), bd->operations, bd->status.note, fmt_num(r.run.instr_scope_ns, 0)));
    return t;
}

} // namespace logp
