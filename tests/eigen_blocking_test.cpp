// Eigen's product blocking is pinned (pin_eigen_blocking): a product's bits depend on the pinned
// cache sizes alone, not on the machine's, which the certificates at d = 128 need to be the same
// everywhere.
#include <gtest/gtest.h>

#include <stiefel/eigen_blocking.h>
#include <stiefel/random.h>

namespace stiefel {
namespace {

Eigen::MatrixXd gaussian(Rng& rng, Eigen::Index rows, Eigen::Index cols) {
  Eigen::MatrixXd m(rows, cols);
  for (Eigen::Index j = 0; j < cols; ++j)
    for (Eigen::Index i = 0; i < rows; ++i) m(i, j) = rng.gaussian();
  return m;
}

TEST(EigenBlocking, AProductsBitsFollowThePinnedSizesAlone) {
  Rng rng(20261207);
  const Eigen::MatrixXd a = gaussian(rng, 128, 600), b = gaussian(rng, 600, 32);
  pin_eigen_blocking();
  EXPECT_EQ(Eigen::l1CacheSize(), 32 << 10);
  EXPECT_EQ(Eigen::l2CacheSize(), 1 << 20);
  EXPECT_EQ(Eigen::l3CacheSize(), 32 << 20);
  const Eigen::MatrixXd pinned = a * b;
  // Another machine's caches (this one's L3 as an AMD EPYC reports it) block the inner dimension
  // otherwise: other last bits. Without this difference the test would show nothing.
  Eigen::setCpuCacheSizes(48 << 10, 2 << 20, std::ptrdiff_t(320) << 20);
  const Eigen::MatrixXd other = a * b;
  EXPECT_GT((other - pinned).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_LT((other - pinned).cwiseAbs().maxCoeff(), 1e-12);
  pin_eigen_blocking();
  const Eigen::MatrixXd again = a * b;
  EXPECT_EQ((again - pinned).cwiseAbs().maxCoeff(), 0.0);
}

}  // namespace
}  // namespace stiefel
