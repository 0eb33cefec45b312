// layer_mpi.hpp - logp's `mpi` layer: MPI point-to-point through Open MPI,
// measured by the program logp_mpi (bench/logp/mpi/logp_mpi.c) under mpirun,
// because an MPI job cannot live inside logp's own two processes.  Rank 0 of
// logp starts it (rank 1 waits in a barrier, as for the peers).  The same
// program runs over viastack (ours: mtl:ofi over viastack;ofi_rxm,
// docs/mpi.md) and, as peers, Open MPI's vader (pml ob1, btl self,vader),
// libfabric's shm under the same mtl:ofi (the floor of that route: a native,
// tuned FI_EP_RDM + FI_TAGGED provider; mpi/mtl_ofi_shm.c preloaded) and
// tcp;ofi_rxm (mtl:ofi, FI_PROVIDER=tcp).
#pragma once

#include "peer_rounds.hpp"
#include "results.hpp"

#include <map>
#include <string>
#include <vector>

namespace logp {

enum class MpiTransport { viastack, vader, shm, tcp };

// "viastack;ofi_rxm", "vader", "shm", "tcp;ofi_rxm".
std::string mpi_transport_name(MpiTransport t);

// The peers of logp's --mpi-peers: a comma-separated list of vader, shm and
// tcp, each at most once, in the order given, or "none".  False, with a
// message naming the bad item and the known ones, for anything else.
inline constexpr const char *kMpiPeersDefault = "vader,shm,tcp";
bool parse_mpi_peers(const std::string &list, std::vector<MpiTransport> *out, std::string *error);

struct MpiPlan {
    long iterations = 20000;
    long bulk_mb = 64;  // payload per bandwidth stream
    bool round = false; // RTT/2, g and the comparison sizes only (logp_mpi --round)
    double timeout_s = 180;
};

// What one run of logp_mpi printed.
struct MpiRun {
    Status status;
    std::map<std::string, double> metrics; // "rtt_half_us", "o_s_us", "o_r_us", "g_us", "o_s_single_us" (16 B)
    std::map<std::string, double> spreads; // relative IQR where printed (rtt_half_us, o_r_us)
    std::vector<BandwidthPoint> bandwidth; // bw_MBps per size
    std::string breakdown_line;            // the "breakdown" JSON object, as printed
};

// Where logp_mpi is (find_peer_program's places); "" when not built.
std::string find_logp_mpi();

// The program's output (lines that are not its JSON are skipped).
MpiRun parse_logp_mpi_output(const std::string &output);

// Runs logp_mpi under mpirun over `t`, bound as the ranks are (job_cpus()),
// without the vipl-run job's variables (the provider's VIPL boots from
// mpirun's PMIx), removing the nicfw wire files a viastack run leaves.
MpiRun run_logp_mpi(MpiTransport t, const MpiPlan &plan);

// Table 2's row: L = RTT/2 - o_s - o_r (o_r the whole receive, as for
// providers other than nicfw's in-process layers; see docs/logp.md).
LogPRow mpi_logp_row(const MpiRun &run, double vi_rtt_half_us);
BandwidthCurve mpi_bandwidth_curve(const MpiRun &run);
// Where o_s and o_r go: the per-message time in MPI_Send and MPI_Recv, the
// part below the provider (vipl.* counters), VIPL's polls that found nothing,
// and the rest, "MPI + rxm + provider".
Breakdown mpi_breakdown(const MpiRun &run);
inline constexpr const char *kMpiBreakdownName = "mpi-send-recv";

// The figures of one interleaved round (layer "mpi"), and the same run as a peer's result.
std::vector<OurFigure> mpi_figures(const MpiRun &run);
PeerResult mpi_peer_result(MpiTransport t, const MpiRun &run);
// The peer tool name of a transport in the interleaved table ("logp_mpi vader").
std::string mpi_peer_tool(MpiTransport t);

} // namespace logp
