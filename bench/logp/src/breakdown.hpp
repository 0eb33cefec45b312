// breakdown.hpp - per-primitive host-overhead breakdowns (Begel et al., Tables 3
// and 4) from the instrumentation counters (vipl_instr.h) of both ranks.
#pragma once

#include "job.hpp"
#include "results.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace logp {

struct CounterTotal {
    std::string name;
    int category = 0;
    std::uint64_t count = 0, cycles = 0;
};

std::vector<CounterTotal> local_counters();
// Collective: every rank's counters summed by name, complete on rank 0.
std::vector<CounterTotal> job_counters(const Job &job);

// Groups counters into categories, per measured operation, with the paper's
// percentages (paper_table: {"categories": {...}, "items": [...]}, or null).
// Counters named "<prefix>..." are the layer's own primitives (the rows);
// every other counter (lower layers timed inside them, the firmware) goes to
// `inner`.  An empty prefix, or one no counter has, takes every host counter.
Breakdown make_breakdown(const std::string &name, const std::string &layer, const std::vector<CounterTotal> &counters,
                         std::uint64_t operations, double cycles_per_ns, const nlohmann::json *paper_table,
                         const std::string &prefix = "");

// This process's time so far in the send path of the layers above VIPL
// (their "VipPostSend", "Build send descriptors", "Send bookkeeping",
// "VipSendDone", "Recycle send descriptor", "VipCQDone (Send)" counters; the
// vipl.* counters nested inside them are not added again), in ns.  A layer
// reads it around a timed receive to tell o_r(reply) from o_r(request).
// Allocates: never call it inside a timed interval.
double send_path_ns();

// Cost of one timed scope with the instrumentation on (ns), measured now.
double measure_instr_scope_ns();

} // namespace logp
