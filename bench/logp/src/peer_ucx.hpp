// peer_ucx.hpp - the peer measurement: ucx_perftest (Debian ucx-utils) over
// shared memory (UCX_TLS=sm,self), a server and a client process on this host,
// as the comparison point for the nicfw provider.
//   ucp_am_lat, 16 B   -> RTT/2 (ucx_perftest reports half the round trip)
//   ucp_am_bw,  16 B   -> g (1 / overall message rate)
//   ucp_put_bw, sizes  -> one-sided bandwidth curve (next to native VI)
//   ucp_am_bw,  sizes  -> active-message bandwidth curve (next to AM)
// Bandwidth is the overall figure, converted to MB/s of 10^6 bytes
// (ucx_perftest prints 2^20).
#pragma once

#include "results.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace logp {

struct UcxMeasurement {
    bool ok = false;
    std::string error;
    double lat_us = kNaN;   // median (50th percentile) latency
    double bw_mb_s = kNaN;  // overall bandwidth, 10^6-byte MB
    double msg_rate = kNaN; // overall messages per second
};

// Parses the CSV lines `ucx_perftest -v` prints (header
// "iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr").
UcxMeasurement parse_ucx_perftest_csv(const std::string &output);

struct UcxPlan {
    std::string binary; // full path; empty = look on PATH
    long iterations = 20000, warmup = 2000;
    std::vector<std::size_t> put_sizes, am_sizes; // bandwidth sweeps (may be empty)
    double timeout_s = 30;
};

// Runs the plan; status "not installed" (with the package to install) when the
// tool is missing, "failed" with its output's last line when it does not work.
// The returned metrics carry the peer's numbers; ours and the ratios are
// filled in by the report (set_peer_ratios).
PeerResult run_ucx_peer(const UcxPlan &plan, const std::function<void(const std::string &)> &step = {});

// One ucx_perftest measurement (server + client on a free local port);
// `extra` options go to the client (e.g. {"-O", "8"}).
UcxMeasurement run_ucx_perftest(const std::string &binary, const std::string &test, std::size_t bytes, long iterations,
                                long warmup, double timeout_s, const std::vector<std::string> &extra = {});

// ucp_am_bw of 16-byte messages with at most W uncompleted sends (-O W) for
// every W of `windows`: the peer's row of the message-rate table.  Status
// "not installed" / "failed" as for run_ucx_peer.
RateSweep run_ucx_rate_sweep(const UcxPlan &plan, const std::vector<int> &windows);

} // namespace logp
