// The paired statistics against values computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <stiefel/reports/paired_statistics.h>

namespace stiefel::reports {
namespace {

TEST(PairedStatistics, MeanAndBothStandardDeviations) {
  const std::vector<double> x{1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(mean(x), 2.5);
  EXPECT_DOUBLE_EQ(standard_deviation(x, 0), std::sqrt(1.25));       // population
  EXPECT_DOUBLE_EQ(standard_deviation(x, 1), std::sqrt(5.0 / 3.0));  // sample
  EXPECT_THROW(standard_deviation({1.0}, 1), std::invalid_argument);
}

// §4.1: per-seed differences +5.71, +4.82, +5.78 give mean 5.44, SE 0.31, t = 17.6.
TEST(PairedStatistics, PaperSection41Example) {
  const std::vector<double> d{5.71, 4.82, 5.78};
  const double m = (5.71 + 4.82 + 5.78) / 3;
  const double ss = (5.71 - m) * (5.71 - m) + (4.82 - m) * (4.82 - m) + (5.78 - m) * (5.78 - m);
  const double se = std::sqrt(ss / 2) / std::sqrt(3.0);
  const auto t = paired_t_test(d);
  EXPECT_NEAR(t.t, m / se, 1e-12);
  EXPECT_NEAR(t.t, 17.6, 0.05);
  EXPECT_EQ(t.df, 2);
  // Student t with 2 degrees of freedom: P(T > t) = 1/2 − t / (2 sqrt(2 + t²)).
  EXPECT_NEAR(t.p_two_sided, 2 * (0.5 - t.t / (2 * std::sqrt(2 + t.t * t.t))), 1e-12);
}

TEST(PairedStatistics, ExactSignTest) {
  EXPECT_NEAR(sign_test_p(12, 0), 2.0 / 4096.0, 1e-15);
  EXPECT_NEAR(sign_test_p(9, 3), 2.0 * (1 + 12 + 66 + 220) / 4096.0, 1e-15);
  EXPECT_DOUBLE_EQ(sign_test_p(6, 6), 1.0);
  EXPECT_DOUBLE_EQ(sign_test_p(0, 0), 1.0);
}

TEST(PairedStatistics, BootstrapIsSeededAndCalibrated) {
  const std::vector<double> constant(7, 2.5);
  const auto c = bootstrap_mean_ci(constant, 2000, 1);
  EXPECT_DOUBLE_EQ(c.low, 2.5);
  EXPECT_DOUBLE_EQ(c.high, 2.5);
  std::vector<double> x;
  for (int i = 0; i < 400; ++i) x.push_back(std::sin(1.7 * i) * 3.0);  // spread, deterministic
  const auto a = bootstrap_mean_ci(x, 20000, 7), b = bootstrap_mean_ci(x, 20000, 7);
  EXPECT_EQ(a.low, b.low);
  EXPECT_EQ(a.high, b.high);
  // Large n: the 95% percentile interval is mean ± 1.96 σ/√n to within a few percent.
  const double half = 1.96 * standard_deviation(x, 0) / std::sqrt(400.0);
  EXPECT_NEAR((a.high - a.low) / 2, half, 0.05 * half);
  EXPECT_NEAR((a.high + a.low) / 2, mean(x), 0.1 * half);
}

TEST(PairedStatistics, ComparisonCountsWinsWithinSeed) {
  const std::vector<double> arm{50, 52, 51, 49}, base{48, 52, 50, 50};
  const auto c = compare_paired(arm, base, 5000, 3);
  EXPECT_EQ(c.wins, 2);
  EXPECT_EQ(c.losses, 1);
  EXPECT_EQ(c.ties, 1);
  EXPECT_DOUBLE_EQ(c.mean_difference, 0.5);
  EXPECT_LE(c.ci.low, c.mean_difference);
  EXPECT_GE(c.ci.high, c.mean_difference);
  EXPECT_THROW(compare_paired({1, 2}, {1}), std::invalid_argument);
  // Identical differences: no t statistic, a degenerate CI at the difference, all wins.
  const auto same = compare_paired({3, 4, 5}, {1, 2, 3}, 1000, 1);
  EXPECT_EQ(same.sd_difference, 0.0);
  EXPECT_EQ(same.t.df, 0);
  EXPECT_EQ(same.ci.low, 2.0);
  EXPECT_EQ(same.ci.high, 2.0);
  EXPECT_EQ(same.wins, 3);
}

}  // namespace
}  // namespace stiefel::reports
