// §6: the Stiefel constraint "removes the normal directions {WS}, along which the loss does vary
// (they rescale the logits)". Moving W_Q along W_Q S changes head h's logits X W_Q W_Kᵀ Xᵀ by
// t X W_Q S W_Kᵀ Xᵀ (exactly: the logits are linear in W_Q). That change is a rescaling of the
// logits only when S is a multiple of I_r (the decay direction of Prop. 8), which for r = 1 is every
// S; for r ≥ 2 a generic S reweights the directions of W_Q instead.
#pragma once

#include "attention_case.h"

namespace stiefel::certificates {

enum class NormalRescaleMutant { kNone, kNearScalar };

// ratio = ‖ΔL − α*L‖_F / (u (n + d) ‖X‖_F² ‖S‖_F), ΔL = X W_Q S W_Kᵀ Xᵀ, L = X W_Q W_Kᵀ Xᵀ, α* the
// least-squares factor ⟨ΔL, L⟩/⟨L, L⟩: how far the change of the logits is from a rescaling of
// them. `scalar`: S = c I_r (c in [1/2, 2]); otherwise a random symmetric S. Control: S moved off
// the scalar direction by 1e-6 (a random symmetric perturbation), which must fail by far.
template <class S>
CheckResult normal_rescale_check(const Case& c, NormalRescaleMutant mutant, bool scalar) {
  const AttentionCase<S> a = make_attention_case<S>(c);
  Rng rng(c.seed ^ 0x5d6e0f1a2b3c4d5eULL);
  const Matrix<S>& wq = a.wq[0];
  const Matrix<S>& wk = a.wk[0];
  Matrix<S> dir =
      scalar ? Matrix<S>(Matrix<S>::Identity(c.r, c.r) * S(0.5 + 1.5 * rng.uniform())) : random_symmetric<S>(rng, c.r);
  if (mutant == NormalRescaleMutant::kNearScalar)
    dir = Matrix<S>(Matrix<S>::Identity(c.r, c.r) * S(0.5 + 1.5 * rng.uniform())) +
          random_symmetric<S>(rng, c.r) * S(1e-6);
  const Matrix<S>& x = a.problem.x;
  const Matrix<S> logits = x * wq * wk.transpose() * x.transpose();
  const Matrix<S> change = x * (wq * dir) * wk.transpose() * x.transpose();
  const S ll = frobenius_inner<S>(logits, logits);
  const S alpha = ll > S(0) ? S(frobenius_inner<S>(change, logits) / ll) : S(0);
  const S residual = Matrix<S>(change - alpha * logits).norm();
  CheckResult r = roundoff_result<S>(residual, S(x.squaredNorm() * dir.norm()), double(c.tokens + c.d));
  r.detail["rescaling_factor"] = to_double(alpha);
  r.detail["relative_non_rescaling_part"] = to_double(S(residual / std::max(S(change.norm()), S(1e-300))));
  return r;
}

template <class S>
CheckResult check_normal_rescale(const Case& c, NormalRescaleMutant mutant) {
  return normal_rescale_check<S>(c, mutant, false);
}

template <class S>
CheckResult check_normal_rescale_scalar(const Case& c, NormalRescaleMutant mutant) {
  return normal_rescale_check<S>(c, mutant, true);
}

// clang-format off
#define STIEFEL_S6_NORMAL_CHECKS(X) \
  X(normal_rescale, NormalRescaleMutant) X(normal_rescale_scalar, NormalRescaleMutant)
// clang-format on
STIEFEL_S6_NORMAL_CHECKS(STIEFEL_EXTERN_CHECK)

}  // namespace stiefel::certificates
