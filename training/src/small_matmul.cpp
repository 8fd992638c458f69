#include <stiefel/training/small_matmul.h>

#include <atomic>

namespace stiefel::training {
namespace {

constexpr std::int64_t kMaxSide = 64;
std::atomic<bool> g_kernel_on{true};  // larger products go to torch::matmul

// C[n] (m × p) = α · A'[n] (m × k) · B'[n] (k × p), A' = A or Aᵀ, B' = B or Bᵀ; all row-major
// and contiguous, k, p ≤ kMaxSide. Row i of C accumulates α·A'(i, l)·B'(l, :) over l = 0, 1, …,
// k−1 in registers: a fixed order, vectorised across the p outputs of the row.
template <class T>
inline __attribute__((always_inline)) void kernel(const T* __restrict a, const T* __restrict b, T* __restrict c,
                                                  std::int64_t n, std::int64_t m, std::int64_t k, std::int64_t p,
                                                  bool trans_a, bool trans_b, T alpha) {
  alignas(64) T bt[kMaxSide * kMaxSide];
  alignas(64) T acc[kMaxSide];
  for (std::int64_t s = 0; s < n; ++s) {
    const T* __restrict as = a + s * m * k;
    const T* bs = b + s * k * p;
    T* __restrict cs = c + s * m * p;
    if (trans_b) {  // B is stored p × k: transpose it once per matrix
      for (std::int64_t j = 0; j < p; ++j)
        for (std::int64_t l = 0; l < k; ++l) bt[l * p + j] = bs[j * k + l];
      bs = bt;
    }
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < p; ++j) acc[j] = T(0);
      for (std::int64_t l = 0; l < k; ++l) {
        const T x = alpha * (trans_a ? as[l * m + i] : as[i * k + l]);
        const T* __restrict brow = bs + l * p;
        for (std::int64_t j = 0; j < p; ++j) acc[j] += x * brow[j];
      }
      for (std::int64_t j = 0; j < p; ++j) cs[i * p + j] = acc[j];
    }
  }
}

// One clone per vector width, chosen at load time.
__attribute__((target_clones("avx512f", "avx2", "default"))) void kernel_float(const float* a, const float* b, float* c,
                                                                               std::int64_t n, std::int64_t m,
                                                                               std::int64_t k, std::int64_t p,
                                                                               bool trans_a, bool trans_b,
                                                                               float alpha) {
  kernel<float>(a, b, c, n, m, k, p, trans_a, trans_b, alpha);
}
__attribute__((target_clones("avx512f", "avx2", "default"))) void kernel_double(const double* a, const double* b,
                                                                                double* c, std::int64_t n,
                                                                                std::int64_t m, std::int64_t k,
                                                                                std::int64_t p, bool trans_a,
                                                                                bool trans_b, double alpha) {
  kernel<double>(a, b, c, n, m, k, p, trans_a, trans_b, alpha);
}

torch::Tensor forward_impl(const torch::Tensor& a_in, const torch::Tensor& b_in, bool trans_a, bool trans_b,
                           double alpha) {
  const auto a = a_in.contiguous(), b = b_in.contiguous();
  const auto n = a.size(0);  // every side ≤ kMaxSide (checked by small_bmm)
  const auto m = trans_a ? a.size(2) : a.size(1), k = trans_a ? a.size(1) : a.size(2);
  const auto p = trans_b ? b.size(1) : b.size(2);
  TORCH_CHECK((trans_b ? b.size(2) : b.size(1)) == k, "small_bmm: inner dimensions differ");
  TORCH_CHECK(b.size(0) == n, "small_bmm: batch sizes differ");
  auto c = torch::empty({n, m, p}, a.options());
  if (a.scalar_type() == torch::kFloat)
    kernel_float(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n, m, k, p, trans_a, trans_b,
                 float(alpha));
  else
    kernel_double(a.data_ptr<double>(), b.data_ptr<double>(), c.data_ptr<double>(), n, m, k, p, trans_a, trans_b,
                  alpha);
  return c;
}

struct SmallBmm : torch::autograd::Function<SmallBmm> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& a, const torch::Tensor& b,
                               bool trans_a, bool trans_b, double alpha) {
    ctx->save_for_backward({a, b});
    ctx->saved_data["trans_a"] = trans_a;
    ctx->saved_data["trans_b"] = trans_b;
    ctx->saved_data["alpha"] = alpha;
    return forward_impl(a, b, trans_a, trans_b, alpha);
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& a = saved[0];
    const auto& b = saved[1];
    const bool ta = ctx->saved_data["trans_a"].toBool(), tb = ctx->saved_data["trans_b"].toBool();
    const double alpha = ctx->saved_data["alpha"].toDouble();
    const auto g = grads[0].contiguous();  // dC = α op(A) op(B) ⇒ d op(A) = α dC op(B)ᵀ, d op(B) = α op(A)ᵀ dC
    torch::Tensor ga, gb;
    if (ctx->needs_input_grad(0))
      ga = ta ? forward_impl(b, g, tb, true, alpha)     // dA = α op(B) dCᵀ
              : forward_impl(g, b, false, !tb, alpha);  // dA = α dC op(B)ᵀ
    if (ctx->needs_input_grad(1))
      gb = tb ? forward_impl(g, a, true, ta, alpha)     // dB = α dCᵀ op(A)
              : forward_impl(a, g, !ta, false, alpha);  // dB = α op(A)ᵀ dC
    return {ga, gb, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

void use_small_bmm_kernel(bool on) { g_kernel_on = on; }

torch::Tensor small_bmm(const torch::Tensor& a, const torch::Tensor& b, bool trans_a, bool trans_b, double divisor) {
  const bool fast = g_kernel_on && a.device().is_cpu() && b.device().is_cpu() && a.dim() == 3 && b.dim() == 3 &&
                    a.scalar_type() == b.scalar_type() &&
                    (a.scalar_type() == torch::kFloat || a.scalar_type() == torch::kDouble) && a.size(1) <= kMaxSide &&
                    a.size(2) <= kMaxSide && b.size(1) <= kMaxSide && b.size(2) <= kMaxSide;
  if (!fast) {
    const auto x = trans_a ? a.transpose(-2, -1) : a;
    const auto y = trans_b ? b.transpose(-2, -1) : b;
    return divisor == 1.0 ? x.matmul(y) : x.matmul(y) / divisor;
  }
  return SmallBmm::apply(a, b, trans_a, trans_b, 1.0 / divisor);
}

}  // namespace stiefel::training
