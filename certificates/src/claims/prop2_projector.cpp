// The claims of Prop. 2 and eq. (12), §5.3: the tangent projector, steepest ascent, the horizontal/gauge
// split and its cost.
#include "claim_builder.h"
#include "claim_groups.h"
#include "prop2_projector.h"

namespace stiefel::certificates {
namespace {

Claim prop2_orthogonal_projector() {
  Claim c = make_claim("prop2-orthogonal-projector", "Prop. 2, §5.3; eq. (3)", "identity",
                       "Pi_W(G) = G - W sym(W^T G) is the orthogonal projector onto T_W St(d,r): "
                       "idempotent, self-adjoint, zero on the normal space {WS}, with range in "
                       "the tangent space and fixing every tangent vector W Omega + W_perp K.");
  c.generator =
      "d in [2,24], r in [2,d] (r = d included), inputs scaled by 10^[-12,12]; r = 1 is left out "
      "because there sym(W^T G) = W^T G and the control's bug (sym dropped) is the projector itself";
  c.residual =
      "the worst of ||Pi(Pi A) - Pi A|| / ||A||, |<Pi A,B> - <A,Pi B>| / (||A|| ||B||), "
      "||Pi(WS)|| / ||S||, ||sym(W^T Pi A)|| / ||A||, ||Pi xi - xi|| / ||xi||; factor d";
  c.analysis = "Standard (Absil et al. 2008, (3.35)); exact in exact arithmetic.";
  c.generator_fn = [] { return gen::frame({.min_r = 2}); };
  set_check(c, &check_orthogonal_projector<double>, &check_orthogonal_projector<mp50>,
            {{ProjectorMutant::kWithoutSym, "projector-without-sym",
              "G - W W^T G in place of Pi_W (sym dropped: the horizontal projector, which passes four of "
              "the five identities and annihilates the tangent vectors W Omega)"}});
  return c;
}

Claim prop2_steepest_ascent() {
  Claim c = make_claim("prop2-steepest-ascent", "Prop. 2, §5.3", "identity",
                       "Pi_W g / ||Pi_W g|| maximises <g, xi> over unit tangent xi, with value "
                       "||Pi_W g||.");
  c.generator = "d in [1,24], r in [1,d], g scaled by 10^[-12,12], one random unit tangent vector";
  c.residual =
      "|<g, Pi g>/||Pi g|| - M| / ||g|| and max(0, <g, xi> - M) / ||g||, where M is the "
      "norm of g's coordinates in an orthonormal basis of T_W St built without Pi; "
      "factor d*r";
  c.analysis = "Cauchy-Schwarz in T_W St; exact.";
  c.generator_fn = [] { return gen::frame({}); };
  set_check(c, &check_steepest_ascent<double>, &check_steepest_ascent<mp50>,
            {{SteepestAscentMutant::kNormalComponentLeft, "normal-component-left",
              "a normal component 1e-6 ||Pi g|| W sym(W^T g)/||W sym(W^T g)|| left in the maximiser "
              "Pi g"}});
  return c;
}

Claim eq12_horizontal_gauge_split() {
  Claim c = make_claim("eq12-horizontal-gauge-split", "eq. (12), §5.3", "identity",
                       "||Pi_W g||^2 = ||Pi^h_W g||^2 + ||W skew(W^T g)||^2: T_W St = H_W (+) G_W "
                       "orthogonally.");
  c.generator = "d in [1,24], r in [1,d], g scaled by 10^[-12,12]";
  c.residual = "| ||Pi g||^2 - ||Pi^h g||^2 - ||W skew(W^T g)||^2 | / ||g||^2; factor d";
  c.analysis = "Pi g = (I - WW^T) g + W skew(W^T g), and the two parts are orthogonal; exact.";
  c.generator_fn = [] { return gen::frame({}); };
  set_check(c, &check_gauge_split<double>, &check_gauge_split<mp50>,
            {{GaugeSplitMutant::kNormalPart, "normal-part",
              "the normal part W sym(W^T g) in place of the gauge part (at r = 1 the gauge part is "
              "0, so no near miss of it can differ there)"}});
  return c;
}

Claim eq12_horizontal_cost() {
  Claim c = make_claim("eq12-horizontal-cost", "eq. (12), §5.3 (\"(12) costs about 3% of the per-step decrease\")",
                       "identity",
                       "Steepest descent restricted to the horizontal space decreases the loss at rate "
                       "||Pi^h g|| = sqrt(1 - rho^2) ||Pi g|| per unit step, rho = ||Pi_G g|| / ||Pi g|| the "
                       "gauge share. The cost depends on how a step is read: a step of unit norm loses "
                       "1 - sqrt(1 - rho^2), 2.9% at Table 8's rho = 0.24 (the paper's \"about 3%\"); a step of "
                       "fixed rate (eta Pi^h g against eta Pi g) decreases the loss by (1 - rho^2) ||Pi g||^2 "
                       "eta and loses rho^2, 5.8% at 0.24. Both rates are measured on the attention loss.");
  c.generator =
      "attention problems: n in [2,7] tokens, d in [3,12], r in [2,d-1] (at r = 1 the gauge space is {0}, at "
      "r = d the horizontal one), H in [1,3], token scale 10^[-1,0.5] (an unsaturated softmax: the gradient "
      "carries signal); the frame is head 0's W_Q and g the loss's gradient there";
  c.residual =
      "the loss's rate of decrease along the unit directions Pi g / ||Pi g|| and Pi^h g / ||Pi^h g||, measured "
      "from 50-digit loss differences (Richardson-extrapolated central differences, h = 1e-8), against "
      "||Pi g|| and sqrt(1 - rho^2) ||Pi g|| (a unit-norm step: the paper's 'about 3%', 1 - sqrt(1 - rho^2)), "
      "and the fixed-rate reading ||Pi^h g|| rate_h against (1 - rho^2) ||Pi g||^2 (cost rho^2, 5.8% at 0.24); "
      "the worst error over the gradient's rounding-error scale (as for attention-gradient-exact), floor "
      "max(u, 1e-30), factor n*d. The figures give both readings' cost at Table 8's share and at random "
      "tangent vectors' share";
  c.analysis =
      "The rate of decrease along a unit direction D is <g, D>; <g, Pi^h g> = ||Pi^h g||^2 because Pi g = Pi^h g "
      "+ W skew(W^T g) orthogonally (eq12-horizontal-gauge-split), and ||Pi^h g||^2 = (1 - rho^2) ||Pi g||^2. "
      "Measured on the loss, not restated from the projectors.";
  c.generator_fn = [] {
    return rc::gen::exec([] {
      Case k = *gen::attention(2, 0.5, 2, 3);
      if (k.r == k.d) k.r = k.d - 1;
      return k;
    });
  };
  c.figures_double = &figures_horizontal_cost<double>;
  set_check(c, &check_horizontal_cost<double>, &check_horizontal_cost<mp50>,
            {{HorizontalCostMutant::kShareInNorm, "share-in-norm",
              "the decrease taken as (1 - rho) ||Pi g|| (the share subtracted in norm, not in square)"}});
  return c;
}

}  // namespace

std::vector<Claim> prop2_projector_claims() {
  return {prop2_orthogonal_projector(), prop2_steepest_ascent(), eq12_horizontal_gauge_split(), eq12_horizontal_cost()};
}

}  // namespace stiefel::certificates
