// layer_synthetic.hpp - a LogP machine with known parameters, run in real
// time in one process: the end-to-end check of the measurement loops and the
// extraction (`logp --synthetic o_s=2,o_r=3,g=10,L=20`).  Every operation
// busy-waits exactly the modelled cost, so the suite must report the given
// o_s, o_r, g, L (and t0, r_inf, n_1/2 = t0 * r_inf for the bulk stream) back.
#pragma once

#include "layer.hpp"

#include <cstdint>
#include <deque>
#include <string>

namespace logp {

struct SyntheticParams {
    double o_s_us = 2.0, o_r_us = 3.0, g_us = 8.0, L_us = 10.0;
    int window = 8;            // messages the NIC queues before a send blocks
    double t0_us = 4.0;        // bulk: per-message start-up cost
    double r_inf_mb_s = 200.0; // bulk: asymptotic bandwidth (bytes/us)
};

// Parses "o_s=2,o_r=3,g=8,L=10,window=8,t0=4,r_inf=200" (times in us, any
// subset, any order); throws std::invalid_argument naming the bad item.
SyntheticParams parse_synthetic(const std::string &spec);
std::string format_synthetic(const SyntheticParams &p);

class SyntheticLayer final : public Layer {
public:
    explicit SyntheticLayer(const SyntheticParams &p);
    std::string id() const override { return "synthetic"; }
    std::string description() const override;
    bool single_process() const override { return true; }
    int short_burst_max() const override { return p_.window; }
    int long_burst_min() const override { return 4 * p_.window; }
    int max_burst() const override { return 16 * p_.window; }

    void rtt_client(std::size_t bytes) override;
    void rtt_server_series(std::size_t, int) override {}
    void burst_send_one() override;
    void burst_sender_finish(int m) override;
    void burst_receive(int) override {}
    void recv_probe_send() override;
    double recv_probe_receive(double settle_ns) override;

    bool has_bulk() const override { return true; }
    std::string bulk_method() const override { return "modelled stream: t0 + n / r_inf per message"; }
    std::size_t bulk_max_bytes() const override { return 32768; }
    double bulk_stream_client(std::size_t bytes, int count) override;

    const SyntheticParams &params() const { return p_; }

private:
    void wait_until(std::uint64_t tick) const;
    SyntheticParams p_;
    std::uint64_t o_s_, o_r_, g_, L_;      // in TSC ticks
    std::deque<std::uint64_t> departures_; // NIC queue: when each queued message leaves
    std::uint64_t last_departure_ = 0;
    std::uint64_t probe_arrival_ = 0;
};

} // namespace logp
