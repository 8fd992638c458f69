// The canonical metric g_c(a, b) = tr(aᵀ(I − ½WWᵀ)b) on T_W St (eq. (4), §4.3, §5.3): its Riesz
// representer of the Euclidean differential is G − W GᵀW, and its norm splits into the horizontal
// and the vertical part, ‖ξ‖_c² = ‖Π^h ξ‖² + ‖Wᵀξ‖²/2.
#pragma once

#include "check_support.h"

namespace stiefel::certificates {

enum class CanonicalRieszMutant { kNone, kEmbeddedGradient, kForgotSkew };
enum class CanonicalNormMutant { kNone, kFrobeniusNorm };

// g_c(∇^can, ξ) = ⟨G, ξ⟩ for two random tangent ξ, normalised by ‖G‖‖ξ‖; and ∇^can is tangent,
// sym(Wᵀ∇^can) = 0, normalised by ‖G‖: the Riesz identity alone holds for ∇^can + W S with any
// symmetric S (g_c(W S, ξ) = 0), e.g. G + W WᵀG, which is not tangent. Factor d.
template <class S>
CheckResult check_canonical_riesz(const Case& c, CanonicalRieszMutant mutant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> g = gaussian_matrix<S>(rng, c.d, c.r) * S(pow10(c.log10_scale));
  const Matrix<S> grad = mutant == CanonicalRieszMutant::kEmbeddedGradient ? project_tangent(w, g)
                         : mutant == CanonicalRieszMutant::kForgotSkew     ? Matrix<S>(g + w * (w.transpose() * g))
                                                                           : canonical_gradient(w, g);
  CheckResult worst;
  const Matrix<S> wtg = w.transpose() * grad;
  keep_worst(worst,
             identity_result(matrix_identity<S>("sym(W^T grad^can) = 0", Matrix<S>::Zero(c.r, c.r),
                                                Matrix<S>((wtg + wtg.transpose()) / S(2)), S(g.norm()), double(c.d))));
  for (int k = 0; k < 2; ++k) {
    const Matrix<S> xi = random_tangent<S>(rng, w);
    keep_worst(worst, identity_result(scalar_identity<S>("g_c(grad^can, xi) = <G, xi>", frobenius_inner<S>(g, xi),
                                                         canonical_inner<S>(w, grad, xi), S(g.norm() * xi.norm()),
                                                         double(c.d))));
  }
  return worst;
}

// ‖ξ‖_c² = ‖Π^h ξ‖² + ‖Wᵀξ‖²/2, normalised by ‖ξ‖²; factor d.
template <class S>
CheckResult check_canonical_norm_split(const Case& c, CanonicalNormMutant mutant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> xi = random_tangent<S>(rng, w) * S(pow10(c.log10_scale));
  const S lhs = mutant == CanonicalNormMutant::kFrobeniusNorm ? xi.squaredNorm() : canonical_norm_squared<S>(w, xi);
  const S rhs = project_horizontal(w, xi).squaredNorm() + (w.transpose() * xi).squaredNorm() / S(2);
  return identity_result(
      scalar_identity<S>("|xi|_c^2 = |Pi^h xi|^2 + |W^T xi|^2 / 2", rhs, lhs, xi.squaredNorm(), double(c.d)));
}

#define STIEFEL_S53_CANONICAL_CHECKS(X) \
  X(canonical_riesz, CanonicalRieszMutant) X(canonical_norm_split, CanonicalNormMutant)
STIEFEL_S53_CANONICAL_CHECKS(STIEFEL_EXTERN_CHECK)

}  // namespace stiefel::certificates
