// The claims of §5.3 after Prop. 3 and Remark 5: the displacement bound, the Jensen step it rests on, the
// corrected bound and its tightness, the first step, and the gradient-proportional regime.
#include "refutation_proofs.h"
#include "claim_builder.h"
#include "claim_groups.h"
#include "s53_displacement.h"

namespace stiefel::certificates {
namespace {

Claim s53_jensen_moment_bound() {
  Claim c = make_claim("s53-jensen-moment-bound", "§5.3 after Prop. 3", "inequality",
                       "||m_hat_t||_F <= sqrt(v_hat_t) for every t \"by Jensen's inequality\".");
  c.generator = "gradient sequences as for prop3ii-adam-scale-free, eps = 0 or 10^[-12,-2]";
  c.residual =
      "max over steps and heads of (||m_hat_t|| - sqrt(v_hat_t)) / sqrt(v_hat_t), "
      "positive part; factor d";
  c.expected = Expected::kRefuted;
  c.proof = {&prove_jensen_moment_bound, &prove_jensen_moment_bound_corrected,
             "the corrected bound ||m_hat_t||^2 <= C_t^2 v_hat_t over the counterexample's whole trajectory"};
  c.analysis =
      "m_hat and v_hat average with different weights (beta1 = 0.9 vs beta2 = 0.999), "
      "so Jensen does not apply: a rise of the gradient after small ones gives "
      "||m_hat|| > sqrt(v_hat) (sup ratio C_t -> 7.27; C_2 = 1.0013 already).";
  c.generator_fn = [] { return gen::sequence(8); };
  c.cost = 3;
  set_check(c, &check_jensen_moment_bound<double>, &check_jensen_moment_bound<mp50>,
            {{JensenMutant::kDoubleBiasCorrection, "double-bias-correction", "m_hat bias-corrected twice"}});
  return c;
}

Claim s53_displacement_bound() {
  Claim c = make_claim("s53-displacement-bound", "§5.3 after Prop. 3", "inequality",
                       "The per-step relative displacement of a frame is at most min(eta, tau sqrt(r)) "
                       "/ sqrt(r), independent of ||g_t||: ||eta_t||_F <= min(eta_R, tau sqrt(r)).");
  c.generator = "gradient sequences as for prop3ii-adam-scale-free, eps = 0 or 10^[-12,-2]";
  c.residual =
      "max over steps and heads of (||eta_t||_F - min(eta_R, tau sqrt r)) / "
      "min(eta_R, tau sqrt r), positive part; factor d";
  c.expected = Expected::kRefuted;
  c.proof = {&prove_displacement_bound, &prove_displacement_bound_corrected,
             "the corrected bound ||eta_t|| <= min(eta C_t, tau sqrt(r)) over the counterexample's whole trajectory"};
  c.analysis =
      "It rests on the false Jensen step: when eta_R < tau sqrt(r) (warm-up, cosine tail, "
      "or any small rate) the step reaches eta_R C_t > eta_R.";
  c.generator_fn = [] { return gen::sequence(8); };
  c.cost = 5;
  set_check(
      c, &check_displacement_bound<double>, &check_displacement_bound<mp50>,
      {{DisplacementBoundMutant::kUncappedStep, "uncapped-step", "the uncapped step, eps = 0, rate 10 tau sqrt(r)"}});
  return c;
}

Claim s53_first_step_equality() {
  Claim c = make_claim("s53-first-step-equality", "§5.3 after Prop. 3", "identity",
                       "With eps = 0 the first step has ||eta_1||_F = min(eta_R, tau sqrt(r)) exactly "
                       "(and, under the B2-mean reading of v_h, min(eta_R sqrt(d r), tau sqrt(r))).");
  c.generator = "d in [1,24], r in [1,d], gradient scale 10^[-12,12], eta_R = 10^[-3,1]";
  c.residual =
      "| ||eta_1|| - min(eta_R, tau sqrt r) | / min(eta_R, tau sqrt r), and the same for "
      "B2-mean with min(eta_R sqrt(d r), tau sqrt r); factor d";
  c.analysis =
      "m_hat_1 = xi_1 and v_hat_1 = ||xi_1||^2 (||xi_1||^2/(d r) for B2-mean), so the "
      "quotient is a unit tangent vector (of norm sqrt(d r) for B2-mean).";
  c.generator_fn = [] {
    return rc::gen::exec([] {
      Case k;
      gen::draw_frame_shape(k, {.not_one_by_one = true});
      k.log10_lr = gen::real(-3, 1, 40);
      return k;
    });
  };
  set_check(
      c, &check_first_step_equality<double>, &check_first_step_equality<mp50>,
      {{FirstStepMutant::kUncappedEpsAtGradient, "uncapped-eps-at-gradient", "no cap and eps equal to ||xi_1||"}});
  return c;
}

Claim s53_displacement_bound_corrected() {
  Claim c = make_claim("s53-displacement-bound-corrected", "§5.3 after Prop. 3 (corrected)", "inequality",
                       "Corrected statement: ||m_hat_t||_F <= C_t sqrt(v_hat_t) and ||eta_t||_F <= "
                       "min(eta_R C_t, tau sqrt(r)), with C_t^2 = (1-b1)^2 (1-b2^t) / ((1-b1^t)^2 "
                       "(1-b2)) * sum_{k<t} (b1^2/b2)^k (C_1 = 1, C_t -> 7.27 for b1 = 0.9, b2 = 0.999).");
  c.generator = "gradient sequences as for prop3ii-adam-scale-free, eps = 0 or 10^[-12,-2]";
  c.residual =
      "max over steps and heads of the relative excess of ||eta_t|| over its bound and "
      "of ||m_hat_t|| over C_t sqrt(v_hat_t), positive part; factor d";
  c.analysis =
      "||m_t|| <= sum_s (1-b1) b1^(t-s) ||xi_s|| (re-projection does not expand), then "
      "Cauchy-Schwarz against the b2 weights.";
  c.generator_fn = [] { return gen::sequence(8); };
  c.cost = 5;
  set_check(
      c, &check_displacement_corrected<double>, &check_displacement_corrected<mp50>,
      {{DisplacementBoundMutant::kUncappedStep, "uncapped-step", "the uncapped step, eps = 0, rate 10 tau sqrt(r)"}});
  c.figures_double = &figures_moment_constant<double>;
  c.figures_mp50 = &figures_moment_constant<mp50>;
  return c;
}

Claim s53_corrected_bound_tight() {
  Claim c = make_claim("s53-corrected-bound-tight", "§5.3 (corrected bound is attained)", "identity",
                       "The constant C_t is the tightest possible: one tangent direction with "
                       "magnitudes proportional to (b1/b2)^(T-s) gives ||m_hat_T|| = C_T sqrt(v_hat_T).");
  c.generator =
      "d in [2,12] ((d,r) != (1,1)), r in [1,d], T = 10^[0.3,3.5] steps (T >= 2: C_1 = 1 "
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
  c.cost = 4;
  set_check(c, &check_corrected_bound_tight<double>, &check_corrected_bound_tight<mp50>,
            {{TightBoundMutant::kConstantMagnitudes, "constant-magnitudes",
              "constant gradient magnitudes in place of the extremal ones"}});
  return c;
}

Claim remark5_gradient_proportional() {
  Claim c = make_claim("remark5-gradient-proportional", "Remark 5, §5.3", "inequality",
                       "When ||xi_t||_F << eps the step becomes proportional to the gradient: "
                       "eta_t -> -eta_R Pi(m_hat_t) / eps.");
  c.generator =
      "gradient sequences (d in [2,8], T up to 1000, all profiles) with every "
      "||G_t||_F <= delta eps, delta = 10^[-12,-2], eps = 10^[-8,0], eta_R = 10^[-3,0]";
  c.residual =
      "max over steps and heads of ||eta_t - eta_lin|| / ||eta_lin|| - min(delta, "
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
  c.cost = 6;
  set_check(c, &check_gradient_proportional<double>, &check_gradient_proportional<mp50>,
            {{GradientProportionalMutant::kGradientsAboveEps, "gradients-above-eps",
              "the same sequences scaled to ||xi|| ~ 100 eps"}});
  return c;
}

}  // namespace

std::vector<Claim> s53_displacement_claims() {
  return {s53_jensen_moment_bound(),          s53_displacement_bound(),    s53_first_step_equality(),
          s53_displacement_bound_corrected(), s53_corrected_bound_tight(), remark5_gradient_proportional()};
}

}  // namespace stiefel::certificates
