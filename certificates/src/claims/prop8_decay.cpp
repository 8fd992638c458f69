// The claims of Prop. 8, §5.3 and §5.4: weight decay on and off St(d,r), its absorption by the retraction,
// and its fixed point.
#include "refutation_proofs.h"
#include "claim_builder.h"
#include "claim_groups.h"
#include "prop8_decay.h"

namespace stiefel::certificates {
namespace {

// A frame shape and lambda = 10^[-12,12] in Case::x (the Prop. 8 claims).
rc::Gen<Case> frame_and_decay() {
  return rc::gen::exec([] {
    Case k;
    gen::draw_frame_shape(k, {});
    k.x = gen::real(-12, 12, 240);
    return k;
  });
}

// eta*lambda below 1 (10^[-6,0): every run of the paper), above 1 (10^(0,0.6]), or either (0).
rc::Gen<Case> decay_gen_regime(int regime) {
  return rc::gen::exec([regime] {
    Case k;
    gen::draw_frame_shape(k, {.not_one_by_one = true, .scale_lo = -3, .scale_hi = 1});
    const bool above = regime == 0 ? *rc::gen::arbitrary<bool>() : regime > 0;
    k.x = above ? gen::real(0.001, 0.6, 600) : gen::real(-6, -0.001, 600);
    return k;
  });
}

Claim prop8_decay_annihilated() {
  Claim c = make_claim("prop8-decay-annihilated", "Prop. 8, §4.3, §5.3", "identity",
                       "Pi_W(lambda W) = 0: weight decay has zero Riemannian gradient on St(d,r) (Pi_W, the map "
                       "that annihilates it, is the Riemannian gradient: <Pi_W G, xi> = <G, xi> on the tangent "
                       "space).");
  c.generator = "d in [2,24], r in [2,d] (a frame that can rotate within its span), lambda = 10^[-12,12]";
  c.residual =
      "the worse of ||Pi_W(lambda W)||_F / (lambda sqrt(r)) (factor d) and |<Pi_W G, xi> - <G, xi>| / (||G|| ||xi||) "
      "for a tangent xi = W Omega + (I - W W^T) Z (factor d*r)";
  c.analysis =
      "lambda W = W (lambda I) lies in the normal space {WS}. On an orthonormal W this "
      "holds by construction; prop8-decay-on-drifted-frame certifies what remains of the decay "
      "off the manifold, with its constant.";
  c.generator_fn = [] {
    return rc::gen::exec([] {
      Case k;
      gen::draw_frame_shape(k, {.min_r = 2});
      k.x = gen::real(-12, 12, 240);
      return k;
    });
  };
  set_check(
      c, &check_decay_annihilated<double>, &check_decay_annihilated<mp50>,
      {{DecayAnnihilatedMutant::kDriftedFrame, "drifted-frame", "a frame scaled by 1 + 1e-6, off the manifold by 1e-6"},
       {DecayAnnihilatedMutant::kHorizontalMap, "horizontal-map",
        "the horizontal map G - W W^T G in place of Pi_W: it annihilates lambda W too, but drops the "
        "rotations within the frame's span"}});
  return c;
}

Claim prop8_decay_on_drifted_frame() {
  Claim c = make_claim("prop8-decay-on-drifted-frame", "Prop. 8 off the manifold (float32 training)", "identity",
                       "On a frame with isometry error delta (as float32 training leaves it, ~1e-5), weight "
                       "decay keeps a Riemannian gradient of exactly Pi_W(lambda W) = lambda W (I - W^T W), "
                       "of norm lambda ||sigma (1 - sigma^2)||_2 <= lambda (1 + max delta) ||I - W^T W||_F.");
  c.generator =
      "W = U diag(1 + delta_i) V^T, |delta_i| = 10^[-8,-3] of either sign, d in [1,24], r in "
      "[1,d], lambda = 10^[-12,12]";
  c.residual =
      "| ||Pi_W(lambda W)||_F - lambda ||sigma (1 - sigma^2)||_2 |, normalised by lambda sqrt(r); "
      "factor d";
  c.analysis =
      "W^T(lambda W) is symmetric, so Pi_W(lambda W) = lambda (W - W W^T W) = lambda U "
      "diag(sigma (1 - sigma^2)) V^T.";
  c.generator_fn = frame_and_decay;
  set_check(c, &check_decay_drifted<double>, &check_decay_drifted<mp50>,
            {{DecayDriftedMutant::kRetractedProjector, "retracted-projector",
              "the projector of polar(W) applied to the drifted frame's decay (it misses the "
              "residual decay gradient)"}});
  return c;
}

Claim s53_decay_absorbed() {
  Claim c = make_claim("s53-decay-absorbed", "§5.3 after Prop. 7 (eta lambda < 1)", "identity",
                       "polar((1 - eta lambda) W + xi) = polar(W + xi / (1 - eta lambda)): decoupled "
                       "decay is absorbed by the retraction, for eta lambda < 1 (every run of the paper "
                       "has eta lambda <= 1e-3). Stated without a condition, it fails for eta lambda > 1: "
                       "see s53-decay-absorbed-large-step.");
  c.generator =
      "d in [2,24] ((d,r) != (1,1), whose tangent space is {0}), r in [1,d], tangent xi "
      "scaled by 10^[-3,1], eta*lambda = 10^[-6,-0.001]";
  c.residual = "||lhs - rhs||_F / sqrt(r); factor d*(1 + ||xi||/|1 - eta lambda|)";
  c.analysis = "polar(cM) = polar(M) for c > 0: divide (1 - eta lambda) W + xi by 1 - eta lambda > 0.";
  c.generator_fn = [] { return decay_gen_regime(-1); };
  set_check(
      c, &check_decay_absorbed<double>, &check_decay_absorbed<mp50>,
      {{DecayAbsorbedMutant::kUnscaledStep, "unscaled-step", "polar(W + xi) without the 1/(1 - eta lambda) rescale"}});
  return c;
}

Claim s53_decay_absorbed_large_step() {
  Claim c = make_claim("s53-decay-absorbed-large-step", "§5.3 after Prop. 7 (eta lambda > 1)", "identity",
                       "The same identity where the paper's statement, which has no condition on eta "
                       "lambda, also asserts it: for eta lambda > 1.");
  c.generator = "as for s53-decay-absorbed, with eta*lambda = 10^[0.001,0.6]";
  c.residual = "as for s53-decay-absorbed";
  c.proof = {&prove_decay_absorbed_large_step, &prove_decay_absorbed_below_one,
             "the counterexample with eta lambda = 10^-|x| < 1, where the two polar factors are one"};
  c.expected = Expected::kRefuted;
  c.analysis =
      "polar(cM) = sign(c) polar(M): for eta*lambda > 1 the two sides are negatives of "
      "each other, and at eta*lambda = 1 the right side is undefined.";
  c.generator_fn = [] { return decay_gen_regime(1); };
  set_check(
      c, &check_decay_absorbed<double>, &check_decay_absorbed<mp50>,
      {{DecayAbsorbedMutant::kUnscaledStep, "unscaled-step", "polar(W + xi) without the 1/(1 - eta lambda) rescale"}});
  return c;
}

Claim s53_decay_absorbed_corrected() {
  Claim c = make_claim("s53-decay-absorbed-corrected", "§5.3 after Prop. 7 (corrected)", "identity",
                       "Corrected statement: polar((1 - eta lambda) W + xi) = sign(1 - eta lambda) "
                       "polar(W + xi/(1 - eta lambda)) for eta lambda != 1; the paper's form holds "
                       "exactly when eta lambda < 1.");
  c.generator = "as for s53-decay-absorbed, with eta*lambda = 10^[-6,-0.001] or 10^[0.001,0.6]";
  c.residual = "as for s53-decay-absorbed";
  c.analysis = "Positive homogeneity and oddness of the polar factor.";
  c.generator_fn = [] { return decay_gen_regime(0); };
  set_check(
      c, &check_decay_absorbed_corrected<double>, &check_decay_absorbed_corrected<mp50>,
      {{DecayAbsorbedMutant::kUnscaledStep, "unscaled-step", "polar(W + xi) without the 1/(1 - eta lambda) rescale"}});
  return c;
}

Claim s54_decay_fixed_point_off_manifold() {
  Claim c = make_claim("s54-decay-fixed-point-off-manifold", "§5.4", "identity",
                       "The fixed point of W <- W - eta grad L(W) - eta lambda W satisfies W* = -grad L(W*)/lambda, "
                       "which generically lies off St(d,r): weight decay drives W towards 0, not towards St(d,r). "
                       "Certified on the attention loss, from frames on St(d,r), in the sharper form: with lambda_c = "
                       "max_h ||X^T dS_h(0) X||_2 / sqrt(r), the iteration reaches W* = 0 for lambda > lambda_c, and "
                       "for lambda < lambda_c a W* = -grad L(W*)/lambda that is off St(d,r) and not 0; ||W*|| does "
                       "not grow with lambda.");
  c.generator =
      "attention problems: n in [2,7] tokens, d in [2,12] (St(1,1) = {+-1}: see the analysis), r in [1,d], H in [1,3], "
      "token scale 10^[-1,0]; per case the rungs lambda = rho lambda_c, rho in {0.3, 0.6, 1.6, 3}; the iteration at "
      "eta lambda = 0.1 on every W_Q and "
      "W_K from the case's frames for 2000 steps, then Barzilai-Borwein steps to the same fixed point, until "
      "||grad F||/lambda <= u n d max(||W||, ||W0||) (at most 3000 steps; the best iterate)";
  c.residual =
      "the worst over the rungs of: ||W* + grad L(W*)/lambda||_F / max(||W*||, ||W0||); for rho > 1, ||W*|| / "
      "||W0||; the growth of ||W*|| from the previous rung over ||W0||; each over u n d with u float64's unit "
      "roundoff in both precisions (the 50-digit slot evaluates at the double iterate); and for rho < 1, 30 * "
      "1e-3 / min(||W*^T W* - I||_F, ||W*||/||W0||) (pass iff W* is off St and away from 0 by 1e-3)";
  c.analysis =
      "The iteration is gradient descent on L + lambda ||W||^2/2. The logits are bilinear in (W_Q, W_K), so grad L(0) "
      "= 0 and, near 0, grad L is linear with the off-diagonal operator (M_h, M_h^T), M_h = X^T dS_h(0) X / sqrt(r): "
      "the Hessian at 0 has eigenvalues lambda +- sigma_i(M_h), and 0 attracts iff lambda > lambda_c. Below "
      "lambda_c the iteration leaves 0's neighbourhood for a critical point with W_Q^T W_Q = W_K^T W_K; since "
      "||W_Q||^2 + ||W_K||^2 >= 2 ||W_Q W_K^T||_*, the decay acts on W_Q W_K^T as a nuclear norm and W* is "
      "typically of lower rank than r, hence off St. Its norm can exceed St's sqrt(2Hr): the decay moves W "
      "towards 0 only in the sense that ||W*|| falls with lambda, reaching 0 at lambda_c. For d = 1 the frames are "
      "+-1, "
      "the start lies on one of the invariant lines W_Q = +-W_K, and on one of them 0 attracts for every lambda: "
      "from such starts W* = 0 below lambda_c (the generic statement fails on a start set of measure zero).";
  c.generator_fn = [] { return gen::attention(1, 0.0, 2, 2); };
  c.max_cases = 60;
  c.cost = 4;
  set_check(c, &check_decay_fixed_point<double>, &check_decay_fixed_point<mp50>,
            {{DecayFixedPointMutant::kTowardStiefel, "toward-stiefel",
              "decay toward St(d,r): lambda (W - polar W) in place of lambda W (the iterate stays near St)"},
             {DecayFixedPointMutant::kRateOffByPpm, "rate-off-by-ppm",
              "near miss: the iteration's decay coefficient lambda (1 + 1e-6), the residual judged at lambda"}});
  return c;
}

}  // namespace

std::vector<Claim> prop8_decay_claims() {
  return {prop8_decay_annihilated(),       prop8_decay_on_drifted_frame(), s53_decay_absorbed(),
          s53_decay_absorbed_large_step(), s53_decay_absorbed_corrected(), s54_decay_fixed_point_off_manifold()};
}

}  // namespace stiefel::certificates
