// measure_rate.cpp - the message-rate sweep (see measure.hpp): how many
// 16-byte messages per second a layer moves with W of them in flight.
//
// A window is the layer's burst: W back-to-back sends, then the untimed-in-
// LogP but here timed burst_sender_finish(W), which returns once the receiver
// has taken all W and confirmed (OSU's osu_mbw_mr does the same with its
// window of non-blocking sends and an acknowledgement).  A timed stream is
// about rate_msgs messages in windows of W, so the per-message time is
// (send + the window's share of one confirmation round trip): at W = 1 it is
// a round trip, at large W it approaches the layer's g.  Windows are
// interleaved in rounds so drift of the machine falls on all of them.
#include "measure.hpp"

#include "timer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace logp {

constexpr int kMaxWindowsPerStream = 64;

std::vector<int> rate_windows(int max_window) {
    std::vector<int> out;
    for (int w = 1; w <= max_window; w *= 2) out.push_back(w);
    return out;
}

RateSweep measure_rate_sweep(Layer &layer, const Job &job, const MeasureConfig &cfg, Progress &progress) {
    RateSweep sweep;
    sweep.layer = layer.id();
    const bool single = layer.single_process();
    const bool sender = single || job.rank() == 0;
    const bool receiver = !single && job.rank() == 1;
    if (!single && job.rank() >= 2) return sweep;
    const std::vector<int> windows = rate_windows(std::min(cfg.rate_max_window, layer.max_burst()));
    sweep.method = fmt::format("windows of W 16-byte messages (the LogP burst message) then the receiver's "
                               "confirmation; min({}, 64 W) messages per timed stream, median of {} streams",
                               cfg.rate_msgs, cfg.bw_reps);
    if (windows.empty()) {
        sweep.status = {"skipped", "the layer takes no burst"};
        return sweep;
    }
    std::map<int, std::vector<double>> all, clean; // us per message, per window
    progress.begin(layer.id() + ": message rate", cfg.bw_reps);
    for (int r = 0; r < cfg.bw_reps + 1; ++r) { // the first round warms up
        for (int w : windows) {
            // At most 64 windows per stream: at W = 1 a stream of thousands of
            // round trips outlasts a scheduler slice on a busy machine, and a
            // stream the OS interrupted cannot be told from a slow one.
            const int blocks = std::clamp(cfg.rate_msgs / w, 1, kMaxWindowsPerStream);
            long sw = involuntary_switches();
            double ns = 0;
            if (sender) {
                std::uint64_t t0 = ticks();
                for (int b = 0; b < blocks; ++b) {
                    for (int i = 0; i < w; ++i) layer.burst_send_one();
                    layer.burst_sender_finish(w);
                }
                ns = ticks_to_ns(ticks() - t0);
            }
            if (receiver)
                for (int b = 0; b < blocks; ++b) layer.burst_receive(w);
            long preempted = involuntary_switches() != sw ? 1 : 0;
            if (!single) {
                long peer = preempted;
                job.bcast(&peer, sizeof peer, 1);
                preempted |= peer;
            }
            if (sender && r > 0) {
                const double us = ns / 1e3 / (double(blocks) * w);
                all[w].push_back(us);
                if (!preempted) clean[w].push_back(us);
            }
        }
        if (r > 0) progress.step(fmt::format("round {}/{}", r, cfg.bw_reps));
    }
    progress.end();
    sweep.status = {"measured", ""};
    if (!sender) return sweep;
    for (int w : windows) {
        // Streams the OS interrupted are dropped while at least 2 clean ones remain.
        Summary s = summarize(clean[w].size() >= 2 ? clean[w] : all[w]);
        sweep.points.push_back({w, s.median, s.median > 0 ? 1.0 / s.median : kNaN, s.spread()});
    }
    return sweep;
}

} // namespace logp
