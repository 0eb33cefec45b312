// fm_fit.hpp - Fast Messages' bandwidth metrics (Pakin, Lauria, Chien, Table 2) from a
// measured bandwidth curve:
//   t0     start-up overhead: intercept of the per-message time T(n) = t0 + n / r_inf
//   r_inf  asymptotic bandwidth for infinitely large messages: 1 / slope
//   n_1/2  message size that reaches r_inf / 2, read off the measured curve
//          (interpolated between the two sizes around the crossing, on a log
//          size axis); the model value t0 * r_inf is reported next to it.
// The line is fitted with weights 1/T(n)^2, i.e. it minimises relative error,
// so the small messages that decide t0 count as much as the large ones.
// Units: bytes, microseconds, MB/s with 1 MB = 10^6 bytes (bytes/us).
// Header-only, beside the instrumentation: bench/logp and bip_pingpong both
// report these metrics, from the same code.
#pragma once

#include "viastack/line_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <vector>

namespace viastack {

struct BandwidthSample {
    std::size_t bytes = 0;
    double us_per_msg = 0; // median time per message in the streaming test
};

struct FmMetrics {
    double t0_us = 0;
    double r_inf_mb_s = 0;
    double n_half_bytes = 0;        // from the curve
    double n_half_model_bytes = 0;  // t0 * r_inf
    bool n_half_from_model = false; // the curve never crossed r_inf/2 inside the measured sizes
    double r_peak_mb_s = 0;         // largest bandwidth actually measured
    double fit_r2 = 0;
};

// Needs two or more distinct sizes with positive times; throws std::invalid_argument otherwise.
inline FmMetrics fit_fm_metrics(std::span<const BandwidthSample> curve) {
    std::vector<BandwidthSample> pts(curve.begin(), curve.end());
    std::sort(pts.begin(), pts.end(), [](auto &a, auto &b) { return a.bytes < b.bytes; });
    std::vector<double> x, y, w;
    for (const BandwidthSample &p : pts) {
        if (!(p.us_per_msg > 0) || !std::isfinite(p.us_per_msg))
            throw std::invalid_argument("FM fit: a per-message time is not positive");
        x.push_back(double(p.bytes));
        y.push_back(p.us_per_msg);
        w.push_back(1.0 / (p.us_per_msg * p.us_per_msg));
    }
    if (pts.size() < 2 || pts.front().bytes == pts.back().bytes)
        throw std::invalid_argument("FM fit: need at least two message sizes");
    LineFit f = fit_line(x, y, w);
    if (!(f.slope > 0)) throw std::invalid_argument("FM fit: time per message does not grow with size");

    FmMetrics m;
    m.t0_us = f.intercept;
    m.r_inf_mb_s = 1.0 / f.slope;
    m.fit_r2 = f.r2;
    m.n_half_model_bytes = m.t0_us * m.r_inf_mb_s;
    for (const BandwidthSample &p : pts) m.r_peak_mb_s = std::max(m.r_peak_mb_s, double(p.bytes) / p.us_per_msg);

    // First crossing of r_inf/2 on the measured curve.
    double half = m.r_inf_mb_s / 2;
    m.n_half_from_model = true;
    m.n_half_bytes = m.n_half_model_bytes;
    for (std::size_t i = 0; i < pts.size(); ++i) {
        double bw = double(pts[i].bytes) / pts[i].us_per_msg;
        if (bw < half) continue;
        if (i == 0) break; // already above half at the smallest size: only the model can say
        double bw0 = double(pts[i - 1].bytes) / pts[i - 1].us_per_msg;
        double l0 = std::log2(double(std::max<std::size_t>(pts[i - 1].bytes, 1)));
        double l1 = std::log2(double(pts[i].bytes));
        double frac = bw > bw0 ? (half - bw0) / (bw - bw0) : 0.0;
        m.n_half_bytes = std::exp2(l0 + frac * (l1 - l0));
        m.n_half_from_model = false;
        break;
    }
    return m;
}

} // namespace viastack
