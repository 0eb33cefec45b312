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
        return fmt::format("{}: only {} samples (want >= {}); raise the iteration count", what, s.n,
                           p.min_samples);
    if (s.spread() > p.max_spread)
        return fmt::format("{}: spread {:.0f}% (IQR/median) exceeds {:.0f}%; the machine is noisy, "
                           "do not trust this number (rerun on an idle machine or with more iterations)",
                           what, 100 * s.spread(), 100 * p.max_spread);
    return std::nullopt;
}

LineFit fit_line(std::span<const double> x, std::span<const double> y, std::span<const double> w) {
    if (x.size() != y.size() || (!w.empty() && w.size() != x.size()))
        throw std::invalid_argument("fit_line: x, y and weights differ in length");
    double sw = 0, sx = 0, sy = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        double wi = w.empty() ? 1.0 : w[i];
        if (!(wi >= 0) || !std::isfinite(x[i]) || !std::isfinite(y[i]))
            throw std::invalid_argument("fit_line: non-finite value or negative weight");
        sw += wi;
        sx += wi * x[i];
        sy += wi * y[i];
    }
    if (x.size() < 2 || sw <= 0) throw std::invalid_argument("fit_line: need at least two points");
    double mx = sx / sw, my = sy / sw;
    double sxx = 0, sxy = 0, syy = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        double wi = w.empty() ? 1.0 : w[i];
        sxx += wi * (x[i] - mx) * (x[i] - mx);
        sxy += wi * (x[i] - mx) * (y[i] - my);
        syy += wi * (y[i] - my) * (y[i] - my);
    }
    if (sxx <= 0) throw std::invalid_argument("fit_line: need at least two distinct x values");
    LineFit f;
    f.slope = sxy / sxx;
    f.intercept = my - f.slope * mx;
    f.n = x.size();
    double ss_res = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        double wi = w.empty() ? 1.0 : w[i];
        double r = y[i] - (f.intercept + f.slope * x[i]);
        ss_res += wi * r * r;
    }
    f.r2 = syy > 0 ? 1.0 - ss_res / syy : 1.0;
    return f;
}

}  // namespace logp
