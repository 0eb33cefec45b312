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
#pragma once

#include <cstddef>
#include <span>

namespace logp {

struct BandwidthSample {
    std::size_t bytes = 0;
    double us_per_msg = 0;  // median time per message in the streaming test
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
FmMetrics fit_fm_metrics(std::span<const BandwidthSample> curve);

}  // namespace logp
