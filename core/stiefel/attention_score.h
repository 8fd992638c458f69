// Multi-head attention score with a fixed linear read-out, and its analytic gradients (§5.1):
//   S_h = X W_Q,h W_K,hᵀ Xᵀ / √r,   P_h = softmax_rows(S_h),   L = Σ_h ⟨C_h, P_h X U_h⟩_F.
// X: n×d tokens; W_Q,h, W_K,h: d×r; U_h: d×r_v (value map), C_h: n×r_v (read-out), both fixed.
// Backward: D_h = C_h (X U_h)ᵀ, dS_h = P_h ∘ (D_h − rowsum(P_h ∘ D_h) 1ᵀ),
//           ∂L/∂W_Q,h = Xᵀ dS_h X W_K,h / √r,   ∂L/∂W_K,h = Xᵀ dS_hᵀ X W_Q,h / √r.
// L depends on (W_Q,h, W_K,h) only through W_Q,h W_K,hᵀ: the joint O(r) action is a symmetry.
#pragma once

#include <cmath>
#include <stdexcept>

#include "random.h"
#include "scalar.h"

namespace stiefel {

template <class Scalar>
struct AttentionProblem {
  Matrix<Scalar> x;        // n×d
  Frames<Scalar> value;    // U_h: d×r_v
  Frames<Scalar> readout;  // C_h: n×r_v
};

template <class Scalar>
struct AttentionGradient {
  Scalar loss = Scalar(0);
  Frames<Scalar> grad_q, grad_k;
};

// Row-wise softmax, shifted by the row maximum.
template <class Scalar>
Matrix<Scalar> softmax_rows(const Matrix<Scalar>& s) {
  using std::exp;
  Matrix<Scalar> p(s.rows(), s.cols());
  for (Index i = 0; i < s.rows(); ++i) {
    const Scalar mx = s.row(i).maxCoeff();
    Scalar total(0);
    for (Index j = 0; j < s.cols(); ++j) {
      p(i, j) = exp(s(i, j) - mx);
      total += p(i, j);
    }
    p.row(i) /= total;
  }
  return p;
}

template <class Scalar>
AttentionGradient<Scalar> attention_loss_and_gradient(const AttentionProblem<Scalar>& problem, const Frames<Scalar>& wq,
                                                      const Frames<Scalar>& wk) {
  using std::sqrt;
  if (wq.size() != wk.size() || wq.size() != problem.value.size() || wq.size() != problem.readout.size())
    throw std::invalid_argument("attention_loss_and_gradient: head counts differ");
  AttentionGradient<Scalar> out;
  const Matrix<Scalar>& x = problem.x;
  for (std::size_t h = 0; h < wq.size(); ++h) {
    const Scalar scale = Scalar(1) / sqrt(Scalar(wq[h].cols()));
    const Matrix<Scalar> xq = x * wq[h], xk = x * wk[h];
    const Matrix<Scalar> p = softmax_rows<Scalar>(scale * xq * xk.transpose());
    const Matrix<Scalar> xu = x * problem.value[h];
    out.loss += (problem.readout[h].array() * (p * xu).array()).sum();
    const Matrix<Scalar> dp = problem.readout[h] * xu.transpose();
    const Vector<Scalar> row_dot = (p.array() * dp.array()).rowwise().sum();
    const Matrix<Scalar> ds = (p.array() * (dp.colwise() - row_dot).array()).matrix();
    out.grad_q.push_back(scale * x.transpose() * (ds * xk));
    out.grad_k.push_back(scale * x.transpose() * (ds.transpose() * xq));
  }
  return out;
}

// A random problem with n tokens of dimension d, H heads, read-out width r_v; token scale `scale`.
template <class Scalar>
AttentionProblem<Scalar> random_attention_problem(Rng& rng, Index n, Index d, Index heads, Index rv, double scale) {
  AttentionProblem<Scalar> p;
  p.x = gaussian_matrix<Scalar>(rng, n, d) * Scalar(scale);
  for (Index h = 0; h < heads; ++h) {
    p.value.push_back(gaussian_matrix<Scalar>(rng, d, rv));
    p.readout.push_back(gaussian_matrix<Scalar>(rng, n, rv));
  }
  return p;
}

}  // namespace stiefel
