// Prop. 3, §5.3: (i) the fixed-step Riemannian SGD displacement is degree one in the gradient;
// (ii) with one scalar second moment per frame (or its mean over the d·r entries) and ε = 0 the
// Riemannian Adam is scale-free, and with ε > 0 the c-scaled step is the unscaled one times
// ρ = c (√v̂ + ε) / (c √v̂ + ε) exactly.
#pragma once

#include "gradient_sequences.h"

namespace stiefel::certificates {

enum class SgdDegreeOneMutant { kNone, kAdamFirstStep };
enum class AdamScaleFreeMutant { kNone, kEpsAtGradientScale };
enum class EpsScaleDefectMutant { kNone, kEpsInsideSqrt, kEpsIgnored };

// ξ(c g) = c ξ(g) for the Stiefel and the Grassmann projector, normalised by c η ‖g‖; factor d.
template <class S>
CheckResult check_sgd_degree_one(const Case& c, SgdDegreeOneMutant mutant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> g = gaussian_matrix<S>(rng, c.d, c.r) * S(pow10(c.log10_scale));
  const S cc(pow10(c.log10_c)), lr(pow10(c.log10_lr));
  CheckResult worst;
  for (TangentMap map : {TangentMap::kStiefel, TangentMap::kGrassmann}) {
    auto displacement = [&](const Matrix<S>& grad) -> Matrix<S> {
      if (mutant == SgdDegreeOneMutant::kAdamFirstStep) {  // the Riemannian Adam's first step (ε = 0, no cap)
        RiemannianAdamHyper<S> h = b2_hyper<S>(lr, S(0));
        h.cap_tau.reset();
        h.map = map;
        return riemannian_adam_direction<S>({w}, {grad}, make_riemannian_adam_state<S>({w}, h.moment), h).eta[0];
      }
      RiemannianSgdHyper<S> h;
      h.lr = lr;
      h.map = map;
      return riemannian_sgd_displacement<S>(w, grad, h);
    };
    const Matrix<S> base = displacement(g);
    if (base.norm() == S(0)) continue;  // Π^h vanishes identically when r = d
    const Matrix<S> scaled = displacement(Matrix<S>(cc * g));
    keep_worst(worst, identity_result(matrix_identity<S>("xi(c g) = c xi(g)", Matrix<S>(cc * base), scaled,
                                                         S(cc * lr * g.norm()), double(c.d))));
  }
  return worst;
}

// Every iterate of the run on c·g (c = 2^k) against the run on g: max ‖W_t(c g) − W_t(g)‖ over
// the steps and heads, normalised by √r; factor d·T.
template <class S>
CheckResult adam_scale_free(const Case& c, AdamScaleFreeMutant mutant, SecondMoment moment) {
  RiemannianAdamHyper<S> h = sequence_hyper<S>(c);
  h.moment = moment;
  h.eps = S(0);
  if (mutant == AdamScaleFreeMutant::kEpsAtGradientScale) {  // ε at the gradient scale, no cap
    h.eps = S(pow10(c.log10_scale) * std::sqrt(double(c.d * c.r)));
    h.cap_tau.reset();
  }
  std::vector<Frames<S>> first;
  first.push_back(run_adam<S>(c, h, 1.0, [&](int, const Frames<S>& w, const auto&) { first.push_back(w); }));
  S worst(0);
  auto compare = [&](const Frames<S>& w, const Frames<S>& ref) {
    for (int k = 0; k < c.heads; ++k) worst = std::max(worst, S((w[k] - ref[k]).norm()));
  };
  // first = [W_0, …, W_{T−1}, W_T] of the unscaled run.
  // c = 2^k: scaling by a power of two is exact in binary floating point, so the scaled run sees
  // exactly scaled inputs and any difference is the rule's, not rounding's.
  const double scale_c = std::ldexp(1.0, int(std::lround(c.log10_c)));
  const Frames<S> last =
      run_adam<S>(c, h, scale_c, [&](int t, const Frames<S>& w, const auto&) { compare(w, first[t]); });
  compare(last, first.back());
  return roundoff_result<S>(worst, sqrt(S(c.r)), double(c.d) * c.steps);
}

template <class S>
CheckResult check_adam_scale_free(const Case& c, AdamScaleFreeMutant mutant) {
  return adam_scale_free<S>(c, mutant, SecondMoment::kPerFrame);
}

// The B2-mean reading of §3.2 (v_h the mean of ξ∘ξ over the d·r entries): still degree 2 in g.
template <class S>
CheckResult check_adam_mean_scale_free(const Case& c, AdamScaleFreeMutant mutant) {
  return adam_scale_free<S>(c, mutant, SecondMoment::kPerFrameMean);
}

// With a scalar second moment (per frame, or the mean over the d·r entries) and ε > 0, the step
// from the c-scaled gradient and state (m → c m, v → c² v) is the unscaled one times
//   ρ = c (√v̂ + ε) / (c √v̂ + ε),   |ρ − 1| = ε |c − 1| / (c √v̂ + ε) ≤ (ε / √v̂) |1 − 1/c|,
// exactly (the cap, a projection onto a ball, is 1-Lipschitz: the capped steps differ by no more).
// Checked at every step of an unscaled run, uncapped, for c = 10^±[1,20] (not powers of two).
// ratio = ‖η(c g) − ρ η(g)‖ / (u · d·r · ‖η(c g)‖). Case::x selects the moment (0 per frame, 1 mean).
// Controls: ρ of ε inside the square root, c √(v̂ + ε) / √(c² v̂ + ε); ρ = 1 (the ε = 0
// statement applied with ε > 0).
template <class S>
CheckResult check_eps_scale_defect(const Case& c, EpsScaleDefectMutant mutant) {
  Rng rng(c.seed);
  Frames<S> w = random_frames<S>(rng, {c.d, c.r}, c.heads);
  Frames<S> persistent;
  for (int h = 0; h < c.heads; ++h) persistent.push_back(gaussian_matrix<S>(rng, c.d, c.r));
  const S lr(pow10(c.log10_lr)), eps(pow10(c.log10_eps)), cc(pow10(c.log10_c));
  RiemannianAdamHyper<S> h = c.x > 0.5 ? b2_mean_hyper<S>(lr, eps) : b2_hyper<S>(lr, eps);
  h.cap_tau.reset();
  auto state = make_riemannian_adam_state<S>(w, h.moment);
  CheckResult worst;
  worst.ratio = -1;
  double max_defect = 0, max_bound = 0;
  for (int t = 0; t < c.steps; ++t) {
    const Frames<S> g = sequence_gradients<S>(rng, persistent, c, t, 1.0);
    auto dir = riemannian_adam_direction<S>(w, g, state, h);
    RiemannianAdamState<S> scaled = state;
    Frames<S> gc;
    for (int k = 0; k < c.heads; ++k) {
      scaled.m[k] *= cc;
      scaled.v[k] *= cc * cc;
      gc.push_back(g[k] * cc);
    }
    const auto dirc = riemannian_adam_direction<S>(w, gc, scaled, h);
    const S bias2 = S(1) - pow(h.beta2, S(dir.state.step));
    for (int k = 0; k < c.heads; ++k) {
      const S sv = sqrt(dir.state.v[k](0, 0) / bias2);
      S rho = cc * (sv + eps) / (cc * sv + eps);
      max_defect = std::max(max_defect, to_double(abs(S(rho - S(1)))));
      if (sv > S(0)) max_bound = std::max(max_bound, to_double(S(eps / sv * abs(S(S(1) - S(1) / cc)))));
      if (mutant == EpsScaleDefectMutant::kEpsInsideSqrt)
        rho = cc * sqrt(sv * sv + eps) / sqrt(cc * cc * sv * sv + eps);
      if (mutant == EpsScaleDefectMutant::kEpsIgnored) rho = S(1);
      // d·r for the projection, 64 for the scalar chain (the inexactly scaled inputs, the moments'
      // updates, bias corrections, square roots and ρ itself).
      keep_worst(worst, identity_result(matrix_identity<S>("eta(c g, c m, c^2 v) = rho eta(g, m, v)",
                                                           Matrix<S>(rho * dir.eta[k]), dirc.eta[k], dirc.eta[k].norm(),
                                                           double(c.d * c.r + 64))));
    }
    auto next = finish_riemannian_adam_step<S>(w, std::move(dir), h);
    w = std::move(next.frames);
    state = std::move(next.state);
  }
  worst.detail["max_relative_defect"] = max_defect;
  worst.detail["max_bound_eps_over_sqrt_v"] = max_bound;
  return worst;
}

// clang-format off
#define STIEFEL_PROP3_CHECKS(X)                                                                     \
  X(sgd_degree_one, SgdDegreeOneMutant) X(adam_scale_free, AdamScaleFreeMutant)                     \
  X(adam_mean_scale_free, AdamScaleFreeMutant) X(eps_scale_defect, EpsScaleDefectMutant)
// clang-format on
STIEFEL_PROP3_CHECKS(STIEFEL_EXTERN_CHECK)

}  // namespace stiefel::certificates
