// peer_shm.hpp - the shared-memory peers built in bench/peers: fi_shm_bench
// (libfabric's shm provider) and mpi_shm_bench (Open MPI's vader BTL, run
// under mpirun).  Each prints one JSON object per metric, e.g.
//   {"peer":"openmpi-shm","tool":"mpi_shm_bench","metric":"rtt_half_us","bytes":16,"median":0.41,...}
// logp runs them with --rounds 1 (they warm up once themselves) between its
// own rounds, so the rounds come from logp's interleaving.
#pragma once

#include "results.hpp"

#include <string>
#include <vector>

namespace logp {

enum class ShmPeer { libfabric, openmpi };

// Where the program is: $LOGP_PEER_DIR, the build tree's bench/peers (set at
// configure time), next to logp, ../libexec/viastack beside it (installed),
// then PATH.  Empty when none has it.
std::string find_peer_program(const std::string &name);

// The program's JSON lines as raw peer metrics (metric names as logp's:
// rtt_half_us, g_us, bandwidth_mb_s:<test>); lines that are not its JSON are skipped.
std::vector<PeerMetric> parse_shm_bench_output(ShmPeer which, const std::string &output);

// One round of every metric; status "not installed" when the program (or
// mpirun) is missing, "failed" with the output's last line when it fails.
PeerResult run_shm_peer(ShmPeer which, long iterations, double timeout_s = 120);

} // namespace logp
