// report.hpp - vi_thread_rate's figures: one sample per stream, summarized
// per variant (median and interquartile range over the rounds, the scaling
// against one thread paired round by round, the figures per placement class
// of the raw cache line), as a text table or JSON.
#pragma once

#include "stream.hpp"
#include "timer.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace thbench {

struct Sample {
    std::string variant;
    int round = 0;
    double line_ns = 0; // the raw cache line's one-way time right before the stream
    SendTimes times;
    RecvCount recv; // the receiving side's count (rank 1's in two ranks)
    double rate() const { return double(times.messages) / times.stream_ns * 1e9; } // messages/s
    double ns_per_msg() const { return times.stream_ns / double(times.messages); }
    // How long before the clock's start the last receiving thread said it runs
    // (the clock is the TSC, one for both processes): never negative.
    double ready_lead_ns() const {
        return times.start_ticks >= recv.ready_ticks ? logp::ticks_to_ns(times.start_ticks - recv.ready_ticks)
                                                     : -logp::ticks_to_ns(recv.ready_ticks - times.start_ticks);
    }
};

struct RunInfo {
    std::string mode; // "two-process" or "single-process"
    std::string nic, firmware_mode, wait_mode;
    int window = 0, blocks = 0, rounds = 0, cpus = 0;
    std::uint64_t sent = 0, received = 0;
};

nlohmann::json report_json(const RunInfo &info, const std::vector<Variant> &variants,
                           const std::vector<Sample> &samples);
// The text table, from the JSON report (one model, two renderings).
std::string report_text(const nlohmann::json &report);

} // namespace thbench
