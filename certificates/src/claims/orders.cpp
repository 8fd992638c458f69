// The claims of Orders of agreement: the retraction against the exponential, the gradient against the loss.
#include "claim_builder.h"
#include "claim_groups.h"
#include "orders.h"

namespace stiefel::certificates {
namespace {

Claim s2_retraction_second_order() {
  Claim c = make_claim("s2-retraction-second-order", "§2, §3.2", "order",
                       "The polar retraction agrees with the Riemannian exponential to second order: "
                       "||polar(W + t xi) - Exp_W(t xi)|| = O(t^3), for retract(), the update's retraction, by "
                       "both its routes (thin SVD, Gram).");
  c.generator = "d in [2,12] ((d,r) != (1,1)), r in [1,d], unit tangent xi, t = 1e-2 / 2^k, k = 0..8";
  c.residual =
      "least-squares log-log slope of the remainder against t, over every t whose "
      "remainder exceeds the rounding floor 1e4 u d";
  c.factor =
      "ratio = max(0, 3 - slope) (a larger slope is still third order); pass at <= 0.3; "
      "a control is killed at >= 0.6";
  c.tolerance = 0.3;
  c.control_margin = 2;
  c.analysis = "Projective retractions are second order (Absil & Malick 2012).";
  c.generator_fn = [] { return gen::frame({.max_d = 12, .not_one_by_one = true}); };
  c.cost = 3;
  set_check(c, &check_retraction_order<double>, &check_retraction_order<mp50>,
            {{RetractionOrderMutant::kNoRetraction, "no-retraction", "W + t xi without the retraction (first order)"}});
  return c;
}

Claim s32_transport_second_order() {
  Claim c = make_claim("s32-transport-second-order",
                       "§3.2 (\"re-projected ... which approximates parallel transport\")", "order",
                       "Re-projecting the first moment at the new point approximates parallel transport: "
                       "along the polar retraction curve, ||Gamma_t(m) - Pi_{R_W(t xi)}(m)|| = O(t^2), "
                       "with leading term (t^2/2) DPi_W[xi](DPi_W[xi] m).");
  c.generator =
      "d in [2,10] ((d,r) != (1,1)), r in [1,d], unit tangent xi and unit tangent moment m at W, "
      "t = 1e-1 / 2^k, k = 0..8; Gamma_t the Levi-Civita transport of the embedded metric along "
      "polar(W + s xi), s in [0, t], integrated by RK4 (8 steps, error O(t^5)) along the curve in closed form";
  c.residual =
      "least-squares log-log slopes against t of the gap ||Gamma_t(m) - Pi(m)|| (order 2) and of the "
      "gap less its predicted leading term (order 3), over every t above the rounding floor 1e4 u d";
  c.factor =
      "ratio = the worse of max(0, 2 - gap slope) and max(0, 3 - remainder slope); pass at <= 0.3; "
      "a control is killed at >= 0.6";
  c.tolerance = 0.3;
  c.control_margin = 2;
  c.analysis =
      "Parallel transport solves v' = DPi_c[c'] v; the projected vector Pi_c(t) m has the same first "
      "derivative DPi_W[xi] m, so the two differ first at second order, by DPi_W[xi] applied twice.";
  c.generator_fn = [] { return gen::frame({.max_d = 10, .not_one_by_one = true}); };
  c.cost = 4;
  set_check(c, &check_transport_order<double>, &check_transport_order<mp50>,
            {{TransportMutant::kStaleMoment, "stale-moment",
              "the moment left at the old point, not re-projected (first order)"}});
  return c;
}

Claim s2_exponential() {
  Claim c =
      make_claim("s2-exponential-closed-form", "§2, §3.2 (the reference of s2-retraction-second-order)", "identity",
                 "The Riemannian exponential Exp_W(xi) of St(d,r) in the embedded metric (Edelman, "
                 "Arias & Smith 1998, (2.45)), against which the polar retraction's order is "
                 "measured, is the geodesic: for horizontal xi = U Sigma V^T it equals "
                 "W V cos(Sigma) V^T + U sin(Sigma) V^T, and for every tangent xi it lies on St(d,r).");
  c.generator =
      "d in [2,8], r in [1,d-1] (a horizontal direction needs d > r), ||xi||_F = 10^[-1,0.3], a horizontal "
      "xi = W_perp K and a general tangent xi";
  c.residual =
      "the worse of ||Exp_W(xi) - (W V cos(Sigma) V^T + U sin(Sigma) V^T)||_F / sqrt(r) and "
      "max|Exp^T Exp - I|; factor d*r";
  c.analysis =
      "With A = W^T xi = 0 the block exponential of (2.45) is [[cos(t sqrt(S)), ...]]: the closed form "
      "follows from xi^T xi = V Sigma^2 V^T. The closed form uses the Jacobi SVD, cos and sin, not the "
      "Taylor series the exponential sums, so a truncated series is visible.";
  c.generator_fn = [] {
    return rc::gen::exec([] {
      Case k;
      gen::draw_frame_shape(k, {.max_d = 8, .r_below_d = true, .scale_lo = -1, .scale_hi = 0.3});
      return k;
    });
  };
  set_check(c, &check_exponential<double>, &check_exponential<mp50>,
            {{ExponentialMutant::kSignOfSFlipped, "sign-of-s-flipped",
              "+S in place of -S in Edelman's block matrix [[A, -S], [I, A]] (a transcription error)"}});
  return c;
}

}  // namespace

std::vector<Claim> orders_claims() {
  return {s2_retraction_second_order(), s32_transport_second_order(), s2_exponential()};
}

}  // namespace stiefel::certificates
