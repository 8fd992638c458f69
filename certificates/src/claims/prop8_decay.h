// Prop. 8 (§4.3, §5.3) and decoupled decay (§5.3, §5.4): Π_W(λW) = 0 on St(d,r), and exactly
// λ W (I − WᵀW) off it; the retraction absorbs the decay, polar((1 − ηλ) W + ξ) =
// sign(1 − ηλ) polar(W + ξ/(1 − ηλ)); and the decay's fixed point: 0 above a critical decay, off
// St(d,r) below it.
#pragma once

#include "attention_case.h"

namespace stiefel::certificates {

enum class DecayAnnihilatedMutant { kNone, kDriftedFrame, kHorizontalMap };
enum class DecayDriftedMutant { kNone, kRetractedProjector };
enum class DecayAbsorbedMutant { kNone, kUnscaledStep };

template <class S>
CheckResult check_decay_annihilated(const Case& c, DecayAnnihilatedMutant mutant) {
  Rng rng(c.seed);
  Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  if (mutant == DecayAnnihilatedMutant::kDriftedFrame) w *= S(1) + S(1e-6);  // 1e-6 off the manifold
  const S lambda(pow10(c.x));
  // The Riemannian gradient Pi_W; the control, the horizontal map G - W W^T G, annihilates W too.
  const auto projector = [&](const Matrix<S>& x) {
    return mutant == DecayAnnihilatedMutant::kHorizontalMap ? project_horizontal<S>(w, x) : project_tangent<S>(w, x);
  };
  CheckResult r = identity_result(
      properties::projector_annihilates<S>(projector, Matrix<S>(lambda * w), S(lambda * sqrt(S(c.r))), double(c.d)));
  // That the map is the Riemannian gradient, so that what it annihilates is the decay's Riemannian
  // gradient: <P(G), xi> = <G, xi> for a tangent xi = W Omega + W_perp K (Omega skew: the directions
  // that rotate the frame within its span, which the horizontal map drops).
  const Matrix<S> g = gaussian_matrix<S>(rng, c.d, c.r);
  Matrix<S> omega = gaussian_matrix<S>(rng, c.r, c.r);
  omega = Matrix<S>(omega - omega.transpose());
  const Matrix<S> z = gaussian_matrix<S>(rng, c.d, c.r);
  const Matrix<S> xi = Matrix<S>(w * omega) + Matrix<S>(z - w * Matrix<S>(w.transpose() * z));
  const S riesz = abs(S(projector(g).cwiseProduct(xi).sum() - g.cwiseProduct(xi).sum()));
  keep_worst(r, roundoff_result<S>(riesz, S(g.norm() * xi.norm()), double(c.d * c.r)));
  r.detail["riesz"] = to_double(S(riesz / (g.norm() * xi.norm())));
  return r;
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

// §5.4 on the attention loss: the paper's iteration W ← W − η∇L(W) − ηλW (decoupled decay, no
// constraint) on every W_Q and W_K, at ηλ = 0.1, from the case's frames on St(d,r).
//
// The iteration is gradient descent on F(W) = L(W) + λ‖W‖²/2, and its fixed points are F's critical
// points W* = −∇L(W*)/λ. The logits are bilinear in (W_Q, W_K), so ∇L(0) = 0 and 0 is always one of
// them; near 0, ∇L is linear: ∇_{W_Q,h} L = M_h W_K,h, ∇_{W_K,h} L = M_hᵀ W_Q,h with
// M_h = Xᵀ dS_h(0) X / √r, dS_h(0) = (D_h − rowmean(D_h) 1ᵀ)/n (P = 1/n at zero logits). The Hessian of
// F at 0 has eigenvalues λ ± σ_i(M_h): 0 attracts iff λ > λ_c = max_h ‖M_h‖₂, recomputed here from
// the loss's definition, not from core's gradient.
//
// The case runs the iteration at the rungs λ = ρ λ_c, ρ ∈ {0.3, 0.6, 1.6, 3}: the paper's iteration
// for kPaperSteps steps, then Barzilai–Borwein steps (a fixed point of W − η∇F is one for every
// η > 0; the paper's steps choose the basin, the longer steps reach its fixed point in fewer
// iterations), until ‖∇F(W)‖/λ is u·n·d of the scale s = max(‖W‖, ‖W₀‖) or kMaxSteps; the best
// iterate is kept. The 50-digit slot runs the same double iteration and evaluates the residuals at
// its iterate in 50 digits: the double iterate is the claim's W*. Ratios (the worst counts), each
// over u·n·d with u float64's unit roundoff:
//   every rung: the fixed-point residual ‖W* + ∇L(W*)/λ‖ over s;
//   ρ > 1: ‖W*‖ over ‖W₀‖ (W* = 0: decay drives W to 0);
//   ρ < 1: 30 · 1e-3 / min(‖W*ᵀW* − I‖, ‖W*‖/‖W₀‖) (no u: pass iff W* is off St(d,r)^(2H) and
//          away from 0 by 1e-3, fifty times the paper's float32 isometry bound 2e-5);
//   consecutive rungs: the growth of ‖W*‖ with λ over ‖W₀‖ (‖W*‖ is non-increasing in λ).
// Controls: decay toward St, λ(W − polar W) in place of λW (the iterate stays near St(d,r)); and
// the near miss of a decay coefficient off by a part in 10⁶ in the iteration, λ(1 + 1e-6) W.
enum class DecayFixedPointMutant { kNone, kTowardStiefel, kRateOffByPpm };

inline constexpr int kDecayPaperSteps = 2000, kDecayMaxSteps = 3000;
inline constexpr double kDecayRungs[] = {0.3, 0.6, 1.6, 3.0};

// λ_c = max_h ‖Xᵀ dS_h(0) X‖₂ / √r.
template <class S>
S decay_critical_lambda(const AttentionProblem<S>& p, Index r) {
  const Index n = p.x.rows();
  S worst(0);
  for (std::size_t h = 0; h < p.value.size(); ++h) {
    const Matrix<S> d = p.readout[h] * (p.x * p.value[h]).transpose();
    const Matrix<S> ds = (d.colwise() - d.rowwise().mean()) / S(double(n));
    const Matrix<S> m = p.x.transpose() * ds * p.x / sqrt(S(double(r)));
    const Eigen::JacobiSVD<Matrix<S>> svd(m);
    worst = std::max(worst, S(svd.singularValues()(0)));
  }
  return worst;
}

struct DecayFixedPoint {
  Frames<double> q, k;
  int iterations = 0;
};

// The iteration at decay λ (in double), from the case's frames; the best iterate.
inline DecayFixedPoint decay_fixed_point_iterate(const AttentionCase<double>& a, double lambda,
                                                 DecayFixedPointMutant mutant) {
  const std::size_t heads = a.wq.size();
  const double u = unit_roundoff<double>(), eta0 = 0.1 / lambda;
  const double target = u * double(a.problem.x.rows() * a.problem.x.cols());
  const double rate = mutant == DecayFixedPointMutant::kRateOffByPpm ? lambda * (1 + 1e-6) : lambda;
  double start2 = 0;
  for (std::size_t h = 0; h < heads; ++h) start2 += a.wq[h].squaredNorm() + a.wk[h].squaredNorm();
  const double start = std::sqrt(start2);
  std::vector<Matrix<double>> w, prev_w, prev_g;
  for (std::size_t h = 0; h < heads; ++h) {
    w.push_back(a.wq[h]);
    w.push_back(a.wk[h]);
  }
  std::vector<Matrix<double>> best = w;
  double best_residual = INFINITY;
  int it = 0, since_best = 0;
  for (; it < kDecayMaxSteps; ++it) {
    Frames<double> q, k;
    for (std::size_t h = 0; h < heads; ++h) {
      q.push_back(w[2 * h]);
      k.push_back(w[2 * h + 1]);
    }
    const auto grad = attention_loss_and_gradient(a.problem, q, k);
    std::vector<Matrix<double>> g;
    double g2 = 0, w2 = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      const Matrix<double>& gl = i % 2 == 0 ? grad.grad_q[i / 2] : grad.grad_k[i / 2];
      const Matrix<double> decay =
          mutant == DecayFixedPointMutant::kTowardStiefel ? Matrix<double>(w[i] - polar_svd<double>(w[i])) : w[i];
      g.push_back(gl + rate * decay);
      g2 += g.back().squaredNorm();
      w2 += w[i].squaredNorm();
    }
    if (!std::isfinite(g2)) break;
    const double residual = std::sqrt(g2) / lambda;
    if (residual < best_residual) {
      best_residual = residual;
      best = w;
      since_best = 0;
    } else if (it >= kDecayPaperSteps && ++since_best >= 100) {  // counted in the Barzilai–Borwein phase
      break;
    }
    if (residual <= target * std::max(std::sqrt(w2), start)) break;
    double eta = eta0;
    if (it >= kDecayPaperSteps) {  // Barzilai–Borwein: ‖s‖²/⟨s, y⟩ when positive
      double ss = 0, sy = 0;
      for (std::size_t i = 0; i < w.size(); ++i) {
        const Matrix<double> s = w[i] - prev_w[i];
        ss += s.squaredNorm();
        sy += (s.array() * (g[i] - prev_g[i]).array()).sum();
      }
      if (sy > 0) eta = ss / sy;
    }
    prev_w = w;
    prev_g = g;
    for (std::size_t i = 0; i < w.size(); ++i) w[i] -= eta * g[i];
  }
  DecayFixedPoint out;
  for (std::size_t h = 0; h < heads; ++h) {
    out.q.push_back(best[2 * h]);
    out.k.push_back(best[2 * h + 1]);
  }
  out.iterations = it;
  return out;
}

template <class S>
CheckResult check_decay_fixed_point(const Case& c, DecayFixedPointMutant mutant) {
  const auto a = make_attention_case<double>(c);
  const double lc = to_double(decay_critical_lambda<double>(a.problem, c.r));
  if (!(lc > 0)) {  // a loss with no curvature at 0
    CheckResult none;
    none.detail["note"] = "lambda_c = 0";
    return none;
  }
  AttentionProblem<S> problem;
  problem.x = a.problem.x.template cast<S>();
  for (std::size_t h = 0; h < a.problem.value.size(); ++h) {
    problem.value.push_back(a.problem.value[h].template cast<S>());
    problem.readout.push_back(a.problem.readout[h].template cast<S>());
  }
  double start2 = 0;
  for (int h = 0; h < c.heads; ++h) start2 += a.wq[h].squaredNorm() + a.wk[h].squaredNorm();
  const double start = std::sqrt(start2), unit = unit_roundoff<double>() * double(c.tokens * c.d);
  CheckResult r;
  r.ratio = 0;
  r.normaliser = start;
  nlohmann::json rungs = nlohmann::json::array();
  double previous_norm = INFINITY;
  for (const double rho : kDecayRungs) {
    const double lambda = rho * lc;
    const DecayFixedPoint fp = decay_fixed_point_iterate(a, lambda, mutant);
    Frames<S> q, k;
    for (int h = 0; h < c.heads; ++h) {
      q.push_back(fp.q[h].template cast<S>());
      k.push_back(fp.k[h].template cast<S>());
    }
    const auto grad = attention_loss_and_gradient(problem, q, k);
    S fixed2(0), norm2(0), iso2(0), balance2(0);
    for (int h = 0; h < c.heads; ++h) {
      fixed2 += Matrix<S>(q[h] + grad.grad_q[h] / S(lambda)).squaredNorm() +
                Matrix<S>(k[h] + grad.grad_k[h] / S(lambda)).squaredNorm();
      norm2 += q[h].squaredNorm() + k[h].squaredNorm();
      const Matrix<S> eye = Matrix<S>::Identity(c.r, c.r);
      iso2 += Matrix<S>(q[h].transpose() * q[h] - eye).squaredNorm() +
              Matrix<S>(k[h].transpose() * k[h] - eye).squaredNorm();
      balance2 += Matrix<S>(q[h].transpose() * q[h] - k[h].transpose() * k[h]).squaredNorm();
    }
    const double fixed = to_double(S(sqrt(fixed2))), norm = to_double(S(sqrt(norm2)));
    const double iso = to_double(S(sqrt(iso2)));
    double ratio = fixed / (unit * std::max(norm, start));
    if (rho > 1) ratio = std::max(ratio, norm / (unit * start));
    if (rho < 1) ratio = std::max(ratio, 30 * 1e-3 / std::max(std::min(iso, norm / start), 1e-300));
    if (norm > previous_norm) ratio = std::max(ratio, (norm - previous_norm) / (unit * start));
    if (!std::isfinite(ratio)) ratio = INFINITY;
    if (ratio >= r.ratio) {
      r.ratio = ratio;
      r.residual = fixed;
    }
    previous_norm = norm;
    rungs.push_back({{"lambda_over_lambda_c", rho},
                     {"iterations", fp.iterations},
                     {"fixed_point_residual", fixed},
                     {"fixed_point_norm", norm},
                     {"isometry_error", iso},
                     {"balance_qtq_minus_ktk", to_double(S(sqrt(balance2)))}});
  }
  r.detail = {{"lambda_c", lc}, {"start_norm", start}, {"rungs", rungs}};
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
