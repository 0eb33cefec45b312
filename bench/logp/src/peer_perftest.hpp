// peer_perftest.hpp - the peer measurement for the verbs provider: perftest's
// ib_send_lat (16 B, its typical = median half round trip) and ib_write_bw
// (one-sided RDMA-write bandwidth per size), a server and a client on this
// host over the given RDMA device.  Debian package: perftest.
#pragma once

#include "results.hpp"

#include <functional>
#include <string>
#include <vector>

namespace logp {

struct PerftestMeasurement {
    bool ok = false;
    std::string error;
    double lat_typical_us = kNaN; // ib_*_lat: t_typical[usec]
    double bw_avg_mb_s = kNaN;    // ib_*_bw: BW average[MB/sec], as perftest prints it
};

// Parses perftest's result table: the header line starting with "#bytes"
// names the columns, the next line starting with a number holds the values.
PerftestMeasurement parse_perftest_output(const std::string &output);

struct PerftestPlan {
    std::string device; // RDMA device, e.g. rxe0
    long iterations = 5000;
    std::vector<std::size_t> bw_sizes;
    double timeout_s = 60;
};

PeerResult run_perftest_peer(const PerftestPlan &plan, const std::function<void(const std::string &)> &step = {});

} // namespace logp
