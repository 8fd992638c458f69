// Orders of agreement: the polar retraction matches the Riemannian exponential to second order
// (§2, §3.2: remainder slope 3), re-projecting the first moment approximates parallel transport to
// second order (§3.2: gap slope 2, its leading term known), and the analytic attention gradient is
// the loss's derivative (§5.1: Taylor remainder slope 2).
#pragma once

#include <limits>
#include <vector>

#include "attention_case.h"

namespace stiefel::certificates {

enum class RetractionOrderMutant { kNone, kNoRetraction };
enum class AttentionTaylorMutant { kNone, kGradientError };
enum class ExponentialMutant { kNone, kSignOfSFlipped };
enum class TransportMutant { kNone, kStaleMoment };

// A remainder e(h) = O(h^p) has log-log slope ≥ p (a vanishing leading coefficient gives a
// larger slope, still order p; a wrong derivative gives p − 1). Points whose remainder is below
// the rounding floor are dropped; the slope is a least-squares fit over all the others, so that a
// near-cancellation of two orders at one h cannot decide it.
// ratio = max(0, p − slope); with fewer than three points above the floor the remainder is
// zero to working precision and the ratio is 0.
template <class S>
CheckResult slope_result(const std::vector<double>& h, const std::vector<double>& e, double floor, double expect,
                         std::size_t keep_smallest = 0) {
  std::vector<double> hs, es;
  for (std::size_t i = 0; i < h.size(); ++i)
    if (e[i] > floor) {
      hs.push_back(h[i]);
      es.push_back(e[i]);
    }
  if (keep_smallest > 0 && hs.size() > keep_smallest) {  // h is decreasing
    hs.erase(hs.begin(), hs.end() - std::ptrdiff_t(keep_smallest));
    es.erase(es.begin(), es.end() - std::ptrdiff_t(keep_smallest));
  }
  CheckResult r;
  r.normaliser = 1;
  if (hs.size() < 3) {
    r.ratio = 0;
    r.residual = expect;
    r.detail = {{"slope", nullptr}, {"expected_slope", expect}, {"points_above_floor", hs.size()}};
    return r;
  }
  const double slope = properties::log_log_slope(hs, es);
  r.ratio = std::isfinite(slope) ? std::max(0.0, expect - slope) : INFINITY;
  r.residual = slope;
  r.detail = {{"slope", slope}, {"expected_slope", expect}, {"points_above_floor", hs.size()}};
  return r;
}

template <class S>
CheckResult check_retraction_order(const Case& c, RetractionOrderMutant mutant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  Matrix<S> xi = random_tangent<S>(rng, w);
  xi /= xi.norm();
  // Through retract(), the function the update calls, by both of its routes (the thin SVD of §3.2
  // and the Gram route (W + eta)(I + eta^T eta)^(-1/2)): the worse order.
  CheckResult worst;
  bool first = true;
  for (const Retraction kind : {Retraction::kPolarSvd, Retraction::kPolarGram}) {
    std::vector<double> ts, es;
    for (double t = 1e-2; t > 1e-2 / 257; t /= 2) {
      const Matrix<S> step = S(t) * xi;
      const Matrix<S> moved =
          mutant == RetractionOrderMutant::kNoRetraction ? Matrix<S>(w + step) : retract<S>(kind, w, step);
      ts.push_back(t);
      es.push_back(to_double(S((moved - stiefel_exponential<S>(w, step)).norm())));
    }
    // Both sides are unit-size frames: the floor is 10⁴·u·d.
    CheckResult r = slope_result<S>(ts, es, 1e4 * to_double(unit_roundoff<S>()) * c.d, 3.0);
    r.detail["route"] = kind == Retraction::kPolarGram ? "gram" : "svd";
    if (first || r.ratio > worst.ratio || std::isnan(r.ratio)) worst = std::move(r);
    first = false;
  }
  return worst;
}

template <class S>
CheckResult check_attention_taylor(const Case& c, AttentionTaylorMutant mutant) {
  auto a = make_attention_case<S>(c);
  Rng rng(c.seed ^ 0x2545f4914f6cdd1dULL);
  Frames<S> dq, dk;
  S dnorm2(0);
  for (int h = 0; h < c.heads; ++h) {
    dq.push_back(gaussian_matrix<S>(rng, c.d, c.r));
    dk.push_back(gaussian_matrix<S>(rng, c.d, c.r));
    dnorm2 += dq.back().squaredNorm() + dk.back().squaredNorm();
  }
  for (int h = 0; h < c.heads; ++h) {  // a unit direction: h is then a distance in (W_Q, W_K)
    dq[h] /= sqrt(dnorm2);
    dk[h] /= sqrt(dnorm2);
  }
  S directional(0);
  for (int h = 0; h < c.heads; ++h)
    directional += frobenius_inner<S>(a.grad.grad_q[h], dq[h]) + frobenius_inner<S>(a.grad.grad_k[h], dk[h]);
  // Rounding floor of the loss: 10⁴·u·n·Σ_h ‖C_h‖‖X U_h‖ (|L| is at most Σ_h ‖C_h‖‖X U_h‖).
  S magnitude(0);
  for (int h = 0; h < c.heads; ++h)
    magnitude += a.problem.readout[h].norm() * (a.problem.x * a.problem.value[h]).norm();
  const double floor = 1e4 * to_double(unit_roundoff<S>()) * c.tokens * to_double(magnitude);
  // The control: a gradient error of 0.1% of the loss scale along the (unit) probe direction.
  if (mutant == AttentionTaylorMutant::kGradientError) directional += magnitude / S(1000);
  // Two-sided remainder ē(h) = (|r(h)| + |r(−h)|)/2, r(h) = L(W + hΔ) − L(W) − h⟨∇L, Δ⟩: it equals
  // max(|a|h², |b|h³) + …, so a second- and a third-order term cannot cancel at any h.
  auto remainder = [&](double step) {
    Frames<S> q2 = a.wq, k2 = a.wk;
    for (int h = 0; h < c.heads; ++h) {
      q2[h] += S(step) * dq[h];
      k2[h] += S(step) * dk[h];
    }
    return S(attention_loss_and_gradient(a.problem, q2, k2).loss - a.grad.loss - S(step) * directional);
  };
  std::vector<double> hs, es;
  for (double step = 1.0; step > 1.0 / 65537; step /= 2) {
    hs.push_back(step);
    es.push_back(to_double(S((abs(remainder(step)) + abs(remainder(-step))) / S(2))));
  }
  return slope_result<S>(hs, es, floor, 2.0, /*keep_smallest=*/4);
}

// The Taylor remainder of the attention loss, a figure of attention-gradient-exact (its slope
// passes gradient errors up to about 1.5e-5 of the loss scale, so it cannot certify exactness): on
// 20 fixed attention problems (n, d, r, H drawn from seed k), the least-squares log-log slope of
// the two-sided remainder against h = 2^-k (second order: 2) for the analytic gradient and for
// one with a 0.1% error of the loss scale along the probe (first order: 1).
template <class S>
nlohmann::json figures_attention_taylor() {
  nlohmann::json rows = nlohmann::json::array();
  double least = std::numeric_limits<double>::infinity(), most_with_error = -least;
  for (std::uint64_t k = 0; k < 20; ++k) {
    Rng rng(0x7a11e7ULL + k);
    Case c;
    c.tokens = 2 + int(rng.bits() % 6);
    c.heads = 1 + int(rng.bits() % 3);
    c.d = 1 + int(rng.bits() % 12);
    c.r = 1 + int(rng.bits() % std::uint64_t(c.d));
    c.log10_scale = -1 + 2 * double(rng.bits() % 1001) / 1000;
    c.seed = rng.bits();
    const CheckResult exact = check_attention_taylor<S>(c, AttentionTaylorMutant::kNone);
    const CheckResult wrong = check_attention_taylor<S>(c, AttentionTaylorMutant::kGradientError);
    const nlohmann::json slope = exact.detail.at("slope"), slope_wrong = wrong.detail.at("slope");
    if (slope.is_number()) least = std::min(least, double(slope));
    if (slope_wrong.is_number()) most_with_error = std::max(most_with_error, double(slope_wrong));
    rows.push_back({{"case", to_json(c)}, {"slope", slope}, {"slope_with_gradient_error", slope_wrong}});
  }
  return {{"setting",
           "Taylor remainder (|r(h)| + |r(-h)|)/2, r(h) = L(W + hD) - L(W) - h <grad, D>, unit Gaussian "
           "direction D, h = 2^-k for k = 0..16, slope over the four smallest h above the rounding floor "
           "1e4 u n sum_h ||C_h|| ||X U_h||; gradient error: 0.1% of that loss scale along D"},
          {"least_slope", least},
          {"largest_slope_with_gradient_error", most_with_error},
          {"rows", rows}};
}

// The Riemannian exponential that s2-retraction-second-order measures against, checked by routes
// that do not use its series: for a horizontal ξ = W⊥K (A = Wᵀξ = 0), Exp_W(ξ) = W V cos(Σ) Vᵀ +
// U sin(Σ) Vᵀ with ξ = U Σ Vᵀ (Jacobi SVD); for a general tangent ξ, Exp_W(ξ) ∈ St(d,r).
// ratio = the worse of ‖Exp − closed form‖_F / √r and max|ExpᵀExp − I|; factor d·r.
// Control: −S → +S in Edelman's block [[A, −S], [I, A]] (a transcription error).
template <class S>
Matrix<S> exponential_under_test(const Matrix<S>& w, const Matrix<S>& xi, ExponentialMutant mutant) {
  if (mutant == ExponentialMutant::kNone) return stiefel_exponential<S>(w, xi);
  const Index r = w.cols();
  const Matrix<S> a = w.transpose() * xi;
  Matrix<S> block(2 * r, 2 * r);
  block << a, xi.transpose() * xi, Matrix<S>::Identity(r, r), a;
  Matrix<S> basis(w.rows(), 2 * r);
  basis << w, xi;
  return basis * matrix_exponential<S>(block).leftCols(r) * matrix_exponential<S>(Matrix<S>(-a));
}

template <class S>
CheckResult check_exponential(const Case& c, ExponentialMutant mutant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  const Matrix<S> w_perp = orthogonal_complement(w);
  const S length(pow10(c.log10_scale));
  Matrix<S> horizontal = w_perp * gaussian_matrix<S>(rng, c.d - c.r, c.r);
  horizontal *= length / horizontal.norm();
  Eigen::JacobiSVD<Matrix<S>> svd(horizontal, Eigen::ComputeThinU | Eigen::ComputeThinV);
  Vector<S> cosine(svd.singularValues().size()), sine(svd.singularValues().size());
  for (Index i = 0; i < cosine.size(); ++i) {
    cosine(i) = cos(svd.singularValues()(i));
    sine(i) = sin(svd.singularValues()(i));
  }
  const Matrix<S> closed = w * svd.matrixV() * cosine.asDiagonal() * svd.matrixV().transpose() +
                           svd.matrixU() * sine.asDiagonal() * svd.matrixV().transpose();
  const double f = double(c.d) * c.r;
  CheckResult r =
      identity_result(matrix_identity<S>("Exp_W(xi) = W V cos(Sigma) V^T + U sin(Sigma) V^T", closed,
                                         exponential_under_test<S>(w, horizontal, mutant), sqrt(S(c.r)), f));
  Matrix<S> xi = random_tangent<S>(rng, w);
  xi *= length / xi.norm();
  keep_worst(r, identity_result(properties::on_stiefel<S>(exponential_under_test<S>(w, xi, mutant), f)));
  return r;
}

// §3.2: "the previous m_h is re-projected at the current point ..., which approximates parallel
// transport". Along the retraction curve c(s) = polar(W + s xi) (unit tangent xi, so
// c(s) = (W + s xi)(I + s^2 xi^T xi)^(-1/2) in closed form), the Levi-Civita transport of the
// embedded metric solves v' = DP_c[c'] v, DP_W[Wdot](Z) = -Wdot sym(W^T Z) - W sym(Wdot^T Z) (the
// derivative of the projector; v = P_c v and P_c v' = 0). The re-projected moment P_c(t) m has the
// same first derivative, so the gap is (t^2/2) DP_W[xi](DP_W[xi] m) + O(t^3): order 2, and that
// leading term exactly. The check fits both slopes: the gap's (>= 2) and that of the gap less its
// predicted leading term (>= 3). The transport is integrated by RK4 (8 steps: error O(t^5 / 8^4)).
// Control: the moment left where it was (not re-projected), whose gap is first order.
template <class S>
Matrix<S> symmetric_part(const Matrix<S>& a) {
  return (a + a.transpose()) / S(2);
}

template <class S>
Matrix<S> projector_derivative(const Matrix<S>& w, const Matrix<S>& wdot, const Matrix<S>& z) {
  return -wdot * symmetric_part<S>(w.transpose() * z) - w * symmetric_part<S>(wdot.transpose() * z);
}

template <class S>
CheckResult check_transport_order(const Case& c, TransportMutant mutant) {
  Rng rng(c.seed);
  const Matrix<S> w = random_stiefel<S>(rng, c.d, c.r);
  Matrix<S> xi = random_tangent<S>(rng, w);
  xi /= xi.norm();
  Matrix<S> m = random_tangent<S>(rng, w);
  m /= m.norm();
  Eigen::SelfAdjointEigenSolver<Matrix<S>> eig(Matrix<S>(xi.transpose() * xi));
  const Matrix<S>& basis = eig.eigenvectors();
  const Vector<S>& lambda = eig.eigenvalues();
  // c(s) and c'(s) in closed form.
  const auto curve = [&](const S& s, Matrix<S>& at, Matrix<S>& velocity) {
    Vector<S> inv_sqrt(lambda.size()), slope(lambda.size());
    for (Index i = 0; i < lambda.size(); ++i) {
      const S q = S(1) + s * s * lambda(i);
      inv_sqrt(i) = S(1) / sqrt(q);
      slope(i) = -s * lambda(i) * inv_sqrt(i) / q;
    }
    const Matrix<S> shifted = w + s * xi;
    at = shifted * basis * inv_sqrt.asDiagonal() * basis.transpose();
    velocity = xi * basis * inv_sqrt.asDiagonal() * basis.transpose() +
               shifted * basis * slope.asDiagonal() * basis.transpose();
  };
  const auto field = [&](const S& s, const Matrix<S>& v) {
    Matrix<S> at, velocity;
    curve(s, at, velocity);
    return projector_derivative<S>(at, velocity, v);
  };
  const auto transport = [&](const S& t) {
    const int n = 8;
    const S h = t / S(n);
    Matrix<S> v = m;
    for (int i = 0; i < n; ++i) {
      const S s = S(i) * h;
      const Matrix<S> k1 = field(s, v), k2 = field(s + h / 2, v + (h / 2) * k1),
                      k3 = field(s + h / 2, v + (h / 2) * k2), k4 = field(s + h, v + h * k3);
      v += (h / 6) * (k1 + S(2) * k2 + S(2) * k3 + k4);
    }
    return v;
  };
  const Matrix<S> leading = projector_derivative<S>(w, xi, projector_derivative<S>(w, xi, m)) / S(2);
  std::vector<double> ts, gaps, remainders;
  for (double t = 1e-1; t > 1e-1 / 257; t /= 2) {
    // The rule under test: core's polar retraction, then core's re-projection of the moment.
    const Matrix<S> moved = polar_svd<S>(Matrix<S>(w + S(t) * xi));
    const Matrix<S> carried =
        mutant == TransportMutant::kStaleMoment ? m : reproject<S>(TangentMap::kStiefel, moved, m);
    const Matrix<S> gap = transport(S(t)) - carried;
    ts.push_back(t);
    gaps.push_back(to_double(S(gap.norm())));
    remainders.push_back(to_double(S((gap - S(t * t) * leading).norm())));
  }
  // Unit-size vectors: the floor is 10^4 u d, as for the retraction's order.
  const double floor = 1e4 * to_double(unit_roundoff<S>()) * c.d;
  CheckResult r = slope_result<S>(ts, gaps, floor, 2.0);
  const CheckResult third = slope_result<S>(ts, remainders, floor, 3.0);
  r.detail = {{"gap_slope", r.detail["slope"]},
              {"remainder_slope", third.detail["slope"]},
              {"leading_coefficient", to_double(S(leading.norm()))},
              {"gap_over_t2_at_smallest_t", gaps.back() / (ts.back() * ts.back())}};
  if (!(r.ratio >= third.ratio)) {
    r.ratio = third.ratio;
    r.residual = third.residual;
  }
  return r;
}

#define STIEFEL_ORDERS_CHECKS(X)             \
  X(retraction_order, RetractionOrderMutant) \
  X(attention_taylor, AttentionTaylorMutant) \
  X(exponential, ExponentialMutant) X(transport_order, TransportMutant)
STIEFEL_ORDERS_CHECKS(STIEFEL_EXTERN_CHECK)
#define STIEFEL_ORDERS_FIGURES(F) F(attention_taylor)
STIEFEL_ORDERS_FIGURES(STIEFEL_EXTERN_FIGURES)

}  // namespace stiefel::certificates
