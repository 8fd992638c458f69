// small_bmm against torch::matmul: every transpose combination, float and double, odd shapes, the
// gradient of both operands, and the fallback path.
#include <gtest/gtest.h>

#include <stiefel/training/small_matmul.h>

namespace stiefel::training {
namespace {

torch::Tensor reference(const torch::Tensor& a, const torch::Tensor& b, bool ta, bool tb, double alpha) {
  return (ta ? a.transpose(-2, -1) : a).matmul(tb ? b.transpose(-2, -1) : b) * alpha;
}

double rel(const torch::Tensor& x, const torch::Tensor& y) {
  return ((x - y).abs().max() / y.abs().max().clamp_min(1e-300)).item<double>();
}

class SmallBmm : public ::testing::TestWithParam<std::tuple<bool, bool, torch::ScalarType>> {};

TEST_P(SmallBmm, ValueAndGradientsMatchMatmul) {
  const auto [ta, tb, dtype] = GetParam();
  torch::manual_seed(3);
  const std::int64_t n = 37, m = 5, k = 7, p = 3;  // odd sizes: no path may assume 16 × 16
  const auto opts = torch::dtype(dtype);
  auto a = (ta ? torch::randn({n, k, m}, opts) : torch::randn({n, m, k}, opts)).requires_grad_();
  auto b = (tb ? torch::randn({n, p, k}, opts) : torch::randn({n, k, p}, opts)).requires_grad_();
  auto a2 = a.detach().clone().requires_grad_(), b2 = b.detach().clone().requires_grad_();
  const double divisor = 3.0;  // not a power of two: the kernel's 1/δ is inexact, within tolerance
  const auto c = small_bmm(a, b, ta, tb, divisor);
  const auto c_ref = reference(a2, b2, ta, tb, 1.0 / divisor);
  const double tol = dtype == torch::kFloat ? 1e-5 : 1e-13;
  ASSERT_EQ(c.sizes(), c_ref.sizes());
  EXPECT_LE(rel(c, c_ref), tol);
  const auto g = torch::randn_like(c);
  c.backward(g);
  c_ref.backward(g);
  EXPECT_LE(rel(a.grad(), a2.grad()), tol);
  EXPECT_LE(rel(b.grad(), b2.grad()), tol);
}

INSTANTIATE_TEST_SUITE_P(Transposes, SmallBmm,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(),
                                            ::testing::Values(torch::kFloat, torch::kDouble)));

TEST(SmallBmmControl, AWrongOperandIsDetected) {
  // The comparison above is not vacuous: a product with one operand perturbed fails it.
  torch::manual_seed(4);
  const auto a = torch::randn({9, 4, 6}, torch::kFloat64), b = torch::randn({9, 6, 5}, torch::kFloat64);
  auto b_bad = b.clone();
  b_bad[3][2][1] += 1e-6;
  EXPECT_GT(rel(small_bmm(a, b_bad, false, false), reference(a, b, false, false, 1.0)), 1e-9);
}

TEST(SmallBmmControl, SidesAbove64TakeTheFallback) {
  torch::manual_seed(6);
  const auto a = torch::randn({2, 65, 3}, torch::kFloat64), b = torch::randn({2, 3, 65}, torch::kFloat64);
  EXPECT_TRUE(torch::equal(small_bmm(a, b, false, false, 2.0), a.matmul(b) / 2.0));  // exactly torch's result
}

TEST(SmallBmmControl, NonContiguousInputsAndTheFallbackAgree) {
  torch::manual_seed(5);
  const auto a = torch::randn({6, 8, 4}, torch::kFloat64).transpose(1, 2);  // [6, 4, 8], not contiguous
  const auto b = torch::randn({6, 8, 3}, torch::kFloat64);
  EXPECT_LE(rel(small_bmm(a, b, false, false), a.matmul(b)), 1e-13);
  const auto ai = torch::randint(0, 5, {2, 3, 3}, torch::kLong), bi = torch::randint(0, 5, {2, 3, 3}, torch::kLong);
  EXPECT_TRUE(torch::equal(small_bmm(ai, bi, false, false), ai.matmul(bi)));  // other dtypes: torch::matmul
}

}  // namespace
}  // namespace stiefel::training
