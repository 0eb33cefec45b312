// logp_method.cpp - see logp_method.hpp for the method.
#include "logp_method.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace logp {
namespace {

// Per-M medians of T for the bursts selected by keep(); also the worst spread.
struct Series {
    std::vector<double> m, t; // M and median T(M)
    std::vector<double> iqr;  // IQR of T(M)
    double worst_spread = 0;
};

template <class Keep>
Series series_of(const std::vector<BurstSample> &bursts, Keep keep) {
    std::map<int, std::vector<double>> by_m;
    for (const BurstSample &b : bursts)
        if (b.m > 0 && keep(b)) by_m[b.m].push_back(b.total_ns);
    Series s;
    for (auto &[m, ts] : by_m) {
        Summary sum = summarize(ts);
        s.m.push_back(m);
        s.t.push_back(sum.median);
        s.iqr.push_back(sum.p75 - sum.p25);
        s.worst_spread = std::max(s.worst_spread, sum.spread());
    }
    return s;
}

// Slope of T against M: a line fit when there are two or more sizes, else T/M.
double per_message_slope(const Series &s, double *r2) {
    if (s.m.size() >= 2) {
        LineFit f = fit_line(s.m, s.t);
        if (r2) *r2 = f.r2;
        return f.slope;
    }
    if (r2) *r2 = 1.0;
    return s.t[0] / s.m[0];
}

double iqr_of(const std::vector<double> &v) {
    if (v.size() < 2) return 0;
    Summary s = summarize(v);
    return s.p75 - s.p25;
}

} // namespace

const char *latency_state_name(LatencyState s) {
    switch (s) {
    case LatencyState::measured: return "measured";
    case LatencyState::below_resolution: return "below resolution";
    case LatencyState::inconsistent: return "inconsistent";
    }
    return "?";
}

LogPEstimate extract_logp(const LogPInputs &in, const SpreadPolicy &policy) {
    if (in.rtt_ns.empty()) throw std::invalid_argument("LogP: no round-trip timings");
    if (in.recv_ns.empty()) throw std::invalid_argument("LogP: no receive timings (o_r)");
    if (in.short_max_m < 1 || in.long_min_m <= in.short_max_m)
        throw std::invalid_argument("LogP: need 1 <= short_max_m < long_min_m");

    LogPEstimate e;
    Series shorts =
        series_of(in.bursts, [&](const BurstSample &b) { return b.delay_ns == 0 && b.m <= in.short_max_m; });
    Series longs = series_of(in.bursts, [&](const BurstSample &b) { return b.delay_ns == 0 && b.m >= in.long_min_m; });
    if (shorts.m.empty()) throw std::invalid_argument("LogP: no short bursts without delay (o_s)");
    if (longs.m.empty()) throw std::invalid_argument("LogP: no long bursts without delay (g)");

    if (!(in.timer_ns >= 0)) throw std::invalid_argument("LogP: the timer cost must be >= 0");
    e.rtt = summarize(in.rtt_ns);
    e.recv = summarize(in.recv_ns);
    // One clock-read pair is inside every round trip and every timed receive.
    e.rtt_half_ns = std::max(0.0, e.rtt.median - in.timer_ns) / 2;
    e.o_r_total_ns = std::max(0.0, e.recv.median - in.timer_ns);
    e.o_r_reply_ns = in.recv_reply_ns.empty() ? 0.0 : std::max(0.0, median_of(in.recv_reply_ns));
    if (e.o_r_reply_ns > e.o_r_total_ns) {
        e.warnings.push_back(
            fmt::format("o_r(reply) {:.3f} us exceeds the whole receive {:.3f} us (measured in separate "
                        "series): o_r(request) is reported as 0",
                        e.o_r_reply_ns / 1e3, e.o_r_total_ns / 1e3));
        e.o_r_reply_ns = e.o_r_total_ns;
    }
    e.o_r_ns = e.o_r_total_ns - e.o_r_reply_ns;
    e.o_r_cold_ns = e.o_r_ns;
    double recv_iqr = std::isnan(in.recv_iqr_ns) ? iqr_of(in.recv_ns) : in.recv_iqr_ns;
    double lines_iqr = 0;
    if (std::isfinite(in.recv_lines_ns)) {
        // The receive's own work; the reply it sends is the same either way.
        e.o_r_lines_local = true;
        e.o_r_lines_ns = in.recv_lines_ns;
        e.o_r_total_ns = std::max(0.0, e.o_r_total_ns - in.recv_lines_ns);
        e.o_r_ns = std::max(0.0, e.o_r_total_ns - e.o_r_reply_ns);
        lines_iqr = in.recv_lines_iqr_ns;
    }
    e.o_s_ns = per_message_slope(shorts, nullptr);
    e.o_s_spread = shorts.worst_spread;
    e.g_ns = per_message_slope(longs, &e.g_fit_r2);
    e.g_spread = longs.worst_spread;
    e.L_raw_ns = e.rtt_half_ns - e.o_s_ns - e.o_r_ns;
    {
        const double rtt_iqr = std::isnan(in.rtt_iqr_ns) ? iqr_of(in.rtt_ns) : in.rtt_iqr_ns;
        // o_s is a slope: its scatter per message is the IQR of the largest short burst over its size.
        const double os_iqr = shorts.iqr.back() / shorts.m.back();
        e.L_resolution_ns = 0.5 * (rtt_iqr / 2) + 0.5 * recv_iqr + 0.5 * os_iqr + 0.5 * lines_iqr;
    }
    // The cross-check uses the largest inserted delay among long bursts.
    double max_delay = 0;
    for (const BurstSample &b : in.bursts)
        if (b.m >= in.long_min_m) max_delay = std::max(max_delay, b.delay_ns);
    if (max_delay > 0) {
        Series delayed =
            series_of(in.bursts, [&](const BurstSample &b) { return b.delay_ns == max_delay && b.m >= in.long_min_m; });
        e.delay_used_ns = max_delay;
        e.o_s_delay_ns = per_message_slope(delayed, nullptr) - max_delay;
        if (max_delay + e.o_s_ns < e.g_ns)
            e.warnings.push_back(fmt::format("o_s cross-check: delay {:.2f} us is shorter than g - o_s; "
                                             "the delayed bursts still see the gap",
                                             max_delay / 1e3));
        else if (std::fabs(e.o_s_delay_ns - e.o_s_ns) > std::max(0.25 * e.o_s_ns, 100.0))
            e.warnings.push_back(fmt::format("o_s from short bursts ({:.3f} us) and from delayed long bursts "
                                             "({:.3f} us) disagree by more than 25%",
                                             e.o_s_ns / 1e3, e.o_s_delay_ns / 1e3));
    }

    if (auto w = spread_warning(e.rtt, policy, "RTT")) e.warnings.push_back(*w);
    if (auto w = spread_warning(e.recv, policy, "o_r")) e.warnings.push_back(*w);
    if (shorts.worst_spread > policy.max_spread)
        e.warnings.push_back(fmt::format("o_s: short-burst spread {:.0f}% exceeds {:.0f}%", 100 * shorts.worst_spread,
                                         100 * policy.max_spread));
    if (longs.worst_spread > policy.max_spread)
        e.warnings.push_back(fmt::format("g: long-burst spread {:.0f}% exceeds {:.0f}%", 100 * longs.worst_spread,
                                         100 * policy.max_spread));
    if (e.o_s_ns <= 0) e.warnings.push_back("o_s is not positive: the short bursts are too noisy to resolve it");
    if (e.g_ns < 0.9 * e.o_s_ns)
        e.warnings.push_back("g < o_s: long bursts ran faster per message than short ones (noise, or a "
                             "sender-side cache effect); g is reported as measured");
    if (e.L_raw_ns >= 0) {
        e.L_state = LatencyState::measured;
        e.L_ns = e.L_raw_ns;
    } else if (e.L_raw_ns >= -e.L_resolution_ns) {
        e.L_state = LatencyState::below_resolution;
        e.L_ns = 0;
        e.warnings.push_back(fmt::format("L is below the resolution: RTT/2 - o_s - o_r(request) = {:.3f} us, within "
                                         "the scatter of the three series ({:.3f} us); reported as 0",
                                         e.L_raw_ns / 1e3, e.L_resolution_ns / 1e3));
    } else {
        e.L_state = LatencyState::inconsistent;
        e.L_ns = std::numeric_limits<double>::quiet_NaN();
        std::string why = fmt::format(
            "inconsistent figures: o_s + o_r(request) = {:.3f} us exceeds RTT/2 = {:.3f} us by {:.3f} us, more than "
            "the scatter of the three series ({:.3f} us) explains; L is not reported",
            (e.o_s_ns + e.o_r_ns) / 1e3, e.rtt_half_ns / 1e3, -e.L_raw_ns / 1e3, e.L_resolution_ns / 1e3);
        if (e.o_s_ns + e.o_r_total_ns > 2 * e.rtt_half_ns)
            why += fmt::format(
                ". o_s + o_r = {:.3f} us is more than a whole round trip ({:.3f} us), which no noise explains: the "
                "clock or the timing of single operations is wrong on this machine (in an emulated guest the host "
                "takes the vCPU away inside timed operations, which the guest cannot see; see docs/logp.md)",
                (e.o_s_ns + e.o_r_total_ns) / 1e3, 2 * e.rtt_half_ns / 1e3);
        e.warnings.push_back(why);
    }
    return e;
}

double simulate_burst_ns(const LogPMachine &mach, int m, double delay_ns) {
    if (m <= 0) return 0;
    int w = std::max(1, mach.window);
    std::vector<double> departure(std::size_t(m), 0.0); // when message i has left the NIC
    double end = 0;                                     // when the previous send call returned (plus its delay)
    double last_dep = 0;                                // when the NIC finished the previous message
    for (int i = 0; i < m; ++i) {
        double start = end;
        if (i >= w) start = std::max(start, departure[std::size_t(i - w)]); // queue full: wait for a slot
        double handed = start + mach.o_s_ns;
        last_dep = std::max(handed, last_dep) + mach.g_ns;
        departure[std::size_t(i)] = last_dep;
        end = handed + delay_ns;
    }
    return end;
}

double simulate_rtt_ns(const LogPMachine &mach) { return 2 * (mach.o_s_ns + mach.L_ns + mach.o_r_ns); }

} // namespace logp
