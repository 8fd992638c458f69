// The update claims' shared support: the rule lists, the runs, the tolerances and the case
// generator every rule claim file uses. The update claims run against an implementation seen only through UpdateRule
// (stiefel/rules/update_rule.h): the training core's batched frame_step, or any rule a user registers. Each claim runs
// the rule on generated gradient sequences and reads nothing but its frames; its controls are near misses fed through
// the same implementation (another second moment, an eps at the gradients' scale, a tangent direction in place of the
// decay) or, for the agreement with core/, a mutant of the reference. The implementation runs in its own dtype: its
// 50-digit slot reports the same run, except for the agreement claim, whose 50-digit slot compares with core/'s rule in
// 50 digits.
#pragma once

#include <stiefel/certificates/update_rule.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <stiefel/exponential.h>

#include "claim_builder.h"
#include "implemented_update.h"

namespace stiefel::certificates::rule_detail {

using rules::rule_name;
using rules::rule_named;
using rules::settings_of;

// The rules a claim runs: its own list, or the implementation's one rule.
inline std::vector<FrameRule> rules_for(const RuleImplementation& impl, std::vector<FrameRule> own) {
  if (impl.only_rule.empty()) return own;
  const auto r = rule_named(impl.only_rule);
  if (!r)
    throw std::invalid_argument("rule implementation " + impl.name + ": no frame rule named '" + impl.only_rule + "'");
  return {*r};
}

// The larger of two residuals, NaN winning: a rule that returns frames that are not finite fails
// the claim (std::max would drop the NaN).
inline double worse(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
}

template <class S>
double max_abs(const Matrix<S>& m) {
  double out = 0;
  for (Index j = 0; j < m.cols(); ++j)
    for (Index i = 0; i < m.rows(); ++i) out = worse(out, std::abs(to_double(m(i, j))));
  return out;
}

inline double max_abs_difference(const Frames<double>& a, const Frames<double>& b) {
  double m = 0;
  for (std::size_t h = 0; h < a.size(); ++h) m = worse(m, max_abs<double>(a[h] - b[h]));
  return m;
}

// The smallest and largest ||G_t||_F of the case's gradient sequence (the draws run_rule makes), and
// the largest at its first step.
struct GradientNorms {
  double lo, hi, first;
};

inline GradientNorms gradient_norms(const Case& c) {
  Rng rng(c.seed);
  (void)random_frames<double>(rng, {c.d, c.r}, c.heads);
  Frames<double> persistent;
  for (int h = 0; h < c.heads; ++h) persistent.push_back(gaussian_matrix<double>(rng, c.d, c.r));
  GradientNorms n{INFINITY, 0, 0};
  for (int t = 0; t < c.steps; ++t)
    for (const auto& g : sequence_gradients<double>(rng, persistent, c, t, 1.0)) {
      n.lo = std::min(n.lo, g.norm());
      n.hi = std::max(n.hi, g.norm());
      if (t == 0) n.first = std::max(n.first, g.norm());
    }
  return n;
}

inline std::pair<double, double> gradient_norm_range(const Case& c) {
  const GradientNorms n = gradient_norms(c);
  return {n.lo, n.hi};
}

// A case's rate for a rule: the drawn rate for the adaptive rules; for the fixed-step rules the
// drawn rate over the case's largest gradient norm, so that their largest step has the adaptive
// rules' size. (A step lr·||G|| with ||G|| up to 10^7 is no step along the manifold, and its
// rounding grows through the next step's projection, which multiplies a frame's error by
// lr·||G||, faster than any fixed roundoff tolerance: residuals of 8e-10 at lr·||G|| = 500.)
inline double case_rate(const Case& c, FrameRule rule) {
  const double lr = pow10(c.log10_lr);
  return is_adam_rule(rule) || rule == FrameRule::kFrozen ? lr : lr / gradient_norm_range(c).second;
}

// The settings a claim runs the implementation with: a declared rule's own (the case's rate, the
// eps asked for), else one per frame rule of `own` that the implementation runs, at the case's rate
// for that rule. `adaptive_only` leaves out the fixed-step rules, `moving_only` the frozen one.
inline std::vector<RuleSettings> settings_list(const RuleImplementation& impl, const Case& c,
                                               const std::vector<FrameRule>& own, double eps,
                                               bool adaptive_only = false, bool moving_only = false) {
  if (impl.declaration) {
    RuleSettings s = impl.declaration->settings;
    if (adaptive_only && !s.adaptive) return {};
    const auto [lo, hi] = gradient_norm_range(c);
    s.lr = s.adaptive ? pow10(c.log10_lr) : pow10(c.log10_lr) / hi;
    s.eps = eps;
    // A rule that takes weight decay runs with lambda = 10^[-3, 0] times the case's smallest
    // gradient norm (drawn from the case's seed): lambda W cancels in the projection to u lambda
    // sqrt(r), which the tolerance carries relative to that norm, and a lambda far above it would
    // leave no control a margin over the tolerance. rule-decay-annihilated varies lambda itself.
    if (s.weight_decay) s.weight_decay = lo * pow10(3 * double(c.seed >> 11) * 0x1p-53 - 3);
    return {s};
  }
  std::vector<RuleSettings> out;
  for (const FrameRule rule : rules_for(impl, own)) {
    if ((adaptive_only && !is_adam_rule(rule)) || (moving_only && rule == FrameRule::kFrozen)) continue;
    out.push_back(settings_of(rule, case_rate(c, rule), eps));
  }
  return out;
}

// The weight decay a rule applies itself under `s` (0 where it takes none).
inline double own_decay(const RuleSettings& s) { return s.weight_decay.value_or(0.0); }

// The rounding a rule's frames carry, as u·factor with u the arithmetic's unit roundoff: W + eta is
// formed with an error of u·||eta||, which the polar factor (sigma_min(W + eta) >= 1) passes on, so a
// step adds u·d·r·(1 + ||eta||). A fixed-step rule's eta is lr·||Pi G|| <= lr·max||G||; an adaptive
// rule's at most lr·C_t <= 7.3 lr. A term lambda W added to G cancels in the projection to
// u·lambda·sqrt(r), relative to the smallest gradient. Where frames and gradients cross in a coarser
// dtype (u_io), each step's gradient carries a relative error u_io, which moves the step (m_hat and
// sqrt(v_hat) each by u_io) by at most 4 u_io ||eta||, T times over, and each frame read is rounded
// once: u_io (1 + 4 T ||eta||max). Where
// the two runs compared see the same rounded gradients up to an exact factor (scaled by 2^k), only
// the frame's rounding is left (same_gradients).
inline double rounding_factor(const RuleImplementation& impl, const Case& c, const RuleSettings& s, double lambda = 0,
                              bool same_gradients = false) {
  const auto [lo, hi] = gradient_norm_range(c);
  const double step = s.adaptive ? 8 * s.lr : s.lr * hi;
  const double added = lambda > 0 ? 1 + lambda * std::sqrt(double(c.r)) / std::max(lo, 1e-300) : 1;
  const double arithmetic = double(c.d * c.r * c.steps) * (1 + step) * added;
  if (!(impl.io_roundoff > impl.unit_roundoff)) return arithmetic;
  const double io = same_gradients ? 1 : (1 + 4 * double(c.steps) * step) * added;
  return arithmetic + io * impl.io_roundoff / impl.unit_roundoff;
}

// How far a control moves a quantity whose size is free (a rate in place of 0, a tangent term):
// past the implementation's coarsest rounding by 2^k u_io (the control's margin is 10 tolerances),
// and never less than the float64 size the control was designed at.
// Raises a rule's rate so that its steps are at least `step` long (an adaptive rule's are about lr, a
// fixed-step rule's lr ||G||).
inline void raise_step(RuleSettings& s, const Case& c, double step) {
  s.lr = std::max(s.lr, s.adaptive ? step : step / gradient_norm_range(c).second);
}

// A rule whose own arithmetic is float32 (a TorchScript rule with dtype float32) has tolerances of
// u32 d r T where a float32 trainer, computing in float64, has u32 alone: its controls move by
// 2^k_coarse u_io instead (k_coarse >= k).
inline bool coarse_arithmetic(const RuleImplementation& impl) { return impl.unit_roundoff > 0x1p-40; }

// The float32 form of a control, for a rule that computes in float32 (nothing otherwise).
inline std::string for_float32(const RuleImplementation& impl, const std::string& what) {
  return coarse_arithmetic(impl) ? " (float32 rule: " + what + ")" : "";
}

inline double control_size(const RuleImplementation& impl, double float64_size, int k, int k_coarse = 0) {
  return std::max(float64_size, std::ldexp(impl.io_roundoff, coarse_arithmetic(impl) ? std::max(k, k_coarse) : k));
}

// T steps of the implementation from the case's frames on its gradient sequence (gradients
// transformed by `grad` before each step), every iterate kept.
template <class Transform>
std::vector<Frames<double>> run_rule(UpdateRule& rule, const Case& c, const RuleSettings& s, Transform&& grad,
                                     const Matrix<double>* rotation = nullptr) {
  Rng rng(c.seed);
  Frames<double> w = random_frames<double>(rng, {c.d, c.r}, c.heads);
  Frames<double> persistent;
  for (int h = 0; h < c.heads; ++h) persistent.push_back(gaussian_matrix<double>(rng, c.d, c.r));
  if (rotation)
    for (auto& f : w) f = rotation->transpose() * f;
  rule.start(w, s);
  std::vector<Frames<double>> out;
  for (int t = 0; t < c.steps; ++t) {
    Frames<double> g = sequence_gradients<double>(rng, persistent, c, t, 1.0);
    if (rotation)
      for (auto& f : g) f = rotation->transpose() * f;
    g = grad(w, g);
    w = rule.step(w, g);
    out.push_back(w);
  }
  return out;
}

inline const auto kSame = [](const Frames<double>&, const Frames<double>& g) { return g; };

// A check in the implementation's dtype, reported in both precision slots and computed once.
inline CheckFn memoised(std::function<CheckResult(const Case&)> f) {
  auto memo = std::make_shared<std::pair<std::mutex, std::map<std::string, CheckResult>>>();
  return [f = std::move(f), memo](const Case& c) {
    const std::string key = to_json(c).dump();
    {
      std::lock_guard lock(memo->first);
      if (auto it = memo->second.find(key); it != memo->second.end()) return it->second;
    }
    CheckResult r = f(c);
    std::lock_guard lock(memo->first);
    memo->second.emplace(key, r);
    return r;
  };
}

inline Check same_in_both(std::function<CheckResult(const Case&)> f) {
  CheckFn once = memoised(std::move(f));
  return {once, once};
}

inline CheckResult roundoff(double residual, double unit, double factor) {
  CheckResult r;
  r.residual = residual;
  r.normaliser = unit * factor;
  r.ratio = residual / (unit * factor);
  return r;
}

// The worse of two results, a NaN ratio (frames that are not finite) staying the worst: a later
// finite run must not overwrite it.
inline void keep_worse(CheckResult& worst, const CheckResult& r) {
  if (!std::isnan(worst.ratio) && !(r.ratio <= worst.ratio)) worst = r;
}

// Sequence cases: d in [lo_d, 10], r in [1, d], H in [1, 3], T in [1, max_t], seven magnitude
// profiles at base scale 10^[-6, 6], rates 10^[lr_lo, lr_hi], eps 1e-8 (or 0 where asked).
inline rc::Gen<Case> sequence_cases(int lo_d, int max_t, double lr_lo, double lr_hi, bool eps_zero) {
  return rc::gen::exec([=] {
    Case k;
    k.d = *rc::gen::inRange(lo_d, 11);
    k.r = *rc::gen::inRange(1, k.d + 1);
    k.heads = *rc::gen::inRange(1, 4);
    k.steps = *rc::gen::inRange(1, max_t + 1);
    k.profile = *rc::gen::inRange(0, 7);
    k.log10_scale = gen::real(-6, 6, 24);
    k.log10_lr = gen::real(lr_lo, lr_hi, 20);
    k.eps_zero = eps_zero;
    k.log10_eps = -8;
    k.corr = gen::real(0, 1, 10);
    k.x = *rc::gen::inRange(0, int(std::size(kFrameRules)));  // the rule, for the agreement claim
    k.seed = *rc::gen::arbitrary<std::uint64_t>();
    return k;
  });
}

// An implementation of every frame rule (core/, the trainer), not a user's rule of one.
inline bool built_in(const RuleImplementation& impl) { return impl.only_rule.empty() && !impl.declaration; }

// About half of a built-in implementation's cases at eta_R = 1, the paper's rate, where B2's cap
// binds (§3.2): a claim about the update runs where the paper's optimizer runs as well as over the
// drawn rates. The first case of a run is one of them (rc's inRange draws its lower end at the first
// case's size, 0, where B2's first step, of norm about 1, is above every cap tau sqrt(r) <= 0.32), so
// that the regime is reached at any --cases above 1. A user's rule keeps the drawn rates (its cap, if
// any, is its own).
inline rc::Gen<Case> half_at_paper_rate(const RuleImplementation& impl, rc::Gen<Case> cases) {
  if (!built_in(impl)) return cases;
  return rc::gen::exec([cases] {
    Case k = *cases;
    if (*rc::gen::inRange(0, 2) == 0) k.log10_lr = 0;
    return k;
  });
}

inline Claim base_claim(const RuleImplementation& impl, const std::string& id, const std::string& source,
                        const std::string& kind, const std::string& statement) {
  Claim c = make_claim(id + "-" + impl.name, source, kind, statement);
  c.implementation = impl.description;
  c.max_cases = 40;
  c.cost = 3;
  return c;
}

// --- the float32 path's rounding --------------------------------------------------------------------

// x rounded to nearest (ties to even) to the significand of unit roundoff u (p = -log2 u bits: 24
// for float32), as a conversion to that dtype rounds a normal number.
inline double round_to_unit(double x, double u) {
  if (!(u > 0x1p-53) || x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  const double m = std::frexp(x, &e);
  const int p = -std::ilogb(u);
  return std::ldexp(std::nearbyint(std::ldexp(m, p)), e - p);
}

template <class S>
Frames<S> rounded_to_unit(const Frames<double>& f, double u) {
  Frames<S> out;
  for (const auto& m : f) out.push_back(m.unaryExpr([u](double x) { return S(round_to_unit(x, u)); }));
  return out;
}

// --- the components' helpers ---------------------------------------------------------------------

// The normal part of a step eta at W, relative to ||eta||: ||sym(W^T eta)|| (St(d, r)'s tangent
// space), ||W^T eta|| (Grassmann's horizontal space).
inline double normal_part(TangentMap map, const Matrix<double>& w, const Matrix<double>& eta) {
  const Matrix<double> wt = w.transpose() * eta;
  const double n = map == TangentMap::kGrassmann ? wt.norm() : ((wt + wt.transpose()) / 2).norm();
  return n / std::max(eta.norm(), 1e-300);
}

// The inner product a component is judged in: the rule's metric where it exposes one, else the
// embedded <X, Y> = tr(X^T Y), one number per frame.
inline std::vector<double> inner(const RuleDeclaration& decl, const Frames<double>& w, const Frames<double>& x,
                                 const Frames<double>& y) {
  if (decl.metric) return decl.metric(w, x, y);
  std::vector<double> out;
  for (std::size_t h = 0; h < x.size(); ++h) out.push_back(x[h].cwiseProduct(y[h]).sum());
  return out;
}

// The tangent vectors of the rule's tangent space at W: Pi_W(Z) (Pi^h(Z) for a Grassmann rule).
inline Matrix<double> tangent_of(TangentMap map, const Matrix<double>& w, const Matrix<double>& z) {
  return map == TangentMap::kGrassmann ? project_horizontal<double>(w, z) : project_tangent<double>(w, z);
}

}  // namespace stiefel::certificates::rule_detail
