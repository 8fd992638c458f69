// The claims of eq. (4), §4.3 and §5.3: the canonical metric's gradient and norm.
#include "claim_builder.h"
#include "claim_groups.h"
#include "s53_canonical_metric.h"

namespace stiefel::certificates {
namespace {

Claim s53_canonical_gradient() {
  Claim c = make_claim("s53-canonical-gradient", "eq. (4), §4.3, §5.3", "identity",
                       "grad^can = G - W G^T W is the Riesz representer of the Euclidean differential "
                       "in the canonical metric: it is tangent, and g_c(grad^can, xi) = <G, xi> for every tangent "
                       "xi.");
  c.generator =
      "d in [2,24], r in [2,d] (at r = 1 the two metrics coincide on T_W St), G scaled "
      "by 10^[-12,12], two random tangent vectors";
  c.residual =
      "the larger of |g_c(grad^can, xi) - <G, xi>| / (||G|| ||xi||) and ||sym(W^T grad^can)|| / ||G|| (the "
      "Riesz identity alone holds for grad^can + W S, S symmetric); factor d";
  c.analysis = "Edelman, Arias & Smith (1998), (2.53).";
  c.generator_fn = [] { return gen::frame({.min_r = 2}); };
  set_check(
      c, &check_canonical_riesz<double>, &check_canonical_riesz<mp50>,
      {{CanonicalRieszMutant::kEmbeddedGradient, "embedded-gradient", "Pi_W G in place of the canonical gradient"},
       {CanonicalRieszMutant::kForgotSkew, "forgot-skew",
        "G + W W^T G (the canonical gradient plus W times a symmetric matrix: the Riesz identity holds, "
        "tangency fails)"}});
  return c;
}

Claim s53_canonical_norm_split() {
  Claim c = make_claim("s53-canonical-norm-split", "§5.3 (metric-consistent moment)", "identity",
                       "The canonical norm tr(xi^T (I - WW^T/2) xi) differs from the Frobenius one by "
                       "the horizontal/vertical split: ||xi||_c^2 = ||Pi^h xi||^2 + ||W^T xi||^2 / 2.");
  c.generator = "d in [2,24], r in [2,d], tangent xi scaled by 10^[-12,12]";
  c.residual = "| ||xi||_c^2 - ||Pi^h xi||^2 - ||W^T xi||^2/2 | / ||xi||^2; factor d";
  c.analysis = "xi = (I - WW^T) xi + W (W^T xi), orthogonal parts.";
  c.generator_fn = [] { return gen::frame({.min_r = 2}); };
  set_check(
      c, &check_canonical_norm_split<double>, &check_canonical_norm_split<mp50>,
      {{CanonicalNormMutant::kFrobeniusNorm, "frobenius-norm", "the Frobenius norm in place of the canonical one"}});
  return c;
}

}  // namespace

std::vector<Claim> s53_canonical_metric_claims() { return {s53_canonical_gradient(), s53_canonical_norm_split()}; }

}  // namespace stiefel::certificates
