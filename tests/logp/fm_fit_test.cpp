// FM's t0, r_inf and n_1/2 fitted from bandwidth curves with known answers.
#include "viastack/fm_fit.hpp"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <vector>

using namespace viastack;

namespace {
std::vector<BandwidthSample> curve(double t0_us, double r_mb_s, double noise = 0, unsigned seed = 1) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> j(1.0, noise);
    std::vector<BandwidthSample> c;
    for (std::size_t n = 4; n <= 32768; n *= 2) {
        double t = t0_us + double(n) / r_mb_s;
        c.push_back({n, noise > 0 ? t * j(rng) : t});
    }
    return c;
}
} // namespace

TEST(FmFit, ExactCurve) {
    FmMetrics m = fit_fm_metrics(curve(4.0, 200.0));
    EXPECT_NEAR(m.t0_us, 4.0, 1e-9);
    EXPECT_NEAR(m.r_inf_mb_s, 200.0, 1e-6);
    EXPECT_NEAR(m.n_half_model_bytes, 800.0, 1e-6);
    // On the exact curve B(n) = r/2 exactly at n = t0*r; the log-axis
    // interpolation between 512 and 1024 lands close to it.
    EXPECT_FALSE(m.n_half_from_model);
    EXPECT_NEAR(m.n_half_bytes, 800.0, 40.0);
    EXPECT_NEAR(m.fit_r2, 1.0, 1e-9);
    EXPECT_NEAR(m.r_peak_mb_s, 32768 / (4.0 + 32768 / 200.0), 1e-9);
}

TEST(FmFit, FastMessagesFigures) {
    // FM 1.0 (Pakin, Lauria, Chien): t0 = 4.1 us, r_inf = 21.4 MB/s.
    FmMetrics m = fit_fm_metrics(curve(4.1, 21.4));
    EXPECT_NEAR(m.t0_us, 4.1, 1e-6);
    EXPECT_NEAR(m.r_inf_mb_s, 21.4, 1e-6);
    EXPECT_NEAR(m.n_half_model_bytes, 4.1 * 21.4, 1e-6);
}

TEST(FmFit, NoisyCurveWithinFivePercent) {
    FmMetrics m = fit_fm_metrics(curve(7.5, 33.0, 0.02, 11));
    EXPECT_NEAR(m.t0_us, 7.5, 0.4);
    EXPECT_NEAR(m.r_inf_mb_s, 33.0, 1.7);
    EXPECT_NEAR(m.n_half_bytes, 7.5 * 33.0, 0.1 * 7.5 * 33.0);
}

TEST(FmFit, HalfPowerBelowSmallestSizeFallsBackToModel) {
    // t0 tiny: already above r_inf/2 at 4 bytes.
    FmMetrics m = fit_fm_metrics(curve(0.001, 100.0));
    EXPECT_TRUE(m.n_half_from_model);
    EXPECT_NEAR(m.n_half_bytes, m.n_half_model_bytes, 1e-9);
}

TEST(FmFit, UnsortedInputIsSorted) {
    auto c = curve(4.0, 200.0);
    std::reverse(c.begin(), c.end());
    FmMetrics m = fit_fm_metrics(c);
    EXPECT_NEAR(m.t0_us, 4.0, 1e-9);
    EXPECT_FALSE(m.n_half_from_model);
}

TEST(FmFit, RejectsBadCurves) {
    EXPECT_THROW(fit_fm_metrics(std::vector<BandwidthSample>{}), std::invalid_argument);
    EXPECT_THROW(fit_fm_metrics(std::vector<BandwidthSample>{{64, 1.0}}), std::invalid_argument);
    EXPECT_THROW(fit_fm_metrics(std::vector<BandwidthSample>{{64, 1.0}, {64, 2.0}}), std::invalid_argument);
    EXPECT_THROW(fit_fm_metrics(std::vector<BandwidthSample>{{64, 1.0}, {128, 0.0}}), std::invalid_argument);
    EXPECT_THROW(fit_fm_metrics(std::vector<BandwidthSample>{{64, 2.0}, {128, 1.0}}), std::invalid_argument);
}
