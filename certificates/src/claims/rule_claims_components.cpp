// The claims of a declared rule's iterates and exposed components: on the manifold, the exposed
// projection and retraction, and the reported step's tangency.
#include "rule_claim_builders.h"

namespace stiefel::certificates::rule_detail {

// --- a declared rule's iterates stay on St(d, r) --------------------------------------------------

enum class ManifoldMutant { kNone, kChordMidpoint };

// The isometry error max|W^T W - I| of the iterates over a long run, in units of u*d*r*(1 +
// ||eta||max): its level, and its growth (the last quarter of the run against the first). The
// control reads the chord midpoints (W_t + W_{t+1}) / 2 in place of the iterates: off the manifold by
// ||W_{t+1} - W_t||^2 / 4, a frame map that steps along chords and never retracts (eps 0 there, so
// that the steps keep their size whatever the gradients' scale).
CheckResult on_manifold(const RuleImplementation& impl, const Case& c, ManifoldMutant mutant) {
  CheckResult out;
  const double eps = mutant == ManifoldMutant::kChordMidpoint || c.eps_zero ? 0.0 : pow10(c.log10_eps);
  for (const RuleSettings& case_settings : settings_list(impl, c, {FrameRule::kB2}, eps)) {
    // The chords of a float32 rule are read at a rate of at least 1/2 (no change in float64), judged
    // against the case's tolerance (at its own rate).
    RuleSettings s = case_settings;
    if (mutant == ManifoldMutant::kChordMidpoint) raise_step(s, c, control_size(impl, 0, 0, 23));
    auto r = impl.make();
    Rng rng(c.seed);
    Frames<double> previous = random_frames<double>(rng, {c.d, c.r}, c.heads);
    const auto run = run_rule(*r, c, s, kSame);
    std::vector<double> iso;
    for (const auto& frames : run) {
      double e = 0;
      for (std::size_t h = 0; h < frames.size(); ++h)
        e = worse(e, isometry_error<double>(mutant == ManifoldMutant::kChordMidpoint
                                                ? Matrix<double>((previous[h] + frames[h]) / 2)
                                                : frames[h]));
      iso.push_back(e);
      previous = frames;
    }
    const std::size_t quarter = std::max<std::size_t>(1, iso.size() / 4);
    double level = 0, first = 0, last = 0;
    for (std::size_t t = 0; t < iso.size(); ++t) {
      level = worse(level, iso[t]);
      if (t < quarter) first = worse(first, iso[t]);
      if (t + quarter >= iso.size()) last = worse(last, iso[t]);
    }
    const double unit = impl.unit_roundoff * rounding_factor(impl, c, case_settings, own_decay(s)) / double(c.steps);
    // Growth: the last quarter's largest error over the first's (floored at the unit), fourfold
    // growth at the tolerance.
    const double growth = last / std::max(first, unit);
    CheckResult res;
    res.residual = level;
    res.normaliser = unit;
    res.ratio = worse(level / unit, 30 * growth / 4);
    res.detail = {{"isometry_max", level}, {"first_quarter", first}, {"last_quarter", last}, {"growth", growth}};
    keep_worse(out, res);
  }
  return out;
}

Claim on_manifold_claim(const RuleImplementation& impl) {
  Claim c = base_claim(impl, "rule-on-manifold", "§3.2 (the retraction), §4 (iterates on St(d, r))", "identity",
                       "The rule's iterates stay on St(d, r) over long runs: their isometry error max|W^T W - I| "
                       "stays at the rounding of one step, and does not grow along the run.");
  c.own_dtype_only = true;
  c.generator =
      "d in [2,10], r in [1,d], H in [1,3], T in [40,120] steps of the sequence claims' gradients (seven profiles, "
      "scale 10^[-6,6]), rate 10^[-2,0], eps 1e-8, the rule's declared settings; 40 cases";
  c.residual =
      "max over steps and heads of max|W_t^T W_t - I|, over u*d*r*(1 + ||eta||max) (||eta||max = 8 lr for an "
      "adaptive rule); and growth: 30/4 times the last quarter's largest error over the first's (floored at that "
      "unit), the larger ratio";
  c.analysis = "A retraction returns a point of St(d, r); its rounding is that of one step, not a sum over steps.";
  c.generator_fn = [] {
    return rc::gen::exec([] {
      Case k = *sequence_cases(2, 30, -2, 0, false);
      k.steps = *rc::gen::inRange(40, 121);
      return k;
    });
  };
  const auto bind = [impl](ManifoldMutant m) {
    return same_in_both([impl, m](const Case& k) { return on_manifold(impl, k, m); });
  };
  c.check = bind(ManifoldMutant::kNone);
  c.controls = {
      {"chord-midpoints",
       "the isometry error of the chord midpoints (W_t + W_{t+1}) / 2 (a map that steps along chords), eps 0" +
           for_float32(impl, "steps of at least 1/2"),
       bind(ManifoldMutant::kChordMidpoint)}};
  return c;
}

// --- an exposed projection (Prop. 2) -------------------------------------------------------------

enum class ProjectionMutant { kNone, kFramesOffManifold };

// The rule's project(W, X) against the four properties that make it the projection onto its tangent
// space: idempotent, self-adjoint in the rule's metric (its metric(W, X, Y) where exposed, else the
// embedded one), zero on the normal space {W S : S symmetric} (for a Grassmann rule the vertical
// space {W A}) and the identity on tangent (horizontal) vectors; each residual relative to its
// input's norm. The control passes frames off the manifold by a relative delta = max(1e-6, 2^17 u_io)
// (W (1 + delta); 1e-6 in float64, 2^-7 for a float32 rule), where Pi_W's formula is no projection.
CheckResult projection(const RuleImplementation& impl, const Case& c, ProjectionMutant mutant) {
  const RuleDeclaration& decl = *impl.declaration;
  const TangentMap map = decl.settings.map;
  Rng rng(c.seed);
  Frames<double> w = random_frames<double>(rng, {c.d, c.r}, c.heads);
  const Frames<double> on_manifold = w;
  if (mutant == ProjectionMutant::kFramesOffManifold)
    for (auto& f : w) f *= 1 + control_size(impl, 1e-6, 17, 19);
  const double scale = pow10(c.log10_scale);
  Frames<double> x, y, normal, tangent;
  std::vector<double> tangent_source;  // the norm of the matrix each tangent vector was projected from
  for (int h = 0; h < c.heads; ++h) {
    x.push_back(gaussian_matrix<double>(rng, c.d, c.r) * scale);
    y.push_back(gaussian_matrix<double>(rng, c.d, c.r) * scale);
    Matrix<double> a = gaussian_matrix<double>(rng, c.r, c.r);
    if (map != TangentMap::kGrassmann) a = ((a + a.transpose()) / 2).eval();
    normal.push_back(w[std::size_t(h)] * a * scale);
    const Matrix<double> z = gaussian_matrix<double>(rng, c.d, c.r) * scale;
    tangent.push_back(tangent_of(map, w[std::size_t(h)], z));
    tangent_source.push_back(z.norm());
  }
  const auto& project = decl.project;
  const Frames<double> px = project(w, x), py = project(w, y), ppx = project(w, px), pn = project(w, normal),
                       pt = project(w, tangent);
  // The metric at the frames on the manifold (the control moves only what project sees).
  const std::vector<double> gpx_y = inner(decl, on_manifold, px, y), gx_py = inner(decl, on_manifold, x, py);
  double idempotent = 0, adjoint = 0, kills = 0, fixes = 0;
  for (std::size_t h = 0; h < x.size(); ++h) {
    idempotent = worse(idempotent, (ppx[h] - px[h]).norm() / x[h].norm());
    adjoint = worse(adjoint, std::abs(gpx_y[h] - gx_py[h]) / (x[h].norm() * y[h].norm()));
    kills = worse(kills, pn[h].norm() / std::max(normal[h].norm(), 1e-300));
    // Relative to the matrix it was projected from: a tangent vector short against it carries that
    // matrix's rounding (u ||Z||) in its normal part.
    fixes = worse(fixes, (pt[h] - tangent[h]).norm() / tangent_source[h]);
  }
  CheckResult r =
      roundoff(worse(worse(idempotent, adjoint), worse(kills, fixes)), impl.unit_roundoff, double(c.d * c.r));
  r.detail = {{"idempotent", idempotent}, {"self_adjoint", adjoint}, {"kills_normal", kills}, {"fixes_tangent", fixes}};
  return r;
}

Claim projection_claim(const RuleImplementation& impl) {
  Claim c = base_claim(impl, "rule-projection", "Prop. 2", "identity",
                       impl.declaration->settings.map == TangentMap::kGrassmann
                           ? "The rule's exposed project(W, X) is the projection onto the horizontal space at W along "
                             "{W A}: idempotent, self-adjoint in the rule's metric, zero on W A, the identity on "
                             "horizontal vectors."
                           : "The rule's exposed project(W, X) is the projection onto T_W St(d, r) along {W S : S "
                             "symmetric}: idempotent, self-adjoint in the rule's metric (embedded where it exposes "
                             "none), zero on W S, the identity on tangent vectors.");
  c.own_dtype_only = true;
  c.generator = "d in [2,10], r in [1,d], H in [1,3], X, Y, S, a tangent vector Gaussian at scale 10^[-6,6]; 40 cases";
  c.residual =
      "the largest of ||P(P X) - P X|| / ||X||, |<P X, Y> - <X, P Y>| / (||X|| ||Y||), ||P(W S)|| / ||W S||, "
      "||P xi - xi|| / ||Z|| (xi = Pi_W(Z)) (detail: each), over u*d*r";
  c.analysis = "Pi_W(X) = X - W sym(W^T X) is the orthogonal projection onto the tangent space (Prop. 2).";
  c.generator_fn = [] { return sequence_cases(2, 1, -2, 0, false); };
  const auto bind = [impl](ProjectionMutant m) {
    return same_in_both([impl, m](const Case& k) { return projection(impl, k, m); });
  };
  c.check = bind(ProjectionMutant::kNone);
  c.controls = {{"frames-off-manifold",
                 "frames W (1 + delta), delta = max(1e-6, 2^17 u_io), off St(d, r), where Pi_W's formula is no "
                 "projection" +
                     for_float32(impl, "delta = 2^19 u_io"),
                 bind(ProjectionMutant::kFramesOffManifold)}};
  return c;
}

// --- an exposed retraction --------------------------------------------------------------------------

enum class RetractionMutant { kNone, kDoubledStep };

// The rule's retract(W, eta): R(W, 0) = W, R(W, t xi) on St(d, r) at t = 1 and 0.1, and first order:
// the defect e(t) = ||R(W, t xi) - (W + t xi)|| is O(t^2), judged by e(t)/t^2 at t = 2^-6 and 2^-9
// (equal for a retraction, eightfold where the defect is first order). The control retracts 2 t xi.
CheckResult retraction(const RuleImplementation& impl, const Case& c, RetractionMutant mutant) {
  Rng rng(c.seed);
  const Frames<double> w = random_frames<double>(rng, {c.d, c.r}, c.heads);
  Frames<double> xi, zero;
  for (int h = 0; h < c.heads; ++h) {
    Matrix<double> t = project_tangent<double>(w[std::size_t(h)], gaussian_matrix<double>(rng, c.d, c.r));
    xi.push_back(t / std::max(t.norm(), 1e-300));
    zero.push_back(Matrix<double>::Zero(c.d, c.r));
  }
  const auto& retract = impl.declaration->retract;
  const double k = mutant == RetractionMutant::kDoubledStep ? 2.0 : 1.0;
  const auto scaled = [&](double t) {
    Frames<double> out = xi;
    for (auto& f : out) f *= k * t;
    return out;
  };
  const double unit = impl.unit_roundoff * double(c.d * c.r);
  double at_zero = max_abs_difference(retract(w, zero), w);
  double iso = 0;
  for (const double t : {1.0, 0.1})
    for (const auto& f : retract(w, scaled(t))) iso = worse(iso, isometry_error<double>(f));
  double defect[2];
  const double ts[2] = {0x1p-6, 0x1p-9};
  for (int i = 0; i < 2; ++i) {
    const auto moved = retract(w, scaled(ts[i]));
    double e = 0;
    for (std::size_t h = 0; h < w.size(); ++h) e = worse(e, (moved[h] - w[h] - ts[i] * xi[h]).norm());
    defect[i] = e / (ts[i] * ts[i]);
  }
  const double order = defect[1] / std::max(defect[0], 1e-300);
  CheckResult r;
  r.residual = worse(at_zero, iso);
  r.normaliser = unit;
  // The defect's order p from the slope of e(t)/t^2 over t = 2^-6 .. 2^-9 (a factor 8): order =
  // 8^(2 - p), 1 at p = 2; the tolerance (30) sits at p = 1.5 (order 2 sqrt 2), a first-order
  // defect (p = 1, order 8) at 680.
  r.ratio = worse(r.residual / unit, 30 * std::pow(order / (2 * std::sqrt(2.0)), 3));
  r.detail = {
      {"at_zero", at_zero}, {"isometry", iso}, {"defect_over_t2", {defect[0], defect[1]}}, {"order_ratio", order}};
  return r;
}

Claim retraction_claim(const RuleImplementation& impl) {
  Claim c = base_claim(impl, "rule-retraction", "§3.2 (the retraction), Absil et al. (2008) Def. 4.1.1", "identity",
                       "The rule's exposed retract(W, eta) is a retraction: R(W, 0) = W, R(W, eta) is on St(d, r), "
                       "and R(W, t xi) = W + t xi + O(t^2).");
  c.own_dtype_only = true;
  c.generator = "d in [2,10], r in [1,d], H in [1,3], a unit tangent xi per frame; 40 cases";
  c.residual =
      "max(|R(W, 0) - W|, max|R^T R - I| at t = 1 and 0.1) over u*d*r; and 30 (q / 2 sqrt 2)^3 with q = "
      "e(2^-9)/e(2^-6), e(t) = ||R(W, t xi) - W - t xi|| / t^2 (q = 1 for a retraction, 8 for a first-order "
      "defect: the tolerance sits at defect order 1.5), the larger ratio";
  c.analysis = "Polar, sign-fixed QR and Cayley retractions all agree with W + t xi to second order.";
  c.generator_fn = [] { return sequence_cases(2, 1, -2, 0, false); };
  const auto bind = [impl](RetractionMutant m) {
    return same_in_both([impl, m](const Case& k) { return retraction(impl, k, m); });
  };
  c.check = bind(RetractionMutant::kNone);
  c.controls = {{"doubled-step", "R(W, 2 t xi) in place of R(W, t xi): a map that is not first order",
                 bind(RetractionMutant::kDoubledStep)}};
  return c;
}

// --- the reported step is tangent -------------------------------------------------------------------

enum class StepMutant { kNone, kChord };

// Over a run of the sequence claims' gradients, each step the rule reports (forward's third result)
// is tangent at the frames it leaves (horizontal for a Grassmann rule), and, where the rule exposes
// retract, its next frames are R(W, eta). The control reads the chord W_{t+1} - W_t as the step: off
// the tangent space by ||eta||^2 / 2, relative ||eta|| / 2 (at least 5e-3 at the rates drawn).
CheckResult tangent_step(const RuleImplementation& impl, const Case& c, StepMutant mutant) {
  const RuleDeclaration& decl = *impl.declaration;
  RuleSettings s = settings_list(impl, c, {}, 1e-8).front();
  // A float32 rule's chords are read at a rate of at least 1/8 (no change in float64): the chord's
  // normal part, ||eta||^2 / 2, then clears u32 d r kappa.
  if (mutant == StepMutant::kChord) raise_step(s, c, control_size(impl, 0, 0, 21));
  const auto rule = impl.make();
  Rng rng(c.seed);
  Frames<double> w = random_frames<double>(rng, {c.d, c.r}, c.heads);
  Frames<double> persistent;
  for (int h = 0; h < c.heads; ++h) persistent.push_back(gaussian_matrix<double>(rng, c.d, c.r));
  rule->start(w, s);
  // The conditioning of the gradients' tangent part: a correct rule's step inherits the rounding of
  // Pi(G), u ||G|| in its normal part, relative to ||Pi(G)||.
  double normal = 0, retracted = 0, eta_max = 0, kappa = 1;
  for (int t = 0; t < c.steps; ++t) {
    const Frames<double> g = sequence_gradients<double>(rng, persistent, c, t, 1.0);
    for (std::size_t h = 0; h < w.size(); ++h)
      kappa = std::max(kappa, g[h].norm() / std::max(tangent_of(s.map, w[h], g[h]).norm(), 1e-300));
    const Frames<double> next = rule->step(w, g);
    const Frames<double>* reported = rule->last_step();
    if (!reported || reported->size() != w.size())
      throw RuleError("rule " + impl.name + " declares 'tangent-step' but step " + std::to_string(t + 1) +
                      " reported no step of the frames' shape");
    Frames<double> eta = *reported;
    if (mutant == StepMutant::kChord)
      for (std::size_t h = 0; h < w.size(); ++h) eta[h] = next[h] - w[h];
    for (std::size_t h = 0; h < w.size(); ++h) {
      if (eta[h].norm() > 0) normal = worse(normal, normal_part(s.map, w[h], eta[h]));
      eta_max = worse(eta_max, eta[h].norm());
    }
    if (decl.retract) retracted = worse(retracted, max_abs_difference(decl.retract(w, eta), next));
    w = next;
  }
  const double unit = impl.unit_roundoff * double(c.d * c.r) * (1 + eta_max) * kappa;
  CheckResult r;
  r.residual = worse(normal, retracted);
  r.normaliser = unit;
  r.ratio = r.residual / unit;
  r.detail = {{"normal_part", normal}, {"eta_max", eta_max}, {"kappa", kappa}};
  if (decl.retract) r.detail["next_minus_retract"] = retracted;
  return r;
}

Claim tangent_step_claim(const RuleImplementation& impl) {
  const bool grassmann = impl.declaration->settings.map == TangentMap::kGrassmann;
  Claim c = base_claim(impl, "rule-tangent-step", "§3.2 (the step is tangent before the retraction)", "identity",
                       grassmann ? "Every step the rule reports is horizontal at the frames it leaves (W^T eta = 0), "
                                   "and its next frames are its retraction of that step where it exposes one."
                                 : "Every step the rule reports is tangent at the frames it leaves (W^T eta skew), "
                                   "and its next frames are its retraction of that step where it exposes one.");
  c.own_dtype_only = true;
  c.generator =
      "d in [2,10], r in [1,d], H in [1,3], T in [1,8] steps of the sequence claims' gradients, rate 10^[-2,0], eps "
      "1e-8, the rule's declared settings; 40 cases";
  c.residual = grassmann ? "max over steps and heads of ||W^T eta|| / ||eta|| and max|R(W, eta) - W'|, over "
                           "u*d*r*(1 + ||eta||max)*kappa"
                         : "max over steps and heads of ||sym(W^T eta)|| / ||eta|| and max|R(W, eta) - W'|, over "
                           "u*d*r*(1 + ||eta||max)*kappa, kappa = max ||G|| / ||Pi(G)|| over the run (the "
                           "projection's conditioning)";
  c.analysis =
      "A step built as a projection of anything is tangent to rounding; a step that leaves a normal part "
      "moves the frames off the manifold before the retraction pulls them back.";
  c.generator_fn = [] { return sequence_cases(2, 8, -2, 0, false); };
  const auto bind = [impl](StepMutant m) {
    return same_in_both([impl, m](const Case& k) { return tangent_step(impl, k, m); });
  };
  c.check = bind(StepMutant::kNone);
  c.controls = {
      {"chord-as-step",
       "the chord W_{t+1} - W_t read as the step: normal by ||eta||^2 / 2" + for_float32(impl, "steps of at least 1/8"),
       bind(StepMutant::kChord)}};
  return c;
}

}  // namespace stiefel::certificates::rule_detail
