// Prop. 8 (§4.3, §5.3) and decoupled decay (§5.3, §5.4): Π_W(λW) = 0 on St(d,r), and exactly
// λ W (I − WᵀW) off it; the retraction absorbs the decay, polar((1 − ηλ) W + ξ) =
// sign(1 − ηλ) polar(W + ξ/(1 − ηλ)); and the decay's fixed point lies off St(d,r).
#pragma once

#include "attention_case.h"

namespace stiefel::certificates {

enum class DecayAnnihilatedMutant { kNone, kDriftedFrame };
enum class DecayDriftedMutant { kNone, kRetractedProjector };
enum class DecayAbsorbedMutant { kNone, kUnscaledStep };
enum class DecayFixedPointMutant { kNone, kProjected };

template <class S>
CheckResult check_decay_annihilated(const Case& c, DecayAnnihilatedMutant mutant) {
  Rng rng(c.seed);
  Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  if (mutant == DecayAnnihilatedMutant::kDriftedFrame) w *= S(1) + S(1e-6);  // 1e-6 off the manifold
  const S lambda(pow10(c.x));
  const auto projector = [&](const Matrix<S>& x) { return project_tangent<S>(w, x); };
  return identity_result(
      properties::projector_annihilates<S>(projector, Matrix<S>(lambda * w), S(lambda * sqrt(S(c.r))), double(c.d)));
}

// Prop. 8 on a frame off the manifold (as float32 training leaves it, isometry error ≈ 1e-5):
// W = U diag(σ) Vᵀ with σ_i = 1 + δ_i, |δ_i| = 10^[-8,-3]. Then Π_W(λW) = λ W (I − WᵀW), whose norm
// is λ ‖σ(1 − σ²)‖₂ exactly (≤ λ (1 + max δ) ‖I − WᵀW‖_F: the bound's constant is 1 + max δ).
// ratio = |‖Π_W(λW)‖ − λ‖σ(1 − σ²)‖| / (u · d · λ√r).
// Control: the projector of the retracted frame polar(W) applied to the drifted frame's decay
// (Π_Q(λW) = 0 for Q = polar(W): the residual decay gradient is missed).
template <class S>
CheckResult check_decay_drifted(const Case& c, DecayDriftedMutant mutant) {
  Rng rng(c.seed);
  const Matrix<S> u = random_stiefel<S>(rng, c.d, c.r), v = random_orthogonal<S>(rng, c.r);
  Vector<S> sigma(c.r);
  for (int i = 0; i < c.r; ++i)
    sigma(i) = S(1) + S((rng.uniform() < 0.5 ? -1.0 : 1.0) * pow10(-8.0 + 5.0 * rng.uniform()));
  const Matrix<S> w = u * sigma.asDiagonal() * v.transpose();
  const S lambda(pow10(c.x));
  const Matrix<S> frame = mutant == DecayDriftedMutant::kRetractedProjector ? polar_svd<S>(w) : w;
  const S measured = project_tangent<S>(frame, Matrix<S>(lambda * w)).norm();
  const S closed_form = lambda * (sigma.array() * (S(1) - sigma.array().square())).matrix().norm();
  CheckResult r = identity_result(scalar_identity<S>("|Pi_W(lambda W)| = lambda |sigma (1 - sigma^2)|", closed_form,
                                                     measured, S(lambda * sqrt(S(c.r))), double(c.d)));
  r.detail["relative_residual_decay"] = to_double(S(closed_form / lambda));
  r.detail["isometry_error"] = to_double(isometry_error(w));
  return r;
}

template <class S>
CheckResult decay_absorbed_check(const Case& c, DecayAbsorbedMutant mutant, bool corrected) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> xi = random_tangent<S>(rng, w) * S(pow10(c.log10_scale));
  const S x(pow10(c.x));  // ηλ
  const S one_minus = S(1) - x;
  const Matrix<S> lhs = polar_svd<S>(Matrix<S>(one_minus * w + xi));
  Matrix<S> rhs = mutant == DecayAbsorbedMutant::kUnscaledStep ? polar_svd<S>(Matrix<S>(w + xi))
                                                               : polar_svd<S>(Matrix<S>(w + xi / one_minus));
  if (corrected && one_minus < S(0)) rhs = -rhs;
  const double kappa = 1.0 + to_double(S(xi.norm() / abs(one_minus)));
  CheckResult r =
      identity_result(matrix_identity<S>("polar((1 - eta lambda) W + xi) = polar(W + xi / (1 - eta lambda))", rhs, lhs,
                                         sqrt(S(c.r)), double(c.d) * kappa));
  r.detail["eta_lambda"] = to_double(x);
  return r;
}

template <class S>
CheckResult check_decay_absorbed(const Case& c, DecayAbsorbedMutant mutant) {
  return decay_absorbed_check<S>(c, mutant, false);
}
template <class S>
CheckResult check_decay_absorbed_corrected(const Case& c, DecayAbsorbedMutant mutant) {
  return decay_absorbed_check<S>(c, mutant, true);
}

// §5.4 on the attention loss: decoupled decay with no constraint, W ← W − η(∇L(W) + λW) at η = 1/λ
// with λ = 10^x E0 (E0 below),
// i.e. W ← −∇L(W)/λ on every frame (W_Q and W_K of every head), run from the case's frames on St
// until its step is at roundoff (at most 400 iterations): its fixed point W* = −∇L(W*)/λ. Two
// ratios, the worse counts:
//   the fixed-point residual ‖W* + ∇L(W*)/λ‖ over (E0/λ) · u · n·d, E0 the gradient's rounding-error
//   scale (attention_error_scale) at the starting frames, E0/λ the first step's size: W* is the
//   fixed point to roundoff (the iteration stops when its step is 4u of that size);
//   30 · ‖W*‖_F / dist(W*, St), dist = ‖W* − polar(W*)‖_F over the frames: ≤ 30 iff W* is at
//   least as close to 0 as to St(d,r)^(2H), i.e. decay drove W toward 0, not toward St.
// Control: the iteration with the tangent projection and the retraction, W ← polar(W − Π_W(∇L(W)
// + λW)/λ), which stays on St (Π_W(λW) = 0 there: Prop. 8). (Without the retraction the projected
// iteration is W ← W WᵀW − Π_W(∇L)/λ, which cubes W's singular values and diverges.)
template <class S>
CheckResult check_decay_fixed_point(const Case& c, DecayFixedPointMutant mutant) {
  const auto a = make_attention_case<S>(c);
  const S stop = S(4) * unit_roundoff<S>();
  Frames<S> q = a.wq, k = a.wk;
  // The problem's gradient scale E0 on St, where the iteration starts; λ = 10^x · E0, so that the first
  // step's size E0/λ = 10^-x and the iteration contracts at a rate of about 10^-x.
  S scale0(0);
  for (int h = 0; h < c.heads; ++h) scale0 += attention_error_scale(a.problem, q[h], k[h], std::size_t(h));
  if (!(scale0 > S(0))) {  // a loss with no gradient anywhere: every point is a fixed point
    CheckResult none;
    none.detail["note"] = "zero gradient scale";
    return none;
  }
  const S lambda = S(pow10(c.x)) * scale0;
  const S unit = S(pow10(-c.x));
  const auto next_frame = [&](const Matrix<S>& w, const Matrix<S>& g) -> Matrix<S> {
    if (mutant == DecayFixedPointMutant::kNone) return -g / lambda;
    return polar_svd<S>(Matrix<S>(w - project_tangent<S>(w, Matrix<S>(g + lambda * w)) / lambda));
  };
  int iterations = 0;
  for (bool settled = false; !settled && iterations < 400; ++iterations) {
    const auto grad = attention_loss_and_gradient(a.problem, q, k);
    S step2(0), size2(0);
    for (int h = 0; h < c.heads; ++h) {
      const Matrix<S> nq = next_frame(q[h], grad.grad_q[h]), nk = next_frame(k[h], grad.grad_k[h]);
      step2 += (nq - q[h]).squaredNorm() + (nk - k[h]).squaredNorm();
      size2 += nq.squaredNorm() + nk.squaredNorm();
      q[h] = nq;
      k[h] = nk;
    }
    settled = sqrt(step2) <= stop * std::max(S(sqrt(size2)), unit);
  }
  const auto grad = attention_loss_and_gradient(a.problem, q, k);
  S fixed2(0), norm2(0), dist2(0);
  for (int h = 0; h < c.heads; ++h) {
    fixed2 += Matrix<S>(q[h] + grad.grad_q[h] / lambda).squaredNorm() +
              Matrix<S>(k[h] + grad.grad_k[h] / lambda).squaredNorm();
    norm2 += q[h].squaredNorm() + k[h].squaredNorm();
    dist2 += Matrix<S>(q[h] - polar_svd<S>(q[h])).squaredNorm() + Matrix<S>(k[h] - polar_svd<S>(k[h])).squaredNorm();
  }
  const S fixed = sqrt(fixed2), norm = sqrt(norm2), dist = sqrt(dist2);
  CheckResult r;
  r.residual = to_double(fixed);
  r.normaliser = to_double(unit);
  r.ratio = to_double(S(fixed / (unit * unit_roundoff<S>() * S(double(c.tokens * c.d)))));
  const double off_ratio = dist > S(0) ? to_double(S(S(30) * norm / dist)) : INFINITY;
  r.ratio = std::max(r.ratio, off_ratio);
  r.detail = {{"iterations", iterations},
              {"fixed_point_norm", to_double(norm)},
              {"distance_from_manifold", to_double(dist)},
              {"distance_from_zero_over_distance_from_manifold", to_double(S(norm / std::max(dist, S(1e-300))))},
              {"isometry_error", to_double(isometry_error(q[0]))}};
  return r;
}

// clang-format off
#define STIEFEL_PROP8_CHECKS(X)                                                                       \
  X(decay_annihilated, DecayAnnihilatedMutant) X(decay_drifted, DecayDriftedMutant)                   \
  X(decay_absorbed, DecayAbsorbedMutant) X(decay_absorbed_corrected, DecayAbsorbedMutant)             \
  X(decay_fixed_point, DecayFixedPointMutant)
// clang-format on
STIEFEL_PROP8_CHECKS(STIEFEL_EXTERN_CHECK)

}  // namespace stiefel::certificates
