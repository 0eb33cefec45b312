// measure.cpp - see measure.hpp.
#include "measure.hpp"

#include "line_probe.hpp"
#include "timer.hpp"
#include "viastack/fm_fit.hpp"
#include "vipl_instr.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace logp {
namespace {

bool is_sender(const Layer &layer, const Job &job) { return layer.single_process() || job.rank() == 0; }
bool is_receiver(const Layer &layer, const Job &job) { return layer.single_process() || job.rank() == 1; }
bool takes_part(const Layer &layer, const Job &job) {
    return layer.single_process() ? job.rank() == 0 : job.rank() < 2;
}

// Sends rank `from`'s summary to rank 0 (a POD copy through the boot broadcast).
Summary share_summary(const Job &job, Summary s, int from) {
    job.bcast(&s, sizeof s, from);
    return s;
}

// Burst sizes: 1, 2, 4, ... up to short_max; long_min, 2*long_min, ... up to max.
std::vector<int> burst_sizes(const Layer &layer) {
    std::vector<int> ms;
    for (int m = 1; m < layer.short_burst_max(); m *= 2) ms.push_back(m);
    ms.push_back(layer.short_burst_max());
    int top = std::max(layer.long_burst_min(), layer.max_burst());
    for (int m = layer.long_burst_min(); m <= top; m *= 2) ms.push_back(m);
    if (ms.back() != top) ms.push_back(top); // at least two long sizes for the slope
    std::sort(ms.begin(), ms.end());
    ms.erase(std::unique(ms.begin(), ms.end()), ms.end());
    return ms;
}

long preemptions(const MeasureConfig &cfg) { return cfg.preemptions ? cfg.preemptions() : involuntary_switches(); }

// One burst as the method times it on the sender (the finish is untimed).
// *preempted: the OS took the CPU from the sender meanwhile, or (stall_ns > 0)
// one send took longer than stall_ns - a pause no network here makes, which
// getrusage may not see when the whole VM is descheduled (both ranks stop
// together); either way the time says nothing about the network (such samples
// are repeated, see run_bursts).  The clock is read only with stall_ns (the
// long bursts, where a message costs g, not o_s), and once per kStallStride
// sends, so that the check adds a quarter of a clock read to the g it
// measures: a window of that many sends cannot take stall_ns (>= 4 round
// trips) without a pause, as long as a send waits at most about a round trip.
constexpr int kStallStride = 4;
double timed_burst(Layer &layer, const MeasureConfig &cfg, int m, double delay_ns, double stall_ns, bool *preempted) {
    long sw = preemptions(cfg);
    std::uint64_t t0 = ticks(), prev = t0, worst = 0;
    for (int i = 0; i < m; ++i) {
        layer.burst_send_one();
        spin_ns(delay_ns);
        if (stall_ns > 0 && i % kStallStride == kStallStride - 1) {
            const std::uint64_t now = ticks();
            worst = std::max(worst, now - prev);
            prev = now;
        }
    }
    std::uint64_t t1 = ticks();
    if (stall_ns > 0) worst = std::max(worst, t1 - prev); // the sends after the last read
    *preempted = preemptions(cfg) != sw || (stall_ns > 0 && ticks_to_ns(worst) > stall_ns);
    layer.burst_sender_finish(m);
    return ticks_to_ns(t1 - t0);
}

// Drops preempted samples of each (m, delay) series, unless fewer than 3
// clean ones would remain (then the series is kept whole and its spread shows
// the noise).  Returns how many were dropped.
int keep_clean(std::vector<BurstSample> &all, const std::vector<bool> &preempted) {
    std::map<std::pair<int, double>, int> clean;
    for (std::size_t i = 0; i < all.size(); ++i)
        if (!preempted[i]) ++clean[{all[i].m, all[i].delay_ns}];
    std::vector<BurstSample> out;
    int dropped = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
        if (preempted[i] && clean[{all[i].m, all[i].delay_ns}] >= 3) {
            ++dropped;
            continue;
        }
        out.push_back(all[i]);
    }
    all.swap(out);
    return dropped;
}

// Runs `rounds` rounds over all burst sizes (interleaved, so slow drift
// spreads over all sizes), the first `warm` rounds untimed.  A timed burst
// during which either process was preempted is run again (cfg.burst_repeats
// times at most): the receiver's preemption stalls the sender as much as its
// own once the sender waits for credits or replies, and a series of which
// fewer than 3 clean samples remain is kept whole by keep_clean - with a
// scheduler tick in every longest burst, its slope is the tick spread over the
// burst sizes (4 ms over 96 messages: +43 us on g).  Both ranks learn the
// verdict from one all-gather after the burst (untimed).  A long burst in
// which kStallStride sends took longer than stall_ns counts as preempted too
// (timed_burst).  When
// every try was preempted, the fastest is kept (flagged).
void run_bursts(Layer &layer, const Job &job, const MeasureConfig &cfg, const std::vector<int> &ms, int warm,
                int rounds, double delay_ns, double stall_ns, bool long_only, std::vector<BurstSample> &out,
                std::vector<bool> &preempted, Progress &progress, const std::string &label) {
    for (int r = 0; r < warm + rounds; ++r) {
        for (int m : ms) {
            // The delayed series needs only two long sizes for its slope; the
            // shortest long ones keep each timed burst brief (less exposed to preemption).
            if (long_only && (m < layer.long_burst_min() || m > 2 * layer.long_burst_min())) continue;
            double fastest = 0; // of the preempted tries: a stall only adds time
            for (int attempt = 0;; ++attempt) {
                bool pre = false;
                double t = 0;
                if (is_sender(layer, job))
                    t = timed_burst(layer, cfg, m, delay_ns, m >= layer.long_burst_min() ? stall_ns : 0, &pre);
                if (!layer.single_process() && job.rank() == 1) {
                    const long sw = preemptions(cfg);
                    layer.burst_receive(m);
                    pre = preemptions(cfg) != sw;
                }
                if (!layer.single_process()) pre = !job.all(!pre);
                if (r < warm) break;
                if (pre) fastest = attempt == 0 ? t : std::min(fastest, t);
                if (pre && attempt < cfg.burst_repeats) continue;
                if (is_sender(layer, job)) {
                    out.push_back({m, delay_ns, pre ? fastest : t});
                    preempted.push_back(pre);
                }
                break;
            }
        }
        if (r >= warm) progress.step(fmt::format("{} round {}/{}", label, r - warm + 1, rounds));
    }
}

} // namespace

MeasureConfig full_config() { return MeasureConfig{}; }

MeasureConfig quick_config() {
    MeasureConfig c;
    c.warmup = 20;
    c.iterations = 200;
    c.burst_reps = 12;
    c.recv_probes = 40;
    // Short streams (well under a scheduler time slice) with more repetitions:
    // on a busy machine most long streams would be preempted.
    c.bw_reps = 5;
    c.bw_stream_bytes = 64 << 10;
    c.bw_min_count = 4;
    c.bw_max_count = 256;
    c.rate_msgs = 512;
    c.quick = true;
    return c;
}

Summary measure_rtt(Layer &layer, const Job &job, const MeasureConfig &cfg, std::size_t bytes) {
    std::vector<double> rtt;
    if (is_sender(layer, job)) {
        rtt = collect_samples(cfg.warmup, cfg.iterations, [&] {
            std::uint64_t t0 = ticks();
            layer.rtt_client(bytes);
            return ticks_to_ns(ticks() - t0);
        });
        layer.rtt_client_done();
    } else if (job.rank() == 1) {
        layer.rtt_server_series(bytes, cfg.warmup + cfg.iterations);
    }
    Summary s;
    if (!rtt.empty()) s = summarize(rtt);
    return s;
}

// A measured row of Table 2 from the reduction (us) and the two raw summaries (ns).
static void fill_row(LogPRow &row, const LogPEstimate &e, const Summary &rtt, const Summary &recv_sum) {
    row.status = {"measured", ""};
    row.rtt_half_us = e.rtt_half_ns / 1e3;
    row.rtt_half_min_us = rtt.min / 2e3;
    row.o_s_us = e.o_s_ns / 1e3;
    row.o_r_us = e.o_r_ns / 1e3;
    row.o_r_reply_us = e.o_r_reply_ns / 1e3;
    row.o_r_lines_local = e.o_r_lines_local;
    row.o_r_cold_us = e.o_r_cold_ns / 1e3;
    row.o_r_lines_us = e.o_r_lines_local ? e.o_r_lines_ns / 1e3 : kNaN;
    row.g_us = e.g_ns / 1e3;
    row.L_us = e.L_ns / 1e3;
    row.L_raw_us = e.L_raw_ns / 1e3;
    row.L_resolution_us = e.L_resolution_ns / 1e3;
    row.L_state = latency_state_name(e.L_state);
    row.o_s_delay_us = e.o_s_delay_ns >= -0.5 ? e.o_s_delay_ns / 1e3 : kNaN;
    row.spread_rtt = rtt.spread();
    row.spread_o_r = recv_sum.spread();
    row.spread_o_s = e.o_s_spread;
    row.spread_g = e.g_spread;
    row.warnings = e.warnings;
}

LogPRow measure_logp(Layer &layer, const Job &job, const MeasureConfig &cfg, Progress &progress) {
    LogPRow row;
    row.layer = layer.id();
    if (!takes_part(layer, job)) return row;

    const std::vector<int> ms = burst_sizes(layer);
    const int burst_warm = std::max(1, cfg.burst_reps / 10);
    progress.begin(layer.id() + ": LogP", 3 + 2 * cfg.burst_reps);

    // 1. Round trips of a 16-byte message (the paper's minimal AM message).
    LogPInputs in;
    Summary rtt = measure_rtt(layer, job, cfg, 16);
    if (is_sender(layer, job)) in.rtt_ns.assign(1, rtt.median); // the summary carries the spread
    progress.step("round trips");
    double rtt_ns = layer.single_process() ? rtt.median : job.bcast_double(rtt.median, 0);
    // A send in a steady-state burst waits at most about a round trip (for a
    // credit or a reply); one that took far longer met a scheduler, not the network.
    const double stall_ns = std::max(cfg.stall_min_ns, 4 * rtt_ns);

    // 2. Bursts without delay (o_s from the short ones, g from the long ones).
    in.short_max_m = layer.short_burst_max();
    in.long_min_m = layer.long_burst_min();
    std::vector<bool> preempted;
    run_bursts(layer, job, cfg, ms, burst_warm, cfg.burst_reps, 0.0, stall_ns, false, in.bursts, preempted, progress,
               "bursts");

    // 3. Long bursts with a delay that hides the gap: o_s + dt per message.
    //    dt is chosen on the sender from the provisional g (only rank 0 times).
    double delay = 0;
    if (is_sender(layer, job)) {
        LogPInputs provisional = in;
        keep_clean(provisional.bursts, preempted);
        provisional.recv_ns.assign(1, 1.0);
        LogPEstimate e = extract_logp(provisional, cfg.policy);
        // A longer delay is always right (it only costs time); a shorter one
        // than g - o_s leaves the gap in the slope.  The provisional g comes
        // from few bursts and was seen at 1.5 us for a known 7 us on a busy
        // machine (logp.Synthetic.SuiteRecoversKnownLogP in CI: o_s(delayed)
        // 4.7 us for 2), so half the round trip bounds it from below too.
        delay = std::max({1.5 * e.g_ns, 0.5 * rtt_ns, 1000.0});
    }
    run_bursts(layer, job, cfg, ms, burst_warm, cfg.burst_reps, delay, stall_ns + kStallStride * delay, true, in.bursts,
               preempted, progress, "delayed bursts");
    const std::size_t bursts_timed = in.bursts.size();
    const int dropped = keep_clean(in.bursts, preempted);

    // 4. o_r at the receiver: let the message arrive, then time its receive.
    double settle = std::max(5 * rtt_ns / 2, 20000.0);
    std::vector<double> recv, recv_clean;
    for (int i = 0; i < cfg.recv_probes + cfg.warmup / 10; ++i) {
        if (is_sender(layer, job)) layer.recv_probe_send();
        if (is_receiver(layer, job)) {
            double t = layer.recv_probe_receive(settle);
            if (i < cfg.warmup / 10) continue;
            recv.push_back(std::fabs(t));
            if (t > 0) recv_clean.push_back(t); // negative: the receiver lost the CPU inside the call
        }
    }
    // 4b. o_r(reply): the same probes with the instrumentation on at the
    //     receiver, which reads its send-path counters around the timed
    //     operation (a series apart, so the counters' cost stays out of o_r).
    double reply_ns = 0;
    if (!layer.single_process()) {
        const int n = std::max(10, cfg.recv_probes / 4);
        std::vector<double> reply;
        const int was = vipl_instr_on;
        if (is_receiver(layer, job)) vipl_instr_enable(1);
        for (int i = 0; i < n; ++i) {
            if (is_sender(layer, job)) layer.recv_probe_send();
            if (is_receiver(layer, job) && layer.recv_probe_receive(settle) > 0)
                reply.push_back(layer.recv_probe_reply_ns());
        }
        if (is_receiver(layer, job)) vipl_instr_enable(was);
        reply_ns = job.bcast_double(reply.empty() ? 0.0 : median_of(reply), 1);
    }
    // 4c. The wire on one host: one cache line (the packet's FIFO slot) moved
    //     from the sender's CPU, timed on the same two CPUs right after.
    double line_ns = kNaN;
    if (cfg.shared_memory_wire && !layer.single_process() && job.size() == 2) line_ns = LineProbe(job).measure();
    progress.step("receive overhead");
    Summary recv_sum;
    if (!recv.empty())
        recv_sum = summarize(recv_clean.size() >= std::max<std::size_t>(5, recv.size() / 4) ? recv_clean : recv);
    if (!layer.single_process()) recv_sum = share_summary(job, recv_sum, 1);
    progress.step("done");
    progress.end();
    if (!is_sender(layer, job)) return row;

    // Reduce: the RTT and o_r summaries stand in for their raw series.
    in.rtt_ns = {rtt.median};
    in.recv_ns = {recv_sum.median};
    in.rtt_iqr_ns = rtt.p75 - rtt.p25;
    in.recv_iqr_ns = recv_sum.p75 - recv_sum.p25;
    in.recv_reply_ns = {reply_ns};
    if (std::isfinite(line_ns)) in.recv_lines_ns = line_ns;
    in.timer_ns = timer_cost_ns();
    LogPEstimate e = extract_logp(in, cfg.policy);
    e.warnings.erase(
        std::remove_if(e.warnings.begin(), e.warnings.end(),
                       [](const std::string &w) { return w.rfind("RTT:", 0) == 0 || w.rfind("o_r:", 0) == 0; }),
        e.warnings.end());
    if (auto w = spread_warning(rtt, cfg.policy, "RTT")) e.warnings.push_back(*w);
    if (auto w = spread_warning(recv_sum, cfg.policy, "o_r")) e.warnings.push_back(*w);
    if (dropped > int(bursts_timed / 5))
        e.warnings.push_back(fmt::format("the OS preempted the sender during {} of {} bursts (dropped); the machine "
                                         "is busy",
                                         dropped, bursts_timed));

    fill_row(row, e, rtt, recv_sum);
    return row;
}

std::vector<std::size_t> bandwidth_sizes(std::size_t min_bytes, std::size_t max_bytes) {
    std::vector<std::size_t> out;
    for (std::size_t n = std::max<std::size_t>(min_bytes, 1); n <= max_bytes; n *= 2) out.push_back(n);
    return out;
}

void fit_curve(BandwidthCurve &curve) {
    std::vector<viastack::BandwidthSample> samples;
    for (const BandwidthPoint &p : curve.points)
        if (std::isfinite(p.us_per_msg) && p.us_per_msg > 0) samples.push_back({p.bytes, p.us_per_msg});
    try {
        viastack::FmMetrics m = viastack::fit_fm_metrics(samples);
        curve.t0_us = m.t0_us;
        curve.r_inf_mb_s = m.r_inf_mb_s;
        curve.n_half_bytes = m.n_half_bytes;
        curve.n_half_model_bytes = m.n_half_model_bytes;
        curve.n_half_from_model = m.n_half_from_model;
        curve.r_peak_mb_s = m.r_peak_mb_s;
        curve.fit_r2 = m.fit_r2;
    } catch (const std::invalid_argument &e) {
        curve.status.note = std::string("FM metrics not fitted: ") + e.what();
        // A flat curve (e.g. bound by credits and latency up to 32 KB) still has
        // a start-up cost; r_inf and n_1/2 lie beyond the measured sizes.
        std::vector<double> t;
        for (const auto &s : samples) t.push_back(s.us_per_msg);
        if (samples.size() >= 2 && std::string(e.what()).find("does not grow") != std::string::npos) {
            curve.t0_us = median_of(t);
            curve.status.note = "per-message time does not grow with size up to the largest message (latency/credit "
                                "bound): t0 is its median; r_inf and n_1/2 lie beyond the measured sizes";
        }
        for (const auto &p : curve.points)
            curve.r_peak_mb_s = std::isfinite(curve.r_peak_mb_s) ? std::max(curve.r_peak_mb_s, p.mb_s) : p.mb_s;
    }
}

BandwidthCurve measure_bandwidth(Layer &layer, const Job &job, const MeasureConfig &cfg, Progress &progress) {
    BandwidthCurve curve;
    curve.layer = layer.id();
    curve.method = layer.bulk_method();
    if (!layer.has_bulk()) {
        curve.status = {"skipped", "the layer has no bulk transfer"};
        return curve;
    }
    if (!takes_part(layer, job)) return curve;
    std::vector<std::size_t> sizes =
        bandwidth_sizes(cfg.bw_min_bytes, std::min(cfg.bw_max_bytes, layer.bulk_max_bytes()));
    progress.begin(layer.id() + ": bandwidth", int(sizes.size()));
    for (std::size_t bytes : sizes) {
        int count = int(std::clamp<std::size_t>(cfg.bw_stream_bytes / bytes, std::size_t(cfg.bw_min_count),
                                                std::size_t(cfg.bw_max_count)));
        std::vector<double> per_msg_us, clean_us;
        for (int r = 0; r < cfg.bw_reps + 1; ++r) { // the first stream warms up
            // A stream is clean when neither rank lost its CPU meanwhile (the
            // receiver's count comes over with one broadcast, after the stream).
            long sw = involuntary_switches();
            double ns = 0;
            if (is_sender(layer, job)) ns = layer.bulk_stream_client(bytes, count);
            else layer.bulk_stream_server(bytes, count);
            long preempted = involuntary_switches() != sw ? 1 : 0;
            if (!layer.single_process()) {
                long peer = preempted;
                job.bcast(&peer, sizeof peer, 1);
                preempted |= peer;
            }
            if (is_sender(layer, job) && r > 0) {
                per_msg_us.push_back(ns / 1e3 / count);
                if (!preempted) clean_us.push_back(ns / 1e3 / count);
            }
        }
        if (is_sender(layer, job)) {
            // Streams the OS interrupted are dropped while at least 2 clean ones remain.
            Summary s = summarize(clean_us.size() >= 2 ? clean_us : per_msg_us);
            curve.points.push_back({bytes, s.median, double(bytes) / s.median, s.spread()});
        }
        progress.step(fmt::format("{} B x {}", bytes, count));
    }
    progress.end();
    curve.status = {"measured", ""};
    if (is_sender(layer, job)) fit_curve(curve);
    return curve;
}

} // namespace logp

#include "breakdown.hpp"
#include "paper.hpp"

namespace logp {

Breakdown measure_breakdown(Layer &layer, const Job &job, const MeasureConfig &cfg, Progress &progress) {
    Breakdown b;
    b.name = layer.breakdown_name();
    b.layer = layer.id();
    if (b.name.empty()) {
        b.status = {"skipped", "the layer has no breakdown operation"};
        return b;
    }
    if (!VIASTACK_INSTR_COMPILED) {
        b.status = {"skipped", "instrumentation compiled out (configure with -DVIASTACK_INSTR=ON)"};
        return b;
    }
    // The operations run in blocks; every counter's per-operation cost is the
    // median over the blocks, so a block in which the OS preempted either
    // process (a few ms charged to whatever primitive was running) is outvoted.
    const int blocks = 9;
    const int per_block = std::max(10, cfg.iterations / 2 / blocks);
    auto series = [&](int count) {
        if (is_sender(layer, job)) {
            for (int i = 0; i < count; ++i) layer.breakdown_client();
            layer.breakdown_client_done();
        } else if (job.rank() == 1) {
            layer.breakdown_server_series(count);
        }
    };
    progress.begin(layer.id() + ": breakdown", blocks + 1);
    int was = vipl_instr_on;
    series(cfg.warmup); // untimed, instrumentation as it was
    progress.step("warm-up");
    std::map<std::string, std::vector<double>> cycles_per_op, count_per_op;
    std::map<std::string, int> category;
    for (int blk = 0; blk < blocks; ++blk) {
        job.barrier();
        vipl_instr_reset();
        vipl_instr_enable(1);
        job.barrier();
        series(per_block);
        vipl_instr_enable(was);
        job.barrier();
        for (const CounterTotal &c : job_counters(job)) {
            category[c.name] = c.category;
            cycles_per_op[c.name].push_back(double(c.cycles) / per_block);
            count_per_op[c.name].push_back(double(c.count) / per_block);
        }
        progress.step(fmt::format("block {}/{} ({} operations)", blk + 1, blocks, per_block));
    }
    progress.end();
    // Back to totals over all operations, from the per-block medians.
    const std::uint64_t n = std::uint64_t(blocks) * std::uint64_t(per_block);
    std::vector<CounterTotal> counters;
    for (auto &[name, cyc] : cycles_per_op) {
        cyc.resize(std::size_t(blocks), 0.0); // a counter absent from a block ran 0 times there
        auto &cnt = count_per_op[name];
        cnt.resize(std::size_t(blocks), 0.0);
        counters.push_back({name, category[name], std::uint64_t(median_of(cnt) * double(n) + 0.5),
                            std::uint64_t(median_of(cyc) * double(n) + 0.5)});
    }
    const char *key = b.name == "am-request-reply" ? "table3_am_request_reply" : "table4_splitc_get";
    const nlohmann::json *paper = paper_figures().contains(key) ? &paper_figures()[key] : nullptr;
    const std::string prefix = b.name == "am-request-reply" ? "am." : b.name == "splitc-get" ? "splitc." : "";
    return make_breakdown(b.name, b.layer, counters, n, vipl_instr_cycles_per_ns(), paper, prefix);
}

} // namespace logp

namespace logp {

std::vector<OurFigure> measure_round(Layer &layer, const Job &job, const MeasureConfig &cfg,
                                     const std::vector<std::size_t> &sizes) {
    std::vector<OurFigure> out;
    if (!takes_part(layer, job)) return out;
    const std::string id = layer.id();
    Summary rtt = measure_rtt(layer, job, cfg, 16);
    if (is_sender(layer, job)) out.push_back({id, "rtt_half_us", 16, rtt.median / 2e3});

    // g: two steady-state burst sizes, alternated so drift falls on both.
    const int m1 = layer.long_burst_min(), m2 = std::max(layer.max_burst(), 2 * m1);
    std::vector<double> t1, t2;
    for (int r = 0; r < cfg.burst_reps + 1; ++r) // the first pair warms up
        for (int m : {m1, m2}) {
            if (is_sender(layer, job)) {
                bool preempted = false;
                double t = timed_burst(layer, cfg, m, 0, 0, &preempted);
                if (r > 0) (m == m1 ? t1 : t2).push_back(t);
            }
            if (!layer.single_process() && job.rank() == 1) layer.burst_receive(m);
        }
    if (is_sender(layer, job)) out.push_back({id, "g_us", 16, (median_of(t2) - median_of(t1)) / (m2 - m1) / 1e3});

    for (std::size_t bytes : sizes) {
        if (!layer.has_bulk() || bytes > layer.bulk_max_bytes()) {
            if (is_sender(layer, job)) out.push_back({id, "bandwidth_mb_s", bytes, kNaN});
            continue;
        }
        int count = int(std::clamp<std::size_t>(cfg.bw_stream_bytes / bytes, std::size_t(cfg.bw_min_count),
                                                std::size_t(cfg.bw_max_count)));
        std::vector<double> per_msg_us;
        for (int r = 0; r < cfg.bw_reps + 1; ++r) {
            double ns = 0;
            if (is_sender(layer, job)) ns = layer.bulk_stream_client(bytes, count);
            else layer.bulk_stream_server(bytes, count);
            if (r > 0 && is_sender(layer, job)) per_msg_us.push_back(ns / 1e3 / count);
        }
        if (is_sender(layer, job)) out.push_back({id, "bandwidth_mb_s", bytes, double(bytes) / median_of(per_msg_us)});
    }
    return out;
}

} // namespace logp
