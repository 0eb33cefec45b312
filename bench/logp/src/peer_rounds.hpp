// peer_rounds.hpp - the interleaved comparison with the peers: logp runs a
// round of its own figures, then one round of every peer, and again, N
// times; each round's ratio ours/peer is a paired comparison (both halves
// saw the same state of the machine).  This file holds the bookkeeping; the
// job that runs the rounds is in main.cpp, the table in tables_peers.cpp.
#pragma once

#include "line_probe.hpp"
#include "results.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace logp {

// One figure of ours in one round.
struct OurFigure {
    std::string layer;  // "vi", "am-v3"
    std::string metric; // "rtt_half_us", "g_us", "bandwidth_mb_s"
    std::size_t bytes = 0;
    double value = kNaN;
};

// The sizes of the bandwidth comparison (the peers' sizes).
const std::vector<std::size_t> &comparison_sizes();

// Which layer of ours a peer's bandwidth test is set against: one-sided
// writes (ucp_put_bw, fi_write, ib_write_bw) against VI's RDMA-write stream,
// message streams (ucp_am_bw, MPI_Isend) against AM's bulk transfer.
std::string layer_for_bandwidth_test(const std::string &test);
// Whether a peer's bandwidth test is set against this layer's bulk curve in
// the interleaved rounds: one-sided writes against every layer that moves
// bulk data by RDMA (VI's RDMA write, AM long, Split-C bulk_put), message
// streams against AM.
// logp_mpi's bandwidth test, run over every MPI transport.
inline constexpr const char *kMpiStreamTest = "MPI stream";
bool compares_bandwidth(const std::string &test, const std::string &layer);

// Records round `round` (0-based) of one peer against our figures of the
// same round.  RTT/2 and g are set against every layer of ours in `ours`.
// line_ours_ns / line_peer_ns: the raw cache line measured right before our
// half and right before this peer's run (LineProbe; NaN when not measured).
void add_round(Interleaved &cmp, int round, const std::vector<OurFigure> &ours, const std::string &peer_tool,
               const std::vector<PeerMetric> &peer_metrics, double line_ours_ns = kNaN, double line_peer_ns = kNaN);

// Fills rounds, ratio_median/min/max of every comparison from its per-round
// ratios, then classifies the rounds by placement (classify_placements).
void summarize_rounds(Interleaved &cmp);

// Placement classes.  The VM moves its vCPUs between placements in which a
// cross-core cache line costs several times more or less; a ratio of a
// round is only comparable with rounds of the same placement.  The
// threshold comes from the run's own line_ns (line_threshold, line_probe.hpp).
// A round of a comparison is "fast" or "slow" when both its measurements
// (before ours, before the peer) fall in that class, "mixed" when they
// differ, "" when one is missing.  Fills placement, fast, slow, mixed_rounds
// of every comparison and the run's threshold and round counts.
void classify_placements(Interleaved &cmp);

// The peer's figures over all its rounds: each metric's median, the
// bandwidth curve from those medians, the status of the last round that
// measured (or of the last round when none did).
PeerResult merge_peer_rounds(const std::vector<PeerResult> &rounds);

} // namespace logp
