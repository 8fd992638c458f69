#include <stiefel/reports/paired_statistics.h>

#include <algorithm>
#include <boost/math/distributions/binomial.hpp>
#include <boost/math/statistics/t_test.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

namespace stiefel::reports {

double mean(const std::vector<double>& x) {
  if (x.empty()) throw std::invalid_argument("mean of an empty sample");
  double s = 0;
  for (double v : x) s += v;
  return s / double(x.size());
}

double standard_deviation(const std::vector<double>& x, int ddof) {
  if (int(x.size()) <= ddof)
    throw std::invalid_argument("standard deviation with ddof " + std::to_string(ddof) + " of " +
                                std::to_string(x.size()) + " values");
  const double m = mean(x);
  double s = 0;
  for (double v : x) s += (v - m) * (v - m);
  return std::sqrt(s / double(int(x.size()) - ddof));
}

TTest paired_t_test(const std::vector<double>& d) {
  if (d.size() < 2) throw std::invalid_argument("paired t-test needs at least two pairs");
  const double sd = standard_deviation(d, 1);
  if (!(sd > 0)) throw std::invalid_argument("paired t-test: the differences have no spread");
  const auto [t, p] = boost::math::statistics::one_sample_t_test(mean(d), sd * sd, double(d.size()), 0.0);
  return {t, p, int(d.size()) - 1};
}

BootstrapCi bootstrap_mean_ci(const std::vector<double>& x, int resamples, std::uint64_t seed, double level) {
  if (x.empty() || resamples < 2) throw std::invalid_argument("bootstrap needs data and at least two resamples");
  std::mt19937_64 rng(seed);
  const std::uint64_t n = x.size();
  // Unbiased index draws: reject the top partial block of 2^64 mod n.
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % n;
  std::vector<double> means(static_cast<std::size_t>(resamples));
  for (auto& m : means) {
    double s = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      std::uint64_t b;
      do b = rng();
      while (b >= limit);
      s += x[std::size_t(b % n)];
    }
    m = s / double(n);
  }
  std::sort(means.begin(), means.end());
  auto quantile = [&](double q) {  // type 7: linear between order statistics
    const double h = q * double(means.size() - 1);
    const std::size_t lo = std::size_t(std::floor(h));
    const std::size_t hi = std::min(lo + 1, means.size() - 1);
    return means[lo] + (h - double(lo)) * (means[hi] - means[lo]);
  };
  BootstrapCi ci;
  ci.level = level;
  ci.resamples = resamples;
  ci.seed = seed;
  ci.low = quantile((1 - level) / 2);
  ci.high = quantile(1 - (1 - level) / 2);
  return ci;
}

double sign_test_p(int wins, int losses) {
  const int n = wins + losses;
  if (n == 0) return 1.0;
  const boost::math::binomial_distribution<double> b(n, 0.5);
  return std::min(1.0, 2.0 * boost::math::cdf(b, double(std::min(wins, losses))));
}

PairedComparison compare_paired(const std::vector<double>& arm, const std::vector<double>& baseline, int resamples,
                                std::uint64_t seed) {
  if (arm.size() != baseline.size())
    throw std::invalid_argument("paired comparison: " + std::to_string(arm.size()) + " values against " +
                                std::to_string(baseline.size()));
  std::vector<double> d(arm.size());
  PairedComparison c;
  for (std::size_t i = 0; i < d.size(); ++i) {
    d[i] = arm[i] - baseline[i];
    (d[i] > 0 ? c.wins : d[i] < 0 ? c.losses : c.ties)++;
  }
  c.n = d.size();
  c.mean_difference = mean(d);
  c.sd_difference = standard_deviation(d, 1);
  c.standard_error = c.sd_difference / std::sqrt(double(c.n));
  // Identical differences (e.g. bitwise-identical reruns) have no t statistic: t stays 0 with
  // df 0 and p 1, and callers read sd_difference == 0.
  if (c.sd_difference > 0) c.t = paired_t_test(d);
  c.ci = bootstrap_mean_ci(d, resamples, seed);
  c.sign_p = sign_test_p(c.wins, c.losses);
  return c;
}

}  // namespace stiefel::reports
