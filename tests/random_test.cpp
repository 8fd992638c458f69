// Reproducible randomness: streams replay from their seed, the Gaussian transform is standard
// normal, and random objects have the structure they claim.
#include <gtest/gtest.h>

#include <stiefel/properties/identity.h>
#include <stiefel/properties/stiefel_identities.h>
#include <stiefel/random.h>

namespace stiefel {
namespace {

TEST(Random, StreamReplaysFromItsSeed) {
  Rng a(123), b(123), c(124);
  for (int i = 0; i < 100; ++i) {
    const double x = a.gaussian();
    EXPECT_EQ(x, b.gaussian());
    EXPECT_NE(x, c.gaussian());
  }
}

TEST(Random, GaussianHasStandardMoments) {
  Rng rng(99);
  const int n = 200000;
  double s1 = 0, s2 = 0, s4 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = rng.gaussian();
    s1 += x;
    s2 += x * x;
    s4 += x * x * x * x;
  }
  // Standard errors: mean 1/√n, second moment √2/√n, fourth moment √96/√n; allow 5 of them.
  EXPECT_LT(std::abs(s1 / n), 5.0 / std::sqrt(n));
  EXPECT_LT(std::abs(s2 / n - 1.0), 5.0 * std::sqrt(2.0 / n));
  EXPECT_LT(std::abs(s4 / n - 3.0), 5.0 * std::sqrt(96.0 / n));
}

TEST(Random, ObjectsHaveTheirStructure) {
  Rng rng(5);
  const auto q = random_orthogonal<double>(rng, 9);
  const auto orthogonal = properties::on_stiefel<double>(q, 9.0);
  EXPECT_TRUE(orthogonal.holds()) << orthogonal;
  const auto a = random_symmetric<double>(rng, 6);
  EXPECT_EQ((a - a.transpose()).norm(), 0.0);
  const auto w = random_stiefel<double>(rng, 9, 4);
  const auto xi = random_tangent<double>(rng, w);
  const auto tangent = properties::tangent_at<double>(w, xi, xi.norm(), 9.0);
  EXPECT_TRUE(tangent.holds()) << tangent;
  const auto complement = properties::matrix_identity<double>(
      "W_perp^T W = 0", Eigen::MatrixXd::Zero(5, 4), orthogonal_complement<double>(w).transpose() * w, 1.0, 9.0);
  EXPECT_TRUE(complement.holds()) << complement;
}

}  // namespace
}  // namespace stiefel
