// peer_perftest.cpp - see peer_perftest.hpp.
#include "peer_perftest.hpp"

#include "subprocess.hpp"

#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <thread>

namespace logp {
namespace {

// Column names: "#bytes", "#iterations", or words up to one ending in "]"
// ("t_typical[usec]", "BW average[MB/sec]", "99% percentile[usec]").
std::vector<std::string> split_columns(const std::string &header) {
    std::vector<std::string> cols;
    std::stringstream ss(header);
    std::string cur;
    for (std::string tok; ss >> tok;) {
        cur += cur.empty() ? tok : " " + tok;
        if (cur[0] == '#' || cur.back() == ']') {
            cols.push_back(cur);
            cur.clear();
        }
    }
    if (!cur.empty()) cols.push_back(cur);
    return cols;
}

int free_port() {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return 18515;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 18515;
    if (bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 &&
        getsockname(s, reinterpret_cast<sockaddr *>(&a), &len) == 0)
        port = ntohs(a.sin_port);
    close(s);
    return port;
}

PerftestMeasurement run_one(const std::string &bin, const std::string &device, std::size_t bytes, long iters,
                            double timeout_s) {
    PerftestMeasurement m;
    std::string port = std::to_string(free_port());
    std::vector<std::string> common = {"-d", device, "-s", std::to_string(bytes), "-n", std::to_string(iters),
                                       "-F", "-p",   port};
    std::vector<std::string> server = {bin};
    server.insert(server.end(), common.begin(), common.end());
    BackgroundProcess srv(server, {});
    if (!srv.started()) {
        m.error = "cannot start " + bin;
        return m;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::vector<std::string> client = server;
    client.push_back("localhost");
    ProcessResult r = run_process(client, {}, timeout_s);
    srv.finish(2.0);
    if (r.exit_code != 0) {
        std::string last;
        std::stringstream ss(r.output);
        for (std::string line; std::getline(ss, line);)
            if (!line.empty()) last = line;
        m.error = fmt::format("{} {} B failed (exit {}): {}", bin, bytes, r.exit_code, last);
        return m;
    }
    return parse_perftest_output(r.output);
}

} // namespace

PerftestMeasurement parse_perftest_output(const std::string &output) {
    PerftestMeasurement m;
    std::stringstream ss(output);
    std::vector<std::string> cols;
    for (std::string line; std::getline(ss, line);) {
        std::size_t first = line.find_first_not_of(" \t");
        if (first == std::string::npos) continue;
        if (line.compare(first, 6, "#bytes") == 0) {
            cols = split_columns(line.substr(first));
            continue;
        }
        if (cols.empty() || !std::isdigit(static_cast<unsigned char>(line[first]))) continue;
        std::stringstream ls(line);
        std::vector<double> v;
        for (std::string cell; ls >> cell;) v.push_back(std::strtod(cell.c_str(), nullptr));
        for (std::size_t i = 0; i < cols.size() && i < v.size(); ++i) {
            if (cols[i].rfind("t_typical", 0) == 0) m.lat_typical_us = v[i];
            if (cols[i].rfind("BW average", 0) == 0) m.bw_avg_mb_s = v[i];
        }
        m.ok = std::isfinite(m.lat_typical_us) || std::isfinite(m.bw_avg_mb_s);
        if (m.ok) return m;
    }
    m.error = cols.empty() ? "no result table (#bytes header) in the output" : "no result line under the #bytes header";
    return m;
}

PeerResult run_perftest_peer(const PerftestPlan &plan, const std::function<void(const std::string &)> &step) {
    PeerResult p;
    p.tool = "perftest";
    p.transport = "verbs device " + plan.device;
    std::string lat = find_on_path("ib_send_lat"), bw = find_on_path("ib_write_bw");
    if (lat.empty() || bw.empty()) {
        p.status = {"not installed", "ib_send_lat / ib_write_bw not found on PATH (Debian: apt-get install perftest)"};
        return p;
    }
    if (plan.device.empty()) {
        p.status = {"skipped", "no RDMA device given (--device)"};
        return p;
    }
    PerftestMeasurement l = run_one(lat, plan.device, 16, plan.iterations, plan.timeout_s);
    if (step) step("ib_send_lat 16 B");
    if (!l.ok) {
        p.status = {"failed", l.error};
        return p;
    }
    p.metrics.push_back({"rtt_half_us", "ib_send_lat", "", 16, l.lat_typical_us, kNaN, kNaN});
    std::vector<std::string> failures;
    for (std::size_t bytes : plan.bw_sizes) {
        PerftestMeasurement b = run_one(bw, plan.device, bytes, plan.iterations, plan.timeout_s);
        if (step) step(fmt::format("ib_write_bw {} B", bytes));
        if (!b.ok) {
            failures.push_back(b.error);
            continue;
        }
        p.metrics.push_back({"bandwidth_mb_s:ib_write_bw", "ib_write_bw", "", bytes, b.bw_avg_mb_s, kNaN, kNaN});
        p.bandwidth.push_back({bytes, double(bytes) / b.bw_avg_mb_s, b.bw_avg_mb_s, 0});
    }
    p.status = {"measured",
                failures.empty()
                    ? ""
                    : fmt::format("{} bandwidth points failed; first: {}", failures.size(), failures.front())};
    return p;
}

} // namespace logp
