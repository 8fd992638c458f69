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
                       "Pi_W(lambda W) = 0: weight decay has zero Riemannian gradient on St(d,r).");
  c.generator = "d in [1,24], r in [1,d], lambda = 10^[-12,12]";
  c.residual = "||Pi_W(lambda W)||_F / (lambda sqrt(r)); factor d";
  c.analysis =
      "lambda W = W (lambda I) lies in the normal space {WS}. On an orthonormal W this "
      "holds by construction; prop8-decay-on-drifted-frame certifies what remains of the decay "
      "off the manifold, with its constant.";
  c.generator_fn = frame_and_decay;
  set_check(c, &check_decay_annihilated<double>, &check_decay_annihilated<mp50>,
            {{DecayAnnihilatedMutant::kDriftedFrame, "drifted-frame",
              "a frame scaled by 1 + 1e-6, off the manifold by 1e-6"}});
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
                       "The fixed point W* = -grad L(W*)/lambda of decoupled weight decay generically "
                       "lies off St(d,r): weight decay drives W towards 0, not towards St(d,r). Certified on "
                       "the attention loss: the unconstrained iteration with decay, run from frames on "
                       "St(d,r), reaches W* = -grad L(W*)/lambda, and W* is closer to 0 than to St(d,r).");
  c.generator =
      "attention problems: n in [2,7] tokens, d in [1,12], r in [1,d], H in [1,3], token scale 10^[-1,0]; "
      "lambda = 10^[1.5,2.5] E0 (E0 the gradient's rounding-error scale at the starting frames, so that the "
      "iteration contracts at a rate of about 10^-x); the iteration W <- W - eta (grad L + lambda W) at eta = 1/lambda "
      "on every "
      "W_Q and W_K, from the case's frames, until its step is 4u of the first step's scale E0/lambda = 10^-x (at most "
      "400 iterations)";
  c.residual =
      "the worse of the fixed-point residual ||W* + grad L(W*)/lambda||_F over (E0/lambda) u n d (E0 the "
      "gradient's rounding-error scale at the starting frames) and 30 ||W*||_F / dist(W*, St), dist = ||W* - "
      "polar(W*)||_F (pass iff "
      "W* is at least as close to 0 as to St(d,r))";
  c.analysis =
      "The logits are bilinear in (W_Q, W_K), so grad L vanishes at W = 0 and 0 is a fixed point; at these "
      "lambda the map W -> -grad L(W)/lambda contracts, so the iteration reaches W* = 0 itself, at distance "
      "sqrt(r) per frame from St(d,r): decay drives W to 0, not to St. With the tangent projection the decay "
      "term vanishes (Prop. 8) and the iterate stays on St, which is the control.";
  c.generator_fn = [] {
    return rc::gen::exec([] {
      Case k = *gen::attention(1, 0.0);
      k.x = gen::real(1.5, 2.5, 20);
      return k;
    });
  };
  c.cost = 3;
  set_check(c, &check_decay_fixed_point<double>, &check_decay_fixed_point<mp50>,
            {{DecayFixedPointMutant::kProjected, "projected",
              "W <- polar(W - Pi_W(grad L + lambda W)/lambda): the tangent projection and the retraction, which "
              "keep W on St"}});
  return c;
}

}  // namespace

std::vector<Claim> prop8_decay_claims() {
  return {prop8_decay_annihilated(),       prop8_decay_on_drifted_frame(), s53_decay_absorbed(),
          s53_decay_absorbed_large_step(), s53_decay_absorbed_corrected(), s54_decay_fixed_point_off_manifold()};
}

}  // namespace stiefel::certificates
