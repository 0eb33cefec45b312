// Statistics of the LogP suite: quantiles, spread, warnings, line fits.
#include "stats.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

using namespace logp;

TEST(Stats, SummaryOfKnownSample) {
    std::vector<double> v = {5, 1, 4, 2, 3}; // order must not matter
    Summary s = summarize(v);
    EXPECT_EQ(s.n, 5u);
    EXPECT_DOUBLE_EQ(s.min, 1);
    EXPECT_DOUBLE_EQ(s.max, 5);
    EXPECT_DOUBLE_EQ(s.median, 3);
    EXPECT_DOUBLE_EQ(s.p25, 2);
    EXPECT_DOUBLE_EQ(s.p75, 4);
    EXPECT_DOUBLE_EQ(s.mean, 3);
    EXPECT_NEAR(s.stdev, std::sqrt(2.5), 1e-12);
    EXPECT_DOUBLE_EQ(s.mad, 1);
    EXPECT_DOUBLE_EQ(s.spread(), 2.0 / 3.0);
}

TEST(Stats, QuantilesInterpolate) {
    std::vector<double> v = {10, 20};
    EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.5), 15);
    EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.25), 12.5);
    EXPECT_DOUBLE_EQ(quantile_sorted(v, -1), 10); // clamped
    EXPECT_DOUBLE_EQ(quantile_sorted(v, 2), 20);
    EXPECT_DOUBLE_EQ(median_of({7}), 7);
    EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);
}

TEST(Stats, MedianIgnoresOutliers) {
    std::vector<double> v(99, 10.0);
    v.push_back(1e9); // one descheduled iteration
    Summary s = summarize(v);
    EXPECT_DOUBLE_EQ(s.median, 10.0);
    EXPECT_DOUBLE_EQ(s.spread(), 0.0);
    EXPECT_GT(s.mean, 1e6); // the mean would have been fooled
}

TEST(Stats, RejectsEmptyAndNonFinite) {
    EXPECT_THROW(summarize(std::vector<double>{}), std::invalid_argument);
    EXPECT_THROW(summarize(std::vector<double>{1, NAN}), std::invalid_argument);
    EXPECT_THROW(summarize(std::vector<double>{1, INFINITY}), std::invalid_argument);
    EXPECT_THROW(median_of({}), std::invalid_argument);
}

TEST(Stats, SpreadWarnings) {
    SpreadPolicy p; // 25%, 5 samples
    std::vector<double> tight = {100, 101, 99, 100, 102, 98, 100};
    EXPECT_FALSE(spread_warning(summarize(tight), p, "RTT").has_value());
    std::vector<double> wide = {50, 100, 150, 200, 250, 300};
    auto w = spread_warning(summarize(wide), p, "RTT");
    ASSERT_TRUE(w.has_value());
    EXPECT_NE(w->find("RTT"), std::string::npos);
    EXPECT_NE(w->find("spread"), std::string::npos);
    auto few = spread_warning(summarize(std::vector<double>{1, 1, 1}), p, "o_r");
    ASSERT_TRUE(few.has_value());
    EXPECT_NE(few->find("only 3 samples"), std::string::npos);
}

TEST(Stats, LineFitExactAndWeighted) {
    std::vector<double> x = {1, 2, 3, 4}, y = {3, 5, 7, 9}; // y = 1 + 2x
    LineFit f = fit_line(x, y);
    EXPECT_NEAR(f.intercept, 1, 1e-12);
    EXPECT_NEAR(f.slope, 2, 1e-12);
    EXPECT_NEAR(f.r2, 1, 1e-12);
    // A weight of zero removes a point entirely.
    std::vector<double> y2 = {3, 5, 7, 1000}, w = {1, 1, 1, 0};
    LineFit g = fit_line(x, y2, w);
    EXPECT_NEAR(g.slope, 2, 1e-9);
    EXPECT_NEAR(g.intercept, 1, 1e-9);
}

TEST(Stats, LineFitRejectsDegenerateInput) {
    std::vector<double> one = {1}, same = {2, 2, 2}, y3 = {1, 2, 3};
    EXPECT_THROW(fit_line(one, one), std::invalid_argument);
    EXPECT_THROW(fit_line(same, y3), std::invalid_argument);
    std::vector<double> x2 = {1, 2};
    EXPECT_THROW(fit_line(x2, y3), std::invalid_argument);
}

TEST(Stats, CollectSamplesDiscardsWarmup) {
    int calls = 0;
    auto v = collect_samples(3, 4, [&] { return ++calls; });
    EXPECT_EQ(calls, 7);
    ASSERT_EQ(v.size(), 4u);
    EXPECT_DOUBLE_EQ(v.front(), 4); // the first three were warm-up
}
