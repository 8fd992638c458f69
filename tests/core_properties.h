// Property bodies for the core, generic over Scalar; core_<type>.cpp instantiates them with
// RC_GTEST_PROP / TEST for double, long double and mp50. Every threshold is a residual ratio
// (residual / (normaliser · u · dimension factor)) at most kRatioThreshold = 30, LAPACK style.
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <stiefel/properties/generators.h>
#include <stiefel/properties/residual.h>
#include <stiefel/stiefel.h>

namespace stiefel::test {

using std::abs;
using properties::kRatioThreshold;
using properties::residual_ratio;

template <class S>
S frob_inner(const Matrix<S>& a, const Matrix<S>& b) {
  return (a.array() * b.array()).sum();
}

// Π_W Π_W = Π_W; ⟨Π_W A, B⟩ = ⟨A, Π_W B⟩; Π_W(WS) = 0; sym(WᵀΠ_W G) = 0; Π_W ξ = ξ for ξ = WΩ + W⊥K.
template <class S>
void prop_tangent_projector(properties::ShapeCase c) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> a = gaussian_matrix<S>(rng, c.d, c.r), b = gaussian_matrix<S>(rng, c.d, c.r);
  const Matrix<S> pa = project_tangent(w, a);
  const double factor = double(c.d);  // each entry of WᵀG sums d products
  RC_ASSERT(residual_ratio<S>((project_tangent(w, pa) - pa).norm(), a.norm(), factor) <= kRatioThreshold);
  RC_ASSERT(residual_ratio<S>(abs(frob_inner<S>(pa, b) - frob_inner<S>(a, project_tangent(w, b))),
                              a.norm() * b.norm(), factor) <= kRatioThreshold);
  const Matrix<S> s = random_symmetric<S>(rng, c.r);
  RC_ASSERT(residual_ratio<S>(project_tangent<S>(w, w * s).norm(), s.norm(), factor) <= kRatioThreshold);
  RC_ASSERT(residual_ratio<S>(sym(w.transpose() * pa).norm(), a.norm(), factor) <= kRatioThreshold);
  const Matrix<S> xi = random_tangent<S>(rng, w);
  RC_ASSERT(residual_ratio<S>((project_tangent(w, xi) - xi).norm(), xi.norm(), factor) <= kRatioThreshold);
}

// Π^h_W idempotent, self-adjoint, annihilates every WS (S any r×r), fixes W⊥K; (12) holds.
template <class S>
void prop_horizontal_projector(properties::ShapeCase c) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> a = gaussian_matrix<S>(rng, c.d, c.r), b = gaussian_matrix<S>(rng, c.d, c.r);
  const Matrix<S> ha = project_horizontal(w, a);
  const double factor = double(c.d);
  RC_ASSERT(residual_ratio<S>((project_horizontal(w, ha) - ha).norm(), a.norm(), factor) <= kRatioThreshold);
  RC_ASSERT(residual_ratio<S>(abs(frob_inner<S>(ha, b) - frob_inner<S>(a, project_horizontal(w, b))),
                              a.norm() * b.norm(), factor) <= kRatioThreshold);
  const Matrix<S> any = gaussian_matrix<S>(rng, c.r, c.r);
  RC_ASSERT(residual_ratio<S>(project_horizontal<S>(w, w * any).norm(), any.norm(), factor) <= kRatioThreshold);
  const Matrix<S> w_perp = orthogonal_complement(w);
  const Matrix<S> k = w_perp * gaussian_matrix<S>(rng, c.d - c.r, c.r);
  RC_ASSERT(residual_ratio<S>((project_horizontal(w, k) - k).norm(), k.norm(), factor) <= kRatioThreshold);
  // (12): ‖Π_W g‖² = ‖Π^h_W g‖² + ‖W skew(Wᵀg)‖².
  const S lhs = project_tangent(w, a).squaredNorm();
  const S rhs = ha.squaredNorm() + gauge_component(w, a).squaredNorm();
  RC_ASSERT(residual_ratio<S>(abs(lhs - rhs), a.squaredNorm(), factor) <= kRatioThreshold);
}

// Both polar routes land on St(d,r) and agree; the tangent Gram route equals the general one.
template <class S>
void prop_polar_routes(properties::ShapeCase c, double log10_scale) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> eta = random_tangent<S>(rng, w) * S(std::pow(10.0, log10_scale));
  const Matrix<S> by_svd = polar_svd<S>(w + eta);
  const Matrix<S> by_gram = polar_gram<S>(w + eta);
  const Matrix<S> by_tangent_gram = retract_polar_gram<S>(w, eta);
  // κ(W+η) = σ_max/σ_min ≤ 1 + ‖η‖ (σ_min ≥ 1, Prop. 6(i)); the Gram route forms (W+η)ᵀ(W+η),
  // which squares it, so its stated factor is d·κ².
  const double kappa = 1.0 + to_double(S(eta.norm()));
  const double factor = double(c.d) * kappa * kappa;
  RC_ASSERT(residual_ratio<S>(isometry_error(by_svd), S(1), double(c.d)) <= kRatioThreshold);
  RC_ASSERT(residual_ratio<S>(isometry_error(by_gram), S(1), factor) <= kRatioThreshold);
  RC_ASSERT(residual_ratio<S>((by_svd - by_gram).norm(), S(1), factor) <= kRatioThreshold);
  RC_ASSERT(residual_ratio<S>((by_gram - by_tangent_gram).norm(), S(1), factor) <= kRatioThreshold);
}

// The Riemannian exponential stays on St(d,r) and the polar retraction matches it to second order:
// e(t) = ‖polar(W + tξ) − Exp_W(tξ)‖ has log-log slope 3.
template <class S>
void prop_retraction_second_order(properties::ShapeCase c) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  Matrix<S> xi = random_tangent<S>(rng, w);
  if (xi.norm() == S(0)) return;  // St(1,1) = {±1} has a zero tangent space
  xi /= xi.norm();
  RC_ASSERT(residual_ratio<S>(isometry_error(stiefel_exponential<S>(w, xi)), S(1), 8.0 * c.d) <= kRatioThreshold);
  std::vector<double> ts, es;
  for (double t = 0.2; t > 0.2 / 64; t /= 2) {
    ts.push_back(t);
    es.push_back(to_double(S((polar_svd<S>(w + S(t) * xi) - stiefel_exponential<S>(w, S(t) * xi)).norm())));
  }
  const double slope = properties::log_log_slope(ts, es);
  RC_ASSERT(slope >= 2.8);
  RC_ASSERT(slope <= 3.3);
}

// Taylor remainder of the analytic attention gradient: |L(W+hΔ) − L(W) − h⟨∇L, Δ⟩| = O(h²).
template <class S>
void prop_attention_gradient_taylor(properties::ShapeCase c) {
  Rng rng(c.seed);
  const Index heads = 2, n = 5;
  const auto problem = random_attention_problem<S>(rng, n, c.d, heads, 3, 1.0);
  Frames<S> wq = random_frames<S>(rng, {c.d, c.r}, heads), wk = random_frames<S>(rng, {c.d, c.r}, heads);
  Frames<S> dq, dk;
  for (Index h = 0; h < heads; ++h) {
    dq.push_back(gaussian_matrix<S>(rng, c.d, c.r));
    dk.push_back(gaussian_matrix<S>(rng, c.d, c.r));
  }
  const auto base = attention_loss_and_gradient(problem, wq, wk);
  S directional(0);
  for (Index h = 0; h < heads; ++h)
    directional += frob_inner<S>(base.grad_q[h], dq[h]) + frob_inner<S>(base.grad_k[h], dk[h]);
  // h from u^(1/4): the remainder (≈ h²) stays far above the roundoff floor (≈ u) at every h.
  std::vector<double> hs, es;
  const double h0 = std::pow(to_double(unit_roundoff<S>()), 0.25);
  for (double step = h0; step > h0 / 65; step /= 2) {
    Frames<S> q2 = wq, k2 = wk;
    for (Index h = 0; h < heads; ++h) {
      q2[h] += S(step) * dq[h];
      k2[h] += S(step) * dk[h];
    }
    const S loss = attention_loss_and_gradient(problem, q2, k2).loss;
    hs.push_back(step);
    es.push_back(to_double(S(abs(loss - base.loss - S(step) * directional))));
  }
  const double slope = properties::log_log_slope(hs, es);
  RC_ASSERT(slope >= 1.8);
  RC_ASSERT(slope <= 2.2);
}

// First steps of every rule against values computed by hand from the formulas of §3.2.
template <class S>
void first_steps_match_hand_computation() {
  using std::sqrt;
  Rng rng(20261129);
  const Index d = 7, r = 3;
  const Matrix<S> w = random_stiefel<S>(rng, d, r);
  const Matrix<S> g = gaussian_matrix<S>(rng, d, r);
  const Matrix<S> eye = Matrix<S>::Identity(r, r);
  // Hand: ξ = G − W(WᵀG + GᵀW)/2; polar by the Gram route (W+η)((W+η)ᵀ(W+η))^(−1/2).
  const Matrix<S> xi = g - w * (w.transpose() * g + g.transpose() * w) / S(2);
  auto hand_polar = [](const Matrix<S>& m) { return polar_gram<S>(m); };
  const double tol = kRatioThreshold;
  const double factor = 10.0 * d;

  {  // B2, cap active: m̂ = ξ, v̂ = ‖ξ‖², η = −lr ξ/(‖ξ‖+ε) scaled to τ√r.
    const RiemannianAdamHyper<S> defaults;
    const S lr(1), eps = defaults.eps, cap = *defaults.cap_tau * sqrt(S(r));
    const Matrix<S> eta = -lr * xi / (xi.norm() + eps);
    const Matrix<S> capped = eta * (cap / eta.norm());
    const Matrix<S> w1 = hand_polar(w + capped);
    const auto st = make_riemannian_adam_state<S>({w}, SecondMoment::kPerFrame);
    const auto out = riemannian_adam_step<S>({w}, {g}, st, b2_hyper<S>(lr, eps));
    EXPECT_LE(residual_ratio<S>((out.frames[0] - w1).norm(), S(1), factor), tol);
    EXPECT_TRUE(out.report.capped[0]);
    const Matrix<S> m1 = (S(1) - defaults.beta1) * xi;
    const Matrix<S> m1_moved = m1 - w1 * (w1.transpose() * m1 + m1.transpose() * w1) / S(2);
    EXPECT_LE(residual_ratio<S>((out.state.m[0] - m1_moved).norm(), m1.norm(), factor), tol);
    EXPECT_LE(residual_ratio<S>(abs(out.state.v[0](0, 0) - (S(1) - defaults.beta2) * xi.squaredNorm()),
                                xi.squaredNorm(), factor), tol);
    EXPECT_EQ(out.state.step, 1);
  }
  {  // B2, cap inactive (lr below τ√r): η = −lr ξ/(‖ξ‖+ε).
    const S lr(0.05), eps(0);
    const Matrix<S> w1 = hand_polar(w - lr * xi / xi.norm());
    const auto st = make_riemannian_adam_state<S>({w}, SecondMoment::kPerFrame);
    const auto out = riemannian_adam_step<S>({w}, {g}, st, b2_hyper<S>(lr, eps));
    EXPECT_LE(residual_ratio<S>((out.frames[0] - w1).norm(), S(1), factor), tol);
    EXPECT_FALSE(out.report.capped[0]);
    EXPECT_LE(residual_ratio<S>(abs(out.report.step_norm[0] - lr), lr, factor), tol);
  }
  {  // Per column: q_j = ξ_j/(‖ξ_j‖+ε), re-projected, capped.
    const S lr(0.05), eps(1e-8), cap = sqrt(S(r)) / S(10);
    Matrix<S> q = xi;
    for (Index j = 0; j < r; ++j) q.col(j) /= xi.col(j).norm() + eps;
    Matrix<S> eta = -lr * (q - w * (w.transpose() * q + q.transpose() * w) / S(2));
    if (eta.norm() > cap) eta *= cap / eta.norm();
    const auto st = make_riemannian_adam_state<S>({w}, SecondMoment::kPerColumn);
    const auto out = riemannian_adam_step<S>({w}, {g}, st, per_column_hyper<S>(lr, eps));
    EXPECT_LE(residual_ratio<S>((out.frames[0] - hand_polar(w + eta)).norm(), S(1), factor), tol);
  }
  {  // B2m: elementwise q = ξ/(|ξ|+ε), re-projected, no cap, even when the step is large.
    const S lr(0.3), eps(1e-8);
    const Matrix<S> q = (xi.array() / (xi.array().abs() + eps)).matrix();
    const Matrix<S> eta = -lr * (q - w * (w.transpose() * q + q.transpose() * w) / S(2));
    const auto st = make_riemannian_adam_state<S>({w}, SecondMoment::kElementwise);
    const auto out = riemannian_adam_step<S>({w}, {g}, st, b2m_hyper<S>(lr, eps));
    EXPECT_LE(residual_ratio<S>((out.frames[0] - hand_polar(w + eta)).norm(), S(1), factor), tol);
    EXPECT_FALSE(out.report.capped[0]);
  }
  {  // B2m-can: ξ = G − W GᵀW, then as B2m.
    const S lr(0.03), eps(1e-8);
    const Matrix<S> xc = g - w * g.transpose() * w;
    const Matrix<S> q = (xc.array() / (xc.array().abs() + eps)).matrix();
    const Matrix<S> eta = -lr * (q - w * (w.transpose() * q + q.transpose() * w) / S(2));
    const auto st = make_riemannian_adam_state<S>({w}, SecondMoment::kElementwise);
    const auto out = riemannian_adam_step<S>({w}, {g}, st, b2m_can_hyper<S>(lr, eps));
    EXPECT_LE(residual_ratio<S>((out.frames[0] - hand_polar(w + eta)).norm(), S(1), factor), tol);
  }
  {  // B2-SGD / PA16: W ← polar(W − η (I − WWᵀ) G).
    const S lr = S(2) / S(100);
    const Matrix<S> w1 = hand_polar(w - lr * (g - w * (w.transpose() * g)));
    const auto out = riemannian_sgd_step<S>({w}, {g}, RiemannianSgdHyper<S>{});
    EXPECT_LE(residual_ratio<S>((out[0] - w1).norm(), S(1), factor), tol);
    RiemannianSgdHyper<S> stiefel_sgd;
    stiefel_sgd.map = TangentMap::kStiefel;
    const auto out2 = riemannian_sgd_step<S>({w}, {g}, stiefel_sgd);
    EXPECT_LE(residual_ratio<S>((out2[0] - hand_polar(w - lr * xi)).norm(), S(1), factor), tol);
  }
  {  // Frozen: W ← polar(W) = W.
    const auto out = riemannian_sgd_step<S>({w}, {g}, frozen_hyper<S>());
    EXPECT_LE(residual_ratio<S>((out[0] - w).norm(), S(1), factor), tol);
  }
  {  // AdamW: W ← (1 − lr λ)W − lr G/(|G| + ε) on the first step.
    AdamWHyper<S> h;
    h.lr = S(0.01);
    h.weight_decay = S(0.05);
    const Matrix<S> w1 = (S(1) - h.lr * h.weight_decay) * w -
                         h.lr * (g.array() / (g.array().abs() + h.eps)).matrix();
    const auto out = adamw_step<S>({w}, {g}, make_adamw_state<S>({w}), h);
    EXPECT_LE(residual_ratio<S>((out.params[0] - w1).norm(), S(1), factor), tol);
  }
  {  // Soft penalty: value by hand; gradient against a central difference of the value.
    const S lambda(0.1);
    const Matrix<S> m = w + S(0.1) * g;
    const Matrix<S> e = m.transpose() * m - eye;
    EXPECT_LE(residual_ratio<S>(abs(soft_orthogonality_penalty<S>(m, lambda) - lambda * e.squaredNorm()),
                                lambda * e.squaredNorm(), factor), tol);
    const Matrix<S> grad = soft_orthogonality_gradient<S>(m, lambda);
    const Matrix<S> dir = gaussian_matrix<S>(rng, d, r);
    const S h = sqrt(sqrt(Eigen::NumTraits<S>::epsilon()));  // central difference: error O(h²)
    const S fd = (soft_orthogonality_penalty<S>(m + h * dir, lambda) -
                  soft_orthogonality_penalty<S>(m - h * dir, lambda)) / (S(2) * h);
    const S an = frob_inner<S>(grad, dir);
    EXPECT_LT(to_double(S(abs(fd - an) / abs(an))), to_double(S(100) * h * h));
  }
}

template <class S>
void block_orthogonal_layout() {
  Rng rng(7);
  const auto heads = random_block_orthogonal_frames<S>(rng, {12, 3}, 4);
  const Matrix<S> block = stack_heads(heads);
  EXPECT_LE(residual_ratio<S>(isometry_error(block), S(1), 12.0), kRatioThreshold);
  EXPECT_LE(residual_ratio<S>((heads[0].transpose() * heads[3]).norm(), S(1), 12.0), kRatioThreshold);
  EXPECT_THROW(random_block_orthogonal_frames<S>(rng, {12, 4}, 4), std::invalid_argument);
  EXPECT_THROW(check_frame_shape({3, 4}), std::invalid_argument);
  EXPECT_EQ(split_heads<S>(block, 4).size(), 4u);
}

}  // namespace stiefel::test

// Instantiates every property for one scalar type; max_d keeps the slow types' cases small.
#define STIEFEL_CORE_TESTS(Suite, S, max_d)                                                      \
  RC_GTEST_PROP(Suite, TangentProjectorIsTheOrthogonalProjector, ()) {                         \
    stiefel::test::prop_tangent_projector<S>(*stiefel::properties::gen_shape(max_d));          \
  }                                                                                            \
  RC_GTEST_PROP(Suite, HorizontalProjectorAndSplitIdentity, ()) {                              \
    stiefel::test::prop_horizontal_projector<S>(*stiefel::properties::gen_shape(max_d));       \
  }                                                                                            \
  RC_GTEST_PROP(Suite, PolarRoutesLandOnTheManifoldAndAgree, ()) {                             \
    stiefel::test::prop_polar_routes<S>(*stiefel::properties::gen_shape(max_d),                \
                                        *rc::gen::inRange(-8, 5) * 1.0);                       \
  }                                                                                            \
  RC_GTEST_PROP(Suite, PolarRetractionIsSecondOrder, ()) {                                     \
    stiefel::test::prop_retraction_second_order<S>(*stiefel::properties::gen_shape(max_d));   \
  }                                                                                            \
  RC_GTEST_PROP(Suite, AttentionGradientTaylorRemainderIsSecondOrder, ()) {                    \
    stiefel::test::prop_attention_gradient_taylor<S>(*stiefel::properties::gen_shape(max_d));  \
  }                                                                                            \
  TEST(Suite, FirstStepOfEveryRuleMatchesHandComputation) {                                    \
    stiefel::test::first_steps_match_hand_computation<S>();                                    \
  }                                                                                            \
  TEST(Suite, BlockOrthogonalLayout) { stiefel::test::block_orthogonal_layout<S>(); }
