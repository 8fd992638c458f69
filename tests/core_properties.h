// Property bodies for the core, generic over Scalar; core_<type>.cpp instantiates them with
// RC_GTEST_PROP / TEST for double, long double and mp50. Every threshold is a residual ratio
// (residual / (normaliser · u · dimension factor)) at most kRatioThreshold = 30, LAPACK style;
// the identities shared with the certificate come from properties/stiefel_identities.h.
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <stiefel/properties/generators.h>
#include <stiefel/properties/identity.h>
#include <stiefel/properties/residual.h>
#include <stiefel/properties/stiefel_identities.h>
#include <stiefel/stiefel.h>

namespace stiefel::test {

using properties::frobenius_inner;
using properties::matrix_identity;
using properties::scalar_identity;
using std::abs;

// RC_ASSERT of an identity: a failure reports its ratio, expected, actual and difference.
template <class S>
void rc_assert_holds(const properties::Identity<S>& id) {
  if (!id.holds()) RC_FAIL(properties::describe(id));
}

// The same for GoogleTest: EXPECT_TRUE(holds(identity)).
template <class S>
::testing::AssertionResult holds(const properties::Identity<S>& id) {
  if (id.holds()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << id;
}

// Π_W Π_W = Π_W; ⟨Π_W A, B⟩ = ⟨A, Π_W B⟩; Π_W(WS) = 0; sym(WᵀΠ_W G) = 0; Π_W ξ = ξ for ξ = WΩ + W⊥K.
template <class S>
void prop_tangent_projector(properties::ShapeCase c) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> a = gaussian_matrix<S>(rng, c.d, c.r), b = gaussian_matrix<S>(rng, c.d, c.r);
  const auto proj = [&](const Matrix<S>& x) { return project_tangent(w, x); };
  const Matrix<S> pa = proj(a);
  const double factor = double(c.d);  // each entry of WᵀG sums d products
  rc_assert_holds(properties::projector_idempotent<S>(proj, pa, a.norm(), factor));
  rc_assert_holds(properties::projector_self_adjoint<S>(proj, a, b, factor));
  const Matrix<S> s = random_symmetric<S>(rng, c.r);
  rc_assert_holds(properties::projector_annihilates<S>(proj, Matrix<S>(w * s), s.norm(), factor));
  rc_assert_holds(properties::tangent_at<S>(w, pa, a.norm(), factor));
  const Matrix<S> xi = random_tangent<S>(rng, w);
  rc_assert_holds(properties::projector_fixes<S>(proj, xi, factor));
}

// Π^h_W idempotent, self-adjoint, annihilates every WS (S any r×r), fixes W⊥K; (12) holds.
template <class S>
void prop_horizontal_projector(properties::ShapeCase c) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> a = gaussian_matrix<S>(rng, c.d, c.r), b = gaussian_matrix<S>(rng, c.d, c.r);
  const auto proj = [&](const Matrix<S>& x) { return project_horizontal(w, x); };
  const double factor = double(c.d);
  rc_assert_holds(properties::projector_idempotent<S>(proj, proj(a), a.norm(), factor));
  rc_assert_holds(properties::projector_self_adjoint<S>(proj, a, b, factor));
  const Matrix<S> any = gaussian_matrix<S>(rng, c.r, c.r);
  rc_assert_holds(properties::projector_annihilates<S>(proj, Matrix<S>(w * any), any.norm(), factor));
  const Matrix<S> w_perp = orthogonal_complement(w);
  const Matrix<S> k = w_perp * gaussian_matrix<S>(rng, c.d - c.r, c.r);
  rc_assert_holds(properties::projector_fixes<S>(proj, k, factor));
  rc_assert_holds(properties::gauge_split<S>(w, a, gauge_component(w, a), factor));
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
  rc_assert_holds(properties::on_stiefel<S>(by_svd, double(c.d)));
  rc_assert_holds(properties::on_stiefel<S>(by_gram, factor));
  rc_assert_holds(matrix_identity<S>("polar by SVD = Gram route", by_svd, by_gram, S(1), factor));
  rc_assert_holds(matrix_identity<S>("Gram route = tangent Gram route", by_gram, by_tangent_gram, S(1), factor));
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
  rc_assert_holds(properties::on_stiefel<S>(stiefel_exponential<S>(w, xi), 8.0 * c.d));
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
    directional += frobenius_inner<S>(base.grad_q[h], dq[h]) + frobenius_inner<S>(base.grad_k[h], dk[h]);
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
  // Only a lower bound: a remainder a h² + b h³ whose a is small against b h has a fitted slope
  // above 2 and is still second order; a wrong gradient leaves a first-order term (slope 1).
  const double slope = properties::log_log_slope(hs, es);
  RC_ASSERT(slope >= 1.8);
}

// The fixed inputs of the first-step checks: W, G, ξ = Π_W G by hand, and the stream they came from.
template <class S>
struct HandCase {
  Rng rng{20261129};
  Index d = 7, r = 3;
  Matrix<S> w, g, xi;
  double factor = 0;  // 10·d
};

template <class S>
HandCase<S> make_hand_case() {
  HandCase<S> h;
  h.w = random_stiefel<S>(h.rng, h.d, h.r);
  h.g = gaussian_matrix<S>(h.rng, h.d, h.r);
  // Hand: ξ = G − W(WᵀG + GᵀW)/2; polar by the Gram route (W+η)((W+η)ᵀ(W+η))^(−1/2).
  h.xi = h.g - h.w * (h.w.transpose() * h.g + h.g.transpose() * h.w) / S(2);
  h.factor = 10.0 * double(h.d);
  return h;
}

template <class S>
Matrix<S> hand_polar(const Matrix<S>& m) {
  return polar_gram<S>(m);
}

// B2's first step with the cap active and inactive, its moments and its step norm.
template <class S>
void b2_first_steps_match_hand(const HandCase<S>& hc) {
  using std::sqrt;
  const Matrix<S>&w = hc.w, &g = hc.g, &xi = hc.xi;
  const Index r = hc.r;
  const double factor = hc.factor;
  {  // B2, cap active: m̂ = ξ, v̂ = ‖ξ‖², η = −lr ξ/(‖ξ‖+ε) scaled to τ√r.
    const RiemannianAdamHyper<S> defaults;
    const S lr(1), eps = defaults.eps, cap = *defaults.cap_tau * sqrt(S(r));
    const Matrix<S> eta = -lr * xi / (xi.norm() + eps);
    const Matrix<S> capped = eta * (cap / eta.norm());
    const Matrix<S> w1 = hand_polar<S>(w + capped);
    const auto st = make_riemannian_adam_state<S>({w}, SecondMoment::kPerFrame);
    const auto out = riemannian_adam_step<S>({w}, {g}, st, b2_hyper<S>(lr, eps));
    EXPECT_TRUE(holds(matrix_identity<S>("B2 step, cap active", w1, out.frames[0], S(1), factor)));
    EXPECT_TRUE(out.report.capped[0]);
    const Matrix<S> m1 = (S(1) - defaults.beta1) * xi;
    const Matrix<S> m1_moved = m1 - w1 * (w1.transpose() * m1 + m1.transpose() * w1) / S(2);
    EXPECT_TRUE(holds(matrix_identity<S>("B2 first moment, moved", m1_moved, out.state.m[0], m1.norm(), factor)));
    EXPECT_TRUE(holds(scalar_identity<S>("B2 second moment", S((S(1) - defaults.beta2) * xi.squaredNorm()),
                                         out.state.v[0](0, 0), xi.squaredNorm(), factor)));
    EXPECT_EQ(out.state.step, 1);
  }
  {  // B2, cap inactive (lr below τ√r): η = −lr ξ/(‖ξ‖+ε).
    const S lr(0.05), eps(0);
    const Matrix<S> w1 = hand_polar<S>(w - lr * xi / xi.norm());
    const auto st = make_riemannian_adam_state<S>({w}, SecondMoment::kPerFrame);
    const auto out = riemannian_adam_step<S>({w}, {g}, st, b2_hyper<S>(lr, eps));
    EXPECT_TRUE(holds(matrix_identity<S>("B2 step, cap inactive", w1, out.frames[0], S(1), factor)));
    EXPECT_FALSE(out.report.capped[0]);
    EXPECT_TRUE(holds(scalar_identity<S>("B2 step norm, cap inactive", lr, out.report.step_norm[0], lr, factor)));
  }
}

// The per-column, B2m and B2m-can first steps.
template <class S>
void moment_variant_first_steps_match_hand(const HandCase<S>& hc) {
  const Matrix<S>&w = hc.w, &g = hc.g, &xi = hc.xi;
  const Index r = hc.r;
  const double factor = hc.factor;
  {  // Per column: q_j = ξ_j/(‖ξ_j‖+ε), re-projected, capped.
    const S lr(0.05), eps(1e-8), cap = sqrt(S(r)) / S(10);
    Matrix<S> q = xi;
    for (Index j = 0; j < r; ++j) q.col(j) /= xi.col(j).norm() + eps;
    Matrix<S> eta = -lr * (q - w * (w.transpose() * q + q.transpose() * w) / S(2));
    if (eta.norm() > cap) eta *= cap / eta.norm();
    const auto st = make_riemannian_adam_state<S>({w}, SecondMoment::kPerColumn);
    const auto out = riemannian_adam_step<S>({w}, {g}, st, per_column_hyper<S>(lr, eps));
    EXPECT_TRUE(holds(matrix_identity<S>("per-column step", hand_polar<S>(w + eta), out.frames[0], S(1), factor)));
  }
  {  // B2m: elementwise q = ξ/(|ξ|+ε), re-projected, no cap, even when the step is large.
    const S lr(0.3), eps(1e-8);
    const Matrix<S> q = (xi.array() / (xi.array().abs() + eps)).matrix();
    const Matrix<S> eta = -lr * (q - w * (w.transpose() * q + q.transpose() * w) / S(2));
    const auto st = make_riemannian_adam_state<S>({w}, SecondMoment::kElementwise);
    const auto out = riemannian_adam_step<S>({w}, {g}, st, b2m_hyper<S>(lr, eps));
    EXPECT_TRUE(holds(matrix_identity<S>("B2m step", hand_polar<S>(w + eta), out.frames[0], S(1), factor)));
    EXPECT_FALSE(out.report.capped[0]);
  }
  {  // B2m-can: ξ = G − W GᵀW, then as B2m.
    const S lr(0.03), eps(1e-8);
    const Matrix<S> xc = g - w * g.transpose() * w;
    const Matrix<S> q = (xc.array() / (xc.array().abs() + eps)).matrix();
    const Matrix<S> eta = -lr * (q - w * (w.transpose() * q + q.transpose() * w) / S(2));
    const auto st = make_riemannian_adam_state<S>({w}, SecondMoment::kElementwise);
    const auto out = riemannian_adam_step<S>({w}, {g}, st, b2m_can_hyper<S>(lr, eps));
    EXPECT_TRUE(holds(matrix_identity<S>("B2m-can step", hand_polar<S>(w + eta), out.frames[0], S(1), factor)));
  }
}

// PA16's and the Stiefel SGD step, the frozen arm, and AdamW's first step.
template <class S>
void sgd_frozen_adamw_steps_match_hand(const HandCase<S>& hc) {
  const Matrix<S>&w = hc.w, &g = hc.g, &xi = hc.xi;
  const double factor = hc.factor;
  {  // B2-SGD / PA16: W ← polar(W − η (I − WWᵀ) G).
    const S lr = S(2) / S(100);
    const Matrix<S> w1 = hand_polar<S>(w - lr * (g - w * (w.transpose() * g)));
    const auto out = riemannian_sgd_step<S>({w}, {g}, RiemannianSgdHyper<S>{});
    EXPECT_TRUE(holds(matrix_identity<S>("PA16 SGD step", w1, out[0], S(1), factor)));
    RiemannianSgdHyper<S> stiefel_sgd;
    stiefel_sgd.map = TangentMap::kStiefel;
    const auto out2 = riemannian_sgd_step<S>({w}, {g}, stiefel_sgd);
    EXPECT_TRUE(holds(matrix_identity<S>("Stiefel SGD step", hand_polar<S>(w - lr * xi), out2[0], S(1), factor)));
  }
  {  // Frozen: W ← polar(W) = W.
    const auto out = riemannian_sgd_step<S>({w}, {g}, frozen_hyper<S>());
    EXPECT_TRUE(holds(matrix_identity<S>("frozen step", w, out[0], S(1), factor)));
  }
  {  // AdamW: W ← (1 − lr λ)W − lr G/(|G| + ε) on the first step.
    AdamWHyper<S> h;
    h.lr = S(0.01);
    h.weight_decay = S(0.05);
    const Matrix<S> w1 = (S(1) - h.lr * h.weight_decay) * w - h.lr * (g.array() / (g.array().abs() + h.eps)).matrix();
    const auto out = adamw_step<S>({w}, {g}, make_adamw_state<S>({w}), h);
    EXPECT_TRUE(holds(matrix_identity<S>("AdamW step", w1, out.params[0], S(1), factor)));
  }
}

// The soft orthogonality penalty's value, and its gradient against a central difference.
template <class S>
void soft_penalty_matches_hand(HandCase<S>& hc) {
  using std::sqrt;
  const Matrix<S>&w = hc.w, &g = hc.g;
  const Index d = hc.d, r = hc.r;
  const double factor = hc.factor;
  Rng& rng = hc.rng;
  const Matrix<S> eye = Matrix<S>::Identity(r, r);
  {  // Soft penalty: value by hand; gradient against a central difference of the value.
    const S lambda(0.1);
    const Matrix<S> m = w + S(0.1) * g;
    const Matrix<S> e = m.transpose() * m - eye;
    EXPECT_TRUE(
        holds(scalar_identity<S>("soft penalty", S(lambda * e.squaredNorm()), soft_orthogonality_penalty<S>(m, lambda),
                                 S(lambda * e.squaredNorm()), factor)));
    const Matrix<S> grad = soft_orthogonality_gradient<S>(m, lambda);
    const Matrix<S> dir = gaussian_matrix<S>(rng, d, r);
    const S h = sqrt(sqrt(Eigen::NumTraits<S>::epsilon()));  // central difference: error O(h²)
    const S fd =
        (soft_orthogonality_penalty<S>(m + h * dir, lambda) - soft_orthogonality_penalty<S>(m - h * dir, lambda)) /
        (S(2) * h);
    const S an = frobenius_inner<S>(grad, dir);
    EXPECT_LT(to_double(S(abs(fd - an) / abs(an))), to_double(S(100) * h * h));
  }
}

// First steps of every rule against values computed by hand from the formulas of §3.2.
template <class S>
void first_steps_match_hand_computation() {
  HandCase<S> hc = make_hand_case<S>();
  b2_first_steps_match_hand(hc);
  moment_variant_first_steps_match_hand(hc);
  sgd_frozen_adamw_steps_match_hand(hc);
  soft_penalty_matches_hand(hc);
}

template <class S>
void block_orthogonal_layout() {
  Rng rng(7);
  const auto heads = random_block_orthogonal_frames<S>(rng, {12, 3}, 4);
  const Matrix<S> block = stack_heads(heads);
  EXPECT_TRUE(holds(properties::on_stiefel<S>(block, 12.0)));
  EXPECT_TRUE(
      holds(matrix_identity<S>("W_0^T W_3 = 0", Matrix<S>::Zero(3, 3), heads[0].transpose() * heads[3], S(1), 12.0)));
  EXPECT_THROW(random_block_orthogonal_frames<S>(rng, {12, 4}, 4), std::invalid_argument);
  EXPECT_THROW(check_frame_shape({3, 4}), std::invalid_argument);
  EXPECT_EQ(split_heads<S>(block, 4).size(), 4u);
}

}  // namespace stiefel::test

// Instantiates every property for one scalar type; max_d keeps the slow types' cases small.
#define STIEFEL_CORE_TESTS(Suite, S, max_d)                                                                           \
  RC_GTEST_PROP(Suite, TangentProjectorIsTheOrthogonalProjector, ()) {                                                \
    stiefel::test::prop_tangent_projector<S>(*stiefel::properties::gen_shape(max_d));                                 \
  }                                                                                                                   \
  RC_GTEST_PROP(Suite, HorizontalProjectorAndSplitIdentity, ()) {                                                     \
    stiefel::test::prop_horizontal_projector<S>(*stiefel::properties::gen_shape(max_d));                              \
  }                                                                                                                   \
  RC_GTEST_PROP(Suite, PolarRoutesLandOnTheManifoldAndAgree, ()) {                                                    \
    stiefel::test::prop_polar_routes<S>(*stiefel::properties::gen_shape(max_d), *rc::gen::inRange(-8, 5) * 1.0);      \
  }                                                                                                                   \
  RC_GTEST_PROP(Suite, PolarRetractionIsSecondOrder, ()) {                                                            \
    stiefel::test::prop_retraction_second_order<S>(*stiefel::properties::gen_shape(max_d));                           \
  }                                                                                                                   \
  RC_GTEST_PROP(Suite, AttentionGradientTaylorRemainderIsSecondOrder, ()) {                                           \
    stiefel::test::prop_attention_gradient_taylor<S>(*stiefel::properties::gen_shape(max_d));                         \
  }                                                                                                                   \
  TEST(Suite, FirstStepOfEveryRuleMatchesHandComputation) { stiefel::test::first_steps_match_hand_computation<S>(); } \
  TEST(Suite, BlockOrthogonalLayout) { stiefel::test::block_orthogonal_layout<S>(); }
