// Definitions of the checks declared in checks.h, generic over the scalar type.
// Each check draws its matrices from the case's seed (in double, then converted), evaluates the
// claim (variant 0) or one of its controls (variant ≥ 1), and returns a ratio against the claim's
// tolerance. Expected values are never built with the code under test.
#pragma once

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <numbers>
#include <stiefel/properties/residual.h>
#include <stiefel/stiefel.h>

#include "checks.h"

namespace stiefel::certificates {

using properties::residual_ratio;
using std::abs;
using std::pow;
using std::sqrt;

namespace detail {

template <class S>
S frob(const Matrix<S>& a, const Matrix<S>& b) {
  return (a.array() * b.array()).sum();
}

template <class S>
CheckResult roundoff_result(const S& residual, const S& normaliser, double factor) {
  CheckResult r;
  r.ratio = residual_ratio<S>(residual, normaliser, factor);
  r.residual = to_double(residual);
  r.normaliser = to_double(normaliser);
  return r;
}

// Keeps the worse of two results.
inline void keep_worst(CheckResult& acc, const CheckResult& r) {
  if (!(acc.ratio >= r.ratio)) {
    nlohmann::json detail = acc.detail;
    acc = r;
    for (auto& [k, v] : detail.items())
      if (!acc.detail.contains(k)) acc.detail[k] = v;
  }
}

inline double pow10(double e) { return std::pow(10.0, e); }

// Magnitude multiplier of step t (0-based) of T under a profile.
inline double profile_magnitude(int profile, int t, int steps) {
  const double frac = steps > 1 ? double(t) / double(steps - 1) : 0.0;
  switch (profile) {
    case 0: return 1.0;                                        // constant
    case 1: return pow10(-6.0 * frac);                         // decaying over six decades
    case 2: return pow10(6.0 * frac);                          // growing over six decades
    case 3: return (t % 37 == 36) ? 1e4 : 1.0;                 // sudden spikes
    case 4: return (t % 2 == 0) ? 1e-3 : 1e3;                  // alternating
    case 5: return t < steps / 2 ? 1.0 : 1e-8;                 // sudden drop
    case 6: return t < steps / 2 ? 1e-4 : 1.0;                 // sudden rise
    default: return 1.0;
  }
}

// The ambient gradients of step t: √corr·D_h + √(1−corr)·N_t with D_h a Gaussian direction
// fixed for the run and N_t fresh Gaussian noise, scaled by 10^log10_scale · profile · extra.
template <class S>
Frames<S> sequence_gradients(Rng& rng, const Frames<S>& persistent, const Case& c, int t, double extra) {
  const double mag = pow10(c.log10_scale) * profile_magnitude(c.profile, t, c.steps) * extra;
  const S a(std::sqrt(c.corr) * mag), b(std::sqrt(1.0 - c.corr) * mag);
  Frames<S> g;
  for (int h = 0; h < c.heads; ++h)
    g.push_back(a * persistent[h] + b * gaussian_matrix<S>(rng, c.d, c.r));
  return g;
}

template <class S>
S eps_of(const Case& c) {
  return c.eps_zero ? S(0) : S(pow10(c.log10_eps));
}

// C_t of the corrected bound ‖m̂_t‖_F ≤ C_t √v̂_t (Cauchy–Schwarz with the two EMA weightings):
//   C_t² = (1−β1)² (1−β2ᵗ) / ((1−β1ᵗ)² (1−β2)) · Σ_{k<t} (β1²/β2)ᵏ.
template <class S>
S moment_constant(const S& beta1, const S& beta2, long t) {
  const S q = beta1 * beta1 / beta2;
  const S sum = (S(1) - pow(q, S(t))) / (S(1) - q);
  const S b1 = S(1) - pow(beta1, S(t));
  return sqrt((S(1) - beta1) * (S(1) - beta1) * (S(1) - pow(beta2, S(t))) /
              (b1 * b1 * (S(1) - beta2)) * sum);
}

// The largest singular value of A (d×r) from the eigenvalues of AᵀA.
template <class S>
S spectral_norm(const Matrix<S>& a) {
  if (a.size() == 0) return S(0);
  Eigen::SelfAdjointEigenSolver<Matrix<S>> eig(a.transpose() * a, Eigen::EigenvaluesOnly);
  const S top = eig.eigenvalues().maxCoeff();
  return top > S(0) ? S(sqrt(top)) : S(0);
}

template <class S>
Frames<S> rotate(const Matrix<S>& qt, const Frames<S>& f) {
  Frames<S> out;
  for (const auto& m : f) out.push_back(qt * m);
  return out;
}

}  // namespace detail

using namespace detail;

// --- §5.1, Prop. 1 and its GL(r) extension -----------------------------------------------------

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
S attention_error_scale(const AttentionProblem<S>& p, const Matrix<S>& wq, const Matrix<S>& wk,
                        std::size_t h) {
  const S scale = S(1) / sqrt(S(wq.cols()));
  const Matrix<S> xq = p.x * wq, xk = p.x * wk;
  const Matrix<S> prob = softmax_rows<S>(scale * xq * xk.transpose());
  const Matrix<S> abs_d = (p.readout[h] * (p.x * p.value[h]).transpose()).cwiseAbs();
  const Vector<S> row = (prob.array() * abs_d.array()).rowwise().sum();
  const Matrix<S> bound = (prob.array() * (abs_d.colwise() + row).array()).matrix();
  return scale * xq.norm() * bound.norm() * xk.norm();
}

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

// Replaces the gradients by Gaussian tensors of the same norms (the paper's control).
template <class S>
void randomise_gradients(const Case& c, AttentionCase<S>& a) {
  Rng rng(c.seed ^ 0x9e3779b97f4a7c15ULL);
  for (int h = 0; h < c.heads; ++h) {
    // Independent Gaussian entries at the scale of the terms the gradient sums (its rounding-error
    // scale divided by ‖W‖ = √r), so that the pair is not itself at the level of rounding.
    const S scale = attention_error_scale(a.problem, a.wq[h], a.wk[h], std::size_t(h)) /
                    (sqrt(S(c.r)) * sqrt(S(c.d * c.r)));
    a.grad.grad_q[h] = gaussian_matrix<S>(rng, c.d, c.r) * scale;
    a.grad.grad_k[h] = gaussian_matrix<S>(rng, c.d, c.r) * scale;
  }
}

template <class S>
CheckResult check_joint_gauge(const Case& c, int variant) {
  auto a = make_attention_case<S>(c);
  if (variant == 1) randomise_gradients(c, a);
  S res2(0), norm(0), stat_den(0);
  for (int h = 0; h < c.heads; ++h) {
    const Matrix<S>& gq = a.grad.grad_q[h];
    const Matrix<S>& gk = a.grad.grad_k[h];
    const Matrix<S> j = variant == 2 ? skew(a.wq[h].transpose() * gq)  // per-frame action only
                                     : joint_gauge_component(a.wq[h], gq, a.wk[h], gk);
    res2 += j.squaredNorm();
    norm += attention_error_scale(a.problem, a.wq[h], a.wk[h], h);
    stat_den += (a.wq[h].transpose() * gq).norm() + (a.wk[h].transpose() * gk).norm();
  }
  CheckResult r = roundoff_result<S>(sqrt(res2), norm, double(c.tokens * c.d));
  r.detail["statistic"] = to_double(S(sqrt(res2) / stat_den));
  return r;
}

template <class S>
CheckResult check_gl_gauge(const Case& c, int variant) {
  auto a = make_attention_case<S>(c);
  if (variant == 1) randomise_gradients(c, a);
  S res2(0), norm(0);
  for (int h = 0; h < c.heads; ++h) {
    const Matrix<S> lhs = a.wq[h].transpose() * a.grad.grad_q[h];
    const Matrix<S> rhs = a.grad.grad_k[h].transpose() * a.wk[h];
    res2 += (lhs - rhs).squaredNorm();
    norm += attention_error_scale(a.problem, a.wq[h], a.wk[h], h);
  }
  return roundoff_result<S>(sqrt(res2), norm, double(c.tokens * c.d));
}

// --- Prop. 1 independently of the gradient code: the loss itself, and the gradient it implies ---

template <class S>
S from_decimal(const std::string& text) {
  if constexpr (std::is_same_v<S, double>) return std::stod(text);
  else return S(text.c_str());
}

// The loss's magnitude Σ_h ‖C_h‖‖X U_h‖ (|L| is at most that), and the logits' Σ_h s‖X W_Q,h‖‖X W_K,h‖.
template <class S>
S loss_magnitude(const AttentionProblem<S>& p) {
  S m(0);
  for (std::size_t h = 0; h < p.readout.size(); ++h) m += p.readout[h].norm() * (p.x * p.value[h]).norm();
  return m;
}
template <class S>
S logit_magnitude(const AttentionProblem<S>& p, const Frames<S>& wq, const Frames<S>& wk) {
  S m(0);
  for (std::size_t h = 0; h < wq.size(); ++h) m += (p.x * wq[h]).norm() * (p.x * wk[h]).norm() / sqrt(S(wq[h].cols()));
  return m;
}

// L(W_Q R, W_K R) = L(W_Q, W_K) for R ∈ O(r) per head (Haar), and L(W_Q A, W_K A⁻ᵀ) = L for
// A = R₁ diag(10^[-1,1]) R₂ ∈ GL(r) (condition ≤ 100), evaluated with the forward pass only.
// ratio = |ΔL| / (u · n·d·r · ‖C‖‖XU‖ · (1 + κ Σ s‖XW_Q‖‖XW_K‖)), κ = 1 for R and κ(A) for A:
// the transformed products carry rounding errors of relative size u·r·κ in the logits.
// Controls (near-misses): 1, A⁻¹ in place of A⁻ᵀ with A 1e-5 from orthogonal (a non-symmetric
// perturbation); 2, R off O(r) by 1e-5 (R + 1e-5 N).
template <class S>
CheckResult check_loss_invariance(const Case& c, int variant) {
  auto a = make_attention_case<S>(c);
  Rng rng(c.seed ^ 0x3c6ef372fe94f82bULL);
  const S base = a.grad.loss;
  Frames<S> q_rot, k_rot, q_gl, k_gl;
  S kappa(1);
  for (int h = 0; h < c.heads; ++h) {
    Matrix<S> rot = random_orthogonal<S>(rng, c.r);
    if (variant == 2) rot += gaussian_matrix<S>(rng, c.r, c.r) * S(1e-5);
    q_rot.push_back(a.wq[h] * rot);
    k_rot.push_back(a.wk[h] * rot);
    Vector<S> sv(c.r);
    for (int i = 0; i < c.r; ++i) sv(i) = S(pow10(-1.0 + 2.0 * double(i) / std::max(1, c.r - 1)));
    Matrix<S> gl = random_orthogonal<S>(rng, c.r) * sv.asDiagonal() * random_orthogonal<S>(rng, c.r);
    if (variant == 1)  // within 1e-5 of O(r): its condition number is 1 to that accuracy
      gl = random_orthogonal<S>(rng, c.r) * (Matrix<S>::Identity(c.r, c.r) + gaussian_matrix<S>(rng, c.r, c.r) * S(1e-5));
    else
      kappa = std::max<S>(kappa, sv.maxCoeff() / sv.minCoeff());
    const Matrix<S> inv = gl.inverse();
    q_gl.push_back(a.wq[h] * gl);
    k_gl.push_back(a.wk[h] * (variant == 1 ? inv : Matrix<S>(inv.transpose())));
  }
  const S d_rot = abs(attention_loss_and_gradient(a.problem, q_rot, k_rot).loss - base);
  const S d_gl = abs(attention_loss_and_gradient(a.problem, q_gl, k_gl).loss - base);
  const S logits = logit_magnitude(a.problem, a.wq, a.wk);
  const S norm_rot = loss_magnitude(a.problem) * (S(1) + logits);
  const S norm_gl = loss_magnitude(a.problem) * (S(1) + kappa * logits);
  const double factor = double(c.tokens * c.d * c.r);
  CheckResult r = roundoff_result<S>(d_rot, norm_rot, factor);
  r.detail["rotation"] = to_double(S(d_rot / norm_rot));
  r.detail["gl"] = to_double(S(d_gl / norm_gl));
  keep_worst(r, roundoff_result<S>(d_gl, norm_gl, factor));
  return r;
}

// The analytic gradient against the derivative of the loss: for two directions Δ in (W_Q, W_K),
// ⟨∇L, Δ⟩ against directional_reference (Richardson-extrapolated central differences of L in 50
// digits, h = 1e-8: truncation O(h⁴) ≈ 1e-32 relative, rounding 1e-50/h = 1e-42).
// ratio = |⟨∇L, Δ⟩ − D_ref| / (max(u, 1e-30) · n·d · ‖Δ‖ · Σ_h gradient rounding scale): a
// roundoff ratio in double; in 50 digits the reference's own accuracy (1e-30) is the floor.
// Control: a gradient error of 1e-9 of that scale along Δ (which the slope check, blind below a
// relative error of about 1.5e-5, passes).
template <class S>
CheckResult check_gradient_exact(const Case& c, int variant) {
  const auto a = make_attention_case<S>(c);
  S scale(0);
  for (int h = 0; h < c.heads; ++h) scale += attention_error_scale(a.problem, a.wq[h], a.wk[h], std::size_t(h));
  const double floor = std::max(to_double(unit_roundoff<S>()), 1e-30);
  CheckResult worst;
  for (int k = 0; k < 2; ++k) {
    const auto ref = directional_reference(c, k);
    S analytic(0), dnorm2(0);
    for (int h = 0; h < c.heads; ++h) {
      const Matrix<S> dq = ref.dq[std::size_t(h)].template cast<S>(), dk = ref.dk[std::size_t(h)].template cast<S>();
      analytic += frob<S>(a.grad.grad_q[h], dq) + frob<S>(a.grad.grad_k[h], dk);
      dnorm2 += dq.squaredNorm() + dk.squaredNorm();
    }
    const S norm = scale * sqrt(dnorm2);
    if (variant == 1) analytic += S(1e-9) * norm;
    const S residual = abs(analytic - from_decimal<S>(ref.value));
    CheckResult r;
    r.ratio = to_double(S(residual / (norm * S(floor) * S(double(c.tokens * c.d)))));
    r.residual = to_double(residual);
    r.normaliser = to_double(norm);
    r.detail["relative_error"] = to_double(S(residual / norm));
    keep_worst(worst, r);
  }
  return worst;
}

// --- Table 8: per-frame gauge content -----------------------------------------------------------

// ratio = u·factor / ρ with ρ the smallest per-frame gauge content ‖W skew(WᵀG)‖ relative to the
// gradient's rounding-error scale (see attention_error_scale).
template <class S>
CheckResult check_per_frame_gauge_nonzero(const Case& c, int variant) {
  const auto a = make_attention_case<S>(c, /*tied=*/variant == 1);
  S rho_min(1), table8_min(1);
  for (int h = 0; h < c.heads; ++h) {
    std::vector<std::pair<Matrix<S>, Matrix<S>>> pairs;
    if (variant == 1) {
      // L depends on W only through WWᵀ: its gradient is ∂L/∂W_Q + ∂L/∂W_K at W_Q = W_K = W.
      pairs.push_back({a.wq[h], Matrix<S>(a.grad.grad_q[h] + a.grad.grad_k[h])});
    } else {
      pairs.push_back({a.wq[h], a.grad.grad_q[h]});
      pairs.push_back({a.wk[h], a.grad.grad_k[h]});
    }
    const S err = attention_error_scale(a.problem, a.wq[h], a.wk[h], std::size_t(h));
    for (const auto& [w, g] : pairs) {
      const S gauge = gauge_component(w, g).norm(), tangent = project_tangent(w, g).norm();
      rho_min = std::min(rho_min, err > S(0) ? S(gauge / err) : S(0));
      table8_min = std::min(table8_min, tangent > S(0) ? S(gauge / tangent) : S(0));
    }
  }
  CheckResult r;
  const S floor = unit_roundoff<S>() * S(double(c.tokens * c.d));
  r.ratio = rho_min > S(0) ? to_double(S(floor / rho_min)) : INFINITY;
  r.residual = to_double(rho_min);
  r.normaliser = 1;
  r.detail["min_gauge_content"] = to_double(rho_min);
  r.detail["min_table8_fraction"] = to_double(table8_min);
  return r;
}

// E[‖W skew(Wᵀξ)‖²/‖ξ‖²] = a/(a+b) for ξ isotropic Gaussian on T_W St, a = r(r−1)/2, b = r(d−r)
// (the fraction is Beta(a/2, b/2)); ratio = |z| of the sample mean over N draws.
template <class S>
CheckResult check_random_tangent_gauge_fraction(const Case& c, int variant) {
  Rng rng(c.seed);
  const double a = c.r * (c.r - 1) / 2.0, b = double(c.r) * (c.d - c.r);
  const double p = a / (a + b);
  const double al = a / 2, be = b / 2;
  const double sd = std::sqrt(al * be / ((al + be) * (al + be) * (al + be + 1)));
  const int n = std::clamp(int(std::ceil(std::pow(20.0 * sd / p, 2))), 64, 4096);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> w_perp = orthogonal_complement(w);
  S total(0);
  for (int i = 0; i < n; ++i) {
    const Matrix<S> omega = random_skew<S>(rng, c.r);
    Matrix<S> xi = w * omega + w_perp * gaussian_matrix<S>(rng, c.d - c.r, c.r);
    if (variant == 1) xi = project_horizontal(w, xi);
    total += gauge_component(w, xi).squaredNorm() / xi.squaredNorm();
  }
  const double mean = to_double(S(total / S(n)));
  const double z = (mean - p) / (sd / std::sqrt(double(n)));
  CheckResult r;
  r.ratio = std::abs(z);
  r.residual = mean - p;
  r.normaliser = sd / std::sqrt(double(n));
  r.detail = {{"samples", n}, {"mean_squared_fraction", mean}, {"dimension_ratio", p},
              {"norm_fraction_sqrt_ratio", std::sqrt(p)}};
  return r;
}

// --- Prop. 2 and eq. (12) -----------------------------------------------------------------------

template <class S>
CheckResult check_orthogonal_projector(const Case& c, int variant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const S scale(pow10(c.log10_scale));
  const Matrix<S> ga = gaussian_matrix<S>(rng, c.d, c.r) * scale;
  const Matrix<S> gb = gaussian_matrix<S>(rng, c.d, c.r) * scale;
  const Matrix<S> s = random_symmetric<S>(rng, c.r) * scale;
  const Matrix<S> xi = random_tangent<S>(rng, w) * scale;
  auto proj = [&](const Matrix<S>& g) -> Matrix<S> {
    if (variant == 1) return g - w * sym(w.transpose() * g) / S(2);  // half-projection mutant
    return project_tangent(w, g);
  };
  const double f = c.d;
  const Matrix<S> pa = proj(ga);
  CheckResult worst = roundoff_result<S>((proj(pa) - pa).norm(), ga.norm(), f);
  worst.detail["part"] = "idempotent";
  auto part = [&](CheckResult r, const char* name) {
    r.detail["part"] = name;
    keep_worst(worst, r);
  };
  part(roundoff_result<S>(abs(frob<S>(pa, gb) - frob<S>(ga, proj(gb))), ga.norm() * gb.norm(), f),
       "self-adjoint");
  part(roundoff_result<S>(proj(Matrix<S>(w * s)).norm(), s.norm(), f), "annihilates normal space");
  part(roundoff_result<S>(sym(w.transpose() * pa).norm(), ga.norm(), f), "lands in tangent space");
  part(roundoff_result<S>((proj(xi) - xi).norm(), xi.norm(), f), "fixes tangent vectors WΩ+W⊥K");
  return worst;
}

template <class S>
CheckResult check_steepest_ascent(const Case& c, int variant) {
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
  if (variant == 1) {  // mutant: a normal component of 1e-6 ‖Πg‖ left in the maximiser (a near miss)
    const Matrix<S> normal = w * sym(w.transpose() * g);
    if (normal.norm() > S(0)) dir += S(1e-6) * std::max(dir.norm(), S(g.norm() * S(1e-3))) * normal / normal.norm();
  }
  const S dn = dir.norm();
  const S value = dn > S(0) ? S(frob<S>(g, dir) / dn) : S(0);
  // ⟨g, Πg⟩/‖Πg‖ is computed with condition number ‖g‖/‖Πg‖: normalise by ‖g‖²/‖Πg‖.
  const S tangent = project_tangent(w, g).norm();
  const S normaliser = tangent > S(0) ? S(g.squaredNorm() / tangent) : g.norm();
  CheckResult r = roundoff_result<S>(abs(value - best), normaliser, double(c.d * c.r));
  Matrix<S> xi = random_tangent<S>(rng, w);
  if (xi.norm() > S(0)) {
    xi /= xi.norm();
    const S excess = frob<S>(g, xi) - best;
    keep_worst(r, roundoff_result<S>(excess > S(0) ? excess : S(0), g.norm(), double(c.d * c.r)));
  }
  r.detail["max_value"] = to_double(best);
  return r;
}

template <class S>
CheckResult check_gauge_split(const Case& c, int variant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> g = gaussian_matrix<S>(rng, c.d, c.r) * S(pow10(c.log10_scale));
  const Matrix<S> vertical = variant == 1 ? Matrix<S>(w * sym(w.transpose() * g))  // normal part
                                          : gauge_component(w, g);
  const S lhs = project_tangent(w, g).squaredNorm();
  const S rhs = project_horizontal(w, g).squaredNorm() + vertical.squaredNorm();
  return roundoff_result<S>(abs(lhs - rhs), g.squaredNorm(), double(c.d));
}

// --- Prop. 3 ------------------------------------------------------------------------------------

template <class S>
CheckResult check_sgd_degree_one(const Case& c, int variant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> g = gaussian_matrix<S>(rng, c.d, c.r) * S(pow10(c.log10_scale));
  const S cc(pow10(c.log10_c)), lr(pow10(c.log10_lr));
  CheckResult worst;
  for (TangentMap map : {TangentMap::kStiefel, TangentMap::kGrassmann}) {
    auto displacement = [&](const Matrix<S>& grad) -> Matrix<S> {
      if (variant == 1) {  // mutant: the Riemannian Adam's first step (ε = 0, no cap)
        RiemannianAdamHyper<S> h = b2_hyper<S>(lr, S(0));
        h.cap_tau.reset();
        h.map = map;
        return riemannian_adam_direction<S>({w}, {grad}, make_riemannian_adam_state<S>({w}, h.moment), h)
            .eta[0];
      }
      RiemannianSgdHyper<S> h;
      h.lr = lr;
      h.map = map;
      return riemannian_sgd_displacement<S>(w, grad, h);
    };
    const Matrix<S> base = displacement(g);
    if (base.norm() == S(0)) continue;  // Π^h vanishes identically when r = d
    const Matrix<S> scaled = displacement(Matrix<S>(cc * g));
    keep_worst(worst, roundoff_result<S>((scaled - cc * base).norm(), cc * lr * g.norm(), double(c.d)));
  }
  return worst;
}

// Runs a Riemannian Adam over the case's gradient sequence (gradients × extra), calling
// observe(t, frames, direction) after each direction and before the retraction.
template <class S, class Observe>
Frames<S> run_adam(const Case& c, const RiemannianAdamHyper<S>& hyper, double extra,
                   Observe&& observe) {
  Rng rng(c.seed);
  Frames<S> w = random_frames<S>(rng, {c.d, c.r}, c.heads);
  Frames<S> persistent;
  for (int h = 0; h < c.heads; ++h) persistent.push_back(gaussian_matrix<S>(rng, c.d, c.r));
  auto state = make_riemannian_adam_state<S>(w, hyper.moment);
  for (int t = 0; t < c.steps; ++t) {
    const Frames<S> g = sequence_gradients<S>(rng, persistent, c, t, extra);
    auto dir = riemannian_adam_direction<S>(w, g, state, hyper);
    observe(t, w, dir);
    auto next = finish_riemannian_adam_step<S>(w, std::move(dir), hyper);
    w = std::move(next.frames);
    state = std::move(next.state);
  }
  return w;
}

template <class S>
RiemannianAdamHyper<S> sequence_hyper(const Case& c) {
  RiemannianAdamHyper<S> h = b2_hyper<S>(S(pow10(c.log10_lr)), eps_of<S>(c));
  h.retraction = Retraction::kPolarGram;
  return h;
}

template <class S>
CheckResult adam_scale_free(const Case& c, int variant, SecondMoment moment) {
  RiemannianAdamHyper<S> h = sequence_hyper<S>(c);
  h.moment = moment;
  h.eps = S(0);
  if (variant == 1) {  // mutant: ε at the gradient scale, no cap
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
  const Frames<S> last = run_adam<S>(c, h, scale_c, [&](int t, const Frames<S>& w, const auto&) {
    compare(w, first[t]);
  });
  compare(last, first.back());
  return roundoff_result<S>(worst, sqrt(S(c.r)), double(c.d) * c.steps);
}

template <class S>
CheckResult check_adam_scale_free(const Case& c, int variant) {
  return adam_scale_free<S>(c, variant, SecondMoment::kPerFrame);
}

// The B2-mean reading of §3.2 (v_h the mean of ξ∘ξ over the d·r entries): still degree 2 in g.
template <class S>
CheckResult check_adam_mean_scale_free(const Case& c, int variant) {
  return adam_scale_free<S>(c, variant, SecondMoment::kPerFrameMean);
}

// --- §5.3 displacement bound, the Jensen step, and the corrected bound --------------------------

template <class S>
CheckResult check_jensen_moment_bound(const Case& c, int variant) {
  const RiemannianAdamHyper<S> h = sequence_hyper<S>(c);
  S worst(0);
  int worst_t = 0;
  run_adam<S>(c, h, 1.0, [&](int t, const Frames<S>&, const RiemannianAdamDirection<S>& dir) {
    const long step = dir.state.step;
    S b1 = S(1) - pow(h.beta1, S(step));
    if (variant == 1) b1 = b1 * b1;  // mutant: bias correction applied twice
    const S b2 = S(1) - pow(h.beta2, S(step));
    for (int k = 0; k < c.heads; ++k) {
      const S mhat = dir.state.m[k].norm() / b1, vhat = sqrt(dir.state.v[k](0, 0) / b2);
      if (vhat == S(0)) continue;
      const S excess = (mhat - vhat) / vhat;
      if (excess > worst) {
        worst = excess;
        worst_t = t + 1;
      }
    }
  });
  CheckResult r = roundoff_result<S>(worst, S(1), double(c.d));
  r.detail = {{"max_relative_excess", to_double(worst)}, {"at_step", worst_t}};
  return r;
}

template <class S>
CheckResult check_displacement_bound(const Case& c, int variant) {
  RiemannianAdamHyper<S> h = sequence_hyper<S>(c);
  const S cap = *h.cap_tau * sqrt(S(c.r));
  if (variant == 1) {  // mutant: the uncapped step, ε = 0, rate 10 τ√r
    h.cap_tau.reset();
    h.eps = S(0);
    h.lr = S(10) * cap;
  }
  const S bound = std::min(h.lr, cap);
  S worst(0);
  int worst_t = 0;
  run_adam<S>(c, h, 1.0, [&](int t, const Frames<S>&, const RiemannianAdamDirection<S>& dir) {
    for (int k = 0; k < c.heads; ++k) {
      const S excess = (dir.report.step_norm[k] - bound) / bound;
      if (excess > worst) {
        worst = excess;
        worst_t = t + 1;
      }
    }
  });
  CheckResult r = roundoff_result<S>(worst, S(1), double(c.d));
  r.detail = {{"max_relative_excess", to_double(worst)}, {"at_step", worst_t},
              {"bound_min_lr_cap", to_double(bound)}};
  return r;
}

template <class S>
CheckResult check_first_step_equality(const Case& c, int variant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> g = gaussian_matrix<S>(rng, c.d, c.r) * S(pow10(c.log10_scale));
  RiemannianAdamHyper<S> h = b2_hyper<S>(S(pow10(c.log10_lr)), S(0));
  const S target = std::min(h.lr, *h.cap_tau * sqrt(S(c.r)));
  if (variant == 1) {  // mutant: no cap, ε at the gradient's tangent norm
    h.cap_tau.reset();
    h.eps = project_tangent(w, g).norm();
  }
  const auto dir = riemannian_adam_direction<S>({w}, {g}, make_riemannian_adam_state<S>({w}, h.moment), h);
  CheckResult r = roundoff_result<S>(abs(dir.report.step_norm[0] - target), target, double(c.d));
  // B2-mean (v_h the mean of ξ∘ξ): v̂_1 = ‖ξ_1‖²/(d r), so ‖η_1‖ = min(η √(d r), τ√r).
  RiemannianAdamHyper<S> hm = b2_mean_hyper<S>(h.lr, h.eps);
  hm.cap_tau = h.cap_tau;
  const S target_mean = hm.cap_tau ? std::min(S(h.lr * sqrt(S(c.d * c.r))), S(*hm.cap_tau * sqrt(S(c.r))))
                                   : S(h.lr * sqrt(S(c.d * c.r)));
  const auto dm = riemannian_adam_direction<S>({w}, {g}, make_riemannian_adam_state<S>({w}, hm.moment), hm);
  keep_worst(r, roundoff_result<S>(abs(dm.report.step_norm[0] - target_mean), target_mean, double(c.d)));
  return r;
}

template <class S>
CheckResult check_displacement_corrected(const Case& c, int variant) {
  RiemannianAdamHyper<S> h = sequence_hyper<S>(c);
  const S cap = *h.cap_tau * sqrt(S(c.r));
  if (variant == 1) {  // mutant: the uncapped step, ε = 0, rate 10 τ√r
    h.cap_tau.reset();
    h.eps = S(0);
    h.lr = S(10) * cap;
  }
  S worst(0);
  run_adam<S>(c, h, 1.0, [&](int, const Frames<S>&, const RiemannianAdamDirection<S>& dir) {
    const long t = dir.state.step;
    const S ct = moment_constant<S>(h.beta1, h.beta2, t);
    const S b1 = S(1) - pow(h.beta1, S(t)), b2 = S(1) - pow(h.beta2, S(t));
    const S bound = std::min(h.lr * ct, cap);
    for (int k = 0; k < c.heads; ++k) {
      worst = std::max(worst, S((dir.report.step_norm[k] - bound) / bound));
      const S vhat = sqrt(dir.state.v[k](0, 0) / b2);
      if (vhat > S(0))
        worst = std::max(worst, S((dir.state.m[k].norm() / b1 - ct * vhat) / (ct * vhat)));
    }
  });
  return roundoff_result<S>(worst, S(1), double(c.d));
}

// The extremal sequence (one fixed tangent direction, magnitudes ∝ w_s/u_s) attains C_T exactly.
template <class S>
CheckResult check_corrected_bound_tight(const Case& c, int variant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  Matrix<S> dir = random_tangent<S>(rng, w);
  dir /= dir.norm();
  RiemannianAdamHyper<S> h = b2_hyper<S>(S(0), S(0));  // frozen frame: lr = 0
  auto state = make_riemannian_adam_state<S>({w}, h.moment);
  const long big_t = c.steps;
  for (long s = 1; s <= big_t; ++s) {
    // w_s/u_s ∝ (β1/β2)^(T−s), up to constants that cancel in the ratio.
    const S mag = variant == 1 ? S(1) : S(pow(h.beta1 / h.beta2, S(big_t - s)));
    state = riemannian_adam_direction<S>({w}, {Matrix<S>(mag * dir)}, state, h).state;
  }
  const S b1 = S(1) - pow(h.beta1, S(big_t)), b2 = S(1) - pow(h.beta2, S(big_t));
  const S ratio = state.m[0].norm() / b1 / sqrt(state.v[0](0, 0) / b2);
  const S ct = moment_constant<S>(h.beta1, h.beta2, big_t);
  CheckResult r = roundoff_result<S>(abs(ratio - ct), ct, double(c.d) * double(big_t));
  r.detail = {{"attained", to_double(ratio)}, {"C_T", to_double(ct)}};
  return r;
}

// Remark 5: with every ‖ξ_s‖ ≤ δε, the step is within relative δ of −η Π(m̂)/ε.
template <class S>
CheckResult check_gradient_proportional(const Case& c, int variant) {
  RiemannianAdamHyper<S> h = sequence_hyper<S>(c);
  h.eps = S(pow10(c.log10_eps));
  const double delta = pow10(c.x);
  // Tangent norms ≤ ‖G‖_F ≤ δε: Gaussian d×r matrices have ‖G‖_F < 10√(dr) except with
  // negligible probability, and the scale divides by that and by the profile's largest multiplier
  // (the measured running maximum δ_t is what the check uses; δ_t ≤ δ is part of the check).
  Case seq = c;
  double peak = 0;
  for (int t = 0; t < c.steps; ++t) peak = std::max(peak, profile_magnitude(c.profile, t, c.steps));
  seq.log10_scale = c.log10_eps + c.x - std::log10(10.0 * std::sqrt(double(c.d * c.r)) * peak);
  const double extra = variant == 1 ? 1e2 / delta * 10.0 * std::sqrt(double(c.d * c.r)) : 1.0;
  S worst(0), worst_dev(0), max_ratio(0);
  run_adam<S>(seq, h, extra, [&](int, const Frames<S>& w, const RiemannianAdamDirection<S>& dir) {
    const long t = dir.state.step;
    const S b1 = S(1) - pow(h.beta1, S(t));
    for (int k = 0; k < c.heads; ++k) {
      max_ratio = std::max(max_ratio, S(dir.report.tangent_norm[k] / h.eps));
    }
    const S bound = std::min(S(delta), max_ratio);
    for (int k = 0; k < c.heads; ++k) {
      const Matrix<S> lin = -h.lr * project_tangent(w[k], Matrix<S>(dir.state.m[k] / b1)) / h.eps;
      if (lin.norm() == S(0)) continue;
      const S dev = (dir.eta[k] - lin).norm() / lin.norm();
      worst_dev = std::max(worst_dev, dev);
      worst = std::max(worst, S(dev - bound));
    }
  });
  CheckResult r = roundoff_result<S>(worst, S(1), double(c.d));
  r.detail = {{"max_relative_deviation", to_double(worst_dev)}, {"delta", delta},
              {"max_tangent_norm_over_eps", to_double(max_ratio)}};
  return r;
}

// --- Prop. 6 ------------------------------------------------------------------------------------

template <class S>
CheckResult check_sigma_min(const Case& c, int variant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  Matrix<S> eta = random_tangent<S>(rng, w) * S(pow10(c.log10_scale));
  if (variant == 1) eta = -w / S(2);  // mutant: a normal step
  Eigen::JacobiSVD<Matrix<S>> svd(Matrix<S>(w + eta));
  const auto sv = svd.singularValues();
  const S smin = sv(sv.size() - 1), smax = sv(0);
  const S deficit = S(1) - smin;
  CheckResult r = roundoff_result<S>(deficit > S(0) ? deficit : S(0), smax, double(c.d));
  r.detail["sigma_min"] = to_double(smin);
  return r;
}

template <class S>
CheckResult check_angle_bound(const Case& c, int variant) {
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
  if (variant == 1) {  // mutant: the uncapped horizontal step of the same gradient, ‖·‖_F = 10τr
    eta = project_horizontal(w, g);
    eta *= S(10) * tau * S(c.r) / eta.norm();
  }
  // sin θ_max = ‖(I − WWᵀ)Q‖₂ with Q an orthonormal basis of col(W + η) (Householder QR).
  const Matrix<S> q = orthonormal_factor<S>(Matrix<S>(w + eta), c.r);
  const S sine = spectral_norm<S>(project_horizontal(w, q));
  const S bound = b / sqrt(S(1) + b * b);
  const S excess = sine - bound;
  CheckResult r = roundoff_result<S>(excess > S(0) ? excess : S(0), S(1), double(c.d * c.r));
  using std::asin;
  using std::atan;
  r.detail = {{"angle_deg", to_double(S(asin(std::min(sine, S(1))) * S(180) / S(std::numbers::pi)))},
              {"bound_deg", to_double(S(atan(b) * S(180) / S(std::numbers::pi)))},
              {"step_norm", to_double(S(eta.norm()))}};
  return r;
}

// --- Prop. 7 and Table 9 ------------------------------------------------------------------------

enum class Rule { kScalar, kPerColumn, kElementwise, kAdamW, kPerRow, kMean, kRowWeighted };

// f(W) = −Σ_h tr(W_hᵀ A W_h N): ∇f = −2 A W N (A symmetric, N diagonal). N = I is the paper's
// Table 9 problem; N = diag(1, …, r)/r (Brockett's cost) is not constant on O(d) when r = d.
template <class S>
Frames<S> trace_problem_gradient(const Matrix<S>& a, const Vector<S>& n, const Frames<S>& w) {
  Frames<S> g;
  for (const auto& f : w) g.push_back(S(-2) * a * f * n.asDiagonal());
  return g;
}

// A member of the family of Prop. 7's converse: the Riemannian Adam (B2's projection, cap and
// polar retraction, by the Gram route) whose second moment is √V_ij = √(b_i v_j), v_j the per-column moment and b a
// fixed positive row weight. √V is constant down each column iff b is constant.
template <class S>
std::vector<Frames<S>> run_row_weighted(const Matrix<S>& a, const Vector<S>& n, Frames<S> w, int steps,
                                        const S& lr, const S& eps, const Vector<S>& b) {
  const RiemannianAdamHyper<S> h = b2_hyper<S>(lr, eps);
  Frames<S> m, v;
  for (const auto& f : w) {
    m.push_back(Matrix<S>::Zero(f.rows(), f.cols()));
    v.push_back(Matrix<S>::Zero(1, f.cols()));
  }
  std::vector<Frames<S>> out;
  for (int t = 1; t <= steps; ++t) {
    const Frames<S> g = trace_problem_gradient(a, n, w);
    const S bias1 = S(1) - pow(h.beta1, S(t)), bias2 = S(1) - pow(h.beta2, S(t));
    for (std::size_t k = 0; k < w.size(); ++k) {
      const Matrix<S> xi = project_tangent(w[k], g[k]);
      m[k] = h.beta1 * project_tangent(w[k], m[k]) + (S(1) - h.beta1) * xi;
      v[k] = h.beta2 * v[k] + (S(1) - h.beta2) * xi.colwise().squaredNorm();
      Matrix<S> q = m[k] / bias1;
      for (Index j = 0; j < q.cols(); ++j)
        for (Index i = 0; i < q.rows(); ++i) q(i, j) /= sqrt(b(i) * v[k](0, j) / bias2) + eps;
      Matrix<S> eta = -lr * project_tangent(w[k], q);
      const S cap = *h.cap_tau * sqrt(S(w[k].cols()));
      if (eta.norm() > cap) eta *= cap / eta.norm();
      w[k] = retract_polar_gram<S>(w[k], eta);  // equal to the SVD route (s2-polar-routes-agree), cheaper
      m[k] = project_tangent(w[k], m[k]);
    }
    out.push_back(w);
  }
  return out;
}

// Runs `rule` for T steps on f and returns every iterate.
template <class S>
std::vector<Frames<S>> run_trace_problem(Rule rule, const Matrix<S>& a, const Vector<S>& n,
                                         Frames<S> w, int steps, const S& lr, const S& eps,
                                         const Vector<S>& row_weight = {}) {
  if (rule == Rule::kRowWeighted) return run_row_weighted<S>(a, n, std::move(w), steps, lr, eps, row_weight);
  std::vector<Frames<S>> out;
  if (rule == Rule::kAdamW) {
    AdamWHyper<S> h;
    h.lr = lr;
    h.eps = eps;
    auto st = make_adamw_state<S>(w);
    for (int t = 0; t < steps; ++t) {
      auto next = adamw_step<S>(w, trace_problem_gradient(a, n, w), st, h);
      w = std::move(next.params);
      st = std::move(next.state);
      out.push_back(w);
    }
    return out;
  }
  RiemannianAdamHyper<S> h = b2_hyper<S>(lr, eps);
  if (rule == Rule::kPerColumn) h.moment = SecondMoment::kPerColumn;
  if (rule == Rule::kPerRow) h.moment = SecondMoment::kPerRow;
  if (rule == Rule::kMean) h.moment = SecondMoment::kPerFrameMean;
  if (rule == Rule::kElementwise) h = b2m_hyper<S>(lr, eps);
  h.retraction = Retraction::kPolarGram;  // equal to the SVD route (s2-polar-routes-agree), cheaper
  auto st = make_riemannian_adam_state<S>(w, h.moment);
  for (int t = 0; t < steps; ++t) {
    auto next = riemannian_adam_step<S>(w, trace_problem_gradient(a, n, w), st, h);
    w = std::move(next.frames);
    st = std::move(next.state);
    out.push_back(w);
  }
  return out;
}

// max over steps and heads of max|W_t^(Q) − QᵀW_t|, and the largest |entry| of the iterates.
template <class S>
std::pair<S, S> equivariance_violation(Rule rule, const Case& c, std::uint64_t q_seed, bool brockett = true) {
  Rng rng(c.seed);
  const Matrix<S> a = random_symmetric<S>(rng, c.d);
  Vector<S> n = Vector<S>::Ones(c.r);
  if (brockett)
    for (int j = 0; j < c.r; ++j) n(j) = S(j + 1) / S(c.r);
  const Frames<S> w0 = random_frames<S>(rng, {c.d, c.r}, c.heads);
  Rng qrng(q_seed);
  const Matrix<S> q = random_orthogonal<S>(qrng, c.d);
  const Matrix<S> qt = q.transpose();
  const S lr(pow10(c.log10_lr)), eps = eps_of<S>(c);
  // Row weights of the converse's family: b_i = 10^(x u_i), u_i uniform in [-1, 1] (spread 10^±x).
  Vector<S> b = Vector<S>::Ones(c.d);
  if (rule == Rule::kRowWeighted) {
    Rng brng(c.seed ^ 0x7f4a7c159e3779b9ULL);
    for (int i = 0; i < c.d; ++i) b(i) = S(pow10(c.x * (2 * brng.uniform() - 1)));
  }
  const auto plain = run_trace_problem<S>(rule, a, n, w0, c.steps, lr, eps, b);
  const auto rotated = run_trace_problem<S>(rule, Matrix<S>(qt * a * q), n, rotate(qt, w0), c.steps, lr, eps, b);
  S worst(0), size(0);
  for (int t = 0; t < c.steps; ++t)
    for (int h = 0; h < c.heads; ++h) {
      worst = std::max(worst, S((rotated[t][h] - qt * plain[t][h]).cwiseAbs().maxCoeff()));
      size = std::max(size, S(plain[t][h].cwiseAbs().maxCoeff()));
    }
  return {worst, size};
}

template <class S>
CheckResult equivariance_check(Rule claimed, const Case& c, int variant) {
  const Rule rule = variant == 1 ? Rule::kElementwise : variant == 2 ? Rule::kAdamW : claimed;
  const auto [viol, size] = equivariance_violation<S>(rule, c, c.seed ^ 0x5bd1e995ULL);
  CheckResult r = roundoff_result<S>(viol, std::max(size, S(1)), double(c.d) * c.steps);
  r.detail["violation"] = to_double(viol);
  return r;
}

template <class S>
CheckResult check_equivariance_scalar(const Case& c, int variant) {
  return equivariance_check<S>(Rule::kScalar, c, variant);
}
template <class S>
CheckResult check_equivariance_per_column(const Case& c, int variant) {
  return equivariance_check<S>(Rule::kPerColumn, c, variant);
}
template <class S>
CheckResult check_equivariance_mean(const Case& c, int variant) {
  return equivariance_check<S>(Rule::kMean, c, variant);
}

// A non-equivariance result: ratio = u·d·T·max(1, ‖W‖_max) / violation (pass when far below 1).
template <class S>
CheckResult violation_result(Rule rule, const Case& c) {
  const auto [viol, size] = equivariance_violation<S>(rule, c, c.seed ^ 0x5bd1e995ULL);
  CheckResult r;
  const S floor = unit_roundoff<S>() * S(double(c.d) * c.steps) * std::max(size, S(1));
  r.ratio = viol > S(0) ? to_double(S(floor / viol)) : INFINITY;
  r.residual = to_double(viol);
  r.normaliser = to_double(std::max(size, S(1)));
  return r;
}

// Converse of Prop. 7 over a family: every row-weighted moment √V_ij = √(b_i v_j) with b not
// constant (spread 10^±x, x = c.x) violates equivariance far above roundoff.
// Control (variant 1): b ≡ 1 (the per-column moment), which is equivariant.
template <class S>
CheckResult check_equivariance_family(const Case& c, int variant) {
  Case k = c;
  if (variant == 1) k.x = 0;
  return violation_result<S>(Rule::kRowWeighted, k);
}

// Converse of Prop. 7: the elementwise moment violates equivariance far above roundoff
// (variant 1: the scalar moment, which is equivariant).
template <class S>
CheckResult check_equivariance_converse(const Case& c, int variant) {
  return violation_result<S>(variant == 1 ? Rule::kScalar : Rule::kElementwise, c);
}

// --- Prop. 8, decoupled decay (§5.3, §5.4) ------------------------------------------------------

template <class S>
CheckResult check_decay_annihilated(const Case& c, int variant) {
  Rng rng(c.seed);
  Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  if (variant == 1) w *= S(1) + S(1e-6);  // mutant: a frame 1e-6 off the manifold (a near miss)
  const S lambda(pow10(c.x));
  return roundoff_result<S>(project_tangent<S>(w, lambda * w).norm(), lambda * sqrt(S(c.r)),
                            double(c.d));
}

// Prop. 8 on a frame off the manifold (as float32 training leaves it, isometry error ≈ 1e-5):
// W = U diag(σ) Vᵀ with σ_i = 1 + δ_i, |δ_i| = 10^[-8,-3]. Then Π_W(λW) = λ W (I − WᵀW), whose norm
// is λ ‖σ(1 − σ²)‖₂ exactly (≤ λ (1 + max δ) ‖I − WᵀW‖_F: the bound's constant is 1 + max δ).
// ratio = |‖Π_W(λW)‖ − λ‖σ(1 − σ²)‖| / (u · d · λ√r).
// Control: the projector of the retracted frame polar(W) applied to the drifted frame's decay
// (Π_Q(λW) = 0 for Q = polar(W): the residual decay gradient is missed).
template <class S>
CheckResult check_decay_drifted(const Case& c, int variant) {
  Rng rng(c.seed);
  const Matrix<S> u = random_stiefel<S>(rng, c.d, c.r), v = random_orthogonal<S>(rng, c.r);
  Vector<S> sigma(c.r);
  for (int i = 0; i < c.r; ++i) sigma(i) = S(1) + S((rng.uniform() < 0.5 ? -1.0 : 1.0) * pow10(-8.0 + 5.0 * rng.uniform()));
  const Matrix<S> w = u * sigma.asDiagonal() * v.transpose();
  const S lambda(pow10(c.x));
  const Matrix<S> frame = variant == 1 ? polar_svd<S>(w) : w;
  const S measured = project_tangent<S>(frame, Matrix<S>(lambda * w)).norm();
  const S closed_form = lambda * (sigma.array() * (S(1) - sigma.array().square())).matrix().norm();
  CheckResult r = roundoff_result<S>(abs(measured - closed_form), lambda * sqrt(S(c.r)), double(c.d));
  r.detail["relative_residual_decay"] = to_double(S(closed_form / lambda));
  r.detail["isometry_error"] = to_double(isometry_error(w));
  return r;
}

template <class S>
CheckResult decay_absorbed_check(const Case& c, int variant, bool corrected) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> xi = random_tangent<S>(rng, w) * S(pow10(c.log10_scale));
  const S x(pow10(c.x));  // ηλ
  const S one_minus = S(1) - x;
  const Matrix<S> lhs = polar_svd<S>(Matrix<S>(one_minus * w + xi));
  Matrix<S> rhs = variant == 1 ? polar_svd<S>(Matrix<S>(w + xi))  // mutant: step not rescaled
                               : polar_svd<S>(Matrix<S>(w + xi / one_minus));
  if (corrected && one_minus < S(0)) rhs = -rhs;
  const double kappa = 1.0 + to_double(S(xi.norm() / abs(one_minus)));
  CheckResult r = roundoff_result<S>((lhs - rhs).norm(), sqrt(S(c.r)), double(c.d) * kappa);
  r.detail["eta_lambda"] = to_double(x);
  return r;
}

template <class S>
CheckResult check_decay_absorbed(const Case& c, int variant) {
  return decay_absorbed_check<S>(c, variant, false);
}
template <class S>
CheckResult check_decay_absorbed_corrected(const Case& c, int variant) {
  return decay_absorbed_check<S>(c, variant, true);
}

// §5.4: iterate decoupled decay W ← W − η∇L(W) − ηλW on L(W) = ½‖W − B‖² (contraction ½ per
// step) to its fixed point, with B = (1+λ) U diag(σ) Vᵀ built so that the fixed point B/(1+λ) has
// the known singular values σ: its distance from St(d,r) is ‖W* − polar(W*)‖_F = ‖σ − 1‖₂ in
// closed form. Two residuals (the worse one counts): the measured distance against ‖σ − 1‖₂, and
// the fixed point against B/(1+λ), each over (‖σ‖₂ + √r); factor d·r.
// Controls: 1, the decay not multiplied by η (W ← W − η∇L − λW; its fixed point is ηB/(η+λ));
// 2, the iteration stopped at a relative step of 1e-6 instead of roundoff (a near miss).
template <class S>
CheckResult check_decay_fixed_point(const Case& c, int variant) {
  Rng rng(c.seed);
  const Matrix<S> u = random_stiefel<S>(rng, c.d, c.r), v = random_orthogonal<S>(rng, c.r);
  Vector<S> sigma(c.r);
  for (int i = 0; i < c.r; ++i) sigma(i) = S(pow10(c.log10_scale + rng.uniform() - 0.5));
  const S lambda(pow10(c.x));
  const Matrix<S> b = (S(1) + lambda) * u * sigma.asDiagonal() * v.transpose();
  const S eta = S(1) / (S(2) * (S(1) + lambda));  // contraction factor 1/2
  const S stop = variant == 2 ? S(1e-6) : unit_roundoff<S>();
  Matrix<S> w = Matrix<S>::Zero(c.d, c.r);
  for (int k = 0; k < 400; ++k) {
    const Matrix<S> next = w - eta * (w - b) - (variant == 1 ? lambda : eta * lambda) * w;
    const bool settled = (next - w).norm() <= stop * next.norm();
    w = next;
    if (settled) break;
  }
  const S distance = (w - polar_svd<S>(w)).norm();
  const S closed_form = (sigma.array() - S(1)).matrix().norm();
  const S normaliser = sigma.norm() + sqrt(S(c.r));
  const double factor = double(c.d * c.r);
  CheckResult r = roundoff_result<S>(abs(distance - closed_form), normaliser, factor);
  keep_worst(r, roundoff_result<S>((w - b / (S(1) + lambda)).norm(), normaliser, factor));
  r.detail["distance_from_manifold"] = to_double(distance);
  r.detail["closed_form"] = to_double(closed_form);
  r.detail["isometry_error"] = to_double(isometry_error(w));
  return r;
}

// --- §2: polar retraction ----------------------------------------------------------------------

template <class S>
CheckResult check_polar_nearest(const Case& c, int variant) {
  Rng rng(c.seed);
  // M = U diag(σ) Vᵀ with σ_i = 10^(x_i), x_i ∈ [−6, 2]: near rank deficiency included.
  const Matrix<S> u = random_stiefel<S>(rng, c.d, c.r), v = random_orthogonal<S>(rng, c.r);
  Vector<S> sigma(c.r);
  for (int i = 0; i < c.r; ++i) sigma(i) = S(pow10(-6.0 + 8.0 * rng.uniform() + c.log10_scale));
  const Matrix<S> m = u * sigma.asDiagonal() * v.transpose();
  Matrix<S> cand = polar_svd<S>(m);
  if (variant == 1) cand.col(0) = -cand.col(0);  // mutant: a non-nearest point of St(d,r)
  std::vector<Matrix<S>> neighbours;
  for (int k = 0; k < 3; ++k) neighbours.push_back(random_stiefel<S>(rng, c.d, c.r));
  neighbours.push_back(-cand);
  for (int j = 0; j < c.r; ++j) {  // the other critical points: one column's sign flipped
    neighbours.push_back(cand);
    neighbours.back().col(j) = -cand.col(j);
  }
  const Matrix<S> grad = project_tangent<S>(cand, Matrix<S>(m - cand));
  if (grad.norm() > S(0))
    neighbours.push_back(orthonormal_factor<S>(Matrix<S>(cand + S(1e-3) * grad / grad.norm()), c.r));
  for (double s : {1e-2, 1e-4}) {
    const Matrix<S> z = random_tangent<S>(rng, cand);
    if (z.norm() > S(0))
      neighbours.push_back(orthonormal_factor<S>(Matrix<S>(cand + S(s) * z / z.norm()), c.r));
  }
  CheckResult worst;
  for (const auto& y : neighbours) {
    // ‖M − cand‖² − ‖M − Y‖² = 2⟨M, Y − cand⟩ − (‖Y‖² − ‖cand‖²): positive means Y is nearer.
    const S gain = S(2) * frob<S>(m, Matrix<S>(y - cand)) - (y.squaredNorm() - cand.squaredNorm());
    keep_worst(worst, roundoff_result<S>(gain > S(0) ? gain : S(0),
                                         S(m.norm() * (y - cand).norm() + S(c.r)), double(c.d)));
  }
  return worst;
}

template <class S>
CheckResult check_polar_routes(const Case& c, int variant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  Matrix<S> eta = random_tangent<S>(rng, w);
  if (eta.norm() > S(0)) eta *= S(pow10(c.log10_scale)) / eta.norm();
  if (variant == 1)  // mutant: a normal component W S with |S| ~ (1 + ‖η‖)/2
    eta += w * random_symmetric<S>(rng, c.r) * S((1 + to_double(S(eta.norm()))) / 2);
  const Matrix<S> by_svd = polar_svd<S>(Matrix<S>(w + eta));
  const double kappa = 1.0 + to_double(S(eta.norm()));
  const double f = double(c.d) * kappa * kappa;  // the Gram route squares κ(W+η) ≤ 1 + ‖η‖
  CheckResult r = roundoff_result<S>((by_svd - retract_polar_gram<S>(w, eta)).norm(), sqrt(S(c.r)), f);
  if (variant == 0) {
    keep_worst(r, roundoff_result<S>((by_svd - polar_gram<S>(Matrix<S>(w + eta))).norm(), sqrt(S(c.r)), f));
    keep_worst(r, roundoff_result<S>(isometry_error(by_svd), S(1), double(c.d)));
  }
  return r;
}

template <class S>
CheckResult check_query_norm(const Case& c, int variant) {
  Rng rng(c.seed);
  Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  // x = W a/‖a‖ + t W⊥ z/‖z‖, t ∈ [0, 1/2]: near col(W), where ‖Wᵀx‖ ≤ ‖x‖ is tight.
  const Matrix<S> w_perp = orthogonal_complement(w);
  const Matrix<S> a = gaussian_matrix<S>(rng, c.r, 1);
  Vector<S> x = w * a / a.norm();
  if (w_perp.cols() > 0) {
    const Matrix<S> z = gaussian_matrix<S>(rng, c.d - c.r, 1);
    x += S(c.x) * w_perp * z / z.norm();
  }
  x *= S(pow10(c.log10_scale));
  if (variant == 1) w *= S(3) / S(2);  // mutant: a frame scaled off the manifold
  const S excess = (w.transpose() * x).norm() - x.norm();
  return roundoff_result<S>(excess > S(0) ? excess : S(0), x.norm(), double(c.d));
}

// --- Orders: retraction vs exponential (slope 3), attention gradient Taylor remainder (slope 2) --

// A remainder e(h) = O(h^p) has log-log slope ≥ p (a vanishing leading coefficient gives a
// larger slope, still order p; a wrong derivative gives p − 1). Points whose remainder is below
// the rounding floor are dropped; the slope is a least-squares fit over all the others, so that a
// near-cancellation of two orders at one h cannot decide it.
// ratio = max(0, p − slope); with fewer than three points above the floor the remainder is
// zero to working precision and the ratio is 0.
template <class S>
CheckResult slope_result(const std::vector<double>& h, const std::vector<double>& e, double floor,
                         double expect, std::size_t keep_smallest = 0) {
  std::vector<double> hs, es;
  for (std::size_t i = 0; i < h.size(); ++i)
    if (e[i] > floor) {
      hs.push_back(h[i]);
      es.push_back(e[i]);
    }
  if (keep_smallest > 0 && hs.size() > keep_smallest) {  // h is decreasing
    hs.erase(hs.begin(), hs.end() - std::ptrdiff_t(keep_smallest));
    es.erase(es.begin(), es.end() - std::ptrdiff_t(keep_smallest));
  }
  CheckResult r;
  r.normaliser = 1;
  if (hs.size() < 3) {
    r.ratio = 0;
    r.residual = expect;
    r.detail = {{"slope", nullptr}, {"expected_slope", expect}, {"points_above_floor", hs.size()}};
    return r;
  }
  const double slope = properties::log_log_slope(hs, es);
  r.ratio = std::isfinite(slope) ? std::max(0.0, expect - slope) : INFINITY;
  r.residual = slope;
  r.detail = {{"slope", slope}, {"expected_slope", expect}, {"points_above_floor", hs.size()}};
  return r;
}

template <class S>
CheckResult check_retraction_order(const Case& c, int variant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  Matrix<S> xi = random_tangent<S>(rng, w);
  xi /= xi.norm();
  std::vector<double> ts, es;
  for (double t = 1e-2; t > 1e-2 / 257; t /= 2) {
    const Matrix<S> step = S(t) * xi;
    const Matrix<S> moved = variant == 1 ? Matrix<S>(w + step) : polar_svd<S>(Matrix<S>(w + step));
    ts.push_back(t);
    es.push_back(to_double(S((moved - stiefel_exponential<S>(w, step)).norm())));
  }
  // Both sides are unit-size frames: the floor is 10⁴·u·d.
  return slope_result<S>(ts, es, 1e4 * to_double(unit_roundoff<S>()) * c.d, 3.0);
}

template <class S>
CheckResult check_attention_taylor(const Case& c, int variant) {
  auto a = make_attention_case<S>(c);
  Rng rng(c.seed ^ 0x2545f4914f6cdd1dULL);
  Frames<S> dq, dk;
  S dnorm2(0);
  for (int h = 0; h < c.heads; ++h) {
    dq.push_back(gaussian_matrix<S>(rng, c.d, c.r));
    dk.push_back(gaussian_matrix<S>(rng, c.d, c.r));
    dnorm2 += dq.back().squaredNorm() + dk.back().squaredNorm();
  }
  for (int h = 0; h < c.heads; ++h) {  // a unit direction: h is then a distance in (W_Q, W_K)
    dq[h] /= sqrt(dnorm2);
    dk[h] /= sqrt(dnorm2);
  }
  S directional(0);
  for (int h = 0; h < c.heads; ++h)
    directional += frob<S>(a.grad.grad_q[h], dq[h]) + frob<S>(a.grad.grad_k[h], dk[h]);
  // Rounding floor of the loss: 10⁴·u·n·Σ_h ‖C_h‖‖X U_h‖ (|L| is at most Σ_h ‖C_h‖‖X U_h‖).
  S magnitude(0);
  for (int h = 0; h < c.heads; ++h)
    magnitude += a.problem.readout[h].norm() * (a.problem.x * a.problem.value[h]).norm();
  const double floor = 1e4 * to_double(unit_roundoff<S>()) * c.tokens * to_double(magnitude);
  // Mutant: a gradient error of 0.1% of the loss scale along the (unit) probe direction.
  if (variant == 1) directional += magnitude / S(1000);
  // Two-sided remainder ē(h) = (|r(h)| + |r(−h)|)/2, r(h) = L(W + hΔ) − L(W) − h⟨∇L, Δ⟩: it equals
  // max(|a|h², |b|h³) + …, so a second- and a third-order term cannot cancel at any h.
  auto remainder = [&](double step) {
    Frames<S> q2 = a.wq, k2 = a.wk;
    for (int h = 0; h < c.heads; ++h) {
      q2[h] += S(step) * dq[h];
      k2[h] += S(step) * dk[h];
    }
    return S(attention_loss_and_gradient(a.problem, q2, k2).loss - a.grad.loss - S(step) * directional);
  };
  std::vector<double> hs, es;
  for (double step = 1.0; step > 1.0 / 65537; step /= 2) {
    hs.push_back(step);
    es.push_back(to_double(S((abs(remainder(step)) + abs(remainder(-step))) / S(2))));
  }
  return slope_result<S>(hs, es, floor, 2.0, /*keep_smallest=*/4);
}

// --- §5.3 canonical metric ----------------------------------------------------------------------

template <class S>
CheckResult check_canonical_riesz(const Case& c, int variant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> g = gaussian_matrix<S>(rng, c.d, c.r) * S(pow10(c.log10_scale));
  const Matrix<S> grad = variant == 1 ? project_tangent(w, g) : canonical_gradient(w, g);
  CheckResult worst;
  for (int k = 0; k < 2; ++k) {
    const Matrix<S> xi = random_tangent<S>(rng, w);
    keep_worst(worst, roundoff_result<S>(abs(canonical_inner<S>(w, grad, xi) - frob<S>(g, xi)),
                                         g.norm() * xi.norm(), double(c.d)));
  }
  return worst;
}

template <class S>
CheckResult check_canonical_norm_split(const Case& c, int variant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> xi = random_tangent<S>(rng, w) * S(pow10(c.log10_scale));
  const S lhs = variant == 1 ? xi.squaredNorm() : canonical_norm_squared<S>(w, xi);
  const S rhs = project_horizontal(w, xi).squaredNorm() + (w.transpose() * xi).squaredNorm() / S(2);
  return roundoff_result<S>(abs(lhs - rhs), xi.squaredNorm(), double(c.d));
}

template <class S>
CheckResult check_frozen_fixes_frame(const Case& c, int variant) {
  Rng rng(c.seed);
  Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  if (variant == 1)  // mutant: a frame 1e-6 off the manifold
    w = w * (Matrix<S>::Identity(c.r, c.r) + random_symmetric<S>(rng, c.r) * S(1e-6));
  const Matrix<S> frozen = riemannian_sgd_step<S>({w}, {gaussian_matrix<S>(rng, c.d, c.r)}, frozen_hyper<S>())[0];
  CheckResult r = roundoff_result<S>((frozen - w).norm(), sqrt(S(c.r)), double(c.d));
  keep_worst(r, roundoff_result<S>((polar_svd<S>(w) - w).norm(), sqrt(S(c.r)), double(c.d)));
  return r;
}

// --- Figures ------------------------------------------------------------------------------------

template <class S>
nlohmann::json figures_table9() {
  Case c;
  c.heads = 3;
  c.d = 24;
  c.r = 6;
  c.steps = 15;
  c.seed = 9;
  c.log10_eps = -8;
  const std::vector<std::tuple<const char*, Rule, double>> rules = {
      {"scalar (B2)", Rule::kScalar, 0.05}, {"per-column", Rule::kPerColumn, 0.05},
      {"elementwise (B2m)", Rule::kElementwise, 0.03}, {"AdamW (decay 0.05)", Rule::kAdamW, 0.01},
      {"per-row (converse)", Rule::kPerRow, 0.05}};
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [name, rule, lr] : rules) {
    c.log10_lr = std::log10(lr);
    S worst(0), size(0);
    for (std::uint64_t k = 0; k < 5; ++k) {
      const auto [v, s] = equivariance_violation<S>(rule, c, 1000 + k, /*brockett=*/false);
      worst = std::max(worst, v);
      size = std::max(size, s);
    }
    rows.push_back({{"rule", name}, {"lr", lr}, {"violation_max_abs", to_double(worst)},
                    {"max_abs_entry_of_W", to_double(size)}});
  }
  return {{"table", "Table 9"},
          {"setting", "f(W) = -tr(W^T A W), A symmetric Gaussian, H = 3, d = 24, r = 6, T = 15, "
                      "eps = 1e-8, worst of 5 Haar rotations Q; max|W_T^(Q) - Q^T W_T| over all "
                      "steps and heads"},
          {"rows", rows}};
}

template <class S>
nlohmann::json figures_table8() {
  Rng rng(8);
  const int d = 128, r = 16, n = 400;
  const Matrix<S> w = random_stiefel<S>(rng, d, r);
  const Matrix<S> w_perp = orthogonal_complement(w);
  S sq(0), nf(0);
  for (int i = 0; i < n; ++i) {
    const Matrix<S> xi = w * random_skew<S>(rng, r) + w_perp * gaussian_matrix<S>(rng, d - r, r);
    const S f = gauge_component(w, xi).squaredNorm() / xi.squaredNorm();
    sq += f;
    nf += sqrt(f);
  }
  const double a = r * (r - 1) / 2.0, b = double(r) * (d - r);
  return {{"table", "Table 8"}, {"d", d}, {"r", r}, {"samples", n},
          {"mean_norm_fraction", to_double(S(nf / S(n)))},
          {"mean_squared_fraction", to_double(S(sq / S(n)))},
          {"sqrt_dimension_ratio", std::sqrt(a / (a + b))}};
}

template <class S>
nlohmann::json figures_moment_constant() {
  nlohmann::json rows = nlohmann::json::array();
  const RiemannianAdamHyper<S> h;
  for (long t : {1L, 2L, 3L, 5L, 10L, 100L, 1000L, 10000L, 100000L})
    rows.push_back({{"t", t}, {"C_t", to_double(moment_constant<S>(h.beta1, h.beta2, t))}});
  const S q = h.beta1 * h.beta1 / h.beta2;
  const S limit = sqrt((S(1) - h.beta1) * (S(1) - h.beta1) / ((S(1) - h.beta2) * (S(1) - q)));
  return {{"beta1", 0.9}, {"beta2", 0.999}, {"C_t", rows}, {"limit", to_double(limit)}};
}

// --- Prop. 3(ii) with any c > 0 and ε > 0; Prop. 6(ii) without a cap; eq. (12)'s cost ---------

template <class S>
nlohmann::json figures_table8();

// With a scalar second moment (per frame, or the mean over the d·r entries) and ε > 0, the step
// from the c-scaled gradient and state (m → c m, v → c² v) is the unscaled one times
//   ρ = c (√v̂ + ε) / (c √v̂ + ε),   |ρ − 1| = ε |c − 1| / (c √v̂ + ε) ≤ (ε / √v̂) |1 − 1/c|,
// exactly (the cap, a projection onto a ball, is 1-Lipschitz: the capped steps differ by no more).
// Checked at every step of an unscaled run, uncapped, for c = 10^±[1,20] (not powers of two).
// ratio = ‖η(c g) − ρ η(g)‖ / (u · d·r · ‖η(c g)‖). Case::x selects the moment (0 per frame, 1 mean).
// Controls: 1, ρ of ε inside the square root, c √(v̂ + ε) / √(c² v̂ + ε); 2, ρ = 1 (the ε = 0
// statement applied with ε > 0).
template <class S>
CheckResult check_eps_scale_defect(const Case& c, int variant) {
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
      if (variant == 1) rho = cc * sqrt(sv * sv + eps) / sqrt(cc * cc * sv * sv + eps);
      if (variant == 2) rho = S(1);
      const S resid = (dirc.eta[k] - rho * dir.eta[k]).norm();
      // d·r for the projection, 64 for the scalar chain (the inexactly scaled inputs, the moments'
      // updates, bias corrections, square roots and ρ itself).
      keep_worst(worst, roundoff_result<S>(resid, dirc.eta[k].norm(), double(c.d * c.r + 64)));
    }
    auto next = finish_riemannian_adam_step<S>(w, std::move(dir), h);
    w = std::move(next.frames);
    state = std::move(next.state);
  }
  worst.detail["max_relative_defect"] = max_defect;
  worst.detail["max_bound_eps_over_sqrt_v"] = max_bound;
  return worst;
}

// Prop. 6(ii) without the cap: for a horizontal step η (Wᵀη = 0) the principal angles between
// col(W) and col(polar(W + η)) are arctan σ_i(η), exactly: Wᵀ polar(W + η) = (I + ηᵀη)^(−1/2).
// So the largest rotation arctan ‖η‖₂ approaches 90° as the step grows (§7: "raising η produces
// per-step rotations approaching 90°"). With Y = polar(W + η), the cosines σ(WᵀY) and the sines
// σ((I − WWᵀ)Y) against 1/√(1 + σ(η)²) and σ(η)/√(1 + σ(η)²): ratio = the larger error / (u·d·r).
// Control: a normal component 1e-6 W left in the step (W(1 + 1e-6) + η: a near miss that moves
// the sines at small angles and the cosines at large ones by about 1e-6 of their size).
template <class S>
CheckResult check_uncapped_angle(const Case& c, int variant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  Matrix<S> eta = project_horizontal<S>(w, gaussian_matrix<S>(rng, c.d, c.r));
  eta *= S(pow10(c.log10_scale)) / eta.norm();
  Eigen::JacobiSVD<Matrix<S>> steps(eta);
  const Vector<S> sv = steps.singularValues();  // descending
  Matrix<S> moved = w + eta;
  if (variant == 1) moved += S(1e-6) * w;
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
  return {{"setting", "d = 128, r = 16, one Gaussian horizontal direction; the capped step's bound at "
                      "tau = 0.1 is arctan(0.1 sqrt(16)) = 21.8 degrees"},
          {"rows", rows}};
}

// §5.3 after eq. (12): Riemannian steepest descent on the horizontal space decreases the loss at
// rate ‖Π^h g‖ = √(1 − ρ²) ‖Π g‖ with ρ = ‖Π_G g‖ / ‖Π g‖ the gauge share, so "(12) costs about 3%
// of the per-step decrease" is 1 − √(1 − ρ²) = 2.9% at Table 8's ρ ≈ 0.24. Per case: the identity
// ‖Π^h g‖² = (1 − ρ²) ‖Π g‖², ratio = |‖Π^h g‖² − (1 − ρ²) ‖Π g‖²| / (u · d·r · ‖Π g‖²).
// Control: the decrease taken as (1 − ρ) ‖Π g‖ (the share subtracted in norm, not in square).
template <class S>
CheckResult check_horizontal_cost(const Case& c, int variant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> g = gaussian_matrix<S>(rng, c.d, c.r) * S(pow10(c.log10_scale));
  const S full = project_tangent<S>(w, g).norm();
  const S gauge = gauge_component<S>(w, g).norm();
  const S horizontal = project_horizontal<S>(w, g).norm();
  const S rho = full > S(0) ? S(gauge / full) : S(0);
  // In squares (√(1 − ρ²) is ill-conditioned as ρ → 1): ‖Π^h g‖² against (1 − ρ²)‖Π g‖².
  const S predicted = variant == 1 ? S((S(1) - rho) * full) : S(sqrt(std::max(S(0), S(S(1) - rho * rho))) * full);
  CheckResult r = roundoff_result<S>(abs(S(horizontal * horizontal - predicted * predicted)), S(full * full),
                                     double(c.d * c.r));
  r.detail = {{"gauge_share", to_double(rho)}, {"cost", to_double(S(S(1) - horizontal / full))}};
  return r;
}

// The cost 1 − √(1 − ρ²) at Table 8's ρ = 0.24 and at the mean per-frame gauge share of random
// tangent vectors at d = 128, r = 16 (figures_table8's sample).
template <class S>
nlohmann::json figures_horizontal_cost() {
  nlohmann::json rows = nlohmann::json::array();
  const double random_share = figures_table8<S>()["mean_norm_fraction"].template get<double>();
  for (const auto& [what, rho] : std::vector<std::pair<const char*, double>>{
           {"Table 8 (the paper's measured share)", 0.24},
           {"random tangent vectors, d = 128, r = 16 (mean of 400)", random_share}})
    rows.push_back({{"where", what}, {"gauge_share", rho}, {"cost_percent", 100.0 * (1.0 - std::sqrt(1.0 - rho * rho))}});
  return {{"rows", rows}};
}

// --- The implemented update: every frame rule the training core offers ----------------------------

// The frame rules of the training core's arms (training/src/trainer.cpp's make_arm), with the
// hyper-parameters they take from core/'s presets.
enum class FrameRule { kB2, kB2Mean, kB2Column, kB2Grassmann, kB2m, kB2mCan, kSgdGrassmann, kSgdStiefel, kFrozen };
inline constexpr FrameRule kFrameRules[] = {FrameRule::kB2,       FrameRule::kB2Mean,       FrameRule::kB2Column,
                                            FrameRule::kB2Grassmann, FrameRule::kB2m,      FrameRule::kB2mCan,
                                            FrameRule::kSgdGrassmann, FrameRule::kSgdStiefel, FrameRule::kFrozen};

inline const char* frame_rule_arm(FrameRule r) {
  switch (r) {
    case FrameRule::kB2: return "b2";
    case FrameRule::kB2Mean: return "b2-mean-moment";
    case FrameRule::kB2Column: return "b2-column";
    case FrameRule::kB2Grassmann: return "b2-grassmann";
    case FrameRule::kB2m: return "b2m";
    case FrameRule::kB2mCan: return "b2m-can";
    case FrameRule::kSgdGrassmann: return "b2-sgd (PA16)";
    case FrameRule::kSgdStiefel: return "b2-sgd-stiefel";
    case FrameRule::kFrozen: return "frozen";
  }
  return "?";
}

inline bool is_adam_rule(FrameRule r) {
  return r != FrameRule::kSgdGrassmann && r != FrameRule::kSgdStiefel && r != FrameRule::kFrozen;
}

template <class S>
RiemannianAdamHyper<S> adam_rule_hyper(FrameRule r, const S& lr, const S& eps) {
  switch (r) {
    case FrameRule::kB2Mean: return b2_mean_hyper<S>(lr, eps);
    case FrameRule::kB2Column: return per_column_hyper<S>(lr, eps);
    case FrameRule::kB2Grassmann: {
      auto h = b2_hyper<S>(lr, eps);
      h.map = TangentMap::kGrassmann;
      return h;
    }
    case FrameRule::kB2m: return b2m_hyper<S>(lr, eps);
    case FrameRule::kB2mCan: return b2m_can_hyper<S>(lr, eps);
    default: return b2_hyper<S>(lr, eps);
  }
}

template <class S>
RiemannianSgdHyper<S> sgd_rule_hyper(FrameRule r, const S& lr) {
  if (r == FrameRule::kFrozen) return frozen_hyper<S>();
  RiemannianSgdHyper<S> h;
  h.lr = lr;
  h.map = r == FrameRule::kSgdStiefel ? TangentMap::kStiefel : TangentMap::kGrassmann;
  return h;
}

// The learning-rate factor of step t of T: constant (schedule 0), or the training core's linear
// warm-up over the first eighth of the steps and cosine to zero (schedule 1; the paper's 5 of 40
// epochs). The final step of a cosine schedule has a rate of exactly zero.
inline double schedule_factor(int schedule, int t, int steps) {
  if (schedule == 0) return 1.0;
  const int warmup = std::max(1, steps / 8);
  if (t < warmup) return double(t + 1) / double(warmup);
  const double x = double(t - warmup) / double(std::max(1, steps - warmup));
  return 0.5 * (1.0 + std::cos(std::numbers::pi * std::min(1.0, x)));
}

// What a step must keep: no component of X normal at W (‖sym(WᵀX)‖_F; ‖WᵀX‖_F where the rule's
// tangent space is the horizontal one). The frames' isometry error is core's max|WᵀW − I|.
template <class S>
S normal_part(const Matrix<S>& w, const Matrix<S>& x, bool horizontal) {
  const Matrix<S> wx = w.transpose() * x;
  return horizontal ? S(wx.norm()) : S(sym(wx).norm());
}

struct UpdateRatios {
  double step = 0, moment = 0, isometry = 0, cap = 0;
  std::string worst_rule;
  double worst = -1;
  void keep(double& slot, double ratio, FrameRule r) {
    const double v = std::isfinite(ratio) ? ratio : std::numeric_limits<double>::max();
    slot = std::max(slot, v);
    if (v > worst) {
      worst = v;
      worst_rule = frame_rule_arm(r);
    }
  }
};

// Runs one frame rule for c.steps steps on the gradient sequence of the case (its profile, scale,
// correlation and schedule) and keeps the worst ratio of each property over the steps and heads.
// Variants are near-miss mutants of the implementation: 1, a normal component of 1e-6·‖η‖ left in
// the step; 2, the stored first moment not re-projected at the new frame; 3, the polar factor
// replaced by its second-order expansion (W + η)(I − ηᵀη/2); 4, the cap τ√r applied to the
// [H, d, r] tensor as a whole instead of to each head.
template <class S>
void run_update_rule(FrameRule rule, const Case& c, int variant, UpdateRatios& out) {
  Rng rng(c.seed);
  Frames<S> w = random_frames<S>(rng, {c.d, c.r}, c.heads);
  Frames<S> persistent;
  for (int h = 0; h < c.heads; ++h) persistent.push_back(gaussian_matrix<S>(rng, c.d, c.r));
  const S base_lr(pow10(c.log10_lr)), eps = eps_of<S>(c);
  const double factor = double(c.d * c.r);
  const bool horizontal = rule == FrameRule::kB2Grassmann || rule == FrameRule::kSgdGrassmann;
  const auto second_order_polar = [&](const Matrix<S>& frame, const Matrix<S>& eta) -> Matrix<S> {
    return (frame + eta) * (Matrix<S>::Identity(c.r, c.r) - eta.transpose() * eta / S(2));
  };
  auto adam_state = make_riemannian_adam_state<S>(w, adam_rule_hyper<S>(rule, base_lr, eps).moment);
  for (int t = 0; t < c.steps; ++t) {
    const Frames<S> g = sequence_gradients<S>(rng, persistent, c, t, 1.0);
    const S lr = base_lr * S(schedule_factor(int(c.x), t, c.steps));
    Frames<S> next;
    if (is_adam_rule(rule)) {
      const auto hyper = adam_rule_hyper<S>(rule, lr, eps);
      auto dir = riemannian_adam_direction<S>(w, g, adam_state, hyper);
      const S bias1 = S(1) - pow(hyper.beta1, S(dir.state.step));
      const S bias2 = S(1) - pow(hyper.beta2, S(dir.state.step));
      const S cap = hyper.cap_tau ? S(*hyper.cap_tau * sqrt(S(c.r))) : S(0);
      // The step before the cap, −Π(η m̂ ⊘ (√v̂ + ε)), recomputed from the stored moments; the
      // unprojected quotient's norm sets the scale of the projection's rounding error.
      Frames<S> x, px;
      S total2(0);
      for (int h = 0; h < c.heads; ++h) {
        x.push_back(lr * ::stiefel::detail::adam_quotient(hyper.moment, Matrix<S>(dir.state.m[h] / bias1),
                                                          Matrix<S>(dir.state.v[h] / bias2), hyper.eps));
        px.push_back(-reproject(hyper.map, w[h], x[h]));
        total2 += px[h].squaredNorm();
      }
      for (int h = 0; h < c.heads; ++h) {
        Matrix<S>& eta = dir.eta[h];
        if (variant == 1) eta += S(1e-6) * eta.norm() * w[h] / sqrt(S(c.r));
        if (variant == 4 && hyper.cap_tau)
          eta = sqrt(total2) > cap ? Matrix<S>(px[h] * S(cap / sqrt(total2))) : px[h];
        const S projected = px[h].norm();
        const S kept = hyper.cap_tau ? std::min(projected, cap) : projected;  // what the cap leaves
        const S scale = projected > S(0) ? S(kept / projected * x[h].norm()) : S(0);
        out.keep(out.step, residual_ratio<S>(normal_part(w[h], eta, horizontal), scale, factor), rule);
        // The step's norm is min(‖Π(η q)‖, τ√r) for each head (the unprojected norm where uncapped).
        out.keep(out.cap, residual_ratio<S>(abs(eta.norm() - kept), scale, factor), rule);
      }
      const Frames<S> m_before = dir.state.m;
      RiemannianAdamResult<S> res;
      if (variant == 2 || variant == 3) {
        res = {{}, dir.state, dir.report};
        for (int h = 0; h < c.heads; ++h) {
          res.frames.push_back(variant == 3 ? second_order_polar(w[h], dir.eta[h])
                                            : retract(hyper.retraction, w[h], dir.eta[h]));
          if (variant == 3) res.state.m[h] = reproject(hyper.map, res.frames[h], res.state.m[h]);
        }
      } else {
        res = finish_riemannian_adam_step<S>(w, std::move(dir), hyper);
      }
      for (int h = 0; h < c.heads; ++h)
        out.keep(out.moment, residual_ratio<S>(normal_part(res.frames[h], res.state.m[h], horizontal),
                                               m_before[h].norm(), factor), rule);
      next = std::move(res.frames);
      adam_state = std::move(res.state);
    } else {
      const auto hyper = sgd_rule_hyper<S>(rule, lr);
      for (int h = 0; h < c.heads; ++h) {
        Matrix<S> eta = riemannian_sgd_displacement<S>(w[h], g[h], hyper);
        if (variant == 1) eta += S(1e-6) * eta.norm() * w[h] / sqrt(S(c.r));
        out.keep(out.step, residual_ratio<S>(normal_part(w[h], eta, horizontal), S(hyper.lr * g[h].norm()), factor),
                 rule);
        next.push_back(variant == 3 ? second_order_polar(w[h], eta) : retract(hyper.retraction, w[h], eta));
      }
    }
    for (const auto& f : next) out.keep(out.isometry, residual_ratio<S>(isometry_error(f), S(1), factor), rule);
    w = std::move(next);
  }
}

// Every frame rule, on one generated gradient sequence: the step is tangent (horizontal for the
// Grassmann rules), the stored first moment is tangent at the new frame, the iterates stay on
// St(d,r), and the capped rules' per-head step is at most τ√r. ratio = residual / (u·d·r·scale).
template <class S>
CheckResult check_update_invariants(const Case& c, int variant) {
  UpdateRatios r;
  for (const FrameRule rule : kFrameRules) run_update_rule<S>(rule, c, variant, r);
  CheckResult out;
  out.ratio = std::max({r.step, r.moment, r.isometry, r.cap});
  out.residual = out.ratio;
  out.normaliser = 1;
  out.detail = {{"step_tangency", r.step}, {"moment_tangency", r.moment}, {"isometry", r.isometry},
                {"cap", r.cap}, {"worst_rule", r.worst_rule}};
  return out;
}

// The isometry error max|W_tᵀW_t − I| of one rule over a long run (one head, correlated Gaussian
// gradients of unit scale, warm-up and cosine schedule, peak rate 0.05), as its running maximum at
// t = 1, 10, 100, …; variant 3 is the second-order polar expansion of run_update_rule.
template <class S>
std::vector<S> long_run_isometry(FrameRule rule, int d, int r, int steps, int variant, std::uint64_t seed) {
  Case c;
  c.d = d;
  c.r = r;
  c.heads = 1;
  c.steps = steps;
  c.corr = 0.5;
  c.seed = seed;
  Rng rng(seed);
  Frames<S> w = random_frames<S>(rng, {d, r}, 1);
  const Frames<S> persistent{gaussian_matrix<S>(rng, d, r)};
  const S peak(0.05), eps(1e-8);
  auto state = make_riemannian_adam_state<S>(w, adam_rule_hyper<S>(rule, peak, eps).moment);
  std::vector<S> marks;
  S worst(0);
  for (int t = 0; t < steps; ++t) {
    const Frames<S> g = sequence_gradients<S>(rng, persistent, c, t, 1.0);
    const S lr = peak * S(schedule_factor(1, t, steps));
    const Matrix<S> prev = w[0];
    Matrix<S> eta;
    if (is_adam_rule(rule)) {
      const auto hyper = adam_rule_hyper<S>(rule, lr, eps);
      auto dir = riemannian_adam_direction<S>(w, g, state, hyper);
      eta = dir.eta[0];
      auto res = finish_riemannian_adam_step<S>(w, std::move(dir), hyper);
      state = std::move(res.state);
      w = std::move(res.frames);
    } else {
      const auto hyper = sgd_rule_hyper<S>(rule, lr);
      eta = riemannian_sgd_displacement<S>(w[0], g[0], hyper);
      w[0] = retract(hyper.retraction, w[0], eta);
    }
    if (variant == 3)  // the frame the second-order expansion of the polar factor produces
      w[0] = (prev + eta) * (Matrix<S>::Identity(r, r) - eta.transpose() * eta / S(2));
    worst = std::max(worst, isometry_error(w[0]));
    if (t + 1 == 1 || t + 1 == 10 || t + 1 == 100 || t + 1 == 1000 || t + 1 == 10000 || t + 1 == 100000)
      marks.push_back(worst);
  }
  return marks;
}

// The long-run claim: every rule for 10⁴ steps at d = 32, r = 8 in float64 (200 steps at d = 8,
// r = 3 in 50 digits), isometry error ≤ 30·u·d·r at every step. The control (variant 3, a mutant
// of the retraction every rule shares) runs B2 alone.
template <class S>
int long_run_steps() {
  return std::is_same_v<S, double> ? 10000 : 200;
}
template <class S>
std::pair<int, int> long_run_shape() {
  return std::is_same_v<S, double> ? std::pair{32, 8} : std::pair{8, 3};
}

template <class S>
CheckResult check_update_long_run(const Case& c, int variant) {
  const auto [d, r] = long_run_shape<S>();
  CheckResult out;
  out.ratio = -1;
  for (const FrameRule rule : kFrameRules) {
    if (variant != 0 && rule != FrameRule::kB2) continue;
    const auto marks = long_run_isometry<S>(rule, d, r, long_run_steps<S>(), variant, c.seed + 17);
    const double ratio = residual_ratio<S>(marks.back(), S(1), double(d * r));
    out.detail[frame_rule_arm(rule)] = to_double(marks.back());
    if (ratio > out.ratio) {
      out.ratio = ratio;
      out.residual = to_double(marks.back());
      out.detail["worst_rule"] = frame_rule_arm(rule);
    }
  }
  out.normaliser = 1;
  return out;
}

// The growth law of the isometry error: its running maximum at t = 1, 10, …, 10⁴ and the
// least-squares exponent p of error ∝ t^p over t ≥ 10 (0: no growth), at d = 32, r = 8: every rule
// in float32 (the training core's model precision), B2 in float64.
template <class S>
nlohmann::json figures_long_run() {
  nlohmann::json rows = nlohmann::json::array();
  const auto add = [&]<class T>(T, const char* type, FrameRule rule) {
    const auto marks = long_run_isometry<T>(rule, 32, 8, 10000, 0, 17);
    std::vector<double> t, e;
    nlohmann::json at = nlohmann::json::object();
    double step = 1;
    for (const auto& m : marks) {
      at[std::to_string(long(step))] = to_double(m);
      if (step >= 10) {
        t.push_back(step);
        e.push_back(std::max(to_double(m), 1e-300));
      }
      step *= 10;
    }
    rows.push_back({{"type", type}, {"arm", frame_rule_arm(rule)}, {"isometry_running_max", at},
                    {"growth_exponent", properties::log_log_slope(t, e)},
                    {"unit_roundoff", to_double(unit_roundoff<T>())}});
  };
  add(double{}, "float64", FrameRule::kB2);
  for (const FrameRule rule : kFrameRules) add(float{}, "float32", rule);
  return {{"setting", "d = 32, r = 8, one head, correlated Gaussian gradients (corr 0.5) of unit scale, "
                      "warm-up over the first eighth and cosine to zero, peak rate 0.05, eps 1e-8, 10^4 steps"},
          {"rows", rows}};
}

}  // namespace stiefel::certificates

#define STIEFEL_INSTANTIATE_CHECKS(S)                                                  \
  namespace stiefel::certificates {                                                    \
  STIEFEL_CHECK_LIST(STIEFEL_INSTANTIATE_ONE_##S)                                      \
  template nlohmann::json figures_table9<S>();                                         \
  template nlohmann::json figures_table8<S>();                                         \
  template nlohmann::json figures_moment_constant<S>();                                \
  template nlohmann::json figures_long_run<S>();                                       \
  template nlohmann::json figures_horizontal_cost<S>();                                \
  template nlohmann::json figures_uncapped_rotation<S>();                              \
  }
