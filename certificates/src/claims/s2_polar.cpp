// The claims of §2: the polar retraction (nearest point, its two routes) and the query-norm bound.
#include "claim_builder.h"
#include "claim_groups.h"
#include "s2_polar.h"

namespace stiefel::certificates {
namespace {

Claim s2_polar_nearest() {
  Claim c = make_claim("s2-polar-nearest", "§2", "inequality",
                       "The polar retraction is the Frobenius-nearest point of St(d,r): "
                       "||M - polar(M)||_F <= ||M - Y||_F for every Y in St(d,r).");
  c.generator =
      "M = U diag(sigma) V^T, sigma_i = 10^[-6,2] times 10^[-3,3] (near rank deficiency "
      "included), d in [1,24], r in [1,d]; Y: three random points, -polar(M), the "
      "point reached along the Riemannian gradient of the distance, the r points with one "
      "column's sign flipped (the other critical points), and two random neighbours at "
      "distances 1e-2 and 1e-4";
  c.residual =
      "max(0, ||M - P||^2 - ||M - Y||^2) computed as 2<M, Y - P> - (||Y||^2 - ||P||^2), "
      "normalised by ||M|| ||Y - P|| + r; factor d";
  c.analysis =
      "||M - Y||^2 = ||M||^2 + r - 2 tr(Y^T M), and tr(Y^T M) <= ||M||_* with equality "
      "at the polar factor.";
  c.generator_fn = [] { return gen::frame({.scale_lo = -3, .scale_hi = 3}); };
  set_check(c, &check_polar_nearest<double>, &check_polar_nearest<mp50>,
            {{PolarNearestMutant::kFlippedColumn, "flipped-column", "polar(M) with its first column negated"}});
  return c;
}

Claim s2_polar_routes_agree() {
  Claim c = make_claim("s2-polar-routes-agree", "§2, §3.2, Prop. 6(i)", "identity",
                       "The polar retraction by thin SVD, by the Gram route M (M^T M)^(-1/2), and by "
                       "the tangent Gram route (W + eta)(I + eta^T eta)^(-1/2) agree and land on St(d,r).");
  c.generator =
      "d in [1,24], r in [1,d], tangent eta of norm 10^[-8,2] (up to 200 times the "
      "largest capped step tau sqrt(r))";
  c.residual =
      "||svd - gram|| / sqrt(r), ||svd - tangent gram|| / sqrt(r) with factor "
      "d*kappa^2, kappa = 1 + ||eta|| (the Gram route squares the condition number); "
      "||P^T P - I||_max with factor d";
  c.analysis =
      "Uniqueness of the polar factor of a full-rank matrix; (W+eta)^T(W+eta) = I + "
      "eta^T eta for tangent eta.";
  c.generator_fn = [] { return gen::frame({.scale_lo = -8, .scale_hi = 2}); };
  set_check(c, &check_polar_routes<double>, &check_polar_routes<mp50>,
            {{PolarRoutesMutant::kNonTangentStep, "non-tangent-step",
              "a step with a normal component W S, |S| ~ (1 + ||eta||)/2, through the tangent Gram "
              "route"}});
  return c;
}

Claim s2_query_norm_bound() {
  Claim c = make_claim("s2-query-norm-bound", "§2 (attention logit growth)", "inequality",
                       "||W_Q^T x|| <= ||x|| for W_Q in St(d,r); for the frames training produces, off the manifold "
                       "by their isometry error delta = max|W^T W - I|, ||W_Q^T x|| <= (1 + r delta / 2) ||x||.");
  c.generator =
      "W a point of St(d,r) (a quarter of the cases; log10_c = 0) or (log10_c = 1) the frame core/'s B2 leaves after T "
      "in [1,40] float32 steps "
      "of the sequence claims' gradients (seven profiles, unit scale, rate 10^[-2,0], eps 1e-8); x = W a/||a|| "
      "+ t W_perp z/||z|| with t in [0,1/2] (near col(W)), and its tight instance x_0 = W a/||a||, both scaled by "
      "10^[-20,20]; d in [1,24], r in [1,d]";
  c.residual = "the worse of max(0, ||W^T x|| - (1 + r delta / 2) ||x||) / ||x|| over x and x_0; factor d";
  c.analysis =
      "W W^T is an orthogonal projector on St(d,r); off it, ||W^T x||^2 <= lambda_max(W^T W) ||x||^2 and "
      "lambda_max(W^T W) <= 1 + r delta.";
  c.generator_fn = [] {
    return rc::gen::exec([] {
      Case k;
      gen::draw_frame_shape(k, {.scale_lo = -20, .scale_hi = 20});
      k.x = gen::real(0, 0.5, 50);
      k.heads = 1;
      k.log10_c = *rc::gen::inRange(0, 4) == 0 ? 0 : 1;  // 0: a point of St(d, r); 1: a trained frame
      k.steps = *rc::gen::inRange(1, 41);
      k.profile = *rc::gen::inRange(0, 7);
      k.corr = gen::real(0, 1, 10);
      k.log10_lr = gen::real(-2, 0, 20);
      k.log10_eps = -8;
      return k;
    });
  };
  set_check(c, &check_query_norm<double>, &check_query_norm<mp50>,
            {{QueryNormMutant::kDriftedFrame, "drift-after-delta",
              "the frame drifted by max(1e-4, 10 r delta) after its isometry error delta was measured (delta read from "
              "another frame)"}});
  return c;
}

}  // namespace

std::vector<Claim> s2_polar_claims() { return {s2_polar_nearest(), s2_polar_routes_agree(), s2_query_norm_bound()}; }

}  // namespace stiefel::certificates
