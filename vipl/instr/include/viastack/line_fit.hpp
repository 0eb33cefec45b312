// line_fit.hpp - a least-squares line y = intercept + slope * x, optionally
// weighted: the one fit behind the LogP suite's gap and overhead slopes and
// Fast Messages' bandwidth metrics (fm_fit.hpp).  Header-only, so a measuring
// program of any layer (bip_pingpong) uses the same fit as bench/logp without
// linking the benchmark.
#pragma once

#include <cmath>
#include <cstddef>
#include <span>
#include <stdexcept>

namespace viastack {

struct LineFit {
    double intercept = 0, slope = 0;
    double r2 = 0; // coefficient of determination (weighted when weights are given)
    std::size_t n = 0;
};

// Needs at least two distinct x values; throws std::invalid_argument otherwise.
inline LineFit fit_line(std::span<const double> x, std::span<const double> y, std::span<const double> w = {}) {
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

} // namespace viastack
