// Prop. 2 and eq. (12), §5.3: Π_W(G) = G − W sym(WᵀG) is the orthogonal projector onto T_W St,
// Π_W g/‖Π_W g‖ is the steepest ascent direction, and T_W St = H_W ⊕ G_W orthogonally, so that
// restricting descent to H_W costs 1 − √(1 − ρ²) of the per-step decrease (ρ the gauge share).
#pragma once

#include "attention_case.h"
#include "prop1_attention_gauge.h"  // figures_table8, whose sample gives the random gauge share

namespace stiefel::certificates {

enum class ProjectorMutant { kNone, kWithoutSym };
enum class SteepestAscentMutant { kNone, kNormalComponentLeft };
enum class GaugeSplitMutant { kNone, kNormalPart };
enum class HorizontalCostMutant { kNone, kShareInNorm };

// The five projector identities (properties/stiefel_identities.h), the worst one counts; factor d.
template <class S>
CheckResult check_orthogonal_projector(const Case& c, ProjectorMutant mutant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const S scale(pow10(c.log10_scale));
  const Matrix<S> ga = gaussian_matrix<S>(rng, c.d, c.r) * scale;
  const Matrix<S> gb = gaussian_matrix<S>(rng, c.d, c.r) * scale;
  const Matrix<S> s = random_symmetric<S>(rng, c.r) * scale;
  const Matrix<S> xi = random_tangent<S>(rng, w) * scale;
  auto proj = [&](const Matrix<S>& g) -> Matrix<S> {
    if (mutant == ProjectorMutant::kWithoutSym) return g - w * (w.transpose() * g);
    return project_tangent(w, g);
  };
  const double f = c.d;
  const Matrix<S> pa = proj(ga);
  CheckResult worst = identity_result(properties::projector_idempotent<S>(proj, pa, ga.norm(), f));
  worst.detail["part"] = "idempotent";
  auto part = [&](const Identity<S>& id, const char* name) {
    CheckResult r = identity_result(id);
    r.detail["part"] = name;
    keep_worst(worst, r);
  };
  part(properties::projector_self_adjoint<S>(proj, ga, gb, f), "self-adjoint");
  part(properties::projector_annihilates<S>(proj, Matrix<S>(w * s), s.norm(), f), "annihilates normal space");
  part(properties::tangent_at<S>(w, pa, ga.norm(), f), "lands in tangent space");
  part(properties::projector_fixes<S>(proj, xi, f), "fixes tangent vectors WΩ+W⊥K");
  return worst;
}

// max over unit tangent ξ of ⟨g, ξ⟩ = ⟨g, Πg⟩/‖Πg‖, against the maximum built without Π, and
// no random unit tangent ξ exceeds it; factor d·r.
template <class S>
CheckResult check_steepest_ascent(const Case& c, SteepestAscentMutant mutant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> g = gaussian_matrix<S>(rng, c.d, c.r) * S(pow10(c.log10_scale));
  // max over unit tangent ξ of ⟨g, ξ⟩ = ‖coordinates of g in an orthonormal basis of T_W St‖:
  // W(E_ij − E_ji)/√2 (i < j) and W⊥ E_kl, built without the projector.
  const Matrix<S> a = w.transpose() * g;
  S best2 = (orthogonal_complement(w).transpose() * g).squaredNorm();
  for (int j = 0; j < c.r; ++j)
    for (int i = 0; i < j; ++i) best2 += (a(i, j) - a(j, i)) * (a(i, j) - a(j, i)) / S(2);
  const S best = sqrt(best2);
  Matrix<S> dir = project_tangent(w, g);
  if (mutant == SteepestAscentMutant::kNormalComponentLeft) {  // 1e-6 ‖Πg‖ of normal part (a near miss)
    const Matrix<S> normal = w * sym(w.transpose() * g);
    if (normal.norm() > S(0)) dir += S(1e-6) * std::max(dir.norm(), S(g.norm() * S(1e-3))) * normal / normal.norm();
  }
  const S dn = dir.norm();
  const S value = dn > S(0) ? S(frobenius_inner<S>(g, dir) / dn) : S(0);
  // ⟨g, Πg⟩/‖Πg‖ is computed with condition number ‖g‖/‖Πg‖: normalise by ‖g‖²/‖Πg‖.
  const S tangent = project_tangent(w, g).norm();
  const S normaliser = tangent > S(0) ? S(g.squaredNorm() / tangent) : g.norm();
  CheckResult r =
      identity_result(scalar_identity<S>("<g, Pi g>/|Pi g| = max <g, xi>", best, value, normaliser, double(c.d * c.r)));
  Matrix<S> xi = random_tangent<S>(rng, w);
  if (xi.norm() > S(0)) {
    xi /= xi.norm();
    const S excess = frobenius_inner<S>(g, xi) - best;
    keep_worst(r, roundoff_result<S>(positive_part<S>(excess), g.norm(), double(c.d * c.r)));
  }
  r.detail["max_value"] = to_double(best);
  return r;
}

// (12): ‖Π g‖² = ‖Π^h g‖² + ‖W skew(Wᵀg)‖², normalised by ‖g‖²; factor d.
template <class S>
CheckResult check_gauge_split(const Case& c, GaugeSplitMutant mutant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> g = gaussian_matrix<S>(rng, c.d, c.r) * S(pow10(c.log10_scale));
  const Matrix<S> vertical =
      mutant == GaugeSplitMutant::kNormalPart ? Matrix<S>(w * sym(w.transpose() * g)) : gauge_component(w, g);
  return identity_result(properties::gauge_split<S>(w, g, vertical, double(c.d)));
}

// §5.3 after eq. (12): Riemannian steepest descent on the horizontal space decreases the loss at
// rate ‖Π^h g‖ = √(1 − ρ²) ‖Π g‖ with ρ = ‖Π_G g‖ / ‖Π g‖ the gauge share, so "(12) costs about 3%
// of the per-step decrease" is 1 − √(1 − ρ²) = 2.9% at Table 8's ρ ≈ 0.24. Per case: the identity
// ‖Π^h g‖² = (1 − ρ²) ‖Π g‖², ratio = |‖Π^h g‖² − (1 − ρ²) ‖Π g‖²| / (u · d·r · ‖Π g‖²).
// Control: the decrease taken as (1 − ρ) ‖Π g‖ (the share subtracted in norm, not in square).
// The derivative of the case's attention loss at its frames along (dq, dk), measured from loss values
// alone: Richardson-extrapolated central differences of L in 50 digits, h = 1e-8 (truncation
// O(h⁴) ≈ 1e-32 relative). Defined in checks_mp50.cpp, next to directional_reference.
mp50 loss_derivative_mp50(const Case& c, const Frames<mp50>& dq, const Frames<mp50>& dk);

// Eq. (12)'s cost measured on the attention loss, not restated: at head 0's W_Q frame W with the
// loss's gradient g there, the loss's rate of decrease along the unit steepest-descent direction
// Πg/‖Πg‖ and along the unit horizontal one Π^h g/‖Π^h g‖, each measured from 50-digit loss
// differences, against what eq. (12) predicts from the gauge share ρ = ‖W skew(Wᵀg)‖/‖Πg‖:
//   unit-norm step (the paper's "about 3%"): rate_h = √(1 − ρ²) · rate_full, rate_full = ‖Πg‖;
//   fixed-rate step (η Πg against η Π^h g):  ‖Π^h g‖ rate_h = (1 − ρ²) ‖Πg‖².
// ratio = the worst of the three rate errors (the last divided by ‖Πg‖) over the gradient's
// rounding-error scale (attention_error_scale) · max(u, 1e-30) · n·d, as for the gradient claims.
// Control: the share subtracted in norm, rate_h = (1 − ρ) ‖Πg‖.
template <class S>
CheckResult check_horizontal_cost(const Case& c, HorizontalCostMutant mutant) {
  const auto a = make_attention_case<S>(c);
  const Matrix<S>& w = a.wq[0];
  const Matrix<S>& g = a.grad.grad_q[0];
  const Matrix<S> full = project_tangent<S>(w, g), horizontal = project_horizontal<S>(w, g);
  const S full_norm = full.norm(), horizontal_norm = horizontal.norm(), gauge = gauge_component<S>(w, g).norm();
  CheckResult r;
  if (!(full_norm > S(0)) || !(horizontal_norm > S(0))) {  // no descent direction: nothing to compare
    r.detail["note"] = "zero tangent or horizontal gradient";
    return r;
  }
  const S rho = gauge / full_norm;
  const auto rate_along = [&](const Matrix<S>& direction) {
    Frames<mp50> dq, dk;
    for (int h = 0; h < c.heads; ++h) {
      dq.push_back(Matrix<mp50>::Zero(c.d, c.r));
      dk.push_back(Matrix<mp50>::Zero(c.d, c.r));
    }
    dq[0] = direction.template cast<mp50>();
    return S(loss_derivative_mp50(c, dq, dk));
  };
  const S rate_full = rate_along(Matrix<S>(full / full_norm));
  const S rate_horizontal = rate_along(Matrix<S>(horizontal / horizontal_norm));
  const S share =
      mutant == HorizontalCostMutant::kShareInNorm ? S(S(1) - rho) : S(sqrt(std::max(S(0), S(S(1) - rho * rho))));
  const S e_full = abs(S(rate_full - full_norm));
  const S e_unit = abs(S(rate_horizontal - share * full_norm));
  const S e_rate = abs(S(horizontal_norm * rate_horizontal - share * share * full_norm * full_norm)) / full_norm;
  const S worst = std::max({e_full, e_unit, e_rate});
  S scale(0);
  for (int h = 0; h < c.heads; ++h) scale += attention_error_scale(a.problem, a.wq[h], a.wk[h], std::size_t(h));
  const double floor = std::max(to_double(unit_roundoff<S>()), 1e-30);
  r.residual = to_double(worst);
  r.normaliser = to_double(scale);
  r.ratio = to_double(S(worst / (scale * S(floor) * S(double(c.tokens * c.d)))));
  r.detail = {{"gauge_share", to_double(rho)},
              {"cost_unit_norm", to_double(S(S(1) - rate_horizontal / rate_full))},
              {"cost_fixed_rate", to_double(S(S(1) - horizontal_norm * rate_horizontal / (full_norm * rate_full)))}};
  return r;
}

// 1 − √(1 − ρ²), the cost of the horizontal projection, at Table 8's ρ = 0.24 and at the mean
// per-frame gauge share of random tangent vectors at d = 128, r = 16 (figures_table8's sample).
template <class S>
nlohmann::json figures_horizontal_cost() {
  nlohmann::json rows = nlohmann::json::array();
  const double random_share = figures_table8<S>()["mean_norm_fraction"].template get<double>();
  for (const auto& [what, rho] : std::vector<std::pair<const char*, double>>{
           {"Table 8 (the paper's measured share)", 0.24},
           {"random tangent vectors, d = 128, r = 16 (mean of 400)", random_share}})
    rows.push_back({{"where", what},
                    {"gauge_share", rho},
                    {"cost_percent", 100.0 * (1.0 - std::sqrt(1.0 - rho * rho))},
                    {"cost_percent_unit_norm_step", 100.0 * (1.0 - std::sqrt(1.0 - rho * rho))},
                    {"cost_percent_fixed_rate_step", 100.0 * rho * rho}});
  return {{"rows", rows}};
}

#define STIEFEL_PROP2_CHECKS(X)            \
  X(orthogonal_projector, ProjectorMutant) \
  X(steepest_ascent, SteepestAscentMutant) X(gauge_split, GaugeSplitMutant) X(horizontal_cost, HorizontalCostMutant)
#define STIEFEL_PROP2_FIGURES(F) F(horizontal_cost)
STIEFEL_PROP2_CHECKS(STIEFEL_EXTERN_CHECK)
STIEFEL_PROP2_FIGURES(STIEFEL_EXTERN_FIGURES)

}  // namespace stiefel::certificates
