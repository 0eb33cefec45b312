// stats.hpp - robust statistics for the LogP suite.
//
// Every measured number in the report is the median of many timed iterations
// taken after a warm-up; its spread is the interquartile range relative to the
// median.  A spread above the policy's limit (default 25%) marks the number as
// not to be trusted and the report prints a warning next to it.
#pragma once

#include "viastack/line_fit.hpp"

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace logp {

struct Summary {
    std::size_t n = 0; // samples summarized (warm-up already discarded)
    double min = 0, p25 = 0, median = 0, p75 = 0, max = 0;
    double mean = 0, stdev = 0;
    double mad = 0; // median absolute deviation

    // Interquartile range relative to the median (0 when the median is 0).
    double spread() const { return median != 0 ? (p75 - p25) / median : 0.0; }
};

// Throws std::invalid_argument on an empty input or a non-finite sample.
Summary summarize(std::span<const double> samples);

// Linear-interpolated quantile q in [0,1] of an ascending-sorted, non-empty range.
double quantile_sorted(std::span<const double> sorted, double q);
double median_of(std::vector<double> v);

struct SpreadPolicy {
    double max_spread = 0.25;    // relative IQR above which a number is not trusted
    std::size_t min_samples = 5; // fewer samples than this: not trusted either
};

// A one-line warning naming `what` when the summary is too wide or too thin; nullopt when fine.
std::optional<std::string> spread_warning(const Summary &s, const SpreadPolicy &p, const std::string &what);

// Least-squares line y = intercept + slope * x, optionally weighted
// (vipl/instr/include/viastack/line_fit.hpp, shared with the measuring programs).
using viastack::fit_line;
using viastack::LineFit;

// Runs fn() warmup times (discarded), then iters times, and returns the iters samples.
template <class Fn>
std::vector<double> collect_samples(int warmup, int iters, Fn &&fn) {
    for (int i = 0; i < warmup; ++i) (void)fn();
    std::vector<double> out;
    out.reserve(iters > 0 ? std::size_t(iters) : 0);
    for (int i = 0; i < iters; ++i) out.push_back(double(fn()));
    return out;
}

} // namespace logp
