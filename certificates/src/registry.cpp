// The registry: every claim of the paper that the suite checks, with its source, its generator,
// its residual, its tolerance, its controls, and the outcome we expect after investigating it.
#include <stiefel/multiprecision.h>

#include "checks.h"
#include "generators.h"

namespace stiefel::certificates {
namespace {

namespace gen = generators;
using mp50 = stiefel::mp50;

#define STIEFEL_CHECKS(c, name)              \
  (c).check_double = &check_##name<double>; \
  (c).check_mp50 = &check_##name<mp50>

const char* const kRoundoff =
    "ratio = residual / (normaliser * u * factor), u the unit roundoff of the working type; "
    "pass at ratio <= 30 (LAPACK's test threshold)";

Claim base(std::string id, std::string source, std::string kind, std::string statement) {
  Claim c;
  c.id = std::move(id);
  c.source = std::move(source);
  c.kind = std::move(kind);
  c.statement = std::move(statement);
  c.factor = kRoundoff;
  return c;
}

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

// The equivariance claims' cases: the trace problem's shape, steps, rate and eps.
Case draw_equivariance_case() {
  Case k;
  k.d = *rc::gen::inRange(2, 13);
  k.r = *rc::gen::inRange(1, k.d + 1);
  k.heads = *rc::gen::inRange(1, 4);
  k.steps = *rc::gen::inRange(1, 31);
  k.log10_lr = gen::real(-3, 0, 30);
  k.eps_zero = *rc::gen::arbitrary<bool>();
  k.log10_eps = gen::real(-12, -4, 8);
  k.seed = *rc::gen::arbitrary<std::uint64_t>();
  return k;
}
rc::Gen<Case> equivariance_cases() { return rc::gen::exec(draw_equivariance_case); }

std::vector<Claim> build() {
  std::vector<Claim> v;

  {  // 1
    Claim c = base("prop1-joint-gauge", "Prop. 1, §5.1", "identity",
                   "For a multi-head attention loss that depends on (W_Q,h, W_K,h) only through "
                   "W_Q,h W_K,h^T, the joint O(r) gauge component skew(W_Q^T G_Q + W_K^T G_K) of "
                   "the gradient is zero.");
    c.generator = "attention problems: n in [2,7] tokens, d in [2,12], r in [2,d], H in [1,3], token "
                  "scale 10^[-1,0.5] (a saturated softmax cancels the per-frame control's statistic below "
                  "rounding; prop1-gl-gauge and the gradient claims run up to 10^1); r >= 2 "
                  "because O(1) is discrete and the statement is empty "
                  "at r = 1";
    c.residual = "sqrt(sum_h ||skew(W_Q,h^T G_Q,h + W_K,h^T G_K,h)||_F^2), normalised by the "
                 "gradient's rounding-error scale sum_h s ||X W_Q,h|| ||P o (|D| + rowsum(P o |D|))|| "
                 "||X W_K,h|| (the softmax backward pass cancels, so ||G|| can be far smaller); "
                 "factor n*d";
    c.analysis = "Differentiate L(W_Q exp(t Omega), W_K exp(t Omega)) = L at t = 0; exact. Read on the "
                 "code's gradient, whose backward formula makes W_Q^T G_Q + W_K^T G_K symmetric by its "
                 "shape: this certifies the gradient code's algebra; the loss's invariance and the "
                 "gradient itself are certified independently by prop1-loss-invariance and "
                 "attention-gradient-exact.";
    c.generator_fn = [] { return gen::attention(2, 0.5); };
    STIEFEL_CHECKS(c, joint_gauge);
    c.controls = {{"random-tensor-pair", "Gaussian tensors of the same norms in place of the "
                                         "gradient (the paper's control, statistic ~0.35)", 1},
                  {"per-frame-action", "the per-frame statistic skew(W_Q^T G_Q) alone in place of "
                                       "the joint one", 2}};
    v.push_back(c);
  }
  {  // 1b
    Claim c = base("prop1-gl-gauge", "Prop. 1, §5.1 (extension)", "identity",
                   "The loss is invariant under the larger group (W_Q A, W_K A^-T), A in GL(r), "
                   "so W_Q^T G_Q = G_K^T W_K for every head; Prop. 1 is its skew part.");
    c.generator = "attention problems as for prop1-joint-gauge, r in [1,d]";
    c.residual = "sqrt(sum_h ||W_Q,h^T G_Q,h - G_K,h^T W_K,h||_F^2), normalised as for "
                 "prop1-joint-gauge; factor n*d";
    c.analysis = "Differentiate L(W_Q(I + tA), W_K(I - tA^T)) at t = 0 for every A; exact. As for "
                 "prop1-joint-gauge, it holds by the backward formula's shape; prop1-loss-invariance "
                 "and attention-gradient-exact are the independent checks.";
    c.generator_fn = [] { return gen::attention(1); };
    STIEFEL_CHECKS(c, gl_gauge);
    c.controls = {{"random-tensor-pair", "Gaussian tensors of the same norms in place of the gradient", 1}};
    v.push_back(c);
  }
  {  // 1c
    Claim c = base("prop1-loss-invariance", "Prop. 1, §5.1 (the invariance itself)", "invariance",
                   "The attention loss depends on (W_Q,h, W_K,h) only through W_Q,h W_K,h^T: "
                   "L(W_Q R, W_K R) = L(W_Q, W_K) for R in O(r), and L(W_Q A, W_K A^-T) = L for A in "
                   "GL(r). Checked on the loss alone (the forward pass), independently of the "
                   "gradient code that prop1-joint-gauge and prop1-gl-gauge read.");
    c.generator = "attention problems as for prop1-joint-gauge but with token scale 10^[-1,0.5], an "
                  "unsaturated softmax (a saturated one is flat along the controls' 1e-6 perturbations, "
                  "so no near miss is visible there) (r >= 2: at r = 1, A^-1 = A^-T and "
                  "O(1) = {1, -1}, so no near-miss control can differ from the claim); per head a Haar "
                  "R in O(r) and A = R1 diag(10^[-1,1]) R2 (condition number up to 100)";
    c.residual = "|L(transformed) - L| for the O(r) and the GL(r) transformation, normalised by "
                 "sum_h ||C_h|| ||X U_h|| (1 + kappa sum_h s ||X W_Q,h|| ||X W_K,h||), kappa = 1 for R "
                 "and kappa(A) for A: the transformed products carry rounding errors of relative size "
                 "u r kappa in the logits; factor n*d*r";
    c.analysis = "(W_Q A)(W_K A^-T)^T = W_Q W_K^T; the score, the softmax and the loss are unchanged; exact.";
    c.generator_fn = [] { return gen::attention(2, 0.5); };
    STIEFEL_CHECKS(c, loss_invariance);
    c.controls = {{"inverse-not-transposed", "A^-1 in place of A^-T on W_K, with A = R (I + 1e-5 N) "
                                             "(a 1e-5 non-orthogonal perturbation: a near miss)", 1},
                  {"rotation-off-group", "R + 1e-5 N in place of R in O(r) (a frame update that "
                                         "leaves O(r) by 1e-5)", 2}};
    v.push_back(c);
  }
  {  // 1d
    Claim c = base("attention-gradient-exact", "§5.1, Prop. 1 (the gradient behind claims 1, 1b, 2)", "identity",
                   "The analytic attention gradient (the backward pass that prop1-joint-gauge, "
                   "prop1-gl-gauge and Table 8 read) is the derivative of the loss: <grad, D> equals "
                   "the directional derivative of L along D, to the rounding of the working precision.");
    c.generator = "attention problems as for prop1-gl-gauge (r in [1,d]); two Gaussian directions D "
                  "in (W_Q, W_K) per case";
    c.residual = "|<grad, D> - D_ref| with D_ref Richardson-extrapolated central differences of L in "
                 "50 digits (h = 1e-8, h/2: truncation O(h^4) ~ 1e-32 relative), normalised by "
                 "||D|| sum_h (the gradient's rounding-error scale, as for prop1-joint-gauge)";
    c.factor = "ratio = residual / (normaliser * max(u, 1e-30) * n * d): a roundoff ratio in double; "
               "in 50 digits the floor is the reference's accuracy 1e-30; pass at ratio <= 30";
    c.analysis = "Hand-derived backward pass of softmax attention, checked against the loss to "
                 "roundoff (the slope of attention-gradient-taylor passes relative errors up to ~1.5e-5).";
    c.generator_fn = [] { return gen::attention(1); };
    STIEFEL_CHECKS(c, gradient_exact);
    c.cost = 2;
    c.controls = {{"gradient-error-1e-9", "a gradient error of 1e-9 of the gradient's rounding-error "
                                          "scale along D (passes the slope check)", 1}};
    v.push_back(c);
  }
  {  // 2
    Claim c = base("table8-per-frame-gauge-nonzero", "Table 8, §5.1", "inequality",
                   "The per-frame component W skew(W^T G) of the attention gradient is not zero: "
                   "removing it (a Grassmann projector) deletes descent signal.");
    c.generator = "attention problems as for prop1-joint-gauge (r >= 2: at r = 1 the per-frame "
                  "gauge space is {0}), token scale 10^[-1,0.5]: an unsaturated softmax. (At token "
                  "scale 10^0.9 the generator found a saturated softmax whose gradient is zero to "
                  "rounding, so that its gauge content, 1e-63, is below the rounding floor: the "
                  "statement is about gradients that carry signal.)";
    c.residual = "rho = min over heads and frames of ||W skew(W^T G)||_F divided by the gradient's "
                 "rounding-error scale (as for prop1-joint-gauge); the Table 8 fraction "
                 "||W skew(W^T G)|| / ||Pi_W G|| is recorded beside it";
    c.factor = "ratio = u * n * d / rho; pass at ratio <= 1e-3 (rho at least 1000 times the "
               "roundoff floor)";
    c.tolerance = 1e-3;
    c.analysis = "W_Q^T G_Q is not symmetric for a generic attention loss; only the joint "
                 "combination is constrained by Prop. 1.";
    c.generator_fn = [] { return gen::attention(2, 0.5); };
    STIEFEL_CHECKS(c, per_frame_gauge_nonzero);
    c.controls = {{"tied-loss", "a loss that depends on W only through W W^T (W_Q = W_K = W), "
                                "whose per-frame component vanishes", 1}};
    v.push_back(c);
  }
  {  // 2b
    Claim c = base("table8-random-tangent-fraction", "Table 8, §5.1", "statistical",
                   "For an isotropic random tangent vector the per-frame gauge component carries "
                   "a squared-norm fraction (r(r-1)/2) / (dr - r(r+1)/2) on average (its square "
                   "root is ~0.25 at d = 128, r = 16).");
    c.generator = "d in [3,10], r in [2,d-1] (r = d makes the fraction 1 identically), N draws of "
                  "xi = W Omega + W_perp K with N chosen so that the control's z is at least 20";
    c.residual = "z = (mean fraction - a/(a+b)) / (sd/sqrt(N)), a = r(r-1)/2, b = r(d-r); the "
                 "fraction is exactly Beta(a/2, b/2)";
    c.factor = "ratio = |z|; pass at |z| <= 5; a control is killed at |z| >= 10";
    c.tolerance = 5;
    c.control_margin = 2;
    c.analysis = "||Pi_G xi||^2 and ||Pi_H xi||^2 are independent chi-squares with a and b degrees "
                 "of freedom; the mean of the fraction is a/(a+b) exactly.";
    c.generator_fn = [] {
      return rc::gen::exec([] {
        Case k;
        k.d = *rc::gen::inRange(3, 11);
        k.r = *rc::gen::inRange(2, k.d);
        k.seed = *rc::gen::arbitrary<std::uint64_t>();
        return k;
      });
    };
    STIEFEL_CHECKS(c, random_tangent_gauge_fraction);
    c.cost = 2;
    c.controls = {{"horizontal-vectors", "Grassmann-horizontal vectors in place of tangent ones", 1}};
    c.figures_double = &figures_table8<double>;
    v.push_back(c);
  }
  {  // 3
    Claim c = base("prop2-orthogonal-projector", "Prop. 2, §5.3; eq. (3)", "identity",
                   "Pi_W(G) = G - W sym(W^T G) is the orthogonal projector onto T_W St(d,r): "
                   "idempotent, self-adjoint, zero on the normal space {WS}, with range in "
                   "the tangent space and fixing every tangent vector W Omega + W_perp K.");
    c.generator = "d in [1,24], r in [1,d] (r = 1 and r = d included), inputs scaled by 10^[-12,12]";
    c.residual = "the worst of ||Pi(Pi A) - Pi A|| / ||A||, |<Pi A,B> - <A,Pi B>| / (||A|| ||B||), "
                 "||Pi(WS)|| / ||S||, ||sym(W^T Pi A)|| / ||A||, ||Pi xi - xi|| / ||xi||; factor d";
    c.analysis = "Standard (Absil et al. 2008, (3.35)); exact in exact arithmetic.";
    c.generator_fn = [] { return gen::frame({}); };
    STIEFEL_CHECKS(c, orthogonal_projector);
    c.controls = {{"half-projection", "G - W sym(W^T G)/2 in place of Pi_W", 1}};
    v.push_back(c);
  }
  {  // 3b
    Claim c = base("prop2-steepest-ascent", "Prop. 2, §5.3", "identity",
                   "Pi_W g / ||Pi_W g|| maximises <g, xi> over unit tangent xi, with value "
                   "||Pi_W g||.");
    c.generator = "d in [1,24], r in [1,d], g scaled by 10^[-12,12], one random unit tangent vector";
    c.residual = "|<g, Pi g>/||Pi g|| - M| / ||g|| and max(0, <g, xi> - M) / ||g||, where M is the "
                 "norm of g's coordinates in an orthonormal basis of T_W St built without Pi; "
                 "factor d*r";
    c.analysis = "Cauchy-Schwarz in T_W St; exact.";
    c.generator_fn = [] { return gen::frame({}); };
    STIEFEL_CHECKS(c, steepest_ascent);
    c.controls = {{"normal-component-left", "a normal component 1e-6 ||Pi g|| W sym(W^T g)/||W sym(W^T g)|| left "
                                           "in the maximiser Pi g", 1}};
    v.push_back(c);
  }
  {  // 3c
    Claim c = base("eq12-horizontal-gauge-split", "eq. (12), §5.3", "identity",
                   "||Pi_W g||^2 = ||Pi^h_W g||^2 + ||W skew(W^T g)||^2: T_W St = H_W (+) G_W "
                   "orthogonally.");
    c.generator = "d in [1,24], r in [1,d], g scaled by 10^[-12,12]";
    c.residual = "| ||Pi g||^2 - ||Pi^h g||^2 - ||W skew(W^T g)||^2 | / ||g||^2; factor d";
    c.analysis = "Pi g = (I - WW^T) g + W skew(W^T g), and the two parts are orthogonal; exact.";
    c.generator_fn = [] { return gen::frame({}); };
    STIEFEL_CHECKS(c, gauge_split);
    c.controls = {{"normal-part", "the normal part W sym(W^T g) in place of the gauge part (at r = 1 the gauge part "
                                  "is 0, so no near miss of it can differ there)", 1}};
    v.push_back(c);
  }
  {  // 4b
    Claim c = base("eq12-horizontal-cost", "eq. (12), §5.3 (\"(12) costs about 3% of the per-step decrease\")",
                   "identity",
                   "Steepest descent restricted to the horizontal space decreases the loss at rate "
                   "||Pi^h g|| = sqrt(1 - rho^2) ||Pi g||, rho = ||Pi_G g|| / ||Pi g|| the gauge share; at "
                   "Table 8's rho = 0.24 that costs 1 - sqrt(1 - 0.24^2) = 2.9% of the per-step "
                   "decrease (\"about 3%\").");
    c.generator = "d in [3,24], r in [2,d-1] (at r = 1 the gauge space is {0}, at r = d the horizontal "
                  "one), W Haar, g Gaussian scaled by 10^[-12,12]";
    c.residual = "| ||Pi^h g||^2 - (1 - rho^2) ||Pi g||^2 |, normalised by ||Pi g||^2; factor d*r. The "
                 "figures give the cost at Table 8's share and at random tangent vectors' share";
    c.analysis = "Pi g = Pi^h g + W skew(W^T g), orthogonal (eq12-horizontal-gauge-split); Pythagoras.";
    c.generator_fn = [] { return gen::frame({.min_r = 2, .r_below_d = true}); };
    STIEFEL_CHECKS(c, horizontal_cost);
    c.figures_double = &figures_horizontal_cost<double>;
    c.controls = {{"share-in-norm", "the decrease taken as (1 - rho) ||Pi g|| (the share subtracted in "
                                    "norm, not in square)", 1}};
    v.push_back(c);
  }
  {  // 4
    Claim c = base("prop3i-sgd-degree-one", "Prop. 3(i), §5.3", "invariance",
                   "The fixed-step Riemannian SGD displacement is degree one in the gradient: "
                   "xi_sgd(c g) = c xi_sgd(g), so ||xi_sgd|| = eta ||Pi_W g||.");
    c.generator = "d in [2,24] ((d,r) != (1,1), whose tangent space is {0}), r in [1,d], "
                  "c = 10^(+-[1,20]), eta = 10^[-3,1], g scaled by 10^[-6,6] (c spans 40 decades); "
                  "both the Stiefel "
                  "and the Grassmann projector (PA16)";
    c.residual = "||xi(c g) - c xi(g)|| / (c eta ||g||); factor d";
    c.analysis = "Linearity of the projector; exact up to rounding.";
    c.generator_fn = [] {
      return rc::gen::exec([] {
        Case k;
        gen::draw_frame_shape(k, {.not_one_by_one = true, .scale_lo = -6, .scale_hi = 6});
        k.log10_c = (*rc::gen::arbitrary<bool>() ? 1 : -1) * gen::real(1, 20, 190);
        k.log10_lr = gen::real(-3, 1, 40);
        return k;
      });
    };
    STIEFEL_CHECKS(c, sgd_degree_one);
    c.controls = {{"adam-first-step", "the Riemannian Adam's first step (degree zero) in place of "
                                      "the SGD displacement", 1}};
    v.push_back(c);
  }
  // Gradient sequences with a scale factor c = 2^k (the scale-freeness claims).
  const auto scale_free_gen = [] {
    return rc::gen::exec([] {
      Case k;
      gen::draw_sequence(k, 8);
      k.log10_c = (*rc::gen::arbitrary<bool>() ? 1 : -1) * double(*rc::gen::inRange(4, 67));  // k of c = 2^k
      return k;
    });
  };
  {  // 5
    Claim c = base("prop3ii-adam-scale-free", "Prop. 3(ii), §5.3", "invariance",
                   "With one scalar second moment per frame and eps = 0, scaling every gradient "
                   "by c > 0 leaves every iterate of the Riemannian Adam unchanged.");
    c.generator = "gradient sequences: d in [2,8], r in [1,d], H in [1,2], T = 1..1000 steps, "
                  "profiles constant/decaying/growing/spikes/alternating/drop/rise, a persistent "
                  "direction of weight corr in [0,1] plus fresh noise, base scale "
                  "10^[-30,30], c = 2^k with |k| in [4,66] (a power of two scales every floating-"
                  "point operation exactly, so any difference is the rule's, not rounding's), "
                  "eta_R = 10^[-3,1] (cap active and inactive), tau = 0.1, polar retraction (Gram route)";
    c.residual = "max over steps and heads of ||W_t(c g) - W_t(g)||_F, normalised by sqrt(r); "
                 "factor d*T";
    c.analysis = "m is degree 1, v degree 2, the quotient, cap and retraction degree 0 (induction).";
    c.generator_fn = scale_free_gen;
    STIEFEL_CHECKS(c, adam_scale_free);
    c.cost = 5;
    c.controls = {{"eps-at-gradient-scale", "eps set at the gradient scale and no cap", 1}};
    v.push_back(c);
  }
  {  // 5b
    Claim c = base("b2-mean-scale-free", "§3.2 (the B2-mean reading of v_h), Prop. 3(ii)", "invariance",
                   "With v_h the mean of xi*xi over the d*r entries (the reading of §3.2 under which the "
                   "cap binds on almost every step) and eps = 0, scaling every gradient by c > 0 leaves "
                   "every iterate unchanged.");
    c.generator = "gradient sequences as for prop3ii-adam-scale-free (c = 2^k)";
    c.residual = "max over steps and heads of ||W_t(c g) - W_t(g)||_F, normalised by sqrt(r); factor d*T";
    c.analysis = "v_h = ||xi||_F^2 / (d r) is degree 2 like ||xi||_F^2; the division by d r is exact "
                 "under a power-of-two c, so the induction of Prop. 3(ii) carries over.";
    c.generator_fn = scale_free_gen;
    STIEFEL_CHECKS(c, adam_mean_scale_free);
    c.cost = 5;
    c.controls = {{"eps-at-gradient-scale", "eps set at the gradient scale and no cap", 1}};
    v.push_back(c);
  }
  {  // 5c
    Claim c = base("prop3ii-eps-scale-defect", "Prop. 3(ii), §5.3 (any c > 0, eps > 0)", "identity",
                   "With a scalar second moment and eps > 0, the step from the c-scaled gradient and "
                   "state is the unscaled step times rho = c (sqrt(v_hat) + eps) / (c sqrt(v_hat) + eps), "
                   "exactly, so it differs by |rho - 1| <= (eps / sqrt(v_hat)) |1 - 1/c|: scale-free "
                   "up to a defect that vanishes when ||xi|| >> eps (and exactly scale-free at eps = 0, "
                   "rho = 1, for any c, not only powers of two).");
    c.generator = "gradient sequences: d in [2,8], r in [1,d], H in [1,2], T in [1,40] steps, the seven "
                  "magnitude profiles, base scale 10^[-10,10], eps = 10^[-2,2] times the base scale "
                  "(the regime where eps matters), c = 10^(+-[1,20]) (not powers of two: the scaled "
                  "inputs carry rounding), rate 10^[-3,0], per-frame or mean moment, uncapped (the cap "
                  "is a projection onto a ball, 1-Lipschitz: the capped steps differ by no more)";
    c.residual = "max over steps and heads of ||eta(c g, c m, c^2 v) - rho eta(g, m, v)||_F along the "
                 "unscaled run, normalised by ||eta(c g)||; factor d*r + 64 (the projection, and the scalar "
                 "chain of bias corrections, square roots and rho)";
    c.analysis = "m_hat -> c m_hat and sqrt(v_hat) -> c sqrt(v_hat); the quotient's scalar "
                 "denominator turns into c sqrt(v_hat) + eps; projection is linear; exact.";
    c.generator_fn = [] {
      return rc::gen::exec([] {
        Case k;
        gen::draw_sequence(k, 8);
        k.steps = *rc::gen::inRange(1, 41);
        k.log10_scale = gen::real(-10, 10, 40);
        k.eps_zero = false;
        k.log10_eps = k.log10_scale + gen::real(-2, 2, 40);
        k.log10_c = (*rc::gen::arbitrary<bool>() ? 1 : -1) * gen::real(1, 20, 190);
        k.log10_lr = gen::real(-3, 0, 30);
        k.x = *rc::gen::inRange(0, 2);  // 0 per-frame moment, 1 mean moment
        return k;
      });
    };
    STIEFEL_CHECKS(c, eps_scale_defect);
    c.cost = 3;
    c.controls = {{"eps-inside-sqrt", "rho of a rule with eps inside the square root, c sqrt(v_hat + eps) / "
                                      "sqrt(c^2 v_hat + eps)", 1},
                  {"eps-ignored", "rho = 1: the eps = 0 statement applied with eps > 0", 2}};
    v.push_back(c);
  }
  {  // 6a
    Claim c = base("s53-jensen-moment-bound", "§5.3 after Prop. 3", "inequality",
                   "||m_hat_t||_F <= sqrt(v_hat_t) for every t \"by Jensen's inequality\".");
    c.generator = "gradient sequences as for prop3ii-adam-scale-free, eps = 0 or 10^[-12,-2]";
    c.residual = "max over steps and heads of (||m_hat_t|| - sqrt(v_hat_t)) / sqrt(v_hat_t), "
                 "positive part; factor d";
    c.expected = Expected::kRefuted;
    c.analysis = "m_hat and v_hat average with different weights (beta1 = 0.9 vs beta2 = 0.999), "
                 "so Jensen does not apply: a rise of the gradient after small ones gives "
                 "||m_hat|| > sqrt(v_hat) (sup ratio C_t -> 7.27; C_2 = 1.0013 already).";
    c.generator_fn = [] { return gen::sequence(8); };
    STIEFEL_CHECKS(c, jensen_moment_bound);
    c.cost = 3;
    c.controls = {{"double-bias-correction", "m_hat bias-corrected twice", 1}};
    v.push_back(c);
  }
  {  // 6b
    Claim c = base("s53-displacement-bound", "§5.3 after Prop. 3", "inequality",
                   "The per-step relative displacement of a frame is at most min(eta, tau sqrt(r)) "
                   "/ sqrt(r), independent of ||g_t||: ||eta_t||_F <= min(eta_R, tau sqrt(r)).");
    c.generator = "gradient sequences as for prop3ii-adam-scale-free, eps = 0 or 10^[-12,-2]";
    c.residual = "max over steps and heads of (||eta_t||_F - min(eta_R, tau sqrt r)) / "
                 "min(eta_R, tau sqrt r), positive part; factor d";
    c.expected = Expected::kRefuted;
    c.analysis = "It rests on the false Jensen step: when eta_R < tau sqrt(r) (warm-up, cosine tail, "
                 "or any small rate) the step reaches eta_R C_t > eta_R.";
    c.generator_fn = [] { return gen::sequence(8); };
    STIEFEL_CHECKS(c, displacement_bound);
    c.cost = 5;
    c.controls = {{"uncapped-step", "the uncapped step, eps = 0, rate 10 tau sqrt(r)", 1}};
    v.push_back(c);
  }
  {  // 6c
    Claim c = base("s53-first-step-equality", "§5.3 after Prop. 3", "identity",
                   "With eps = 0 the first step has ||eta_1||_F = min(eta_R, tau sqrt(r)) exactly "
                   "(and, under the B2-mean reading of v_h, min(eta_R sqrt(d r), tau sqrt(r))).");
    c.generator = "d in [1,24], r in [1,d], gradient scale 10^[-12,12], eta_R = 10^[-3,1]";
    c.residual = "| ||eta_1|| - min(eta_R, tau sqrt r) | / min(eta_R, tau sqrt r), and the same for "
                 "B2-mean with min(eta_R sqrt(d r), tau sqrt r); factor d";
    c.analysis = "m_hat_1 = xi_1 and v_hat_1 = ||xi_1||^2 (||xi_1||^2/(d r) for B2-mean), so the "
                 "quotient is a unit tangent vector (of norm sqrt(d r) for B2-mean).";
    c.generator_fn = [] {
      return rc::gen::exec([] {
        Case k;
        gen::draw_frame_shape(k, {.not_one_by_one = true});
        k.log10_lr = gen::real(-3, 1, 40);
        return k;
      });
    };
    STIEFEL_CHECKS(c, first_step_equality);
    c.controls = {{"uncapped-eps-at-gradient", "no cap and eps equal to ||xi_1||", 1}};
    v.push_back(c);
  }
  {  // 6d
    Claim c = base("s53-displacement-bound-corrected", "§5.3 after Prop. 3 (corrected)", "inequality",
                   "Corrected statement: ||m_hat_t||_F <= C_t sqrt(v_hat_t) and ||eta_t||_F <= "
                   "min(eta_R C_t, tau sqrt(r)), with C_t^2 = (1-b1)^2 (1-b2^t) / ((1-b1^t)^2 "
                   "(1-b2)) * sum_{k<t} (b1^2/b2)^k (C_1 = 1, C_t -> 7.27 for b1 = 0.9, b2 = 0.999).");
    c.generator = "gradient sequences as for prop3ii-adam-scale-free, eps = 0 or 10^[-12,-2]";
    c.residual = "max over steps and heads of the relative excess of ||eta_t|| over its bound and "
                 "of ||m_hat_t|| over C_t sqrt(v_hat_t), positive part; factor d";
    c.analysis = "||m_t|| <= sum_s (1-b1) b1^(t-s) ||xi_s|| (re-projection does not expand), then "
                 "Cauchy-Schwarz against the b2 weights.";
    c.generator_fn = [] { return gen::sequence(8); };
    STIEFEL_CHECKS(c, displacement_corrected);
    c.cost = 5;
    c.controls = {{"uncapped-step", "the uncapped step, eps = 0, rate 10 tau sqrt(r)", 1}};
    c.figures_double = &figures_moment_constant<double>;
    c.figures_mp50 = &figures_moment_constant<mp50>;
    v.push_back(c);
  }
  {  // 6e
    Claim c = base("s53-corrected-bound-tight", "§5.3 (corrected bound is attained)", "identity",
                   "The constant C_t is the tightest possible: one tangent direction with "
                   "magnitudes proportional to (b1/b2)^(T-s) gives ||m_hat_T|| = C_T sqrt(v_hat_T).");
    c.generator = "d in [2,12] ((d,r) != (1,1)), r in [1,d], T = 10^[0.3,3.5] steps (T >= 2: C_1 = 1 "
                  "is attained by every sequence), frame held fixed (eta_R = 0)";
    c.residual = "| ||m_hat_T|| / sqrt(v_hat_T) - C_T | / C_T; factor d*T";
    c.analysis = "Equality in Cauchy-Schwarz.";
    c.generator_fn = [] {
      return rc::gen::exec([] {
        Case k;
        gen::draw_frame_shape(k, {.max_d = 12, .not_one_by_one = true});
        k.steps = int(std::lround(std::pow(10.0, gen::real(0.31, 3.5, 32))));
        return k;
      });
    };
    STIEFEL_CHECKS(c, corrected_bound_tight);
    c.cost = 4;
    c.controls = {{"constant-magnitudes", "constant gradient magnitudes in place of the extremal ones", 1}};
    v.push_back(c);
  }
  {  // 7
    Claim c = base("remark5-gradient-proportional", "Remark 5, §5.3", "inequality",
                   "When ||xi_t||_F << eps the step becomes proportional to the gradient: "
                   "eta_t -> -eta_R Pi(m_hat_t) / eps.");
    c.generator = "gradient sequences (d in [2,8], T up to 1000, all profiles) with every "
                  "||G_t||_F <= delta eps, delta = 10^[-12,-2], eps = 10^[-8,0], eta_R = 10^[-3,0]";
    c.residual = "max over steps and heads of ||eta_t - eta_lin|| / ||eta_lin|| - min(delta, "
                 "delta_t), positive part, eta_lin = -eta_R Pi(m_hat_t)/eps, delta_t = max_{s<=t} "
                 "||xi_s||/eps (measured); factor d";
    c.analysis = "1/(sqrt(v_hat) + eps) = (1/eps)(1 - x/(1+x)), x = sqrt(v_hat)/eps <= delta.";
    c.generator_fn = [] {
      return rc::gen::exec([] {
        Case k;
        gen::draw_sequence(k, 8);
        k.eps_zero = false;
        k.log10_eps = gen::real(-8, 0, 80);
        k.x = gen::real(-12, -2, 100);
        k.log10_lr = gen::real(-3, 0, 30);
        return k;
      });
    };
    STIEFEL_CHECKS(c, gradient_proportional);
    c.cost = 6;
    c.controls = {{"gradients-above-eps", "the same sequences scaled to ||xi|| ~ 100 eps", 1}};
    v.push_back(c);
  }
  {  // 8
    Claim c = base("prop6i-sigma-min", "Prop. 6(i), §5.3", "inequality",
                   "sigma_min(W + eta) >= 1 for every tangent step eta, capped or not.");
    c.generator = "d in [1,24], r in [1,d], tangent steps W Omega + W_perp K scaled by 10^[-8,8]";
    c.residual = "max(0, 1 - sigma_min(W + eta)) by Jacobi SVD, normalised by sigma_max; factor d";
    c.analysis = "(W+eta)^T(W+eta) = I + eta^T eta for tangent eta.";
    c.generator_fn = [] { return gen::frame({.scale_lo = -8, .scale_hi = 8}); };
    STIEFEL_CHECKS(c, sigma_min);
    c.controls = {{"normal-step", "the normal step -W/2 in place of a tangent step", 1}};
    v.push_back(c);
  }
  {  // 9
    Claim c = base("prop6ii-angle-bound", "Prop. 6(ii), §5.3", "inequality",
                   "If ||eta||_F <= tau sqrt(r), the largest principal angle between col(W) and "
                   "col(W + eta) is at most arctan(tau sqrt(r)).");
    c.generator = "d in [2,24], r in [1,d-1] (at r = d both spans are R^d), the capped Riemannian "
                  "Adam step from a random state (m scale 10^[-2,2] relative, step count 1..1000), "
                  "tau = 10^[-2,0.5], eta_R = 10^[-3,1], gradient scale 10^[-10,10]";
    c.residual = "max(0, sin(theta_max) - b/sqrt(1+b^2)), b = tau sqrt(r), sin(theta_max) = "
                 "||(I - WW^T) Q||_2 with Q an orthonormal basis of col(W + eta) by Householder QR; "
                 "factor d*r";
    c.analysis = "tan of the principal angles = singular values of K(I+Omega)^-1, <= ||eta||_F.";
    c.generator_fn = [] {
      return rc::gen::exec([] {
        Case k;
        gen::draw_frame_shape(k, {.min_d = 2, .r_below_d = true, .scale_lo = -10, .scale_hi = 10});
        k.x = gen::real(-2, 0.5, 25);
        k.log10_lr = gen::real(-3, 1, 40);
        k.log10_c = gen::real(-2, 2, 40);
        k.steps = *rc::gen::inRange(1, 1001);
        return k;
      });
    };
    STIEFEL_CHECKS(c, angle_bound);
    c.controls = {{"uncapped-step", "the uncapped horizontal step of the same gradient with "
                                    "||eta||_F = 10 tau r", 1}};
    v.push_back(c);
  }
  {  // 7b
    Claim c = base("prop6ii-uncapped-rotation", "Prop. 6(ii) without the cap, §7 (\"rotations approaching 90 degrees\")",
                   "identity",
                   "For a horizontal step eta without a cap, the principal angles between col(W) and "
                   "col(polar(W + eta)) are arctan sigma_i(eta): the largest rotation arctan ||eta||_2 "
                   "approaches 90 degrees as the step grows, as §7 says of raising eta.");
    c.generator = "d in [2,16], r in [1,d-1], W Haar, eta = Pi^h(N) scaled to ||eta||_F = 10^[-3,2] "
                  "(89.4 degrees at the top)";
    c.residual = "the larger of ||sigma(W^T Y) - 1/sqrt(1 + sigma(eta)^2)||_2 and ||sigma((I - W W^T) Y) - "
                 "sigma(eta)/sqrt(1 + sigma(eta)^2)||_2, Y = polar(W + eta) (the cosines and sines of the "
                 "principal angles against their closed form), normalised by 1 + ||eta||_2 (the condition "
                 "of W + eta); factor d*r";
    c.analysis = "W + eta = [W W_perp][I; K] with eta = W_perp K, so polar(W + eta) = (W + eta)(I + "
                 "K^T K)^(-1/2) and W^T polar(W + eta) = (I + K^T K)^(-1/2); exact.";
    c.generator_fn = [] {
      return rc::gen::exec([] {
        Case k;
        gen::draw_frame_shape(k, {.max_d = 16, .r_below_d = true});
        k.log10_scale = gen::real(-3, 2, 50);
        return k;
      });
    };
    STIEFEL_CHECKS(c, uncapped_angle);
    c.figures_double = &figures_uncapped_rotation<double>;
    c.controls = {{"normal-component-left", "a normal component 1e-6 W left in the step: polar(W (1 + 1e-6) + eta)", 1}};
    v.push_back(c);
  }
  const auto equivariance_gen = &equivariance_cases;
  const char* const equivariance_generator =
      "f(W) = -sum_h tr(W_h^T A W_h N), A symmetric Gaussian, N = diag(1..r)/r (Brockett's cost: "
      "unlike N = I it is not constant on O(d) when r = d); d in [2,12] (O(1) = {+-1} commutes with "
      "every entrywise rule), r in [1,d], H in [1,3], T in [1,30] steps, eta = 10^[-3,0], eps = 0 "
      "or 10^[-12,-4], Q Haar on O(d)";
  const char* const equivariance_note = "; polar retraction by the Gram route (equal to the SVD route)";
  const char* const equivariance_residual =
      "max over steps and heads of max|W_t^(Q) - Q^T W_t|, normalised by max(1, max|W_t|); "
      "factor d*T";
  // An equivariance claim of the Riemannian Adam: the shared generator, residual and controls.
  auto equivariance_claim = [&](std::string id, std::string source, std::string statement, std::string analysis) {
    Claim c = base(std::move(id), std::move(source), "equivariance", std::move(statement));
    c.generator = std::string(equivariance_generator) + equivariance_note;
    c.residual = equivariance_residual;
    c.analysis = std::move(analysis);
    c.generator_fn = equivariance_gen;
    c.controls = {{"elementwise-moment", "the elementwise-moment rule (B2m)", 1}, {"adamw", "Euclidean AdamW", 2}};
    return c;
  };
  {  // 10
    Claim c = equivariance_claim("prop7-equivariance-scalar", "Prop. 7, §5.3; Table 9",
                                 "The Riemannian Adam with one scalar second moment per frame is O(d)-equivariant: "
                                 "Phi(Q^T W, Q^T g) = Q^T Phi(W, g), over many steps.",
                                 "Projection, ||.||_F, the cap and the polar factor all commute with W -> Q^T W.");
    STIEFEL_CHECKS(c, equivariance_scalar);
    c.cost = 10;
    c.figures_double = &figures_table9<double>;
    v.push_back(c);
  }
  {  // 10b
    Claim c = equivariance_claim("prop7-equivariance-per-column", "Prop. 7, §5.3; Table 9",
                                 "A per-column second moment keeps the update O(d)-equivariant as well.",
                                 "Column norms are invariant under W -> Q^T W; the scaling is a right multiplication.");
    STIEFEL_CHECKS(c, equivariance_per_column);
    c.cost = 9;
    v.push_back(c);
  }
  {  // 10b'
    Claim c = equivariance_claim("b2-mean-equivariance", "§3.2 (the B2-mean reading of v_h), Prop. 7",
                                 "The Riemannian Adam with v_h the mean of xi*xi over the d*r entries is "
                                 "O(d)-equivariant, as the per-frame scalar is.",
                                 "A mean over all entries is ||xi||_F^2 / (d r): invariant under W -> Q^T W.");
    STIEFEL_CHECKS(c, equivariance_mean);
    c.cost = 10;
    v.push_back(c);
  }
  {  // 10c
    Claim c = base("prop7-converse", "Prop. 7 (converse), §5.3; Table 9", "inequality",
                   "The elementwise Adam moment, which varies down the columns, is not "
                   "O(d)-equivariant: its violation is far above roundoff. (A per-row moment is "
                   "not a counterexample everywhere: at d = r = 2 every tangent vector has equal "
                   "row norms, so it reduces to the per-frame scalar; Table 9 reports it at d = 24.)");
    c.generator = std::string(equivariance_generator) + equivariance_note;
    c.residual = "violation = max over steps and heads of max|W_t^(Q) - Q^T W_t| for the "
                 "elementwise rule (B2m)";
    c.factor = "ratio = u * d * T * max(1, max|W|) / violation; pass at ratio <= 1e-3";
    c.tolerance = 1e-3;
    c.analysis = "A row-dependent scaling does not commute with a rotation that mixes the rows.";
    c.generator_fn = equivariance_gen;
    STIEFEL_CHECKS(c, equivariance_converse);
    c.cost = 8;
    c.controls = {{"scalar-moment", "the scalar-moment rule, which is equivariant", 1}};
    v.push_back(c);
  }
  {  // 10d
    Claim c = base("prop7-converse-family", "Prop. 7 (\"if and only if\"), §5.3", "inequality",
                   "Over a family of second moments that are not constant down the columns, "
                   "sqrt(V_ij) = sqrt(b_i v_j) with v_j the per-column moment and b a non-constant "
                   "positive row weight (spread from 10^+-0.01 to 10^+-2), the Riemannian Adam is not "
                   "O(d)-equivariant: the violation is far above roundoff for every member, at d >= 3. "
                   "(At d = r = 2 a member can be equivariant: the generator found one, the same "
                   "degeneracy as the per-row moment's; the family is therefore checked at d >= 3.)");
    c.generator = std::string(equivariance_generator) + "; row weights b_i = 10^(x u_i), u_i uniform in "
                  "[-1,1], x in [0.01,2]";
    c.residual = "violation = max over steps and heads of max|W_t^(Q) - Q^T W_t| for the row-weighted rule";
    c.factor = "ratio = u * d * T * max(1, max|W|) / violation; pass at ratio <= 1e-3";
    c.tolerance = 1e-3;
    c.analysis = "diag(b) does not commute with a rotation Q that mixes the rows unless b is constant.";
    c.generator_fn = [] {
      return rc::gen::exec([] {
        Case k = draw_equivariance_case();
        k.d = std::max(k.d, 3);  // d >= 3: see the statement
        k.r = std::min(k.r, k.d);
        k.x = gen::real(0.01, 2, 199);  // the row weights' spread
        return k;
      });
    };
    STIEFEL_CHECKS(c, equivariance_family);
    c.cost = 6;
    c.controls = {{"constant-weights", "b constant (the per-column moment), which is equivariant", 1}};
    v.push_back(c);
  }
  {  // 11
    Claim c = base("prop8-decay-annihilated", "Prop. 8, §4.3, §5.3", "identity",
                   "Pi_W(lambda W) = 0: weight decay has zero Riemannian gradient on St(d,r).");
    c.generator = "d in [1,24], r in [1,d], lambda = 10^[-12,12]";
    c.residual = "||Pi_W(lambda W)||_F / (lambda sqrt(r)); factor d";
    c.analysis = "lambda W = W (lambda I) lies in the normal space {WS}. On an orthonormal W this "
                 "holds by construction; prop8-decay-on-drifted-frame certifies what remains of the decay "
                 "off the manifold, with its constant.";
    c.generator_fn = frame_and_decay;
    STIEFEL_CHECKS(c, decay_annihilated);
    c.controls = {{"drifted-frame", "a frame scaled by 1 + 1e-6, off the manifold by 1e-6", 1}};
    v.push_back(c);
  }
  {  // 11c
    Claim c = base("prop8-decay-on-drifted-frame", "Prop. 8 off the manifold (float32 training)", "identity",
                   "On a frame with isometry error delta (as float32 training leaves it, ~1e-5), weight "
                   "decay keeps a Riemannian gradient of exactly Pi_W(lambda W) = lambda W (I - W^T W), "
                   "of norm lambda ||sigma (1 - sigma^2)||_2 <= lambda (1 + max delta) ||I - W^T W||_F.");
    c.generator = "W = U diag(1 + delta_i) V^T, |delta_i| = 10^[-8,-3] of either sign, d in [1,24], r in "
                  "[1,d], lambda = 10^[-12,12]";
    c.residual = "| ||Pi_W(lambda W)||_F - lambda ||sigma (1 - sigma^2)||_2 |, normalised by lambda sqrt(r); "
                 "factor d";
    c.analysis = "W^T(lambda W) is symmetric, so Pi_W(lambda W) = lambda (W - W W^T W) = lambda U "
                 "diag(sigma (1 - sigma^2)) V^T.";
    c.generator_fn = frame_and_decay;
    STIEFEL_CHECKS(c, decay_drifted);
    c.controls = {{"retracted-projector", "the projector of polar(W) applied to the drifted frame's "
                                          "decay (it misses the residual decay gradient)", 1}};
    v.push_back(c);
  }
  auto decay_gen = [] { return decay_gen_regime(0); };
  {  // 12
    Claim c = base("s53-decay-absorbed", "§5.3 after Prop. 7 (eta lambda < 1)", "identity",
                   "polar((1 - eta lambda) W + xi) = polar(W + xi / (1 - eta lambda)): decoupled "
                   "decay is absorbed by the retraction, for eta lambda < 1 (every run of the paper "
                   "has eta lambda <= 1e-3). Stated without a condition, it fails for eta lambda > 1: "
                   "see s53-decay-absorbed-large-step.");
    c.generator = "d in [2,24] ((d,r) != (1,1), whose tangent space is {0}), r in [1,d], tangent xi "
                  "scaled by 10^[-3,1], eta*lambda = 10^[-6,-0.001]";
    c.residual = "||lhs - rhs||_F / sqrt(r); factor d*(1 + ||xi||/|1 - eta lambda|)";
    c.analysis = "polar(cM) = polar(M) for c > 0: divide (1 - eta lambda) W + xi by 1 - eta lambda > 0.";
    c.generator_fn = [] { return decay_gen_regime(-1); };
    STIEFEL_CHECKS(c, decay_absorbed);
    c.controls = {{"unscaled-step", "polar(W + xi) without the 1/(1 - eta lambda) rescale", 1}};
    v.push_back(c);
  }
  {  // 12a
    Claim c = base("s53-decay-absorbed-large-step", "§5.3 after Prop. 7 (eta lambda > 1)", "identity",
                   "The same identity where the paper's statement, which has no condition on eta "
                   "lambda, also asserts it: for eta lambda > 1.");
    c.generator = "as for s53-decay-absorbed, with eta*lambda = 10^[0.001,0.6]";
    c.residual = "as for s53-decay-absorbed";
    c.expected = Expected::kRefuted;
    c.analysis = "polar(cM) = sign(c) polar(M): for eta*lambda > 1 the two sides are negatives of "
                 "each other, and at eta*lambda = 1 the right side is undefined.";
    c.generator_fn = [] { return decay_gen_regime(1); };
    STIEFEL_CHECKS(c, decay_absorbed);
    c.controls = {{"unscaled-step", "polar(W + xi) without the 1/(1 - eta lambda) rescale", 1}};
    v.push_back(c);
  }
  {  // 12b
    Claim c = base("s53-decay-absorbed-corrected", "§5.3 after Prop. 7 (corrected)", "identity",
                   "Corrected statement: polar((1 - eta lambda) W + xi) = sign(1 - eta lambda) "
                   "polar(W + xi/(1 - eta lambda)) for eta lambda != 1; the paper's form holds "
                   "exactly when eta lambda < 1.");
    c.generator = "as for s53-decay-absorbed, with eta*lambda = 10^[-6,-0.001] or 10^[0.001,0.6]";
    c.residual = "as for s53-decay-absorbed";
    c.analysis = "Positive homogeneity and oddness of the polar factor.";
    c.generator_fn = decay_gen;
    STIEFEL_CHECKS(c, decay_absorbed_corrected);
    c.controls = {{"unscaled-step", "polar(W + xi) without the 1/(1 - eta lambda) rescale", 1}};
    v.push_back(c);
  }
  {  // 13
    Claim c = base("s54-decay-fixed-point-off-manifold", "§5.4", "identity",
                   "The fixed point W* = -grad L(W*)/lambda of decoupled weight decay generically "
                   "lies off St(d,r): weight decay drives W towards 0, not towards St(d,r). Certified "
                   "as a value: on L(W) = ||W - B||^2/2 the iteration's fixed point is B/(1+lambda), "
                   "whose distance from St(d,r) is ||sigma(B)/(1+lambda) - 1||_2, zero only when every "
                   "singular value of B equals 1 + lambda.");
    c.generator = "B = (1+lambda) U diag(sigma) V^T with U in St(d,r), V in O(r) Haar and sigma_i = "
                  "10^([-2,2] + [-0.5,0.5]), lambda = 10^[-3,1], d in [1,24], r in [1,d]; the "
                  "iteration W <- W - eta grad L - eta lambda W (eta = 1/(2(1+lambda))) run from 0 "
                  "until its step is at roundoff";
    c.residual = "the worse of |dist(W*, St) - ||sigma - 1||_2| with dist = ||W* - polar(W*)||_F, and "
                 "||W* - B/(1+lambda)||_F, each normalised by ||sigma||_2 + sqrt(r); factor d*r";
    c.analysis = "W* = B/(1+lambda) = U diag(sigma) V^T; its nearest point of St(d,r) is U V^T "
                 "(the polar factor), at distance ||sigma - 1||_2.";
    c.generator_fn = [] {
      return rc::gen::exec([] {
        Case k;
        gen::draw_frame_shape(k, {.scale_lo = -2, .scale_hi = 2});
        k.x = gen::real(-3, 1, 40);
        return k;
      });
    };
    STIEFEL_CHECKS(c, decay_fixed_point);
    c.controls = {{"decay-without-step-size", "W <- W - eta grad L - lambda W (the decay not scaled by "
                                              "eta): fixed point eta B/(eta + lambda)", 1},
                  {"stopped-early", "the iteration stopped at a relative step of 1e-6 instead of "
                                    "roundoff (a near miss)", 2}};
    v.push_back(c);
  }
  {  // 14
    Claim c = base("s2-polar-nearest", "§2", "inequality",
                   "The polar retraction is the Frobenius-nearest point of St(d,r): "
                   "||M - polar(M)||_F <= ||M - Y||_F for every Y in St(d,r).");
    c.generator = "M = U diag(sigma) V^T, sigma_i = 10^[-6,2] times 10^[-3,3] (near rank deficiency "
                  "included), d in [1,24], r in [1,d]; Y: three random points, -polar(M), the "
                  "point reached along the Riemannian gradient of the distance, the r points with one "
                  "column's sign flipped (the other critical points), and two random neighbours at "
                  "distances 1e-2 and 1e-4";
    c.residual = "max(0, ||M - P||^2 - ||M - Y||^2) computed as 2<M, Y - P> - (||Y||^2 - ||P||^2), "
                 "normalised by ||M|| ||Y - P|| + r; factor d";
    c.analysis = "||M - Y||^2 = ||M||^2 + r - 2 tr(Y^T M), and tr(Y^T M) <= ||M||_* with equality "
                 "at the polar factor.";
    c.generator_fn = [] { return gen::frame({.scale_lo = -3, .scale_hi = 3}); };
    STIEFEL_CHECKS(c, polar_nearest);
    c.controls = {{"flipped-column", "polar(M) with its first column negated", 1}};
    v.push_back(c);
  }
  {  // 14b
    Claim c = base("s2-polar-routes-agree", "§2, §3.2, Prop. 6(i)", "identity",
                   "The polar retraction by thin SVD, by the Gram route M (M^T M)^(-1/2), and by "
                   "the tangent Gram route (W + eta)(I + eta^T eta)^(-1/2) agree and land on St(d,r).");
    c.generator = "d in [1,24], r in [1,d], tangent eta of norm 10^[-8,2] (up to 200 times the "
                  "largest capped step tau sqrt(r))";
    c.residual = "||svd - gram|| / sqrt(r), ||svd - tangent gram|| / sqrt(r) with factor "
                 "d*kappa^2, kappa = 1 + ||eta|| (the Gram route squares the condition number); "
                 "||P^T P - I||_max with factor d";
    c.analysis = "Uniqueness of the polar factor of a full-rank matrix; (W+eta)^T(W+eta) = I + "
                 "eta^T eta for tangent eta.";
    c.generator_fn = [] { return gen::frame({.scale_lo = -8, .scale_hi = 2}); };
    STIEFEL_CHECKS(c, polar_routes);
    c.controls = {{"non-tangent-step", "a step with a normal component W S, |S| ~ (1 + ||eta||)/2, "
                                       "through the tangent Gram route", 1}};
    v.push_back(c);
  }
  {  // 15
    Claim c = base("s2-query-norm-bound", "§2 (attention logit growth)", "inequality",
                   "||W_Q^T x|| <= ||x|| for W_Q in St(d,r).");
    c.generator = "x = W a/||a|| + t W_perp z/||z|| with t in [0,1/2] (near col(W), where the bound is tight), "
                  "scaled by 10^[-20,20]; d in [1,24], r in [1,d]";
    c.residual = "max(0, ||W^T x|| - ||x||) / ||x||; factor d";
    c.analysis = "W W^T is an orthogonal projector.";
    c.generator_fn = [] {
      return rc::gen::exec([] {
        Case k;
        gen::draw_frame_shape(k, {.scale_lo = -20, .scale_hi = 20});
        k.x = gen::real(0, 0.5, 50);
        return k;
      });
    };
    STIEFEL_CHECKS(c, query_norm);
    c.controls = {{"scaled-frame", "the frame scaled by 3/2 off the manifold", 1}};
    v.push_back(c);
  }
  {  // 16
    Claim c = base("s2-retraction-second-order", "§2, §3.2", "order",
                   "The polar retraction agrees with the Riemannian exponential to second order: "
                   "||polar(W + t xi) - Exp_W(t xi)|| = O(t^3).");
    c.generator = "d in [2,12] ((d,r) != (1,1)), r in [1,d], unit tangent xi, t = 1e-2 / 2^k, k = 0..8";
    c.residual = "least-squares log-log slope of the remainder against t, over every t whose "
                 "remainder exceeds the rounding floor 1e4 u d";
    c.factor = "ratio = max(0, 3 - slope) (a larger slope is still third order); pass at <= 0.3; "
               "a control is killed at >= 0.6";
    c.tolerance = 0.3;
    c.control_margin = 2;
    c.analysis = "Projective retractions are second order (Absil & Malick 2012).";
    c.generator_fn = [] { return gen::frame({.max_d = 12, .not_one_by_one = true}); };
    STIEFEL_CHECKS(c, retraction_order);
    c.cost = 3;
    c.controls = {{"no-retraction", "W + t xi without the retraction (first order)", 1}};
    v.push_back(c);
  }
  {  // 17
    Claim c = base("attention-gradient-taylor", "§5.1, Table 8 (the gradient behind claims 1-2)", "order",
                   "The analytic attention gradient is the derivative of the loss: the Taylor "
                   "remainder |L(W + h D) - L(W) - h <grad, D>| is O(h^2).");
    c.generator = "attention problems: n in [2,7], d in [1,12], r in [1,d], H in [1,3]; "
                  "unit direction D, h = 2^-k, k = 0..16";
    c.residual = "least-squares log-log slope against h of the two-sided remainder (|r(h)| + |r(-h)|)/2, "
                 "r(h) = L(W + hD) - L(W) - h <grad, D> (a second- and a third-order term cannot "
                 "cancel in it), over the four smallest h whose remainder exceeds the rounding floor "
                 "1e4 u n sum_h ||C_h|| ||X U_h||";
    c.factor = "ratio = max(0, 2 - slope) (a larger slope is still second order); pass at <= 0.3; "
               "a control is killed at >= 0.6";
    c.tolerance = 0.3;
    c.control_margin = 2;
    c.analysis = "Hand-derived backward pass of softmax attention.";
    c.generator_fn = [] { return gen::attention(1); };
    STIEFEL_CHECKS(c, attention_taylor);
    c.controls = {{"gradient-error", "a gradient error of 0.1% of the loss scale sum_h ||C_h|| "
                                     "||X U_h|| along the probe direction", 1}};
    v.push_back(c);
  }
  {  // 18
    Claim c = base("s53-canonical-gradient", "eq. (4), §4.3, §5.3", "identity",
                   "grad^can = G - W G^T W is the Riesz representer of the Euclidean differential "
                   "in the canonical metric: g_c(grad^can, xi) = <G, xi> for every tangent xi.");
    c.generator = "d in [2,24], r in [2,d] (at r = 1 the two metrics coincide on T_W St), G scaled "
                  "by 10^[-12,12], two random tangent vectors";
    c.residual = "|g_c(grad^can, xi) - <G, xi>| / (||G|| ||xi||); factor d";
    c.analysis = "Edelman, Arias & Smith (1998), (2.53).";
    c.generator_fn = [] { return gen::frame({.min_r = 2}); };
    STIEFEL_CHECKS(c, canonical_riesz);
    c.controls = {{"embedded-gradient", "Pi_W G in place of the canonical gradient", 1}};
    v.push_back(c);
  }
  {  // 19
    Claim c = base("s53-canonical-norm-split", "§5.3 (metric-consistent moment)", "identity",
                   "The canonical norm tr(xi^T (I - WW^T/2) xi) differs from the Frobenius one by "
                   "the horizontal/vertical split: ||xi||_c^2 = ||Pi^h xi||^2 + ||W^T xi||^2 / 2.");
    c.generator = "d in [2,24], r in [2,d], tangent xi scaled by 10^[-12,12]";
    c.residual = "| ||xi||_c^2 - ||Pi^h xi||^2 - ||W^T xi||^2/2 | / ||xi||^2; factor d";
    c.analysis = "xi = (I - WW^T) xi + W (W^T xi), orthogonal parts.";
    c.generator_fn = [] { return gen::frame({.min_r = 2}); };
    STIEFEL_CHECKS(c, canonical_norm_split);
    c.controls = {{"frobenius-norm", "the Frobenius norm in place of the canonical one", 1}};
    v.push_back(c);
  }
  {  // 20
    Claim c = base("table6-frozen-arm-stays", "Table 6 (frozen arm), §2", "identity",
                   "The frozen arm (eta_R = 0) still retracts each step, and polar(W) = W for W on "
                   "St(d,r), so its frames never move.");
    c.generator = "d in [1,24], r in [1,d]";
    c.residual = "||polar(W) - W||_F / sqrt(r) and ||frozen_step(W) - W||_F / sqrt(r); factor d";
    c.analysis = "W = W I is its own polar decomposition.";
    c.generator_fn = [] { return gen::frame({}); };
    STIEFEL_CHECKS(c, frozen_fixes_frame);
    c.controls = {{"off-manifold-frame", "W (I + 1e-6 S), S symmetric, 1e-6 off the manifold", 1}};
    v.push_back(c);
  }
  const char* const update_controls_note =
      " Controls are bugs an implementation makes, each a near miss: a normal component of "
      "1e-6 ||eta|| left in the step, the first moment not re-projected at the new frame, the polar "
      "factor's second-order expansion, and the cap applied to the [H,d,r] tensor as a whole.";
  {  // implemented update
    Claim c = base("update-step-tangent-every-rule", "§3.2, §4.3 (the update every frame arm runs)", "identity",
                   "For every frame rule the training core offers (B2, B2-mean, per-column, "
                   "Grassmann, B2m, B2m-can, PA16's Riemannian SGD, Stiefel SGD, frozen), step after "
                   "step of a gradient sequence: the step is tangent at W_t (horizontal for the "
                   "Grassmann rules), the stored first moment is tangent at W_(t+1) after "
                   "re-projection, W_(t+1) is on St(d,r), and each head's step norm is "
                   "min(||Pi(eta m_hat / (sqrt(v_hat) + eps))||, tau sqrt(r)) (no cap for B2m, B2m-can).");
    c.generator = "d in [2,6], r in [1,d], H in [2,3] (the cap is per head), T in [1,10] steps of "
                  "gradients sqrt(corr) D + sqrt(1-corr) N_t with the sequence claims' seven magnitude "
                  "profiles and base scale 10^[-6,6]; peak rate 10^[-0.5,0.5] under a constant or a "
                  "warm-up-then-cosine schedule (the training core's: rates from peak/W up to the peak "
                  "and down to exactly 0), eps = 0 or 10^-[4,10] times the scale (below the gradients: where eps "
                  "dominates, the step is eps-limited and no bug of the step is visible)";
    c.residual = "the worst over rules, steps and heads of four ratios: ||sym(W^T eta)|| (||W^T eta|| for "
                 "the Grassmann rules) over the step's unprojected scale ||eta q|| min(1, tau sqrt(r) / "
                 "||Pi(eta q)||); the moment's normal part at W_(t+1) over ||m||; max|W^T W - I|; and "
                 "| ||eta_h|| - min(||Pi(eta q)||, tau sqrt(r)) | over the step's scale; factor d*r";
    c.analysis = "Every step re-projects, the polar factor is on St(d,r) to rounding, and the cap "
                 "rescales each head separately; exact up to rounding." + std::string(update_controls_note);
    c.generator_fn = [] {
      return rc::gen::exec([] {
        Case k;
        k.d = *rc::gen::inRange(2, 7);
        k.r = *rc::gen::inRange(1, k.d + 1);
        k.heads = *rc::gen::inRange(2, 4);
        k.steps = *rc::gen::inRange(1, 11);
        k.profile = *rc::gen::inRange(0, 7);
        if (k.profile == 5) k.steps = std::max(k.steps, 2);  // the drop starts at T/2: keep a first step
        k.log10_scale = gen::real(-6, 6, 24);
        k.log10_lr = gen::real(-0.5, 0.5, 10);
        k.eps_zero = *rc::gen::arbitrary<bool>();
        k.log10_eps = k.log10_scale - gen::real(4, 10, 12);
        const double x = gen::real(0, 1, 10);
        k.corr = 1 - x * x;
        k.x = *rc::gen::inRange(0, 2);  // schedule: 0 constant, 1 warm-up then cosine
        k.seed = *rc::gen::arbitrary<std::uint64_t>();
        return k;
      });
    };
    STIEFEL_CHECKS(c, update_invariants);
    c.cost = 6;
    c.controls = {{"normal-component-left", "a normal component 1e-6 ||eta|| W / sqrt(r) left in every step", 1},
                  {"moment-not-reprojected", "the stored first moment not re-projected at W_(t+1)", 2},
                  {"second-order-polar", "(W + eta)(I - eta^T eta / 2) in place of the polar factor", 3},
                  {"cap-whole-tensor", "the cap tau sqrt(r) applied to the [H,d,r] step as a whole", 4}};
    v.push_back(c);
  }
  {  // implemented update, long runs
    Claim c = base("update-long-run-isometry", "§3.2, §4.1 (isometry error over training)", "identity",
                   "Over long runs every frame rule keeps its frames on St(d,r): the isometry error "
                   "max|W_t^T W_t - I| stays at rounding level for 10^4 steps, without growth.");
    c.generator = "one deterministic run per rule: float64, d = 32, r = 8, 10^4 steps; 50 digits, "
                  "d = 8, r = 3, 200 steps (a 50-digit run of 10^4 steps costs minutes); one head, "
                  "correlated Gaussian gradients, warm-up and cosine schedule, peak rate 0.05. The "
                  "figures give the running maximum at t = 1, 10, ..., 10^4 and its growth exponent "
                  "for every rule in float32 and for B2 in float64; the control runs B2 only";
    c.residual = "the running maximum of max|W_t^T W_t - I| at the last step, worst rule; factor d*r";
    c.analysis = "The polar factor is recomputed every step, so the error does not accumulate: it is "
                 "that of one polar factor, O(u), at every t.";
    c.randomised = false;
    c.generator_fn = [] { return rc::gen::just(Case{}); };
    STIEFEL_CHECKS(c, update_long_run);
    c.cost = 8;
    c.figures_double = &figures_long_run<double>;
    c.controls = {{"second-order-polar", "(W + eta)(I - eta^T eta / 2) in place of the polar factor", 3}};
    v.push_back(c);
  }
  return v;
}

}  // namespace

const std::vector<Claim>& registry() {
  static const std::vector<Claim> claims = build();
  return claims;
}

}  // namespace stiefel::certificates
