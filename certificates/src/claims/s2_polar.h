// §2: the polar retraction polar(M) = M (MᵀM)^(−1/2) is the Frobenius-nearest point of St(d,r),
// its SVD and Gram routes agree, and ‖W_Qᵀx‖ ≤ ‖x‖ bounds the attention logits.
#pragma once

#include "check_support.h"

namespace stiefel::certificates {

enum class PolarNearestMutant { kNone, kFlippedColumn };
enum class PolarRoutesMutant { kNone, kNonTangentStep };
enum class QueryNormMutant { kNone, kDriftedFrame };

// No Y of St(d,r) among the candidates is nearer M than polar(M): max(0, ‖M − P‖² − ‖M − Y‖²)
// over (‖M‖‖Y − P‖ + r); factor d.
template <class S>
CheckResult check_polar_nearest(const Case& c, PolarNearestMutant mutant) {
  Rng rng(c.seed);
  // M = U diag(σ) Vᵀ with σ_i = 10^(x_i), x_i ∈ [−6, 2]: near rank deficiency included.
  const Matrix<S> u = random_stiefel<S>(rng, c.d, c.r), v = random_orthogonal<S>(rng, c.r);
  Vector<S> sigma(c.r);
  for (int i = 0; i < c.r; ++i) sigma(i) = S(pow10(-6.0 + 8.0 * rng.uniform() + c.log10_scale));
  const Matrix<S> m = u * sigma.asDiagonal() * v.transpose();
  Matrix<S> cand = polar_svd<S>(m);
  if (mutant == PolarNearestMutant::kFlippedColumn) cand.col(0) = -cand.col(0);  // a non-nearest point
  std::vector<Matrix<S>> neighbours;
  for (int k = 0; k < 3; ++k) neighbours.push_back(random_stiefel<S>(rng, c.d, c.r));
  neighbours.push_back(-cand);
  for (int j = 0; j < c.r; ++j) {  // the other critical points: one column's sign flipped
    neighbours.push_back(cand);
    neighbours.back().col(j) = -cand.col(j);
  }
  const Matrix<S> grad = project_tangent<S>(cand, Matrix<S>(m - cand));
  if (grad.norm() > S(0))
    neighbours.push_back(orthonormal_factor<S>(Matrix<S>(cand + S(1e-3) * grad / grad.norm()), c.r));
  for (double s : {1e-2, 1e-4}) {
    const Matrix<S> z = random_tangent<S>(rng, cand);
    if (z.norm() > S(0)) neighbours.push_back(orthonormal_factor<S>(Matrix<S>(cand + S(s) * z / z.norm()), c.r));
  }
  CheckResult worst;
  for (const auto& y : neighbours) {
    // ‖M − cand‖² − ‖M − Y‖² = 2⟨M, Y − cand⟩ − (‖Y‖² − ‖cand‖²): positive means Y is nearer.
    const S gain = S(2) * frobenius_inner<S>(m, Matrix<S>(y - cand)) - (y.squaredNorm() - cand.squaredNorm());
    keep_worst(worst,
               roundoff_result<S>(positive_part<S>(gain), S(m.norm() * (y - cand).norm() + S(c.r)), double(c.d)));
  }
  return worst;
}

template <class S>
CheckResult check_polar_routes(const Case& c, PolarRoutesMutant mutant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  Matrix<S> eta = random_tangent<S>(rng, w);
  if (eta.norm() > S(0)) eta *= S(pow10(c.log10_scale)) / eta.norm();
  if (mutant == PolarRoutesMutant::kNonTangentStep)  // a normal component W S, |S| ~ (1 + ‖η‖)/2
    eta += w * random_symmetric<S>(rng, c.r) * S((1 + to_double(S(eta.norm()))) / 2);
  const Matrix<S> by_svd = polar_svd<S>(Matrix<S>(w + eta));
  const double kappa = 1.0 + to_double(S(eta.norm()));
  const double f = double(c.d) * kappa * kappa;  // the Gram route squares κ(W+η) ≤ 1 + ‖η‖
  CheckResult r = identity_result(
      matrix_identity<S>("polar by SVD = tangent Gram route", by_svd, retract_polar_gram<S>(w, eta), sqrt(S(c.r)), f));
  if (mutant == PolarRoutesMutant::kNone) {
    keep_worst(r, identity_result(matrix_identity<S>("polar by SVD = Gram route", by_svd,
                                                     polar_gram<S>(Matrix<S>(w + eta)), sqrt(S(c.r)), f)));
    keep_worst(r, identity_result(properties::on_stiefel<S>(by_svd, double(c.d))));
  }
  return r;
}

template <class S>
CheckResult check_query_norm(const Case& c, QueryNormMutant mutant) {
  Rng rng(c.seed);
  Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  // x = W a/‖a‖ + t W⊥ z/‖z‖, t ∈ [0, 1/2], near col(W); and its tight instance x₀ = W a/‖a‖ (t = 0),
  // where ‖Wᵀx₀‖ = ‖x₀‖ and any frame that lengthens a vector breaks the bound.
  const Matrix<S> w_perp = orthogonal_complement(w);
  const Matrix<S> a = gaussian_matrix<S>(rng, c.r, 1);
  const S scale(pow10(c.log10_scale));
  const Vector<S> x0 = w * a / a.norm() * scale;
  Vector<S> x = x0;
  if (w_perp.cols() > 0) {
    const Matrix<S> z = gaussian_matrix<S>(rng, c.d - c.r, 1);
    x += S(c.x) * w_perp * z / z.norm() * scale;
  }
  // A frame off the manifold by 1e-6 (float32 training drifts by ~1e-5): W (1 + 1e-6).
  if (mutant == QueryNormMutant::kDriftedFrame) w *= S(1) + S(1e-6);
  CheckResult r;
  for (const Vector<S>* v : {static_cast<const Vector<S>*>(&x), &x0}) {
    const S excess = (w.transpose() * *v).norm() - v->norm();
    keep_worst(r, roundoff_result<S>(positive_part<S>(excess), v->norm(), double(c.d)));
  }
  return r;
}

#define STIEFEL_S2_POLAR_CHECKS(X) \
  X(polar_nearest, PolarNearestMutant) X(polar_routes, PolarRoutesMutant) X(query_norm, QueryNormMutant)
STIEFEL_S2_POLAR_CHECKS(STIEFEL_EXTERN_CHECK)

}  // namespace stiefel::certificates
