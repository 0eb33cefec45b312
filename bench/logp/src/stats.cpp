// stats.cpp - see stats.hpp.
#include "stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace logp {

double quantile_sorted(std::span<const double> sorted, double q) {
    if (sorted.empty()) throw std::invalid_argument("quantile of an empty sample");
    q = std::clamp(q, 0.0, 1.0);
    double pos = q * double(sorted.size() - 1);
    std::size_t lo = std::size_t(std::floor(pos));
    std::size_t hi = std::min(lo + 1, sorted.size() - 1);
    double frac = pos - double(lo);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double median_of(std::vector<double> v) {
    if (v.empty()) throw std::invalid_argument("median of an empty sample");
    std::sort(v.begin(), v.end());
    return quantile_sorted(v, 0.5);
}

Summary summarize(std::span<const double> samples) {
    if (samples.empty()) throw std::invalid_argument("summarize: no samples");
    std::vector<double> v(samples.begin(), samples.end());
    for (double x : v)
        if (!std::isfinite(x)) throw std::invalid_argument("summarize: non-finite sample");
    std::sort(v.begin(), v.end());
    Summary s;
    s.n = v.size();
    s.min = v.front();
    s.max = v.back();
    s.p25 = quantile_sorted(v, 0.25);
    s.median = quantile_sorted(v, 0.5);
    s.p75 = quantile_sorted(v, 0.75);
    double sum = 0;
    for (double x : v) sum += x;
    s.mean = sum / double(v.size());
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stdev = v.size() > 1 ? std::sqrt(ss / double(v.size() - 1)) : 0.0;
    std::vector<double> dev;
    dev.reserve(v.size());
    for (double x : v) dev.push_back(std::fabs(x - s.median));
    std::sort(dev.begin(), dev.end());
    s.mad = quantile_sorted(dev, 0.5);
    return s;
}

std::optional<std::string> spread_warning(const Summary &s, const SpreadPolicy &p, const std::string &what) {
    if (s.n < p.min_samples)
        return fmt::format("{}: only {} samples (want >= {}); raise the iteration count", what, s.n, p.min_samples);
    if (s.spread() > p.max_spread)
        return fmt::format("{}: spread {:.0f}% (IQR/median) exceeds {:.0f}%; the machine is noisy, "
                           "do not trust this number (rerun on an idle machine or with more iterations)",
                           what, 100 * s.spread(), 100 * p.max_spread);
    return std::nullopt;
}

} // namespace logp
