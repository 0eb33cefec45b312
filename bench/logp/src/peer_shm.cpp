// peer_shm.cpp - see peer_shm.hpp.
#include "peer_shm.hpp"

#include "subprocess.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#ifndef LOGP_PEER_BUILD_DIR
#define LOGP_PEER_BUILD_DIR ""
#endif

namespace fs = std::filesystem;

namespace logp {
namespace {

struct Spec {
    const char *program, *tool, *transport, *package;
    const char *send_test, *bw_test; // what its message and bandwidth tests are called in the report
};

Spec spec_of(ShmPeer which) {
    if (which == ShmPeer::libfabric)
        return {"fi_shm_bench",  "fi_shm_bench", "libfabric shm provider (FI_EP_RDM)",
                "libfabric-dev", "fi_send",      "fi_write"};
    return {"mpi_shm_bench", "mpi_shm_bench", "Open MPI, --mca btl self,vader", "libopenmpi-dev openmpi-bin",
            "MPI_Send",      "MPI_Isend"};
}

bool executable(const fs::path &p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
}

} // namespace

std::string find_peer_program(const std::string &name) {
    std::vector<fs::path> dirs;
    if (const char *e = std::getenv("LOGP_PEER_DIR"); e && *e) dirs.emplace_back(e);
    // An installed logp runs the peers installed with it, even on a machine
    // that still has the build tree it was configured in (which may since
    // hold other builds); the build tree is the fallback, as for splitcc.
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        dirs.push_back(self.parent_path());
        dirs.push_back(self.parent_path() / "../libexec/viastack");
    }
    if (*LOGP_PEER_BUILD_DIR) dirs.emplace_back(LOGP_PEER_BUILD_DIR);
    for (const auto &d : dirs)
        if (executable(d / name)) return fs::weakly_canonical(d / name, ec).string();
    return find_on_path(name);
}

std::vector<PeerMetric> parse_shm_bench_output(ShmPeer which, const std::string &output) {
    const Spec s = spec_of(which);
    std::vector<PeerMetric> out;
    std::stringstream ss(output);
    for (std::string line; std::getline(ss, line);) {
        if (line.empty() || line[0] != '{') continue;
        nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.contains("metric") || !j.contains("median") || !j["median"].is_number()) continue;
        const std::string metric = j.value("metric", "");
        const std::size_t bytes = j.value("bytes", std::size_t(0));
        const double v = j["median"].get<double>();
        if (metric == "rtt_half_us") out.push_back({"rtt_half_us", s.send_test, "", bytes, v, kNaN, kNaN});
        else if (metric == "gap_us") out.push_back({"g_us", s.send_test, "", bytes, v, kNaN, kNaN});
        else if (metric == "bw_MBps" || metric == "put_bw_MBps")
            out.push_back({std::string("bandwidth_mb_s:") + s.bw_test, s.bw_test, "", bytes, v, kNaN, kNaN});
    }
    return out;
}

PeerResult run_shm_peer(ShmPeer which, long iterations, double timeout_s) {
    const Spec s = spec_of(which);
    PeerResult p;
    p.tool = s.tool;
    p.transport = s.transport;
    std::string bin = find_peer_program(s.program);
    if (bin.empty()) {
        p.status = {"not installed",
                    fmt::format("{} not built (Debian: apt-get install {}, then rebuild; it is "
                                "searched in $LOGP_PEER_DIR, beside logp, ../libexec/viastack, "
                                "the build tree and PATH)",
                                s.program, s.package)};
        return p;
    }
    std::vector<std::string> argv;
    if (which == ShmPeer::openmpi) {
        std::string mpirun = find_on_path("mpirun");
        if (mpirun.empty()) {
            p.status = {"not installed", "mpirun not found on PATH (Debian: apt-get install openmpi-bin)"};
            return p;
        }
        argv = {mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", "--mca", "btl", "self,vader"};
    }
    // Bound as logp's own ranks are: the first process on rank 0's CPU, the
    // second on rank 1's; unbound when the ranks are (Open MPI would bind by
    // itself otherwise).
    const std::vector<int> cpus = job_cpus();
    const std::string cpu_list = cpus.size() >= 2 ? fmt::format("{},{}", cpus[0], cpus[1]) : "";
    if (which == ShmPeer::openmpi) {
        if (cpu_list.empty()) argv.insert(argv.end(), {"--bind-to", "none"});
        else argv.insert(argv.end(), {"--bind-to", "cpu-list:ordered", "--cpu-list", cpu_list});
    }
    argv.push_back(bin);
    for (std::string a :
         {std::string("--rounds"), std::string("1"), std::string("--iters"), std::to_string(iterations)})
        argv.push_back(a);
    if (which == ShmPeer::libfabric && !cpu_list.empty()) {
        argv.push_back("--cpus");
        argv.push_back(cpu_list);
    }
    ProcessResult r = run_process(argv, {}, timeout_s);
    if (r.timed_out) {
        p.status = {"failed", fmt::format("{} timed out after {:.0f} s", s.program, timeout_s)};
        return p;
    }
    p.metrics = parse_shm_bench_output(which, r.output);
    if (r.exit_code != 0 || p.metrics.empty()) {
        p.status = {"failed", fmt::format("{} exit {}: {}", s.program, r.exit_code, last_line(r.output))};
        p.metrics.clear();
        return p;
    }
    for (const auto &m : p.metrics)
        if (m.test == "fi_write") p.bandwidth.push_back({m.bytes, double(m.bytes) / m.peer, m.peer, 0});
    p.status = {"measured", ""};
    return p;
}

} // namespace logp
