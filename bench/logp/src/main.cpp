// logp - the viastack LogP benchmark suite (Begel et al., Tables 1-5, Figures 2
// and 5, measured on this machine next to the paper's published figures).
//
//   logp [--quick] [--out DIR] [--json FILE] [--layers vi,am-v3,...]
//
// Run as a user command it starts itself as a two-process job under
// vipl-run (found next to it in the build tree or on PATH).  After the
// layers, the job compares VI and AM with the peers in interleaved rounds
// (ours, every peer, ours, ... --rounds N; rank 1 waits while rank 0 runs a
// peer).  Inside the job, rank 0 writes the terminal report, DIR/report.md with the plots,
// and the JSON.  docs/logp.md documents the method, the options and the schema.
#include "vipl_wait.h"
#include "breakdown.hpp"
#include "job.hpp"
#include "layer_synthetic.hpp"
#include "mpi_phase.hpp"
#include "layering_study.hpp"
#include "layers.hpp"
#include "line_probe.hpp"
#include "measure.hpp"
#include "paper.hpp"
#include "peer_perftest.hpp"
#include "peer_rounds.hpp"
#include "peer_shm.hpp"
#include "peer_ucx.hpp"
#include "report.hpp"
#include "results_json.hpp"
#include "subprocess.hpp"
#include "timer.hpp"
#include "viastack_log.hpp"
#include "vipl_boot.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>

namespace fs = std::filesystem;
using namespace logp;

namespace {

struct Options {
    bool quick = false;
    std::string out_dir = "logp-report";
    std::string json_path;
    std::string layers = "vi,am-v3,am-v1,fm,bip,splitc,mpi";
    std::string synthetic;
    std::string profile; // --profile: VIPL_NICFW_PROFILE for the job
    int iterations = 0, warmup = 0;
    bool no_peers = false;
    bool no_layering = false; // the layering study runs when fm is in --layers
    int rounds = 0;           // interleaved comparison rounds (0: 5, quick 3)
    std::string device;
    double max_spread = 0.25;
    bool no_launch = false;
    std::string from_json;
    std::string vipl_run;
    int job_timeout = 0;
    std::string bind = "core";
    std::string mpi_peers = kMpiPeersDefault; // the mpi layer's interleaved peers
    std::string command_line;
};

std::vector<std::string> split_list(const std::string &s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty()) out.push_back(item);
    return out;
}

std::string utc_now() {
    std::time_t t = std::time(nullptr);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
    return buf;
}

std::string host_name() {
    char buf[256] = {0};
    gethostname(buf, sizeof buf - 1);
    return buf;
}

std::string self_exe() {
    std::error_code ec;
    fs::path p = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : p.string();
}

MeasureConfig config_of(const Options &o) {
    MeasureConfig c = o.quick ? quick_config() : full_config();
    if (o.iterations > 0) c.iterations = o.iterations;
    if (o.warmup > 0) c.warmup = o.warmup;
    if (o.iterations > 0 && o.iterations < 100) { // tiny runs (smoke tests): shrink everything
        c.burst_reps = std::max(3, o.iterations / 4);
        c.recv_probes = std::max(5, o.iterations / 2);
        c.bw_reps = 2;
        c.bw_stream_bytes = 64 << 10;
        c.bw_min_count = 8;
        c.bw_max_count = 64;
        c.rate_msgs = 256;
    }
    c.policy.max_spread = o.max_spread;
    return c;
}

RunInfo run_info(const Options &o, const MeasureConfig &c) {
    RunInfo r;
    r.date_utc = utc_now();
    r.host = host_name();
    r.command = o.command_line;
    r.quick = o.quick;
    r.iterations = c.iterations;
    r.warmup = c.warmup;
    r.tsc_ghz = vipl_instr_cycles_per_ns();
    r.max_spread = c.policy.max_spread;
    r.instr_scope_ns = measure_instr_scope_ns();
    r.timer_ns = timer_cost_ns();
    return r;
}

// The clock check: the run's length by the TSC at the calibrated rate against
// CLOCK_MONOTONIC over the same interval (from run_info to the report).
struct ClockCheck {
    std::uint64_t t0 = ticks();
    std::chrono::steady_clock::time_point m0 = std::chrono::steady_clock::now();
    void finish(Report &r) const {
        const double mono = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - m0).count();
        const double tsc = ticks_to_ns(ticks() - t0);
        if (mono < 1e8) return; // under 0.1 s says nothing
        r.run.tsc_vs_monotonic = tsc / mono;
        if (std::abs(r.run.tsc_vs_monotonic - 1) > 0.02)
            r.warnings.push_back(fmt::format("clock: over the run the TSC at its calibrated {:.3f} GHz counted {:.3f}x "
                                             "the time CLOCK_MONOTONIC did; every time in this report is off by that "
                                             "factor (set VIASTACK_TSC_GHZ, docs/instrumentation.md)",
                                             r.run.tsc_ghz, r.run.tsc_vs_monotonic));
    }
};

void emit(Report &r, const Options &o, double memcpy_us) {
    finalize_report(r, memcpy_us);
    print_report(r, stdout);
    if (!o.json_path.empty()) {
        write_json_file(r, o.json_path);
        fmt::print("JSON written to {}\n", o.json_path);
    }
    ReportFiles files = write_report_files(r, o.out_dir);
    for (const auto &p : files.problems) viastack::log::warn(viastack::log::Layer::logp, "{}", p);
    fmt::print("Report: {} ({} plots as SVG and PNG, JSON in {}/logp.json)\n", files.markdown, files.images.size() / 2,
               o.out_dir);
}

// ---- the peers, interleaved with our own rounds ------------------------------
// The peer follows the provider: ucx_perftest, libfabric's shm provider and
// Open MPI's shared memory next to the nicfw emulator (all on this host's
// memory, as the emulator is); perftest on the RDMA device next to verbs.
bool verbs_provider(const Options &o) {
    const char *p = std::getenv("VIPL_PROVIDER");
    if (p && std::string(p) == "verbs") return true;
    return !o.device.empty() && o.device.rfind("nicfw", 0) != 0;
}

// One round of one peer each; run by rank 0 only.
std::vector<std::function<PeerResult()>> peer_runners(const Options &o) {
    std::vector<std::function<PeerResult()>> out;
    if (verbs_provider(o)) {
        PerftestPlan plan;
        plan.device = o.device;
        plan.iterations = o.quick ? 1000 : 5000;
        plan.bw_sizes = comparison_sizes();
        out.push_back([plan] { return run_perftest_peer(plan); });
        return out;
    }
    UcxPlan plan;
    plan.iterations = o.quick ? 3000 : 20000;
    plan.warmup = o.quick ? 300 : 2000;
    plan.put_sizes = comparison_sizes();
    if (!o.quick) plan.am_sizes = comparison_sizes();
    out.push_back([plan] { return run_ucx_peer(plan); });
    const long iters = o.quick ? 3000 : 20000;
    out.push_back([iters] { return run_shm_peer(ShmPeer::libfabric, iters); });
    out.push_back([iters] { return run_shm_peer(ShmPeer::openmpi, iters); });
    return out;
}

// Our half of one round: VI, AM and Split-C each opened, measured and closed
// again (so no emulated NIC runs while a peer is measured).
std::vector<OurFigure> measure_our_round(const Job &job, const std::vector<const LayerFactory *> &ours,
                                         const MeasureConfig &rc, const LayerOptions &lopt, Progress &progress,
                                         const std::string &round_label) {
    std::vector<OurFigure> figures;
    for (const LayerFactory *f : ours) {
        std::unique_ptr<Layer> layer;
        std::string error;
        try {
            layer = f->make(job, lopt);
        } catch (const std::exception &e) { error = e.what(); }
        if (!job.all(error.empty()))
            throw std::runtime_error(f->id + " could not be reopened for the comparison: " + error);
        auto v = measure_round(*layer, job, rc, comparison_sizes());
        figures.insert(figures.end(), v.begin(), v.end());
        job.barrier();
        layer.reset();
        progress.step(round_label + f->id);
    }
    return figures;
}

// The peers' half of one round: before each peer both ranks measure the raw
// line, then rank 0 runs the peer while rank 1 sleeps in a barrier (the
// peers' processes are bound to the ranks' CPUs, subprocess.hpp).
struct PeerRunners {
    std::vector<std::function<PeerResult()>> run; // rank 0 only
    std::vector<std::vector<PeerResult>> results;
    std::vector<bool> absent;
};

void run_peers_round(const Job &job, int round, const std::vector<OurFigure> &figures, double line_ours,
                     LineProbe &line, PeerRunners &peers, Interleaved &x, Progress &progress,
                     const std::string &round_label) {
    const int n = int(job.bcast_double(double(peers.run.size()), 0));
    for (int i = 0; i < n; ++i) {
        if (job.bcast_double(job.is_root() && !peers.absent[std::size_t(i)] ? 1 : 0, 0) == 0) continue;
        const double line_peer = line.measure();
        if (job.is_root()) {
            PeerResult p = peers.run[std::size_t(i)]();
            peers.absent[std::size_t(i)] = p.status.state == "not installed" || p.status.state == "skipped";
            if (p.status.measured()) add_round(x, round, figures, p.tool, p.metrics, line_ours, line_peer);
            peers.results[std::size_t(i)].push_back(p);
            progress.step(round_label + p.tool);
        }
        job.barrier();
    }
}

// Rounds of (ours, every peer), each half preceded by the raw cache-line
// ping-pong on the same two CPUs, which tells the placement the round saw.
void run_comparison(const Job &job, const Options &o, const MeasureConfig &cfg, const LayerOptions &lopt, Report &r,
                    Progress &progress, bool mpi) {
    Interleaved &x = r.interleaved;
    if (o.no_peers) {
        x.status = {"skipped", "--no-peers"};
        return;
    }
    const std::vector<LayerFactory> factories = layer_factories();
    std::vector<const LayerFactory *> ours;
    for (const auto &f : factories) {
        if (f.id != "vi" && f.id != "am-v3" && f.id != "splitc") continue;
        bool measured = false;
        for (const auto &l : r.layers) measured |= l.layer == f.id && l.status.measured(); // known on rank 0
        if (job.bcast_double(measured ? 1 : 0, 0) != 0) ours.push_back(&f);
    }
    if (ours.empty() && !mpi) {
        x.status = {"skipped", "none of vi, am-v3, splitc and mpi was measured in this run"};
        return;
    }
    MeasureConfig rc = cfg; // a round is about a tenth of a full series
    rc.iterations = std::max(100, cfg.iterations / 10);
    rc.warmup = std::max(20, cfg.warmup / 10);
    rc.burst_reps = std::max(5, cfg.burst_reps / 4);
    const int rounds = o.rounds > 0 ? o.rounds : (o.quick ? 3 : 5);
    PeerRunners peers;
    if (job.is_root() && !ours.empty()) peers.run = peer_runners(o);
    peers.results.resize(peers.run.size());
    peers.absent.assign(peers.run.size(), false);
    LineProbe line(job);
    std::vector<MpiTransport> mpi_peer_list;
    std::string error;
    if (!parse_mpi_peers(o.mpi_peers, &mpi_peer_list, &error)) throw std::runtime_error(error); // checked in main
    std::vector<std::vector<PeerResult>> mpi_peers(mpi_peer_list.size());
    progress.begin("peers, interleaved",
                   rounds * int(ours.size() + peers.run.size() + (mpi ? 1 + mpi_peer_list.size() : 0)));
    for (int round = 0; round < rounds; ++round) {
        const std::string label = fmt::format("round {}/{}: ", round + 1, rounds);
        if (!ours.empty()) {
            const double line_ours = line.measure();
            const std::vector<OurFigure> figures = measure_our_round(job, ours, rc, lopt, progress, label);
            job.barrier();
            run_peers_round(job, round, figures, line_ours, line, peers, x, progress, label);
        }
        if (mpi)
            run_mpi_round(job, mpi_plan(cfg, o.quick, true), mpi_peer_list, round, line, mpi_peers, x, progress, label);
    }
    // The peer's message rate by window, once, beside our sweeps (rank 1 waits).
    if (job.is_root() && !verbs_provider(o) && !ours.empty()) {
        progress.note("peers: ucp_am_bw by window");
        UcxPlan plan;
        plan.iterations = o.quick ? 3000 : 20000;
        plan.warmup = o.quick ? 300 : 2000;
        r.rate_sweep.push_back(run_ucx_rate_sweep(plan, rate_windows(cfg.rate_max_window)));
    }
    job.barrier();
    progress.end();
    x.rounds = rounds;
    summarize_rounds(x);
    for (const auto &per : peers.results) r.peers.push_back(merge_peer_rounds(per));
    for (const auto &per : mpi_peers)
        if (!per.empty()) r.peers.push_back(merge_peer_rounds(per));
    x.status = x.comparisons.empty() ? Status{"failed", "no peer was measured (see the peers' status below)"}
                                     : Status{"measured", ""};
    const int classed = x.rounds_fast + x.rounds_slow + x.rounds_mixed;
    if (classed > 0 && (x.rounds_fast == classed || x.rounds_slow == classed))
        r.warnings.push_back(fmt::format("interleaved: all {} rounds fell in the {} placement (raw line {} {:.0f} ns); "
                                         "the ratios hold for that placement only",
                                         classed, x.rounds_fast == classed ? "fast" : "slow",
                                         x.rounds_fast == classed ? "below" : "at or above", x.line_threshold_ns));
}

bool mpi_asked(const Options &o) {
    const std::vector<std::string> wanted = split_list(o.layers);
    return std::find(wanted.begin(), wanted.end(), "mpi") != wanted.end();
}

// ---- the synthetic LogP machine (one process, no job) -----------------------
int run_synthetic(const Options &o) {
    SyntheticParams p = parse_synthetic(o.synthetic == "default" ? "" : o.synthetic);
    MeasureConfig cfg = config_of(o);
    Job job = Job::single();
    Progress progress(true);
    Report r;
    r.run = run_info(o, cfg);
    r.provider = {"synthetic", "in-process model", format_synthetic(p), "--synthetic"};
    SyntheticLayer layer(p);
    r.layers.push_back({"synthetic", {"measured", layer.description()}});
    LogPRow row = measure_logp(layer, job, cfg, progress);
    row.expect_o_s_us = p.o_s_us;
    row.expect_o_r_us = p.o_r_us;
    row.expect_g_us = std::max(p.g_us, p.o_s_us);
    row.expect_L_us = p.L_us;
    r.logp.push_back(row);
    BandwidthCurve c = measure_bandwidth(layer, job, cfg, progress);
    r.bandwidth.push_back(c);
    r.rate_sweep.push_back(measure_rate_sweep(layer, job, cfg, progress));
    progress.clear();
    r.vi_baseline.status = {"skipped", "synthetic run (no VI)"};
    r.bulk_difference.status = {"skipped", "synthetic run"};
    fmt::print("synthetic bulk known answer: t0 = {} us, r_inf = {} MB/s, n_1/2 = {} B\n", p.t0_us, p.r_inf_mb_s,
               p.t0_us * p.r_inf_mb_s);
    emit(r, o, measure_memcpy_us(1024));
    return 0;
}

// ---- the job ----------------------------------------------------------------------
[[noreturn]] void fail_job(const Job &job, const std::string &why) {
    viastack::log::set_rank(job.rank()); // "[rank R] logp: ..."
    viastack::log::error(viastack::log::Layer::logp, "{}", why);
    vipl_boot_abort(3, why.c_str());
    std::_Exit(3); // vipl_boot_abort does not return; this keeps [[noreturn]] honest if it ever did
}

std::string find_vipl_run(const Options &o);

// The layering study (layering_study.hpp), once, beside the peers' phase.
void run_layering(const Job &job, const Options &o, Report &r, Progress &progress) {
    const std::vector<std::string> wanted = split_list(o.layers);
    if (o.no_layering || std::find(wanted.begin(), wanted.end(), "fm") == wanted.end()) {
        r.layering.status = {"skipped", o.no_layering ? "--no-layering" : "fm not in --layers"};
        return;
    }
    LayeringPlan plan;
    plan.vipl_run = find_vipl_run(o);
    plan.layering_bw = find_layering_bw(self_exe());
    plan.rounds = o.quick ? 1 : 5;
    plan.mbytes = o.quick ? 0.05 : 4;
    if (const char *e = std::getenv("VIASTACK_BIP_EAGER"); e && *e) plan.bip_eager = std::strtoul(e, nullptr, 0);
    run_layering_phase(job, plan, r, progress);
}

// The provider, its device and profile as the report names them.
void describe_provider(const ProviderFacts &facts, Report &r) {
    r.provider.name = facts.provider.empty() ? "unknown" : facts.provider;
    r.provider.device = facts.device;
    const char *profile = std::getenv("VIPL_NICFW_PROFILE");
    r.provider.profile = profile && *profile ? profile : "none";
    const char *source = std::getenv("LOGP_PROFILE_SOURCE");
    r.provider.profile_source = !(profile && *profile) ? "default" : source && *source ? source : "VIPL_NICFW_PROFILE";
    // The AM burst workload is part of what the figures mean (docs/cost-model.md).
    if (const char *each = std::getenv("LOGP_AM_REPLY_EACH"); each && std::strcmp(each, "1") == 0)
        r.provider.profile_source += "; AM bursts: a reply to every request (LOGP_AM_REPLY_EACH=1)";
    if (!facts.error.empty()) r.warnings.push_back("provider: " + facts.error);
}

// The comparison with the peers and the layering study, after every layer, so
// they know which layers came up.  They need the job's boot service: the
// Split-C runtime's splitc_finalize leaves that to logp, which holds its own
// reference (vipl_boot_init/finalize count their users).  A failure ends the
// job, after rank 0 has written what it has.
void compare_with_peers(Job &job, const Options &o, const MeasureConfig &cfg, const LayerOptions &lopt, Report &r,
                        Progress &progress, bool mpi_measured) {
    try {
        run_comparison(job, o, cfg, lopt, r, progress, mpi_measured);
        run_layering(job, o, r, progress);
    } catch (const std::exception &e) {
        progress.clear();
        if (job.is_root()) {
            r.interleaved.status = {"failed", e.what()};
            try {
                emit(r, o, measure_memcpy_us(1024));
            } catch (...) {}
        }
        fail_job(job, std::string("peer comparison failed: ") + e.what());
    }
}

// Brings layer f up on both ranks and measures it (the index-th of those
// measured, for the progress line): its LogP row, bandwidth and rate sweeps,
// its breakdown and the Split-C operations where it has them.  A layer that
// does not come up on either rank is a "failed" row; a failure while
// measuring ends the job (the peer is inside the same measurement and cannot
// be resynchronized), after rank 0 has written what it has.
LogPRow measure_layer(const LayerFactory &f, int index, Job &job, const Options &o, const MeasureConfig &cfg,
                      const LayerOptions &lopt, Report &r, Progress &progress) {
    const bool root = job.is_root();
    LogPRow row;
    row.layer = f.id;
    std::unique_ptr<Layer> layer;
    std::string error;
    try {
        progress.layer(index, f.id, 2);
        progress.note(f.id + ": connecting");
        layer = f.make(job, lopt);
        // LogP and bandwidth sweeps, and the breakdown where the layer has one.
        progress.layer(index, f.id, layer->breakdown_name().empty() ? 2 : 3);
    } catch (const std::exception &e) { error = e.what(); }
    if (!job.all(error.empty())) {
        row.status = {"failed", error.empty() ? "the peer could not bring the layer up" : error};
        progress.clear();
        if (root) viastack::log::warn(viastack::log::Layer::logp, "{}: {}", f.id, row.status.note);
        return row;
    }
    try {
        if (f.id == "vi") {
            Summary s4 = measure_rtt(*layer, job, cfg, 4);
            r.vi_baseline.rtt_half_min_us = s4.median / 2e3;
            r.vi_baseline.spread = s4.spread();
        }
        row = measure_logp(*layer, job, cfg, progress);
        if (f.id == "vi") {
            r.vi_baseline.rtt_half_16_us = row.rtt_half_us;
            r.vi_baseline.status = {"measured", ""};
        }
        r.bandwidth.push_back(measure_bandwidth(*layer, job, cfg, progress));
        r.rate_sweep.push_back(measure_rate_sweep(*layer, job, cfg, progress));
        if (!layer->breakdown_name().empty()) r.breakdown.push_back(measure_breakdown(*layer, job, cfg, progress));
        if (auto *ops = dynamic_cast<SplitcOpsSource *>(layer.get())) {
            progress.note("splitc: read/write/get/put/store");
            r.splitc_ops = ops->measure_ops(job, cfg.iterations, cfg.warmup);
        }
        job.barrier();
        layer.reset();
    } catch (const std::exception &e) {
        progress.clear();
        if (root) {
            row.status = {"failed", e.what()};
            r.logp.push_back(row);
            r.warnings.push_back(f.id + " failed: " + e.what() + " (skip it with --layers)");
            try {
                emit(r, o, measure_memcpy_us(1024));
            } catch (...) {}
        }
        fail_job(job, f.id + " failed: " + e.what() + " (skip it with --layers)");
    }
    return row;
}

int run_job(const Options &o) {
    Job job = Job::join();
    if (job.size() != 2) {
        if (job.is_root())
            viastack::log::error(viastack::log::Layer::logp,
                                 "needs a job of exactly 2 processes (got {}); run `logp` (it starts "
                                 "`vipl-run -n 2` itself) or `vipl-run -n 2 logp ...`",
                                 job.size());
        return 2;
    }
    MeasureConfig cfg = config_of(o);
    Progress progress(job.is_root());
    LayerOptions lopt{o.device};
    Report r;
    r.run = run_info(o, cfg);
    const ClockCheck clock_check;
    describe_provider(query_provider(lopt), r);
    cfg.shared_memory_wire = r.provider.name == "nicfw"; // L on one host (measure.hpp)

    const std::vector<std::string> wanted = split_list(o.layers);
    auto is_asked = [&](const LayerFactory &f) {
        return std::find(wanted.begin(), wanted.end(), f.id) != wanted.end();
    };
    int to_measure = 0, measuring = -1;
    for (const auto &f : layer_factories()) to_measure += f.built && is_asked(f);
    progress.plan(to_measure);
    for (const auto &f : layer_factories()) {
        LogPRow row;
        row.layer = f.id;
        if (!f.built) row.status = {"not built", f.not_built};
        else if (!is_asked(f)) row.status = {"skipped", "not in --layers"};
        else row = measure_layer(f, ++measuring, job, o, cfg, lopt, r, progress);
        r.layers.push_back({f.id, row.status});
        r.logp.push_back(row);
        if (f.id == "vi" && !row.status.measured()) r.vi_baseline.status = row.status;
    }
    const bool mpi_measured = run_mpi_layer(job, mpi_asked(o), mpi_plan(cfg, o.quick, false), r, progress);
    compare_with_peers(job, o, cfg, lopt, r, progress, mpi_measured);
    if (job.is_root()) {
        progress.clear();
        clock_check.finish(r);
        emit(r, o, measure_memcpy_us(1024));
    }
    vipl_boot_finalize();
    return 0;
}

// ---- re-executing under vipl-run ------------------------------------------------
std::string find_vipl_run(const Options &o) {
    if (!o.vipl_run.empty()) return find_on_path(o.vipl_run);
    if (const char *e = std::getenv("VIPL_RUN"); e && *e) return find_on_path(e);
    fs::path dir = fs::path(self_exe()).parent_path();
    for (fs::path cand : {dir / "vipl-run", dir / "../../vipl/launcher/vipl-run", dir / "../vipl/launcher/vipl-run"}) {
        std::error_code ec;
        if (fs::exists(cand, ec) && access(cand.c_str(), X_OK) == 0) return fs::weakly_canonical(cand, ec).string();
    }
    return find_on_path("vipl-run");
}

int launch(const Options &o, int argc, char **argv) {
    std::string runner = find_vipl_run(o);
    if (runner.empty()) {
        viastack::log::error(viastack::log::Layer::logp,
                             "vipl-run not found next to {} nor on PATH; build the `vipl-run` target, pass "
                             "--vipl-run PATH, or start `vipl-run -n 2 logp ...` yourself",
                             self_exe());
        return 2;
    }
    std::vector<std::string> args = {runner, "-n", "2"};
    // Each rank on a CPU of its own where there are two: left to the scheduler,
    // both ranks sometimes start on one CPU and stay there for a whole series
    // (a round trip then costs two context switches: 5.4 us RTT/2 instead of
    // 0.4 us here), so a figure would depend on where the ranks landed.
    if (o.bind == "core" && vipl_wait::usable_cpus() >= 2) {
        args.push_back("--bind");
        args.push_back("core");
    }
    if (o.job_timeout > 0) {
        args.push_back("--timeout");
        args.push_back(std::to_string(o.job_timeout));
    }
    args.push_back("--"); // everything after it belongs to logp, not to vipl-run
    args.push_back(self_exe());
    for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
    // On a terminal the job's progress line says it all.
    if (!isatty(STDERR_FILENO)) fmt::print(stderr, "logp: starting {} -n 2 {}\n", runner, self_exe());
    pid_t pid = fork();
    if (pid < 0) {
        perror("logp: fork");
        return 2;
    }
    if (pid == 0) {
        std::vector<char *> cargv;
        for (auto &a : args) cargv.push_back(a.data());
        cargv.push_back(nullptr);
        execv(cargv[0], cargv.data());
        perror("logp: exec vipl-run");
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

int main(int argc, char **argv) {
    Options o;
    for (int i = 0; i < argc; ++i) o.command_line += (i ? " " : "") + std::string(argv[i]);
    CLI::App app{"logp - LogP parameters, bandwidth curves and overhead breakdowns of VI, AM, FM, BIP and Split-C "
                 "(Begel et al.), next to the paper's figures and a peer tool"};
    app.add_flag("--quick", o.quick, "short run (about 10x fewer iterations)");
    app.add_option("--out", o.out_dir, "report directory (report.md, plots, logp.json)")->capture_default_str();
    app.add_option("--json", o.json_path, "also write the JSON report here");
    app.add_option("--layers", o.layers, "comma-separated layers to measure: vi, am-v3, am-v1, fm, bip, splitc, mpi")
        ->capture_default_str();
    app.add_option("--synthetic", o.synthetic,
                   "measure only a synthetic LogP machine with known parameters, in one process: "
                   "'default' or o_s=US,o_r=US,g=US,L=US,window=N,t0=US,r_inf=MBPS");
    app.add_option("--profile", o.profile,
                   "nicfw timing profile for the job (sets VIPL_NICFW_PROFILE): none, lanai4, lanai7, file:PATH "
                   "(the cost model, docs/cost-model.md) or synthetic:os=NS,or=NS,L=NS,g=NS");
    app.add_option("--iterations", o.iterations, "timed round trips per series (default 20000, quick 200)")
        ->check(CLI::Range(1, 10000000));
    app.add_option("--warmup", o.warmup, "untimed iterations before each series")->check(CLI::Range(1, 1000000));
    app.add_flag("--no-peers", o.no_peers,
                 "do not run the peers (ucx_perftest, fi_shm_bench, mpi_shm_bench; perftest over verbs)");
    app.add_flag("--no-layering", o.no_layering,
                 "do not run the layering study (bench/layering's jobs; run when fm is in --layers)");
    app.add_option("--rounds", o.rounds, "rounds of the interleaved comparison with the peers (default 5, quick 3)")
        ->check(CLI::Range(1, 100));
    app.add_option("--device", o.device, "VIPL NIC name (default: $VIPL_PROVIDER / nicfw)");
    app.add_option("--max-spread", o.max_spread, "relative IQR above which a number gets a warning")
        ->check(CLI::Range(0.01, 10.0))
        ->capture_default_str();
    app.add_flag("--no-launch", o.no_launch, "do not start vipl-run (measure only what a single process can)");
    app.add_option("--from-json", o.from_json, "re-render the report and plots from an earlier --json file");
    app.add_option("--vipl-run", o.vipl_run, "path of the vipl-run launcher");
    app.add_option("--job-timeout", o.job_timeout, "seconds before vipl-run kills a hung job (passed as --timeout)");
    app.add_option("--bind", o.bind,
                   "core (default): the two ranks on CPUs of their own (vipl-run --bind core) where there are two; "
                   "none: the scheduler places them; the peers' two processes are bound (or not) the same way")
        ->check(CLI::IsMember({"core", "none"}));
    app.add_option("--mpi-peers", o.mpi_peers,
                   "the mpi layer's peers in the interleaved rounds, comma-separated: vader (pml ob1), shm (mtl:ofi "
                   "over libfabric's shm), tcp (mtl:ofi over tcp;ofi_rxm); or none")
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    try {
        if (!o.from_json.empty()) {
            Report r = read_json_file(o.from_json);
            finalize_report(
                r, r.bulk_difference.components.empty() ? measure_memcpy_us(1024) : r.bulk_difference.components[0].us);
            print_report(r, stdout);
            ReportFiles files = write_report_files(r, o.out_dir);
            for (const auto &p : files.problems) viastack::log::warn(viastack::log::Layer::logp, "{}", p);
            fmt::print("Report: {}\n", files.markdown);
            return 0;
        }
        if (!o.synthetic.empty()) return run_synthetic(o);
        if (!o.profile.empty()) { // the job (and vipl-run) inherit it; nicfw refuses a bad one at VipOpenNic
            setenv("VIPL_NICFW_PROFILE", o.profile.c_str(), 1);
            setenv("LOGP_PROFILE_SOURCE", "--profile", 1);
            // Against the paper under the cost model, Split-C/VI reaps through
            // completion queues as the paper's did ([Begel01] Table 4, §8.1;
            // docs/cost-model.md).  An explicit setting wins.
            // Likewise AM's burst sink answers every request with a reply, the
            // workload of the paper's g ([Begel01] §7.4: "send requests must be
            // acknowledged by a reply"); LOGP_AM_REPLY_EACH=0 measures our AM's
            // batched credit return instead.  And Split-C/VI runs with the
            // paper's 8 credits ([Begel01] footnote 3: "the same number of
            // credits (8) as AMVIAv3"), not our default (32 on nicfw;
            // docs/splitc.md), and AM with AMVIAv3's 8, not our default of 32
            // (docs/am.md).
            if (o.profile != "none" && o.profile.rfind("synthetic:", 0) != 0) {
                setenv("SPLITC_RECV_CQ", "1", 0);
                setenv("SPLITC_SEND_CQ", "1", 0);
                setenv("SPLITC_CREDITS", "8", 0);
                setenv("VIASTACK_AM_CREDITS", "8", 0);
                setenv("LOGP_AM_REPLY_EACH", "1", 0);
            }
        }
        for (const auto &l : split_list(o.layers)) {
            bool known = false;
            for (const auto &f : layer_factories()) known |= f.id == l;
            known |= l == "mpi";
            if (!known) {
                fmt::print(stderr,
                           "logp: unknown layer '{}' in --layers (known: vi, am-v3, am-v1, fm, bip, splitc, mpi)\n", l);
                return 2;
            }
        }
        {
            std::vector<MpiTransport> peers;
            std::string error;
            if (!parse_mpi_peers(o.mpi_peers, &peers, &error)) {
                fmt::print(stderr, "logp: {}\n", error);
                return 2;
            }
        }
        const bool in_job = std::getenv("VIASTACK_RANK") != nullptr;
        if (!in_job && !o.no_launch) return launch(o, argc, argv);
        return run_job(o);
    } catch (const std::exception &e) {
        viastack::log::error(viastack::log::Layer::logp, "{}", e.what());
        return 1;
    }
}
