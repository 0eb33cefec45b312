// measure.hpp - the measurement loops, generic over Layer (see layer.hpp and,
// for the LogP method, logp_method.hpp).  Both ranks call the same function
// with the same configuration; results are complete on rank 0 only.
#pragma once

#include "job.hpp"
#include "layer.hpp"
#include "logp_method.hpp"
#include "peer_rounds.hpp"
#include "progress.hpp"
#include "results.hpp"
#include "stats.hpp"

#include <cstddef>
#include <vector>

namespace logp {

struct MeasureConfig {
    int warmup = 2000;      // untimed round trips / bursts before each series
    int iterations = 20000; // timed round trips
    int burst_reps = 200;   // timed bursts per burst size
    int recv_probes = 3000; // timed receives for o_r
    int bw_reps = 15;       // timed streams per message size
    // 4 B ... 32 KB are the paper's Figure 5; 64 KB ... 1 MB go beside the peers'
    // curves and fill the interleaved 256 KB and 1 MB rows.
    std::size_t bw_min_bytes = 4, bw_max_bytes = 1 << 20;
    // Data moved by one timed stream (bounded by the counts below): short streams,
    // well under a scheduler time slice, repeated, so a preempted one is an outlier
    // the median drops instead of the norm.
    std::size_t bw_stream_bytes = 512 << 10;
    int bw_min_count = 32, bw_max_count = 2000;
    // Message-rate sweep: windows 1, 2, 4 ... rate_max_window (at most the
    // layer's max_burst), about rate_msgs messages per timed stream, bw_reps streams.
    int rate_max_window = 64;
    int rate_msgs = 4096;
    SpreadPolicy policy;
    // The wire is this host's shared memory (nicfw): a message reaches the
    // receiver as cache lines the sender's CPU wrote, and the o_r probe takes
    // the transfer of one line (the packet's FIFO slot) out of o_r into L
    // (measure_logp, docs/logp.md "L on one host").
    bool shared_memory_wire = false;
    bool quick = false;
    // A timed burst during which the OS took the CPU from the sender or the
    // receiver times the scheduler, not the network: it is run again, up to
    // this many times, before it is kept (flagged, see keep_clean).  A long
    // burst can last a whole scheduler tick (128 AM requests each answered by
    // a reply take 3.9 ms under the lanai7 cost model), so on a shared
    // machine most first tries are preempted (docs/cost-model.md).
    int burst_repeats = 8;
    // ... and so is a steady-state burst in which 4 consecutive sends took
    // longer than this or 4 round trips, whichever is more: a pause of the whole VM (both
    // ranks stop in step, every 4 ms here) that getrusage may not count.
    double stall_min_ns = 1e6;
    // The calling thread's involuntary context switches so far; nullptr:
    // getrusage (timer.hpp).  A test hook.
    long (*preemptions)() = nullptr;
};

// Quick: a short run for smoke tests and a first look (about 10x fewer iterations).
MeasureConfig quick_config();
MeasureConfig full_config();

// Half round trip of a `bytes` message: median and its summary (rank 0).
Summary measure_rtt(Layer &layer, const Job &job, const MeasureConfig &cfg, std::size_t bytes);

// The LogP parameters of the layer (Culler et al.); delta_us is left for the caller.
LogPRow measure_logp(Layer &layer, const Job &job, const MeasureConfig &cfg, Progress &progress);

// Message sizes of the bandwidth sweep: powers of two from min to max (inclusive).
std::vector<std::size_t> bandwidth_sizes(std::size_t min_bytes, std::size_t max_bytes);

// Streaming bandwidth for every size, plus the FM metrics (t0, r_inf, n_1/2).
BandwidthCurve measure_bandwidth(Layer &layer, const Job &job, const MeasureConfig &cfg, Progress &progress);

// One round of the figures compared with the peers (peer_rounds.hpp): RTT/2
// and g of 16-byte messages, and the streaming bandwidth at each of `sizes`
// the layer can send (cfg's iterations, burst_reps and bw_reps set the
// round's length).  g is the slope of T(M) between the layer's shortest
// steady-state burst and its longest, as in measure_logp.  Complete on rank 0.
std::vector<OurFigure> measure_round(Layer &layer, const Job &job, const MeasureConfig &cfg,
                                     const std::vector<std::size_t> &sizes);

// Windows of the message-rate sweep: 1, 2, 4, ... up to max_window.
std::vector<int> rate_windows(int max_window);

// Message rate with W messages in flight, for every window (measure_rate.cpp):
// a timed stream repeats [W burst_send_one, burst_sender_finish(W)] (the
// receiver confirms each window), so 1/rate includes the confirmation and at
// W = 1 every message is a round trip.  Complete on rank 0.
RateSweep measure_rate_sweep(Layer &layer, const Job &job, const MeasureConfig &cfg, Progress &progress);

// Fills the FM metrics of a curve from its points (status "failed" with the reason if the fit is impossible).
void fit_curve(BandwidthCurve &curve);

} // namespace logp

namespace logp {
// Host-overhead breakdown of the layer's breakdown operation (both ranks'
// instrumentation counters, per operation).  Status "skipped" when the layer
// has none, "failed" when no instrumented primitive ran.
Breakdown measure_breakdown(Layer &layer, const Job &job, const MeasureConfig &cfg, Progress &progress);
} // namespace logp
