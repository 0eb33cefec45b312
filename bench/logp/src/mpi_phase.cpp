// mpi_phase.cpp - see mpi_phase.hpp.
#include "mpi_phase.hpp"

#include "peer_rounds.hpp"
#include "viastack_log.hpp"

#include <algorithm>

namespace logp {

MpiPlan mpi_plan(const MeasureConfig &cfg, bool quick, bool round) {
    MpiPlan p;
    p.iterations = round ? std::max(100, cfg.iterations / 10) : std::max(100, cfg.iterations);
    p.bulk_mb = quick || round ? 8 : 64;
    p.round = round;
    return p;
}

bool run_mpi_layer(const Job &job, bool asked, const MpiPlan &plan, Report &r, Progress &progress) {
    LogPRow row;
    row.layer = "mpi";
#ifndef LOGP_HAVE_MPI
    (void)asked;
    (void)plan;
    (void)progress;
    row.status = {"not built", "Open MPI (libopenmpi-dev) was not found when this build was configured"};
#else
    if (!asked) {
        row.status = {"skipped", "not in --layers"};
    } else if (job.is_root()) {
        progress.note("mpi: logp_mpi over " + mpi_transport_name(MpiTransport::viastack));
        const MpiRun run = run_logp_mpi(MpiTransport::viastack, plan);
        row = mpi_logp_row(run, r.vi_baseline.rtt_half_16_us);
        if (run.status.measured()) {
            r.bandwidth.push_back(mpi_bandwidth_curve(run));
            r.breakdown.push_back(mpi_breakdown(run));
        } else {
            progress.clear();
            viastack::log::warn(viastack::log::Layer::logp, "mpi: {}", run.status.note);
        }
    }
    if (asked) job.barrier();
#endif
    r.layers.push_back({"mpi", row.status});
    r.logp.push_back(row);
    return job.bcast_double(row.status.measured() ? 1 : 0, 0) != 0;
}

void run_mpi_round(const Job &job, const MpiPlan &plan, const std::vector<MpiTransport> &peers, int round,
                   LineProbe &line, std::vector<std::vector<PeerResult>> &peer_results, Interleaved &x,
                   Progress &progress, const std::string &label) {
    const double line_ours = line.measure();
    std::vector<OurFigure> ours;
    if (job.is_root()) {
        ours = mpi_figures(run_logp_mpi(MpiTransport::viastack, plan));
        progress.step(label + "mpi");
    }
    job.barrier();
    for (std::size_t i = 0; i < peers.size(); ++i) {
        const double line_peer = line.measure();
        if (job.is_root()) {
            const MpiRun run = run_logp_mpi(peers[i], plan);
            const PeerResult p = mpi_peer_result(peers[i], run);
            if (p.status.measured()) add_round(x, round, ours, p.tool, p.metrics, line_ours, line_peer);
            peer_results[i].push_back(p);
            progress.step(label + p.tool);
        }
        job.barrier();
    }
}

} // namespace logp
