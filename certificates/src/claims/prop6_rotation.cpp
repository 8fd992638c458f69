// The claims of Prop. 6, §5.3 and §7: σ_min(W + η) ≥ 1, the capped rotation bound, and the uncapped rotation.
#include "claim_builder.h"
#include "claim_groups.h"
#include "prop6_rotation.h"

#include <algorithm>
#include <cmath>

namespace stiefel::certificates {
namespace {

Claim prop6i_sigma_min() {
  Claim c = make_claim("prop6i-sigma-min", "Prop. 6(i), §5.3", "inequality",
                       "sigma_min(W + eta) >= 1 for every tangent step eta, capped or not.");
  c.generator =
      "d in [2,24] (St(1,1) = {+-1} has no tangent step), r in [1,d], a tangent step W Omega + W_perp K "
      "scaled by 10^[-8,8], and the same "
      "step at norm 1e-4 (where the bound is tight to 1e-8)";
  c.residual =
      "the worse of max(0, 1 - sigma_min(W + eta)) by Jacobi SVD, normalised by sigma_max, over the two "
      "steps; factor d";
  c.analysis = "(W+eta)^T(W+eta) = I + eta^T eta for tangent eta.";
  c.generator_fn = [] { return gen::frame({.not_one_by_one = true, .scale_lo = -8, .scale_hi = 8}); };
  set_check(
      c, &check_sigma_min<double>, &check_sigma_min<mp50>,
      {{SigmaMinMutant::kNormalComponentLeft, "normal-component-left", "a normal component -1e-6 W left in the step"}});
  return c;
}

Claim prop6ii_angle_bound() {
  Claim c = make_claim("prop6ii-angle-bound", "Prop. 6(ii), §5.3", "inequality",
                       "If ||eta||_F <= tau sqrt(r), the largest principal angle between col(W) and "
                       "col(W + eta) is at most arctan(tau sqrt(r)).");
  c.generator =
      "d in [2,24], r in [1,d-1] (at r = d both spans are R^d), the capped Riemannian "
      "Adam step from a random state (m scale 10^[-2,2] relative, step count 1..1000), "
      "tau = 10^[-2,0.5], eta_R = 10^[-3,1], gradient scale 10^[-10,10]";
  c.residual =
      "max(0, sin(theta_max) - b/sqrt(1+b^2)), b = tau sqrt(r), sin(theta_max) = "
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
  set_check(c, &check_angle_bound<double>, &check_angle_bound<mp50>,
            {{AngleBoundMutant::kUncappedStep, "uncapped-step",
              "the uncapped horizontal step of the same gradient with ||eta||_F = 10 tau r"},
             {AngleBoundMutant::kRankOneCapOnePercentOver, "rank-one-cap-1pct-over",
              "a rank-one horizontal step capped at 1.01 tau sqrt(r), where the bound is tight (its one angle is "
              "arctan ||eta||_F)"}});
  return c;
}

Claim prop6ii_uncapped_rotation() {
  Claim c = make_claim("prop6ii-uncapped-rotation",
                       "Prop. 6(ii) without the cap, §7 (\"rotations approaching 90 degrees\")", "identity",
                       "For a horizontal step eta without a cap, the principal angles between col(W) and "
                       "col(polar(W + eta)) are arctan sigma_i(eta): the largest rotation arctan ||eta||_2 "
                       "approaches 90 degrees as the step grows, as §7 says of raising eta.");
  c.generator =
      "d in [2,16], r in [1,d-1], W Haar, eta = Pi^h(N) scaled to ||eta||_F = 10^[-3,2] "
      "(89.4 degrees at the top)";
  c.residual =
      "the larger of ||sigma(W^T Y) - 1/sqrt(1 + sigma(eta)^2)||_2 and ||sigma((I - W W^T) Y) - "
      "sigma(eta)/sqrt(1 + sigma(eta)^2)||_2, Y = polar(W + eta) (the cosines and sines of the "
      "principal angles against their closed form), normalised by 1 + ||eta||_2 (the condition "
      "of W + eta); factor d*r";
  c.analysis =
      "W + eta = [W W_perp][I; K] with eta = W_perp K, so polar(W + eta) = (W + eta)(I + "
      "K^T K)^(-1/2) and W^T polar(W + eta) = (I + K^T K)^(-1/2); exact.";
  c.generator_fn = [] {
    return rc::gen::exec([] {
      Case k;
      gen::draw_frame_shape(k, {.max_d = 16, .r_below_d = true});
      k.log10_scale = gen::real(-3, 2, 50);
      return k;
    });
  };
  c.figures_double = &figures_uncapped_rotation<double>;
  set_check(c, &check_uncapped_angle<double>, &check_uncapped_angle<mp50>,
            {{UncappedAngleMutant::kNormalComponentLeft, "normal-component-left",
              "a normal component 1e-6 W left in the step: polar(W (1 + 1e-6) + eta)"}});
  return c;
}

Claim s53_uncapped_step_rotation() {
  Claim c = make_claim(
      "s53-uncapped-step-rotation",
      "§5.3 after Prop. 6 (\"a step of norm eta_R sqrt(H) can rotate nearly 90 degrees\")", "inequality",
      "Without the cap, B2's step t rotates each frame by tan(theta) = sigma_max(H (I + A)^-1) <= eta_R C_t "
      "(eta = W A + H; C_t the corrected displacement constant, C_1 = 1, C_t -> 7.27). A step of norm eta_R per "
      "frame (eta_R sqrt(H) over H frames; the first step at eps = 0) therefore rotates at most arctan(eta_R): "
      "45 degrees at eta_R = 1, not nearly 90; later steps at most arctan(7.27 eta_R) = 82.2 degrees at "
      "eta_R = 1. Nearly 90 degrees needs eta_R C_t >> 1.");
  c.generator =
      "gradient sequences as for prop3ii-adam-scale-free with d in [3,8], r in [2,d-1] (a horizontal "
      "complement, and a non-zero skew part), T = 10^[0,2], rate 10^[-3,1], eps = 0, no cap";
  c.residual =
      "max over steps and heads of the larger of |tan theta - sigma_max(H (I + A)^-1)| / (1 + tan)^2 (theta from "
      "the SVD route's polar factor: sin from sigma_max((I - W W^T) Y), cos from sigma_min(W^T Y)) and "
      "(tan theta - eta_R C_t)_+ / (eta_R C_t); factor d*r";
  c.analysis =
      "W + eta = W (I + A) + H and I + A is invertible (A skew), so col(polar(W + eta)) = col(W + H (I + A)^-1); "
      "the principal angles are arctan of its singular values, and ||(I + A)^-1||_2 <= 1, ||H||_2 <= ||eta||_F "
      "<= eta_R ||m_hat|| / sqrt(v_hat) <= eta_R C_t.";
  c.generator_fn = [] {
    return rc::gen::exec([] {
      Case k;
      gen::draw_sequence(k, 8);
      k.d = std::max(k.d, 3);
      k.r = std::clamp(k.r, 2, k.d - 1);
      k.steps = int(std::lround(std::pow(10.0, gen::real(0, 2, 20))));
      k.eps_zero = true;
      return k;
    });
  };
  c.cost = 3;
  set_check(c, &check_uncapped_step<double>, &check_uncapped_step<mp50>,
            {{UncappedStepMutant::kVerticalIgnored, "vertical-part-ignored",
              "tan theta = sigma_max(H): the vertical part's rotation within col(W), (I + A)^-1, dropped"}});
  return c;
}

}  // namespace

std::vector<Claim> prop6_rotation_claims() {
  return {prop6i_sigma_min(), prop6ii_angle_bound(), prop6ii_uncapped_rotation(), s53_uncapped_step_rotation()};
}

}  // namespace stiefel::certificates
