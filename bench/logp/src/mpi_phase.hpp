// mpi_phase.hpp - the job's part of the mpi layer (layer_mpi.hpp): rank 0
// runs logp_mpi under mpirun while rank 1 waits, once for the layer's full
// series and breakdown, and once per round of the interleaved comparison
// with its peers (logp --mpi-peers: vader, shm, tcp;ofi_rxm).  Compiled into logp itself (it
// needs LOGP_HAVE_MPI, which says whether logp_mpi was built).
#pragma once

#include "job.hpp"
#include "layer_mpi.hpp"
#include "line_probe.hpp"
#include "measure.hpp"
#include "progress.hpp"
#include "report.hpp"

#include <string>
#include <vector>

namespace logp {

// A full series like the other layers' (the round trips of `cfg`); a round of
// the comparison is about a tenth of it, as measure_round's.
MpiPlan mpi_plan(const MeasureConfig &cfg, bool quick, bool round);

// Adds the mpi layer's status and Table 2 row (and, measured, its bandwidth
// curve and breakdown) to `r` on rank 0.  Collective; true on both ranks when
// the layer was measured.
bool run_mpi_layer(const Job &job, bool asked, const MpiPlan &plan, Report &r, Progress &progress);

// One round of the comparison, each run after its own raw-line probe:
// logp_mpi over viastack, then over every peer in `peers`, set against the
// viastack run of the same round.  peer_results: one list per peer, in the
// order of `peers`, on rank 0.  Collective.
void run_mpi_round(const Job &job, const MpiPlan &plan, const std::vector<MpiTransport> &peers, int round,
                   LineProbe &line, std::vector<std::vector<PeerResult>> &peer_results, Interleaved &x,
                   Progress &progress, const std::string &label);

} // namespace logp
