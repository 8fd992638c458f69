// The statistics of the paper's tables, for paired-seed comparisons (arm − baseline within seed):
// mean and standard deviation (ddof 0 or 1, as each table states), the paired t-test (a one-sample
// t-test on the differences, Boost.Math), a percentile bootstrap CI of the mean difference (seeded
// mt19937_64, 20,000 resamples by default), wins/losses/ties and the exact two-sided sign test.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stiefel::reports {

double mean(const std::vector<double>& x);
// sqrt(Σ(x − mean)² / (n − ddof)); throws std::invalid_argument unless n > ddof.
double standard_deviation(const std::vector<double>& x, int ddof);

struct TTest {
  double t = 0, p_two_sided = 1;
  int df = 0;
};
// H0: the differences have mean zero; needs n ≥ 2 and a non-zero spread.
TTest paired_t_test(const std::vector<double>& differences);

struct BootstrapCi {
  double low = 0, high = 0, level = 0.95;
  int resamples = 0;
  std::uint64_t seed = 0;
  std::string method = "percentile bootstrap of the mean, linear interpolation between order statistics";
};
BootstrapCi bootstrap_mean_ci(const std::vector<double>& x, int resamples, std::uint64_t seed, double level = 0.95);

// Exact two-sided binomial sign test on the non-zero differences.
double sign_test_p(int wins, int losses);

struct PairedComparison {
  std::size_t n = 0;
  double mean_difference = 0, sd_difference = 0, standard_error = 0;
  TTest t;
  BootstrapCi ci;
  int wins = 0, losses = 0, ties = 0;
  double sign_p = 1;
};
// arm[i] and baseline[i] share seed i. Throws std::invalid_argument on a length mismatch or n < 2.
// With no spread in the differences the t-test is skipped (t = 0, df = 0, p = 1).
PairedComparison compare_paired(const std::vector<double>& arm, const std::vector<double>& baseline,
                                int resamples = 20000, std::uint64_t seed = 0);

}  // namespace stiefel::reports
