// peer_ucx.cpp - see peer_ucx.hpp.
#include "peer_ucx.hpp"

#include "subprocess.hpp"

#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <thread>

namespace logp {
namespace {

const char *kTransport = "UCX_TLS=sm,self";

int free_local_port() {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return 13337;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    int port = 13337;
    if (bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 &&
        getsockname(s, reinterpret_cast<sockaddr *>(&a), &len) == 0)
        port = ntohs(a.sin_port);
    close(s);
    return port;
}

} // namespace

UcxMeasurement parse_ucx_perftest_csv(const std::string &output) {
    UcxMeasurement m;
    std::stringstream ss(output);
    std::string line;
    bool header = false;
    while (std::getline(ss, line)) {
        if (line.rfind("iterations,", 0) == 0) {
            header = true;
            continue;
        }
        // The iteration count is right-aligned in a field of 4 ("%4u"): 256
        // iterations (a 1 MB put) print " 256,...".  Progress lines of the
        // threads ("[thread 0]19234,...") are not results and are skipped.
        const std::size_t first = line.find_first_not_of(" \t");
        if (first == std::string::npos) continue;
        line.erase(0, first);
        if (!header || !std::isdigit(static_cast<unsigned char>(line[0]))) continue;
        std::vector<double> v;
        std::stringstream ls(line);
        std::string cell;
        while (std::getline(ls, cell, ',')) {
            char *end = nullptr;
            double x = std::strtod(cell.c_str(), &end);
            if (end == cell.c_str()) break;
            v.push_back(x);
        }
        if (v.size() < 8) continue;
        // iterations, p50 lat, avg lat, overall lat, avg bw, overall bw, avg mr, overall mr
        m.ok = true;
        m.lat_us = v[1];
        m.bw_mb_s = v[5] * 1048576.0 / 1e6;
        m.msg_rate = v[7];
    }
    if (!m.ok) m.error = header ? "no result line after the CSV header" : "no CSV output (was -v honoured?)";
    return m;
}

UcxMeasurement run_ucx_perftest(const std::string &binary, const std::string &test, std::size_t bytes, long iterations,
                                long warmup, double timeout_s, const std::vector<std::string> &extra) {
    UcxMeasurement m;
    for (int attempt = 0; attempt < 3; ++attempt) {
        std::string port = std::to_string(free_local_port());
        // Bound as logp's ranks are (rank 0's CPU for the client, rank 1's for
        // the server), or unbound when they are.
        const std::vector<int> cpus = job_cpus();
        std::vector<std::string> server_args = {binary, "-p", port}, client_cpu;
        if (cpus.size() >= 2) {
            server_args.insert(server_args.end(), {"-c", std::to_string(cpus[1])});
            client_cpu = {"-c", std::to_string(cpus[0])};
        }
        BackgroundProcess server(server_args, {kTransport});
        if (!server.started()) {
            m.error = "cannot start " + binary;
            return m;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(150 + 250 * attempt)); // let it listen
        std::vector<std::string> args = {binary, "localhost",
                                         "-p",   port,
                                         "-t",   test,
                                         "-s",   std::to_string(bytes),
                                         "-n",   std::to_string(iterations),
                                         "-w",   std::to_string(warmup),
                                         "-v"};
        args.insert(args.end(), client_cpu.begin(), client_cpu.end());
        args.insert(args.end(), extra.begin(), extra.end());
        ProcessResult client = run_process(args, {kTransport}, timeout_s);
        server.finish(2.0);
        if (client.timed_out) {
            m.error = fmt::format("{} {} B timed out after {:.0f} s", test, bytes, timeout_s);
            return m;
        }
        if (client.exit_code == 0) {
            m = parse_ucx_perftest_csv(client.output);
            if (m.ok) return m;
        }
        m.error = fmt::format("{} {} B failed (exit {}): {}", test, bytes, client.exit_code, last_line(client.output));
    }
    return m;
}

PeerResult run_ucx_peer(const UcxPlan &plan, const std::function<void(const std::string &)> &step) {
    PeerResult p;
    p.tool = "ucx_perftest";
    p.transport = kTransport;
    std::string bin = plan.binary.empty() ? find_on_path("ucx_perftest") : plan.binary;
    if (bin.empty()) {
        p.status = {"not installed", "ucx_perftest not found on PATH (Debian: apt-get install ucx-utils)"};
        return p;
    }
    auto note = [&](const std::string &s) {
        if (step) step(s);
    };
    UcxMeasurement lat = run_ucx_perftest(bin, "ucp_am_lat", 16, plan.iterations, plan.warmup, plan.timeout_s);
    note("ucp_am_lat 16 B");
    if (!lat.ok) {
        p.status = {"failed", lat.error};
        return p;
    }
    p.metrics.push_back({"rtt_half_us", "ucp_am_lat", "", 16, lat.lat_us, kNaN, kNaN});
    UcxMeasurement rate = run_ucx_perftest(bin, "ucp_am_bw", 16, plan.iterations, plan.warmup, plan.timeout_s);
    note("ucp_am_bw 16 B");
    // The overall rate is the steady state LogP's g means.  (The per-message
    // percentiles of a bandwidth test time the non-blocking posts, not the
    // stream: the median can be 0.04 us while the mean is 137 us.)
    if (rate.ok && rate.msg_rate > 0)
        p.metrics.push_back({"g_us", "ucp_am_bw", "", 16, 1e6 / rate.msg_rate, kNaN, kNaN});
    std::vector<std::string> failures;
    for (const auto &[test, sizes] :
         {std::pair{std::string("ucp_put_bw"), plan.put_sizes}, std::pair{std::string("ucp_am_bw"), plan.am_sizes}}) {
        for (std::size_t bytes : sizes) {
            long iters = std::max<long>(200, std::min<long>(plan.iterations, long((256u << 20) / bytes)));
            UcxMeasurement bw =
                run_ucx_perftest(bin, test, bytes, iters, std::min(plan.warmup, iters / 4), plan.timeout_s);
            note(fmt::format("{} {} B", test, bytes));
            if (!bw.ok) {
                failures.push_back(bw.error);
                continue;
            }
            p.metrics.push_back({"bandwidth_mb_s:" + test, test, "", bytes, bw.bw_mb_s, kNaN, kNaN});
            if (test == "ucp_put_bw") p.bandwidth.push_back({bytes, double(bytes) / bw.bw_mb_s, bw.bw_mb_s, 0});
        }
    }
    p.status = {"measured",
                failures.empty()
                    ? ""
                    : fmt::format("{} bandwidth points failed; first: {}", failures.size(), failures.front())};
    return p;
}

RateSweep run_ucx_rate_sweep(const UcxPlan &plan, const std::vector<int> &windows) {
    RateSweep s;
    s.layer = "ucx_perftest ucp_am_bw";
    s.peer = true;
    s.method =
        fmt::format("ucp_am_bw 16 B, -O W (at most W uncompleted sends), {} iterations, overall message rate; {}",
                    plan.iterations, kTransport);
    std::string bin = plan.binary.empty() ? find_on_path("ucx_perftest") : plan.binary;
    if (bin.empty()) {
        s.status = {"not installed", "ucx_perftest not found on PATH (Debian: apt-get install ucx-utils)"};
        return s;
    }
    std::vector<std::string> failures;
    for (int w : windows) {
        UcxMeasurement m = run_ucx_perftest(bin, "ucp_am_bw", 16, plan.iterations, plan.warmup, plan.timeout_s,
                                            {"-O", std::to_string(w)});
        if (!m.ok || !(m.msg_rate > 0)) {
            failures.push_back(m.ok ? fmt::format("-O {}: no message rate", w) : m.error);
            continue;
        }
        s.points.push_back({w, 1e6 / m.msg_rate, m.msg_rate / 1e6, 0});
    }
    if (s.points.empty()) s.status = {"failed", failures.empty() ? "no window measured" : failures.front()};
    else
        s.status = {"measured",
                    failures.empty() ? ""
                                     : fmt::format("{} windows failed; first: {}", failures.size(), failures.front())};
    return s;
}

} // namespace logp
