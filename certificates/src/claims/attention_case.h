// The attention problems of the Prop. 1 claims and of the gradient's order check: n tokens X (n×d),
// H heads with frames W_Q,h, W_K,h (d×r), values U_h and readouts C_h; the loss and its gradient.
#pragma once

#include "check_support.h"

namespace stiefel::certificates {

template <class S>
struct AttentionCase {
  AttentionProblem<S> problem;
  Frames<S> wq, wk;
  AttentionGradient<S> grad;
};

// The scale of the rounding error of head h's gradient: the gradient is s·Xᵀ dS X W with
// dS = P∘(D − rowsum(P∘D)), whose entries cancel; its error is bounded by u·(n + d) times
// s·‖X W_Q‖·‖P∘(|D| + rowsum(P∘|D|))‖·‖X W_K‖ (absolute values, before any cancellation).
template <class S>
S attention_error_scale(const AttentionProblem<S>& p, const Matrix<S>& wq, const Matrix<S>& wk, std::size_t h) {
  const S scale = S(1) / sqrt(S(wq.cols()));
  const Matrix<S> xq = p.x * wq, xk = p.x * wk;
  const Matrix<S> prob = softmax_rows<S>(scale * xq * xk.transpose());
  const Matrix<S> abs_d = (p.readout[h] * (p.x * p.value[h]).transpose()).cwiseAbs();
  const Vector<S> row = (prob.array() * abs_d.array()).rowwise().sum();
  const Matrix<S> bound = (prob.array() * (abs_d.colwise() + row).array()).matrix();
  return scale * xq.norm() * bound.norm() * xk.norm();
}

// Head h's key gradient as an implementation that forgets dS's transpose computes it,
// s Xᵀ dS X W_Q in place of s Xᵀ dSᵀ X W_Q (the forward pass and dS as in core).
template <class S>
Matrix<S> key_gradient_ds_untransposed(const AttentionProblem<S>& p, const Matrix<S>& wq, const Matrix<S>& wk,
                                       std::size_t h) {
  const S scale = S(1) / sqrt(S(wq.cols()));
  const Matrix<S> xq = p.x * wq, xk = p.x * wk;
  const Matrix<S> prob = softmax_rows<S>(scale * xq * xk.transpose());
  const Matrix<S> dp = p.readout[h] * (p.x * p.value[h]).transpose();
  const Vector<S> row_dot = (prob.array() * dp.array()).rowwise().sum();
  const Matrix<S> ds = (prob.array() * (dp.colwise() - row_dot).array()).matrix();
  return scale * p.x.transpose() * (ds * xq);
}

// The case's problem (token scale 10^log10_scale, r_v = 3) and frames; W_K = W_Q when tied.
template <class S>
AttentionCase<S> make_attention_case(const Case& c, bool tied = false) {
  Rng rng(c.seed);
  AttentionCase<S> a;
  a.problem = random_attention_problem<S>(rng, c.tokens, c.d, c.heads, 3, pow10(c.log10_scale));
  a.wq = random_frames<S>(rng, {c.d, c.r}, c.heads);
  a.wk = tied ? a.wq : random_frames<S>(rng, {c.d, c.r}, c.heads);
  a.grad = attention_loss_and_gradient(a.problem, a.wq, a.wk);
  return a;
}

}  // namespace stiefel::certificates
