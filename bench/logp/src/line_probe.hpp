// line_probe.hpp - the raw cross-core cache-line ping-pong between the job's
// two ranks: one 64-byte line in shared memory, written by each rank in turn.
// Its one-way time is what moving a cache line from one CPU to the other costs
// in the placement the machine has at that moment, the floor of any
// shared-memory transport (vi_pingpong prints the same figure as "raw
// cache-line RTT/2").  The interleaved comparison measures it right before our
// half of every round and before every peer's run, to tell which placement of
// the VM's vCPUs each round saw (docs/logp.md, "Placement classes").
// Also used by bench/threads (vi_thread_rate), which links this file, the job
// and the statistics as the small library logp_line.
#pragma once

#include "job.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace logp {

class LineProbe {
public:
    // Collective: rank 0 creates /dev/shm/viastack-<job>-logp-line, rank 1 maps
    // it.  Throws std::runtime_error naming the file when it cannot.  In a
    // single-process job the probe measures nothing (measure() returns NaN).
    explicit LineProbe(const Job &job);
    ~LineProbe();
    LineProbe(const LineProbe &) = delete;
    LineProbe &operator=(const LineProbe &) = delete;

    // Collective: `blocks` timed blocks of `per_block` round trips after a
    // warm-up block; returns on both ranks the one-way time in ns, the median
    // block's time / (2 * per_block).  A block is timed as a whole, so the clock
    // adds nothing per round trip, and a block the OS interrupted is outvoted.
    double measure(int blocks = 15, int per_block = 200);

    // A flag on a line of its own, for handing a CPU over without sleeping:
    // signal() stores v; wait_yielding(v) calls sched_yield until the flag is
    // at least v (so a thread moved onto this CPU runs meanwhile, and the CPU
    // never goes idle, which on a VM may move the vCPU), and throws after
    // timeout_s.  Not collective.
    void signal(std::uint64_t v);
    void wait_yielding(std::uint64_t v, double timeout_s = 30);

    // The same ping-pong between the calling thread and a thread it starts for
    // the measurement, on a line of this process: what moving a line between
    // the CPUs the two threads run on costs, for a program whose two ends are
    // threads of one process.  Not collective; needs no job.
    static double measure_threads(int blocks = 15, int per_block = 200);

private:
    const Job &job_;
    void *page_ = nullptr;
    std::uint64_t seq_ = 0; // the line's value after the last exchange (2 per round trip)
};

// Placement classes (docs/logp.md): the VM moves its vCPUs between
// placements in which a cross-core cache line costs several times more or
// less.  The threshold comes from a run's own one-way line times: sorted, the
// widest gap (as a ratio of neighbours) of at least kPlacementGap splits them
// into two groups and the threshold is the geometric mean of the gap's ends
// ("gap"); without such a gap every line is classed against
// kFixedLineThresholdNs ("fixed").  A line at or above it is "slow".
inline constexpr double kPlacementGap = 2.0;
inline constexpr double kFixedLineThresholdNs = 120.0;
// The threshold of a set of one-way line times (non-positive and NaN ones
// ignored), and where it came from.
double line_threshold(std::vector<double> line_ns, std::string *source);

} // namespace logp
