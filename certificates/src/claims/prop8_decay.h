// Prop. 8 (§4.3, §5.3) and decoupled decay (§5.3, §5.4): Π_W(λW) = 0 on St(d,r), and exactly
// λ W (I − WᵀW) off it; the retraction absorbs the decay, polar((1 − ηλ) W + ξ) =
// sign(1 − ηλ) polar(W + ξ/(1 − ηλ)); and the decay's fixed point lies off St(d,r).
#pragma once

#include "check_support.h"

namespace stiefel::certificates {

enum class DecayAnnihilatedMutant { kNone, kDriftedFrame };
enum class DecayDriftedMutant { kNone, kRetractedProjector };
enum class DecayAbsorbedMutant { kNone, kUnscaledStep };
enum class DecayFixedPointMutant { kNone, kDecayWithoutStepSize, kStoppedEarly };

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

// §5.4: iterate decoupled decay W ← W − η∇L(W) − ηλW on L(W) = ½‖W − B‖² (contraction ½ per
// step) to its fixed point, with B = (1+λ) U diag(σ) Vᵀ built so that the fixed point B/(1+λ) has
// the known singular values σ: its distance from St(d,r) is ‖W* − polar(W*)‖_F = ‖σ − 1‖₂ in
// closed form. Two residuals (the worse one counts): the measured distance against ‖σ − 1‖₂, and
// the fixed point against B/(1+λ), each over (‖σ‖₂ + √r); factor d·r.
// Controls: the decay not multiplied by η (W ← W − η∇L − λW; its fixed point is ηB/(η+λ)); the
// iteration stopped at a relative step of 1e-6 instead of roundoff (a near miss).
template <class S>
CheckResult check_decay_fixed_point(const Case& c, DecayFixedPointMutant mutant) {
  Rng rng(c.seed);
  const Matrix<S> u = random_stiefel<S>(rng, c.d, c.r), v = random_orthogonal<S>(rng, c.r);
  Vector<S> sigma(c.r);
  for (int i = 0; i < c.r; ++i) sigma(i) = S(pow10(c.log10_scale + rng.uniform() - 0.5));
  const S lambda(pow10(c.x));
  const Matrix<S> b = (S(1) + lambda) * u * sigma.asDiagonal() * v.transpose();
  const S eta = S(1) / (S(2) * (S(1) + lambda));  // contraction factor 1/2
  const S stop = mutant == DecayFixedPointMutant::kStoppedEarly ? S(1e-6) : unit_roundoff<S>();
  const S decay = mutant == DecayFixedPointMutant::kDecayWithoutStepSize ? lambda : S(eta * lambda);
  Matrix<S> w = Matrix<S>::Zero(c.d, c.r);
  for (int k = 0; k < 400; ++k) {
    const Matrix<S> next = w - eta * (w - b) - decay * w;
    const bool settled = (next - w).norm() <= stop * next.norm();
    w = next;
    if (settled) break;
  }
  const S distance = (w - polar_svd<S>(w)).norm();
  const S closed_form = (sigma.array() - S(1)).matrix().norm();
  const S normaliser = sigma.norm() + sqrt(S(c.r));
  const double factor = double(c.d * c.r);
  CheckResult r =
      identity_result(scalar_identity<S>("dist(W*, St) = |sigma - 1|", closed_form, distance, normaliser, factor));
  keep_worst(r, identity_result(matrix_identity<S>("W* = B / (1 + lambda)", Matrix<S>(b / (S(1) + lambda)), w,
                                                   normaliser, factor)));
  r.detail["distance_from_manifold"] = to_double(distance);
  r.detail["closed_form"] = to_double(closed_form);
  r.detail["isometry_error"] = to_double(isometry_error(w));
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
