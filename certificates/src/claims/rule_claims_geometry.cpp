// The claims of a declared rule's exposed geometry: its Riemannian gradient, metric, vector
// transport, and a retraction declared second order.
#include "rule_claim_builders.h"

namespace stiefel::certificates::rule_detail {

// --- an exposed Riemannian gradient ------------------------------------------------------------------

enum class GradientMutant { kNone, kNormalLeft, kTangentAdded };

// rgrad(W, G) is tangent (its normal part relative to ||G||) and satisfies the Riesz identity
// g_W(rgrad, xi) = <G, xi> for three tangent xi (relative to ||G|| ||xi||), g the rule's metric. The
// controls add a normal part W sym(A) of delta ||G|| to what rgrad returns, and a tangent vector of
// delta ||G|| (delta = max(1e-6, 2^17 u_io)): the first breaks tangency only, the second the identity
// only.
CheckResult riemannian_gradient(const RuleImplementation& impl, const Case& c, GradientMutant mutant) {
  const RuleDeclaration& decl = *impl.declaration;
  const TangentMap map = decl.settings.map;
  Rng rng(c.seed);
  const Frames<double> w = random_frames<double>(rng, {c.d, c.r}, c.heads);
  const double scale = pow10(c.log10_scale);
  Frames<double> g;
  for (int h = 0; h < c.heads; ++h) g.push_back(gaussian_matrix<double>(rng, c.d, c.r) * scale);
  Frames<double> rg = decl.rgrad(w, g);
  for (std::size_t h = 0; h < w.size(); ++h) {
    if (mutant == GradientMutant::kNormalLeft) {
      Matrix<double> a = gaussian_matrix<double>(rng, c.r, c.r);
      a = map == TangentMap::kGrassmann ? a : Matrix<double>((a + a.transpose()) / 2);
      rg[h] += w[h] * a * (control_size(impl, 1e-6, 17, 19) * g[h].norm() / a.norm());
    } else if (mutant == GradientMutant::kTangentAdded) {
      const Matrix<double> t = tangent_of(map, w[h], gaussian_matrix<double>(rng, c.d, c.r));
      rg[h] += t * (control_size(impl, 1e-6, 17, 19) * g[h].norm() / std::max(t.norm(), 1e-300));
    }
  }
  double normal = 0, riesz = 0;
  for (std::size_t h = 0; h < w.size(); ++h)
    normal = worse(normal, normal_part(map, w[h], rg[h]) * rg[h].norm() / std::max(g[h].norm(), 1e-300));
  for (int k = 0; k < 3; ++k) {
    Frames<double> xi;
    std::vector<double> source;  // the norm of the matrix each xi was projected from
    for (std::size_t h = 0; h < w.size(); ++h) {
      const Matrix<double> z = gaussian_matrix<double>(rng, c.d, c.r);
      xi.push_back(tangent_of(map, w[h], z));
      source.push_back(z.norm());
    }
    const std::vector<double> lhs = inner(decl, w, rg, xi);
    // Relative to ||G|| ||Z||: a tangent vector short against Z carries Z's rounding in its normal part.
    for (std::size_t h = 0; h < w.size(); ++h)
      riesz =
          worse(riesz, std::abs(lhs[h] - g[h].cwiseProduct(xi[h]).sum()) / std::max(g[h].norm() * source[h], 1e-300));
  }
  CheckResult r = roundoff(worse(normal, riesz), impl.unit_roundoff, double(c.d * c.r));
  r.detail = {{"normal_part", normal}, {"riesz", riesz}, {"metric", decl.metric ? "the rule's" : "embedded"}};
  return r;
}

Claim riemannian_gradient_claim(const RuleImplementation& impl) {
  Claim c = base_claim(impl, "rule-riemannian-gradient", "§5.3 (the Riemannian gradient), Prop. 2", "identity",
                       "The rule's exposed rgrad(W, G) is the Riemannian gradient in the rule's metric (its "
                       "metric(W, X, Y) where exposed, else the embedded one): tangent, and g_W(rgrad, xi) = "
                       "<G, xi> for every tangent xi.");
  c.own_dtype_only = true;
  c.generator = "d in [2,10], r in [1,d], H in [1,3], G Gaussian at scale 10^[-6,6], three tangent xi; 40 cases";
  c.residual =
      "the larger of ||normal part of rgrad|| / ||G|| and |g_W(rgrad, xi) - <G, xi>| / (||G|| ||xi||), "
      "over u*d*r (detail: each)";
  c.analysis =
      "Embedded: Pi_W(G). Canonical (g_c = tr X^T (I - W W^T / 2) Y): G - W G^T W. Both are tangent and "
      "represent G on the tangent space.";
  c.generator_fn = [] { return sequence_cases(2, 1, -2, 0, false); };
  const auto bind = [impl](GradientMutant m) {
    return same_in_both([impl, m](const Case& k) { return riemannian_gradient(impl, k, m); });
  };
  c.check = bind(GradientMutant::kNone);
  c.controls = {{"normal-part-left",
                 "a normal part W sym(A) of delta ||G|| added to rgrad (delta = max(1e-6, 2^17 u_io)): not tangent" +
                     for_float32(impl, "delta = 2^19 u_io"),
                 bind(GradientMutant::kNormalLeft)},
                {"tangent-added",
                 "a tangent vector of delta ||G|| added to rgrad: tangent, but not G's representer" +
                     for_float32(impl, "delta = 2^19 u_io"),
                 bind(GradientMutant::kTangentAdded)}};
  return c;
}

// --- an exposed metric ---------------------------------------------------------------------------------

enum class MetricMutant { kNone, kAsymmetric };

// metric(W, X, Y) on tangent vectors: symmetric, bilinear (g(X + 2Y, Z) = g(X, Z) + 2 g(Y, Z)) and
// positive (judged as g(X, X) / ||X||^2 >= 1/4, which the embedded and the canonical metric meet:
// the canonical's smallest is 1/2, on W-directions). Each residual relative to the norms. The
// control reads g(X, Y) + delta <X, K Y> with K a fixed skew d x d matrix: bilinear and positive,
// but <Y, K X> = -<X, K Y>; and + delta <X, Y M> with M a skew r x r matrix (the first vanishes on
// the horizontal space where d - r = 1, the second where r = 1); delta = max(1e-6, 2^17 u_io).
CheckResult metric_check(const RuleImplementation& impl, const Case& c, MetricMutant mutant) {
  const RuleDeclaration& decl = *impl.declaration;
  const TangentMap map = decl.settings.map;
  Rng rng(c.seed);
  const Frames<double> w = random_frames<double>(rng, {c.d, c.r}, c.heads);
  const double scale = pow10(c.log10_scale);
  Frames<double> x, y, z, x2y;
  for (int h = 0; h < c.heads; ++h) {
    x.push_back(tangent_of(map, w[std::size_t(h)], gaussian_matrix<double>(rng, c.d, c.r) * scale));
    y.push_back(tangent_of(map, w[std::size_t(h)], gaussian_matrix<double>(rng, c.d, c.r) * scale));
    z.push_back(tangent_of(map, w[std::size_t(h)], gaussian_matrix<double>(rng, c.d, c.r) * scale));
    x2y.push_back(x.back() + 2 * y.back());
  }
  const auto g = [&](const Frames<double>& a, const Frames<double>& b) {
    std::vector<double> v = decl.metric(w, a, b);
    if (v.size() != w.size())
      throw RuleError("rule " + impl.name + ": metric(w, x, y) returned " + std::to_string(v.size()) + " numbers for " +
                      std::to_string(w.size()) + " frames");
    if (mutant == MetricMutant::kAsymmetric) {
      Rng kr(c.seed ^ 0x5eedULL);
      Matrix<double> k = gaussian_matrix<double>(kr, c.d, c.d), m = gaussian_matrix<double>(kr, c.r, c.r);
      k = (k - k.transpose()).eval();
      m = (m - m.transpose()).eval();
      for (std::size_t h = 0; h < w.size(); ++h)
        v[h] +=
            control_size(impl, 1e-6, 17, 21) * (a[h].cwiseProduct(k * b[h]).sum() + a[h].cwiseProduct(b[h] * m).sum());
    }
    return v;
  };
  const auto gxy = g(x, y), gyx = g(y, x), gxz = g(x, z), gyz = g(y, z), gsz = g(x2y, z), gxx = g(x, x);
  double symmetric = 0, bilinear = 0, positive = 0;
  for (std::size_t h = 0; h < w.size(); ++h) {
    const double nx = x[h].norm(), ny = y[h].norm(), nz = z[h].norm();
    symmetric = worse(symmetric, std::abs(gxy[h] - gyx[h]) / std::max(nx * ny, 1e-300));
    bilinear = worse(bilinear, std::abs(gsz[h] - gxz[h] - 2 * gyz[h]) / std::max((nx + 2 * ny) * nz, 1e-300));
    // A deficit below a quarter of the embedded norm counts as a residual of its size.
    if (nx > 0) positive = worse(positive, std::max(0.0, 0.25 - gxx[h] / (nx * nx)));
  }
  CheckResult r = roundoff(worse(worse(symmetric, bilinear), positive), impl.unit_roundoff, double(c.d * c.r));
  r.detail = {{"symmetric", symmetric}, {"bilinear", bilinear}, {"positive_deficit", positive}};
  return r;
}

Claim metric_claim(const RuleImplementation& impl) {
  Claim c = base_claim(impl, "rule-metric", "§5.3 (the embedded and canonical metrics)", "identity",
                       "The rule's exposed metric(W, X, Y) is an inner product on the tangent space: symmetric, "
                       "bilinear, and positive (at least a quarter of the embedded norm).");
  c.own_dtype_only = true;
  c.generator =
      "d in [3,10], r in [1,d] (a tangent space of dimension >= 2, where a bilinear form can be "
      "asymmetric), H in [1,3], three tangent vectors at scale 10^[-6,6]; 40 cases";
  c.residual =
      "the largest of |g(X, Y) - g(Y, X)| / (||X|| ||Y||), |g(X + 2Y, Z) - g(X, Z) - 2 g(Y, Z)| / "
      "((||X|| + 2 ||Y||) ||Z||), max(0, 1/4 - g(X, X) / ||X||^2), over u*d*r";
  c.analysis = "The embedded metric tr X^T Y and the canonical tr X^T (I - W W^T / 2) Y are inner products.";
  c.generator_fn = [] { return sequence_cases(3, 1, -2, 0, false); };
  const auto bind = [impl](MetricMutant m) {
    return same_in_both([impl, m](const Case& k) { return metric_check(impl, k, m); });
  };
  c.check = bind(MetricMutant::kNone);
  c.controls = {{"asymmetric",
                 "g(X, Y) + delta (<X, K Y> + <X, Y M>) with K, M skew, delta = max(1e-6, 2^17 u_io): bilinear "
                 "and positive, not symmetric" +
                     for_float32(impl, "delta = 2^21 u_io"),
                 bind(MetricMutant::kAsymmetric)}};
  return c;
}

// --- an exposed vector transport ----------------------------------------------------------------------

enum class TransportMutant { kNone, kTangencyAtOldPoint };

// transport(W, W', X) for W' = polar(W + t xi) (xi a unit tangent vector) and X tangent at W: it
// lands in the tangent space at W' (normal part relative to ||X||), is the identity at W' = W, and
// agrees with Pi_W'(X) to first order in t: e(t) = ||T - Pi_W'(X)|| / ||X|| judged by e(t)/t at t =
// 2^-6 and 2^-9 (equal for first-order agreement, eightfold where e does not vanish with t). The
// control judges tangency at the old point W: off by O(t), ||X|| at t = 1.
CheckResult transport_check(const RuleImplementation& impl, const Case& c, TransportMutant mutant) {
  const RuleDeclaration& decl = *impl.declaration;
  const TangentMap map = decl.settings.map;
  Rng rng(c.seed);
  const Frames<double> w = random_frames<double>(rng, {c.d, c.r}, c.heads);
  const double scale = pow10(c.log10_scale);
  Frames<double> xi, x;
  std::vector<double> source;  // ||Z|| of X = Pi(Z): X's normal part is Z's rounding, u ||Z||
  for (int h = 0; h < c.heads; ++h) {
    const Matrix<double> t = tangent_of(map, w[std::size_t(h)], gaussian_matrix<double>(rng, c.d, c.r));
    xi.push_back(t / std::max(t.norm(), 1e-300));
    const Matrix<double> z = gaussian_matrix<double>(rng, c.d, c.r) * scale;
    x.push_back(tangent_of(map, w[std::size_t(h)], z));
    source.push_back(std::max(z.norm(), 1e-300));
  }
  const auto moved = [&](double t) {
    Frames<double> out;
    for (std::size_t h = 0; h < w.size(); ++h) out.push_back(polar_svd<double>(w[h] + t * xi[h]));
    return out;
  };
  double identity = 0, tangent = 0, defect[2] = {0, 0};
  const Frames<double> same = decl.transport(w, w, x);
  for (std::size_t h = 0; h < w.size(); ++h) identity = worse(identity, (same[h] - x[h]).norm() / source[h]);
  for (const double t : {1.0, 0.1}) {
    const Frames<double> w1 = moved(t);
    const Frames<double> tx = decl.transport(w, w1, x);
    for (std::size_t h = 0; h < w.size(); ++h) {
      const Matrix<double>& at = mutant == TransportMutant::kTangencyAtOldPoint ? w[h] : w1[h];
      tangent = worse(tangent, normal_part(map, at, tx[h]) * tx[h].norm() / source[h]);
    }
  }
  const double ts[2] = {0x1p-6, 0x1p-9};
  for (int i = 0; i < 2; ++i) {
    const Frames<double> w1 = moved(ts[i]);
    const Frames<double> tx = decl.transport(w, w1, x);
    for (std::size_t h = 0; h < w.size(); ++h)
      defect[i] = worse(defect[i], (tx[h] - tangent_of(map, w1[h], x[h])).norm() / source[h]);
    defect[i] /= ts[i];
  }
  const double unit = impl.unit_roundoff * double(c.d * c.r);
  // e(t)/t equal at both t where T agrees with Pi_W' to first order (transport by projection: e = 0
  // to rounding; the differentiated retraction: e = O(t)); eightfold where e stays O(1). Rounding
  // alone (e ~ u) gives e/t growing eightfold too: the order is judged only above 1e3 units.
  const bool above_rounding = defect[1] * ts[1] > 1e3 * unit;
  const double order = above_rounding ? defect[1] / std::max(defect[0], 1e-300) : 1.0;
  CheckResult r;
  r.residual = worse(identity, tangent);
  r.normaliser = unit;
  r.ratio = worse(r.residual / unit, 30 * std::pow(order / (2 * std::sqrt(2.0)), 3));
  r.detail = {{"identity_at_same_point", identity},
              {"normal_part", tangent},
              {"defect_over_t", {defect[0], defect[1]}},
              {"order_ratio", order}};
  return r;
}

Claim transport_claim(const RuleImplementation& impl) {
  Claim c = base_claim(impl, "rule-transport", "§3.2 (the first moment carried to the new frame)", "identity",
                       "The rule's exposed transport(W, W', X) is a vector transport: it lands in the tangent "
                       "space at W', is the identity at W' = W, and agrees with Pi_W'(X) to first order in "
                       "||W' - W||.");
  c.own_dtype_only = true;
  c.generator =
      "d in [2,10], r in [1,d], H in [1,3], W' = polar(W + t xi) with xi a unit tangent vector, X "
      "tangent at scale 10^[-6,6]; 40 cases";
  c.residual =
      "max(||T(W, W, X) - X||, ||normal part of T at W'|| at t = 1 and 0.1) / ||Z|| (X = Pi(Z): its normal "
      "part is Z's rounding) over u*d*r; and 30 (q / 2 sqrt 2)^3, q = e(2^-9)/e(2^-6), e(t) = ||T - Pi_W'(X)|| / "
      "(t ||Z||) (q = 1 for "
      "first-order agreement, 8 where it does not vanish), the larger ratio";
  c.analysis =
      "Transport by projection, Pi_W'(X), is exact; the differentiated polar retraction agrees with it "
      "to first order.";
  c.generator_fn = [] { return sequence_cases(2, 1, -2, 0, false); };
  const auto bind = [impl](TransportMutant m) {
    return same_in_both([impl, m](const Case& k) { return transport_check(impl, k, m); });
  };
  c.check = bind(TransportMutant::kNone);
  c.controls = {{"tangency-at-old-point", "tangency judged at W in place of W': off by O(t)",
                 bind(TransportMutant::kTangencyAtOldPoint)}};
  return c;
}

// --- a retraction declared second order ------------------------------------------------------------

enum class SecondOrderMutant { kNone, kTangentialCurvature };

// A second-order retraction's curve t -> R(W, t xi) has a normal second derivative at t = 0 (the
// embedded metric's geodesic condition): the tangential part of its defect, e2(t) = ||Pi_W(R(W, t xi)
// - W - t xi)|| / t^3, stays bounded as t -> 0. Judged by q = e2(2^-9) / e2(2^-6): 1 at second
// order, 8 where a tangential t^2 term is left (QR's); below 1e3 units of rounding at the small t the
// defect is rounding and q is taken as 1. The control retracts polar(R(W, t xi) + t^2 zeta), zeta a
// unit tangent vector: a first-order retraction with a tangential t^2 term.
CheckResult second_order(const RuleImplementation& impl, const Case& c, SecondOrderMutant mutant) {
  const RuleDeclaration& decl = *impl.declaration;
  const TangentMap map = decl.settings.map;
  Rng rng(c.seed);
  const Frames<double> w = random_frames<double>(rng, {c.d, c.r}, c.heads);
  Frames<double> xi, zeta;
  for (int h = 0; h < c.heads; ++h) {
    const Matrix<double> t = tangent_of(map, w[std::size_t(h)], gaussian_matrix<double>(rng, c.d, c.r));
    xi.push_back(t / std::max(t.norm(), 1e-300));
    const Matrix<double> z = tangent_of(map, w[std::size_t(h)], gaussian_matrix<double>(rng, c.d, c.r));
    zeta.push_back(z / std::max(z.norm(), 1e-300));
  }
  const double unit = impl.unit_roundoff * double(c.d * c.r);
  // In float32 arithmetic the defect at 2^-9 is rounding: the slope is read at 2^-3 and 2^-6, above 30
  // units of rounding (the same factor 8; the O(t^4) term moves q by about 2^-3 there).
  const bool coarse = coarse_arithmetic(impl);
  const double ts[2] = {coarse ? 0x1p-3 : 0x1p-6, coarse ? 0x1p-6 : 0x1p-9};
  double e2[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    Frames<double> step = xi;
    for (auto& f : step) f *= ts[i];
    Frames<double> moved = decl.retract(w, step);
    for (std::size_t h = 0; h < w.size(); ++h) {
      if (mutant == SecondOrderMutant::kTangentialCurvature)
        moved[h] = polar_svd<double>(moved[h] + ts[i] * ts[i] * zeta[h]);
      const Matrix<double> defect = moved[h] - w[h] - ts[i] * xi[h];
      e2[i] = worse(e2[i], tangent_of(map, w[h], defect).norm());
    }
  }
  const bool above_rounding = e2[1] > (coarse ? 30 : 1e3) * unit;
  const double order = above_rounding ? e2[1] / std::max(e2[0], 1e-300) * std::pow(2.0, 9) : 1.0;
  CheckResult r;
  r.residual = e2[1];
  r.normaliser = unit;
  r.ratio = 30 * std::pow(order / (2 * std::sqrt(2.0)), 3);
  r.detail = {{"tangential_defect_over_t3", {e2[0] / std::pow(ts[0], 3), e2[1] / std::pow(ts[1], 3)}},
              {"order_ratio", order}};
  return r;
}

Claim second_order_claim(const RuleImplementation& impl) {
  Claim c =
      base_claim(impl, "rule-retraction-second-order", "Absil et al. (2008) Prop. 5.5.5; §3.2 (polar)", "identity",
                 "The rule's exposed retract(W, eta) is second order: R(W, t xi) = W + t xi + t^2 N + O(t^3) "
                 "with N normal at W (its curves leave W as geodesics of the embedded metric).");
  c.own_dtype_only = true;
  c.generator = "d in [2,10], r in [1,d], H in [1,3], a unit tangent xi per frame; 40 cases";
  c.residual =
      "30 (q / 2 sqrt 2)^3, q = e2(2^-9)/e2(2^-6), e2(t) = ||Pi_W(R(W, t xi) - W - t xi)|| / t^3 (q = 1 "
      "at second order, 8 where a tangential t^2 term is left; 1 where e2 is rounding)";
  c.analysis =
      "The polar retraction is second order; the QR retraction is first order only (its t^2 term has a "
      "tangential part).";
  c.generator_fn = [] { return sequence_cases(2, 1, -2, 0, false); };
  const auto bind = [impl](SecondOrderMutant m) {
    return same_in_both([impl, m](const Case& k) { return second_order(impl, k, m); });
  };
  c.check = bind(SecondOrderMutant::kNone);
  c.controls = {{"tangential-curvature",
                 "polar(R(W, t xi) + t^2 zeta), zeta a unit tangent vector: first order only" +
                     for_float32(impl, "the slope read at t = 2^-3 .. 2^-6, above 30 units of rounding"),
                 bind(SecondOrderMutant::kTangentialCurvature)}};
  return c;
}

}  // namespace stiefel::certificates::rule_detail
