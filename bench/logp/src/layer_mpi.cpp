// layer_mpi.cpp - see layer_mpi.hpp.
#include "layer_mpi.hpp"

#include "measure.hpp"
#include "peer_shm.hpp"
#include "subprocess.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace logp {
namespace {

// The vipl-run job's variables: inherited by mpirun's ranks they would make
// the provider's VIPL join logp's job instead of booting from PMIx.
const char *const kJobVariables[] = {"VIASTACK_JOB",  "VIASTACK_RANK",  "VIASTACK_SIZE",
                                     "VIASTACK_BOOT", "VIASTACK_HOSTS", "VIASTACK_JOB_CPUS"};

std::set<std::string> pmix_wire_files() {
    std::set<std::string> out;
    std::error_code ec;
    for (const auto &e : fs::directory_iterator("/dev/shm", ec))
        if (e.path().filename().string().rfind("viastack-pmix-", 0) == 0) out.insert(e.path().string());
    return out;
}

std::vector<std::string> transport_args(MpiTransport t) {
    switch (t) {
    case MpiTransport::viastack:
        return {"--mca", "pml", "cm", "--mca", "mtl", "ofi", "--mca", "mtl_ofi_provider_include", "viastack"};
    case MpiTransport::vader: return {"--mca", "pml", "ob1", "--mca", "btl", "self,vader"};
    case MpiTransport::shm:
        // LD_PRELOAD (run_logp_mpi) lets mtl:ofi take shm (mpi/mtl_ofi_shm.c).
        return {"--mca",          "pml", "cm", "--mca", "mtl", "ofi", "--mca", "mtl_ofi_provider_include", "shm", "-x",
                "FI_PROVIDER=shm"};
    case MpiTransport::tcp:
        return {"--mca",          "pml", "cm", "--mca", "mtl", "ofi", "--mca", "mtl_ofi_provider_include", "tcp", "-x",
                "FI_PROVIDER=tcp"};
    }
    return {};
}

// The fi_getinfo that lets Open MPI's mtl:ofi take libfabric's shm, built
// beside logp_mpi.
constexpr const char *kShmShim = "logp_mtl_ofi_shm.so";

struct SideCost {
    double vipl_ns = 0, empty_polls_ns = 0;
    std::vector<BreakdownItem> vipl, inner;
};

SideCost side_cost(const nlohmann::json &counters, const std::string &side, double messages) {
    SideCost s;
    for (const auto &c : counters) {
        const std::string name = c.value("name", ""), category = c.value("category", "");
        const double ns = c.value("ns", 0.0) / messages, count = c.value("count", 0.0) / messages;
        if (count == 0 && ns == 0) continue;
        BreakdownItem it;
        it.operation = side + ": " + name;
        it.count_per_op = count;
        it.ns = ns;
        if (category == "Waiting") {
            s.empty_polls_ns += ns;
            it.category = "VIPL polls that found nothing";
            s.vipl.push_back(it);
        } else if (name.rfind("vipl.", 0) == 0 && category != "Firmware") {
            s.vipl_ns += ns;
            it.category = "VIPL (below the provider)";
            s.vipl.push_back(it);
        } else {
            it.category = category;
            s.inner.push_back(it); // the firmware inside VIPL's calls: already in them
        }
    }
    return s;
}

} // namespace

std::string mpi_transport_name(MpiTransport t) {
    switch (t) {
    case MpiTransport::viastack: return "viastack;ofi_rxm";
    case MpiTransport::vader: return "vader";
    case MpiTransport::shm: return "shm";
    case MpiTransport::tcp: return "tcp;ofi_rxm";
    }
    return "";
}

bool parse_mpi_peers(const std::string &list, std::vector<MpiTransport> *out, std::string *error) {
    out->clear();
    if (list == "none") return true;
    static const std::pair<const char *, MpiTransport> known[] = {
        {"vader", MpiTransport::vader}, {"shm", MpiTransport::shm}, {"tcp", MpiTransport::tcp}};
    std::stringstream ss(list);
    std::string item;
    bool any = false;
    while (std::getline(ss, item, ',')) {
        any = true;
        const auto *k =
            std::find_if(std::begin(known), std::end(known), [&](const auto &p) { return item == p.first; });
        if (k == std::end(known)) {
            *error = fmt::format("unknown MPI peer '{}' in --mpi-peers (known: vader, shm, tcp; or none)", item);
            return false;
        }
        if (std::find(out->begin(), out->end(), k->second) != out->end()) {
            *error = fmt::format("MPI peer '{}' given twice in --mpi-peers", item);
            return false;
        }
        out->push_back(k->second);
    }
    if (!any || list.back() == ',') {
        *error = fmt::format("empty --mpi-peers '{}' (give vader, shm, tcp, comma-separated, or none)", list);
        return false;
    }
    return true;
}

std::string mpi_peer_tool(MpiTransport t) {
    return t == MpiTransport::vader ? "logp_mpi vader" : "logp_mpi " + mpi_transport_name(t);
}

std::string find_logp_mpi() { return find_peer_program("logp_mpi"); }

MpiRun parse_logp_mpi_output(const std::string &output) {
    MpiRun run;
    std::stringstream ss(output);
    for (std::string line; std::getline(ss, line);) {
        if (line.empty() || line[0] != '{') continue;
        nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.contains("metric")) continue;
        const std::string metric = j.value("metric", "");
        if (metric == "breakdown") {
            run.breakdown_line = line;
            continue;
        }
        if (!j.contains("median") || !j["median"].is_number()) continue;
        const double v = j["median"].get<double>();
        if (metric == "bw_MBps") {
            const std::size_t bytes = j.value("bytes", std::size_t(0));
            run.bandwidth.push_back({bytes, v > 0 ? double(bytes) / v : kNaN, v, 0});
        } else {
            run.metrics[metric] = v;
            if (j.contains("spread") && j["spread"].is_number()) run.spreads[metric] = j["spread"].get<double>();
        }
    }
    return run;
}

MpiRun run_logp_mpi(MpiTransport t, const MpiPlan &plan) {
    MpiRun run;
    const std::string bin = find_logp_mpi(), mpirun = find_on_path("mpirun"), env = find_on_path("env");
    if (bin.empty() || mpirun.empty()) {
        run.status = {"not installed",
                      bin.empty() ? "logp_mpi not built (Debian: apt-get install libopenmpi-dev, then rebuild)"
                                  : "mpirun not found on PATH (Debian: apt-get install openmpi-bin)"};
        return run;
    }
    const char *fi_path = std::getenv("FI_PROVIDER_PATH");
    if (t == MpiTransport::viastack && (!fi_path || !*fi_path) &&
        !fs::exists("/usr/lib/x86_64-linux-gnu/libfabric/libviastack-fi.so")) {
        run.status = {"not installed",
                      "libviastack-fi.so not found: FI_PROVIDER_PATH is unset (vipl-run sets it to a "
                      "build tree's ofi/) and the provider is not installed"};
        return run;
    }
    std::string shim;
    if (t == MpiTransport::shm) {
        shim = find_peer_program(kShmShim);
        if (shim.empty()) {
            run.status = {
                "not installed",
                fmt::format("{} not built (it needs libfabric-dev when this build was configured)", kShmShim)};
            return run;
        }
    }
    std::vector<std::string> argv = {env};
    for (const char *v : kJobVariables) argv.insert(argv.end(), {"-u", v});
    argv.insert(argv.end(), {mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2"});
    const auto targs = transport_args(t);
    argv.insert(argv.end(), targs.begin(), targs.end());
    if (!shim.empty()) argv.insert(argv.end(), {"-x", "LD_PRELOAD=" + shim});
    if (t == MpiTransport::viastack && fi_path && *fi_path) argv.insert(argv.end(), {"-x", "FI_PROVIDER_PATH"});
    // Bound as logp's ranks are (peer_shm.cpp does the same for mpi_shm_bench).
    const std::vector<int> cpus = job_cpus();
    if (cpus.size() >= 2)
        argv.insert(argv.end(),
                    {"--bind-to", "cpu-list:ordered", "--cpu-list", fmt::format("{},{}", cpus[0], cpus[1])});
    else argv.insert(argv.end(), {"--bind-to", "none"});
    argv.insert(argv.end(),
                {bin, "--iters", std::to_string(plan.iterations), "--bulk-mb", std::to_string(plan.bulk_mb)});
    if (plan.round) argv.push_back("--round");

    const std::set<std::string> before = pmix_wire_files();
    ProcessResult r = run_process(argv, {}, plan.timeout_s);
    if (t == MpiTransport::viastack) {
        std::error_code ec;
        for (const auto &f : pmix_wire_files())
            if (!before.count(f)) fs::remove(f, ec);
    }
    if (r.timed_out) {
        run.status = {"failed",
                      fmt::format("logp_mpi over {} timed out after {:.0f} s", mpi_transport_name(t), plan.timeout_s)};
        return run;
    }
    MpiRun parsed = parse_logp_mpi_output(r.output);
    const bool complete =
        parsed.metrics.count("rtt_half_us") && parsed.metrics.count("g_us") && !parsed.bandwidth.empty();
    if (r.exit_code != 0 || !complete) {
        run.status = {
            "failed",
            fmt::format("logp_mpi over {} exit {}: {}", mpi_transport_name(t), r.exit_code, last_line(r.output))};
        return run;
    }
    parsed.status = {"measured", "Open MPI over " + mpi_transport_name(t)};
    return parsed;
}

LogPRow mpi_logp_row(const MpiRun &run, double vi_rtt_half_us) {
    LogPRow row;
    row.layer = "mpi";
    row.status = run.status;
    if (!run.status.measured()) return row;
    auto get = [&](const char *k) { return run.metrics.count(k) ? run.metrics.at(k) : kNaN; };
    row.rtt_half_us = get("rtt_half_us");
    row.o_s_us = get("o_s_us");
    row.o_r_us = get("o_r_us");
    row.o_r_cold_us = row.o_r_us;
    row.o_r_reply_us = 0; // MPI_Recv of an eager message answers nothing
    row.g_us = get("g_us");
    row.delta_us = row.rtt_half_us - vi_rtt_half_us;
    if (run.spreads.count("rtt_half_us")) row.spread_rtt = run.spreads.at("rtt_half_us");
    if (run.spreads.count("o_r_us")) row.spread_o_r = run.spreads.at("o_r_us");
    row.L_raw_us = row.rtt_half_us - row.o_s_us - row.o_r_us;
    row.L_resolution_us = kNaN;
    if (row.L_raw_us >= 0) {
        row.L_us = row.L_raw_us;
    } else {
        row.L_state = "inconsistent";
        row.warnings.push_back(fmt::format("o_s + o_r exceed RTT/2 by {:.3f} us (o_r is the whole receive, the "
                                           "message's cache lines included); L not reported",
                                           -row.L_raw_us));
    }
    return row;
}

BandwidthCurve mpi_bandwidth_curve(const MpiRun &run) {
    BandwidthCurve c;
    c.layer = "mpi";
    c.method = "MPI_Isend stream, windows of 64 (<= 1 KB) or 16, over " + mpi_transport_name(MpiTransport::viastack);
    c.status = run.status;
    c.points = run.bandwidth;
    if (run.status.measured()) fit_curve(c); // FM's t0 / r_inf / n_1/2, as for every curve
    return c;
}

Breakdown mpi_breakdown(const MpiRun &run) {
    Breakdown bd;
    bd.name = kMpiBreakdownName;
    bd.layer = "mpi";
    nlohmann::json j = nlohmann::json::parse(run.breakdown_line, nullptr, false);
    if (!run.status.measured() || j.is_discarded() || !j.is_object() || j.value("messages", 0.0) <= 0) {
        bd.status = run.status.measured() ? Status{"failed", "logp_mpi printed no breakdown"} : run.status;
        return bd;
    }
    const double messages = j.value("messages", 0.0), send_ns = j.value("send_ns", 0.0),
                 recv_ns = j.value("recv_ns", 0.0);
    bd.operations = std::uint64_t(messages);
    const SideCost s = side_cost(j["sender"], "send", messages), r = side_cost(j["receiver"], "recv", messages);
    bd.host_ns = send_ns + recv_ns;
    const double vipl = s.vipl_ns + r.vipl_ns, polls = s.empty_polls_ns + r.empty_polls_ns;
    const double rest = bd.host_ns - vipl - polls;
    auto pct = [&](double ns) { return bd.host_ns > 0 ? 100 * ns / bd.host_ns : kNaN; };
    bd.categories = {{"MPI + rxm + provider", rest, 0, pct(rest), kNaN},
                     {"VIPL (below the provider)", vipl, 0, pct(vipl), kNaN},
                     {"VIPL polls that found nothing", polls, 0, pct(polls), kNaN}};
    bd.items.push_back({"send: in MPI_Send, less VIPL", "MPI + rxm + provider", 1,
                        send_ns - s.vipl_ns - s.empty_polls_ns, 0, pct(send_ns - s.vipl_ns - s.empty_polls_ns), kNaN});
    bd.items.push_back({"recv: in MPI_Recv, less VIPL", "MPI + rxm + provider", 1,
                        recv_ns - r.vipl_ns - r.empty_polls_ns, 0, pct(recv_ns - r.vipl_ns - r.empty_polls_ns), kNaN});
    for (const SideCost *side : {&s, &r}) {
        for (BreakdownItem it : side->vipl) {
            it.percent = pct(it.ns);
            bd.items.push_back(it);
        }
        bd.inner.insert(bd.inner.end(), side->inner.begin(), side->inner.end());
    }
    for (const auto &it : bd.inner)
        if (it.category == "Firmware") bd.firmware_ns += it.ns;
    std::string chunks;
    if (j.value("chunks", 0) > 1)
        chunks = fmt::format("; the chunk with the median total of {} chunks of {} messages, totals {:.0f}-{:.0f} ns",
                             j.value("chunks", 0), bd.operations, j.value("chunk_total_min_ns", 0.0),
                             j.value("chunk_total_max_ns", 0.0));
    bd.status = {"measured",
                 fmt::format("o_s side {:.0f} ns, o_r side {:.0f} ns per message, instrumentation on{}", send_ns,
                             recv_ns, chunks)};
    return bd;
}

std::vector<OurFigure> mpi_figures(const MpiRun &run) {
    std::vector<OurFigure> out;
    if (!run.status.measured()) return out;
    for (const char *m : {"rtt_half_us", "g_us"})
        if (run.metrics.count(m)) out.push_back({"mpi", m, 16, run.metrics.at(m)});
    for (const auto &p : run.bandwidth) out.push_back({"mpi", "bandwidth_mb_s", p.bytes, p.mb_s});
    return out;
}

PeerResult mpi_peer_result(MpiTransport t, const MpiRun &run) {
    PeerResult p;
    p.tool = mpi_peer_tool(t);
    p.transport = t == MpiTransport::vader ? "Open MPI pml ob1, btl self,vader"
        : t == MpiTransport::shm ? "Open MPI pml cm, mtl:ofi, libfabric shm (FI_PROVIDER=shm, mtl_ofi_shm.so preloaded)"
                                 : "Open MPI pml cm, mtl:ofi, " + mpi_transport_name(t) + " (FI_PROVIDER=tcp)";
    p.status = run.status;
    if (!run.status.measured()) return p;
    for (const char *m : {"rtt_half_us", "g_us"})
        if (run.metrics.count(m)) p.metrics.push_back({m, "MPI_Send", "", 16, run.metrics.at(m), kNaN, kNaN});
    for (const auto &b : run.bandwidth)
        p.metrics.push_back(
            {std::string("bandwidth_mb_s:") + kMpiStreamTest, kMpiStreamTest, "", b.bytes, b.mb_s, kNaN, kNaN});
    return p;
}

} // namespace logp
