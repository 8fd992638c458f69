// Prop. 6, §5.3: σ_min(W + η) ≥ 1 for tangent η, and a step with ‖η‖_F ≤ τ√r rotates col(W) by
// at most arctan(τ√r); without the cap a horizontal step rotates it by arctan σ_i(η) exactly,
// approaching 90° as the step grows (§7).
#pragma once

#include "check_support.h"
#include "s53_displacement.h"

namespace stiefel::certificates {

enum class SigmaMinMutant { kNone, kNormalComponentLeft };
enum class AngleBoundMutant { kNone, kUncappedStep, kRankOneCapOnePercentOver };
enum class UncappedAngleMutant { kNone, kNormalComponentLeft };
enum class UncappedStepMutant { kNone, kVerticalIgnored };

// The largest singular value of A (d×r) from the eigenvalues of AᵀA.
template <class S>
S spectral_norm(const Matrix<S>& a) {
  if (a.size() == 0) return S(0);
  Eigen::SelfAdjointEigenSolver<Matrix<S>> eig(a.transpose() * a, Eigen::EigenvaluesOnly);
  const S top = eig.eigenvalues().maxCoeff();
  return top > S(0) ? S(sqrt(top)) : S(0);
}

// Prop. 6(i): max(0, 1 − σ_min(W + η)) by Jacobi SVD, normalised by σ_max, for the case's tangent
// step and for the same step scaled to ‖η‖ = 1e-4, where σ_min(W + η)² = 1 + λ_min(ηᵀη) is within
// 1e-8 of the bound; factor d.
template <class S>
CheckResult check_sigma_min(const Case& c, SigmaMinMutant mutant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> xi = random_tangent<S>(rng, w);
  CheckResult r;
  if (xi.norm() == S(0)) return r;  // St(1,1) = {±1}: no tangent step
  for (const S& size : {S(pow10(c.log10_scale)), S(S(1e-4) / xi.norm())}) {
    Matrix<S> eta = xi * size;
    // A normal component -1e-6 W left in the step.
    if (mutant == SigmaMinMutant::kNormalComponentLeft) eta -= S(1e-6) * w;
    Eigen::JacobiSVD<Matrix<S>> svd(Matrix<S>(w + eta));
    const auto sv = svd.singularValues();
    const S smin = sv(sv.size() - 1), smax = sv(0);
    const S deficit = S(1) - smin;
    CheckResult one = roundoff_result<S>(positive_part<S>(deficit), smax, double(c.d));
    one.detail["sigma_min"] = to_double(smin);
    keep_worst(r, one);
  }
  return r;
}

// Prop. 6(ii): max(0, sin θ_max − b/√(1 + b²)), b = τ√r, for the capped step from a random state;
// factor d·r.
template <class S>
CheckResult check_angle_bound(const Case& c, AngleBoundMutant mutant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> g = gaussian_matrix<S>(rng, c.d, c.r) * S(pow10(c.log10_scale));
  const S tau(pow10(c.x));
  RiemannianAdamHyper<S> h = b2_hyper<S>(S(pow10(c.log10_lr)), S(1e-8));
  h.cap_tau = tau;
  // A state from earlier steps: tangent m, scalar v, step count.
  RiemannianAdamState<S> st = make_riemannian_adam_state<S>({w}, h.moment);
  st.m[0] = random_tangent<S>(rng, w) * S(pow10(c.log10_scale + c.log10_c));
  st.v[0](0, 0) = S(pow10(2 * c.log10_scale)) * S(rng.uniform());
  st.step = c.steps;
  Matrix<S> eta = riemannian_adam_direction<S>({w}, {g}, st, h).eta[0];
  const S b = tau * sqrt(S(c.r));
  if (mutant == AngleBoundMutant::kUncappedStep) {  // the uncapped horizontal step, ‖·‖_F = 10τr
    eta = project_horizontal(w, g);
    eta *= S(10) * tau * S(c.r) / eta.norm();
  }
  // The near miss where the bound is tight: a rank-one horizontal step (‖η‖₂ = ‖η‖_F, so its one
  // angle is arctan ‖η‖_F exactly) capped 1 % above τ√r: the angle passes the bound by about
  // 0.01 b (1 + b²)^(−3/2) in its sine.
  if (mutant == AngleBoundMutant::kRankOneCapOnePercentOver) {
    const Matrix<S> a = project_horizontal<S>(w, gaussian_matrix<S>(rng, c.d, 1));
    Matrix<S> v = gaussian_matrix<S>(rng, c.r, 1);
    v /= v.norm();
    eta = a * v.transpose();
    eta *= S(1.01) * b / eta.norm();
  }
  // sin θ_max = ‖(I − WWᵀ)Q‖₂ with Q an orthonormal basis of col(W + η) (Householder QR).
  const Matrix<S> q = orthonormal_factor<S>(Matrix<S>(w + eta), c.r);
  const S sine = spectral_norm<S>(project_horizontal(w, q));
  const S bound = b / sqrt(S(1) + b * b);
  const S excess = sine - bound;
  CheckResult r = roundoff_result<S>(positive_part<S>(excess), S(1), double(c.d * c.r));
  using std::asin;
  using std::atan;
  r.detail = {{"angle_deg", to_double(S(asin(std::min(sine, S(1))) * S(180) / S(std::numbers::pi)))},
              {"bound_deg", to_double(S(atan(b) * S(180) / S(std::numbers::pi)))},
              {"step_norm", to_double(S(eta.norm()))}};
  return r;
}

// Prop. 6(ii) without the cap: for a horizontal step η (Wᵀη = 0) the principal angles between
// col(W) and col(polar(W + η)) are arctan σ_i(η), exactly: Wᵀ polar(W + η) = (I + ηᵀη)^(−1/2).
// So the largest rotation arctan ‖η‖₂ approaches 90° as the step grows (§7: "raising η produces
// per-step rotations approaching 90°"). With Y = polar(W + η), the cosines σ(WᵀY) and the sines
// σ((I − WWᵀ)Y) against 1/√(1 + σ(η)²) and σ(η)/√(1 + σ(η)²): ratio = the larger error / (u·d·r).
// Control: a normal component 1e-6 W left in the step (W(1 + 1e-6) + η: a near miss that moves
// the sines at small angles and the cosines at large ones by about 1e-6 of their size).
template <class S>
CheckResult check_uncapped_angle(const Case& c, UncappedAngleMutant mutant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  Matrix<S> eta = project_horizontal<S>(w, gaussian_matrix<S>(rng, c.d, c.r));
  eta *= S(pow10(c.log10_scale)) / eta.norm();
  Eigen::JacobiSVD<Matrix<S>> steps(eta);
  const Vector<S> sv = steps.singularValues();  // descending
  Matrix<S> moved = w + eta;
  if (mutant == UncappedAngleMutant::kNormalComponentLeft) moved += S(1e-6) * w;
  const Matrix<S> y = polar_svd<S>(moved);
  Eigen::JacobiSVD<Matrix<S>> cosines(Matrix<S>(w.transpose() * y));
  Eigen::JacobiSVD<Matrix<S>> sines(Matrix<S>(y - w * (w.transpose() * y)));
  const Vector<S> cs = cosines.singularValues(), sn = sines.singularValues();  // descending
  S cos2(0), sin2(0);
  for (Index i = 0; i < c.r; ++i) {
    const S sigma_up = sv(c.r - 1 - i);  // ascending σ(η): descending cosines
    const S root = sqrt(S(1) + sigma_up * sigma_up);
    cos2 += (cs(i) - S(1) / root) * (cs(i) - S(1) / root);
    const S sine = sv(i) / sqrt(S(1) + sv(i) * sv(i));
    sin2 += (sn(i) - sine) * (sn(i) - sine);
  }
  // The SVDs of W + η carry errors of u·κ, κ = ‖W + η‖₂ / σ_min(W + η) ≤ 1 + ‖η‖₂.
  CheckResult r = roundoff_result<S>(std::max(sqrt(cos2), sqrt(sin2)), S(1) + sv(0), double(c.d * c.r));
  using std::atan;
  r.detail = {{"step_norm_2", to_double(sv(0))},
              {"largest_angle_deg", to_double(S(atan(sv(0)) * S(180) / S(std::numbers::pi)))}};
  return r;
}

// The measured curve: the largest principal angle between col(W) and col(polar(W + η)) for one
// horizontal direction at d = 128, r = 16, against ‖η‖_F, and the capped bound arctan(τ√r), τ = 0.1.
template <class S>
nlohmann::json figures_uncapped_rotation() {
  Rng rng(6);
  const int d = 128, r = 16;
  const Matrix<S> w = random_stiefel<S>(rng, d, r);
  Matrix<S> dir = project_horizontal<S>(w, gaussian_matrix<S>(rng, d, r));
  dir /= dir.norm();
  nlohmann::json rows = nlohmann::json::array();
  using std::asin;
  for (const double norm : {0.01, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0, 1000.0}) {
    const Matrix<S> y = polar_svd<S>(Matrix<S>(w + S(norm) * dir));
    const S sine = spectral_norm<S>(Matrix<S>(y - w * (w.transpose() * y)));
    rows.push_back({{"step_norm_F", norm},
                    {"largest_angle_deg", to_double(S(asin(std::min(sine, S(1))) * S(180) / S(std::numbers::pi)))}});
  }
  return {{"setting",
           "d = 128, r = 16, one Gaussian horizontal direction; the capped step's bound at "
           "tau = 0.1 is arctan(0.1 sqrt(16)) = 21.8 degrees"},
          {"rows", rows}};
}

// §5.3 after eq. (12): Riemannian steepest descent on the horizontal space decreases the loss at
// rate ‖Π^h g‖ = √(1 − ρ²) ‖Π g‖ with ρ = ‖Π_G g‖ / ‖Π g‖ the gauge share, so "(12) costs about 3%
// of the per-step decrease" is 1 − √(1 − ρ²) = 2.9% at Table 8's ρ ≈ 0.24. Per case: the identity
// ‖Π^h g‖² = (1 − ρ²) ‖Π g‖², ratio = |‖Π^h g‖² − (1 − ρ²) ‖Π g‖²| / (u · d·r · ‖Π g‖²).

// §5.3 after Prop. 6: "without the cap, an adaptive step of norm eta_R sqrt(H) can rotate a frame by
// nearly 90 degrees in one step". B2 without the cap (eps = 0) over a gradient sequence; at every
// step the largest principal angle theta between col(W_t) and col(polar(W_t + eta_t)), from the
// SVD route's frame Y (sin theta = sigma_max((I - W W^T) Y), cos theta = sigma_min(W^T Y)), against
// its closed form: for eta = W A + H (A = W^T eta skew, H horizontal), col(Y) = col(W + H (I + A)^-1),
// so tan theta = sigma_max(H (I + A)^-1) <= ||H|| <= ||eta||_F <= eta_R C_t (s53's corrected
// constant; C_1 = 1). The residual is the larger of the identity's relative error (over (1 + tan)^2,
// the polar factor's conditioning) and the bound's relative excess; factor d r. The control drops
// (I + A)^-1, the vertical part's rotation within col(W) (r >= 2 makes A non-zero).
template <class S>
CheckResult check_uncapped_step(const Case& c, UncappedStepMutant mutant) {
  RiemannianAdamHyper<S> h = sequence_hyper<S>(c);
  h.cap_tau.reset();
  S worst(0), widest(0);
  int worst_t = 0;
  run_adam<S>(c, h, 1.0, [&](int t, const Frames<S>& w, const RiemannianAdamDirection<S>& dir) {
    const S bound = h.lr * moment_constant<S>(h.beta1, h.beta2, dir.state.step);
    for (int k = 0; k < c.heads; ++k) {
      const Matrix<S>& wk = w[k];
      const Matrix<S>& eta = dir.eta[k];
      const Index r = wk.cols();
      const Matrix<S> y = polar_svd<S>(Matrix<S>(wk + eta));
      const Matrix<S> across = y - wk * (wk.transpose() * y);
      const Matrix<S> within = wk.transpose() * y;
      Eigen::SelfAdjointEigenSolver<Matrix<S>> cos2(within.transpose() * within, Eigen::EigenvaluesOnly);
      const S cos_theta = sqrt(std::max(S(cos2.eigenvalues().minCoeff()), S(0)));
      const S tan_theta = spectral_norm<S>(across) / cos_theta;
      const Matrix<S> horizontal = eta - wk * (wk.transpose() * eta);
      const Matrix<S> a = wk.transpose() * eta;
      const Matrix<S> predicted_map = mutant == UncappedStepMutant::kVerticalIgnored
                                          ? horizontal
                                          : Matrix<S>(horizontal * (Matrix<S>::Identity(r, r) + a).inverse());
      const S predicted = spectral_norm<S>(predicted_map);
      const S identity_error = abs(tan_theta - predicted) / ((S(1) + predicted) * (S(1) + predicted));
      const S excess = positive_part<S>(S((tan_theta - bound) / bound));
      const S e = std::max(identity_error, excess);
      widest = std::max(widest, tan_theta);
      if (e > worst) {
        worst = e;
        worst_t = t + 1;
      }
    }
  });
  using std::atan;
  CheckResult r = roundoff_result<S>(worst, S(1), double(c.d * c.r));
  r.detail = {{"at_step", worst_t},
              {"widest_angle_degrees", to_double(S(atan(widest) * S(180) / S(3.14159265358979323846)))}};
  return r;
}

#define STIEFEL_PROP6_CHECKS(X) \
  X(sigma_min, SigmaMinMutant)  \
  X(angle_bound, AngleBoundMutant) X(uncapped_angle, UncappedAngleMutant) X(uncapped_step, UncappedStepMutant)
#define STIEFEL_PROP6_FIGURES(F) F(uncapped_rotation)
STIEFEL_PROP6_CHECKS(STIEFEL_EXTERN_CHECK)
STIEFEL_PROP6_FIGURES(STIEFEL_EXTERN_FIGURES)

}  // namespace stiefel::certificates
