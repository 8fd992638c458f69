// The claims of Prop. 3, §5.3: the degree of the SGD displacement and the scale-freeness of the
// Riemannian Adam, with its ε defect.
#include "claim_builder.h"
#include "claim_groups.h"
#include "prop3_scale_invariance.h"

namespace stiefel::certificates {
namespace {

// Gradient sequences with a scale factor c = 2^k (the scale-freeness claims).
rc::Gen<Case> scale_free_cases() {
  return rc::gen::exec([] {
    Case k;
    gen::draw_sequence(k, 8);
    k.log10_c = (*rc::gen::arbitrary<bool>() ? 1 : -1) * double(*rc::gen::inRange(4, 67));  // k of c = 2^k
    return k;
  });
}

Claim prop3i_sgd_degree_one() {
  Claim c = make_claim("prop3i-sgd-degree-one", "Prop. 3(i), §5.3", "invariance",
                       "The fixed-step Riemannian SGD displacement is degree one in the gradient: "
                       "xi_sgd(c g) = c xi_sgd(g), so ||xi_sgd|| = eta ||Pi_W g||.");
  c.generator =
      "d in [2,24] ((d,r) != (1,1), whose tangent space is {0}), r in [1,d], "
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
  set_check(c, &check_sgd_degree_one<double>, &check_sgd_degree_one<mp50>,
            {{SgdDegreeOneMutant::kAdamFirstStep, "adam-first-step",
              "the Riemannian Adam's first step (degree zero) in place of the SGD displacement"}});
  return c;
}

Claim prop3ii_adam_scale_free() {
  Claim c = make_claim("prop3ii-adam-scale-free", "Prop. 3(ii), §5.3", "invariance",
                       "With one scalar second moment per frame and eps = 0, scaling every gradient "
                       "by c > 0 leaves every iterate of the Riemannian Adam unchanged.");
  c.generator =
      "gradient sequences: d in [2,8], r in [1,d], H in [1,2], T = 1..1000 steps, "
      "profiles constant/decaying/growing/spikes/alternating/drop/rise, a persistent "
      "direction of weight corr in [0,1] plus fresh noise, base scale "
      "10^[-30,30], c = 2^k with |k| in [4,66] (a power of two scales every floating-"
      "point operation exactly, so any difference is the rule's, not rounding's), "
      "eta_R = 10^[-3,1] (cap active and inactive), tau = 0.1, polar retraction (Gram route)";
  c.residual =
      "max over steps and heads of ||W_t(c g) - W_t(g)||_F, normalised by sqrt(r); "
      "factor d*T";
  c.analysis = "m is degree 1, v degree 2, the quotient, cap and retraction degree 0 (induction).";
  c.generator_fn = &scale_free_cases;
  c.cost = 5;
  set_check(c, &check_adam_scale_free<double>, &check_adam_scale_free<mp50>,
            {{AdamScaleFreeMutant::kEpsAtGradientScale, "eps-at-gradient-scale",
              "eps set at the gradient scale and no cap"}});
  return c;
}

Claim b2_mean_scale_free() {
  Claim c = make_claim("b2-mean-scale-free", "§3.2 (the B2-mean reading of v_h), Prop. 3(ii)", "invariance",
                       "With v_h the mean of xi*xi over the d*r entries (the reading of §3.2 under which the "
                       "cap binds on almost every step) and eps = 0, scaling every gradient by c > 0 leaves "
                       "every iterate unchanged.");
  c.generator = "gradient sequences as for prop3ii-adam-scale-free (c = 2^k)";
  c.residual = "max over steps and heads of ||W_t(c g) - W_t(g)||_F, normalised by sqrt(r); factor d*T";
  c.analysis =
      "v_h = ||xi||_F^2 / (d r) is degree 2 like ||xi||_F^2; the division by d r is exact "
      "under a power-of-two c, so the induction of Prop. 3(ii) carries over.";
  c.generator_fn = &scale_free_cases;
  c.cost = 5;
  set_check(c, &check_adam_mean_scale_free<double>, &check_adam_mean_scale_free<mp50>,
            {{AdamScaleFreeMutant::kEpsAtGradientScale, "eps-at-gradient-scale",
              "eps set at the gradient scale and no cap"}});
  return c;
}

Claim prop3ii_eps_scale_defect() {
  Claim c = make_claim("prop3ii-eps-scale-defect", "Prop. 3(ii), §5.3 (any c > 0, eps > 0)", "identity",
                       "With a scalar second moment and eps > 0, the step from the c-scaled gradient and "
                       "state is the unscaled step times rho = c (sqrt(v_hat) + eps) / (c sqrt(v_hat) + eps), "
                       "exactly, so it differs by |rho - 1| <= (eps / sqrt(v_hat)) |1 - 1/c|: scale-free "
                       "up to a defect that vanishes when ||xi|| >> eps (and exactly scale-free at eps = 0, "
                       "rho = 1, for any c, not only powers of two).");
  c.generator =
      "gradient sequences: d in [2,8], r in [1,d], H in [1,2], T in [1,40] steps, the seven "
      "magnitude profiles, base scale 10^[-10,10], eps = 10^[-2,2] times the base scale "
      "(the regime where eps matters), c = 10^(+-[1,20]) (not powers of two: the scaled "
      "inputs carry rounding), rate 10^[-3,0], per-frame or mean moment, uncapped (the cap "
      "is a projection onto a ball, 1-Lipschitz: the capped steps differ by no more)";
  c.residual =
      "max over steps and heads of ||eta(c g, c m, c^2 v) - rho eta(g, m, v)||_F along the "
      "unscaled run, normalised by ||eta(c g)||; factor d*r + 64 (the projection, and the scalar "
      "chain of bias corrections, square roots and rho)";
  c.analysis =
      "m_hat -> c m_hat and sqrt(v_hat) -> c sqrt(v_hat); the quotient's scalar "
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
  c.cost = 3;
  set_check(
      c, &check_eps_scale_defect<double>, &check_eps_scale_defect<mp50>,
      {{EpsScaleDefectMutant::kEpsInsideSqrt, "eps-inside-sqrt",
        "rho of a rule with eps inside the square root, c sqrt(v_hat + eps) / sqrt(c^2 v_hat + "
        "eps)"},
       {EpsScaleDefectMutant::kEpsIgnored, "eps-ignored", "rho = 1: the eps = 0 statement applied with eps > 0"}});
  return c;
}

}  // namespace

std::vector<Claim> prop3_scale_invariance_claims() {
  return {prop3i_sgd_degree_one(), prop3ii_adam_scale_free(), b2_mean_scale_free(), prop3ii_eps_scale_defect()};
}

}  // namespace stiefel::certificates
