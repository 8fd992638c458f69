// The rule claims that compare an implementation with core/'s rule: agreement at every step,
// the paper's sizes over whole runs (group paper-size), and the stage diagnosis of a disagreement.
#include "rule_claim_builders.h"

namespace stiefel::certificates::rule_detail {

// --- agreement with core/'s rule ----------------------------------------------------------------

enum class AgreementMutant { kNone, kSecondOrderPolar, kRateAndCapTenPercent };

// core/'s rule in S on the case's sequence: every iterate. The mutants retract by the second-order
// expansion of the polar factor, or take a rate and a cap 10 % larger (references that are not the
// rule: the first differs at fourth order in eta, the second at first order, capped or not; 60 % for
// a rule whose own arithmetic is float32, whose tolerance is u32 d r T).
// Where the implementation's frames and gradients cross in a coarser dtype (io_unit > 2^-53), core/
// is fed what the implementation is fed: the float64 draws rounded to that dtype (the start frames
// and every step's gradients), so that the comparison is of the update's arithmetic, not of the
// input dtype's conditioning (B2m's elementwise quotient moves by ||G|| / eps times a gradient's
// rounding: measured 1e-4 at eps = 1e-8 and ||G|| = 6e-4 in float32).
template <class S>
std::vector<Frames<S>> core_run(FrameRule rule, const Case& c, AgreementMutant mutant, double io_unit,
                                bool coarse = false) {
  const bool rounded = io_unit > 0x1p-53;
  Rng rng(c.seed);
  Frames<S> w = random_frames<S>(rng, {c.d, c.r}, c.heads);
  Frames<S> persistent;
  for (int h = 0; h < c.heads; ++h) persistent.push_back(gaussian_matrix<S>(rng, c.d, c.r));
  // The same draws in float64, rounded to the input dtype (S's own draws differ in their last bits).
  Rng rng64(c.seed);
  Frames<double> persistent64;
  if (rounded) {
    w = rounded_to_unit<S>(random_frames<double>(rng64, {c.d, c.r}, c.heads), io_unit);
    for (int h = 0; h < c.heads; ++h) persistent64.push_back(gaussian_matrix<double>(rng64, c.d, c.r));
  }
  const double bump = mutant != AgreementMutant::kRateAndCapTenPercent ? 1.0 : coarse ? 1.6 : 1.1;
  const S lr(pow10(c.log10_lr) * bump), eps = c.eps_zero ? S(0) : S(pow10(c.log10_eps));
  auto state = make_riemannian_adam_state<S>(w, adam_rule_hyper<S>(rule, lr, eps).moment);
  std::vector<Frames<S>> out;
  for (int t = 0; t < c.steps; ++t) {
    const Frames<S> g = rounded
                            ? rounded_to_unit<S>(sequence_gradients<double>(rng64, persistent64, c, t, 1.0), io_unit)
                            : sequence_gradients<S>(rng, persistent, c, t, 1.0);
    if (is_adam_rule(rule)) {
      auto hyper = adam_rule_hyper<S>(rule, lr, eps);
      if (hyper.cap_tau) *hyper.cap_tau *= S(bump);
      auto dir = riemannian_adam_direction<S>(w, g, state, hyper);
      if (mutant == AgreementMutant::kSecondOrderPolar) {
        for (std::size_t h = 0; h < w.size(); ++h) w[h] = second_order_polar<S>(w[h], dir.eta[h]);
        state = std::move(dir.state);
      } else {
        auto next = finish_riemannian_adam_step<S>(w, std::move(dir), hyper);
        w = std::move(next.frames);
        state = std::move(next.state);
      }
    } else {
      w = riemannian_sgd_step<S>(w, g, sgd_rule_hyper<S>(rule, S(case_rate(c, rule) * bump)));
    }
    out.push_back(w);
  }
  return out;
}

// Where an implementation disagrees with its reference, the first stage of the step that differs
// (defined below, after core/'s rule through the interface).

template <class S>
CheckResult agreement(const RuleImplementation& impl, const Case& drawn_case, AgreementMutant mutant) {
  // The fourth-order control runs both sides at eps = 0, so that its steps have their full size
  // even where the gradients are far below eps (the rule is then eps-free on both sides).
  Case c = drawn_case;
  if (mutant == AgreementMutant::kSecondOrderPolar) c.eps_zero = true;
  // The case's rule, and B2 beside it (the frozen rule takes no step, so no reference mutant can show).
  const FrameRule drawn = impl.only_rule.empty() ? kFrameRules[std::size_t(c.x)] : rules_for(impl, {}).front();
  std::vector<FrameRule> rules{drawn};
  if (drawn != FrameRule::kB2 && impl.only_rule.empty()) rules.push_back(FrameRule::kB2);
  CheckResult out;
  for (const FrameRule rule : rules) {
    const double eps = c.eps_zero ? 0.0 : pow10(c.log10_eps);
    // A declared rule runs with its own settings (its weight decay included: its reference has none,
    // and the projection cancels lambda W to u lambda sqrt(r), a term of the tolerance).
    const auto s =
        impl.declaration ? settings_list(impl, c, {}, eps).front() : settings_of(rule, case_rate(c, rule), eps);
    auto r = impl.make();
    const auto mine = run_rule(*r, c, s, kSame);
    const auto ref = core_run<S>(rule, c, mutant, impl.io_roundoff, coarse_arithmetic(impl));
    double diff = 0;
    for (std::size_t t = 0; t < mine.size(); ++t)
      for (std::size_t h = 0; h < mine[t].size(); ++h)
        diff = worse(diff, max_abs<S>(ref[t][h] - mine[t][h].template cast<S>()));
    keep_worse(out, roundoff(diff, impl.unit_roundoff,
                             rounding_factor(impl, c, s, own_decay(s), /*same_gradients=*/own_decay(s) == 0)));
  }
  out.detail = {{"rule", frame_rule_arm(drawn)}, {"cap_binding_share_b2", cap_binding_share(c)}};
  // A single-rule implementation that is not its reference: which stage differs first.
  if constexpr (std::is_same_v<S, double>)
    if (mutant == AgreementMutant::kNone && !impl.only_rule.empty() && !(out.ratio <= 30))
      out.detail["diagnosis"] = diagnose_stages(impl, drawn, c);
  return out;
}

Claim agrees_with_core(const RuleImplementation& impl) {
  Claim c = base_claim(impl, "rule-agrees-with-core", "§3.2 (the update every frame arm runs)", "identity",
                       "The implementation's rule is core/'s: over a gradient sequence its frames equal core/'s "
                       "(riemannian_adam_step / riemannian_sgd_step, the rules every other update claim "
                       "certifies) at every step, for every frame rule of the arm registry.");
  // The implementation runs in its dtype only; its 50-digit slot compares those frames with core/ in 50
  // digits, a reference and not a rerun, so a refutation is stated against the rounding bound.
  c.own_dtype_only = impl.name != "core";
  c.generator =
      "one rule of the nine per case (B2, B2-mean, B2 per-column, B2 Grassmann, B2m, B2m-can, PA16, fixed-step "
      "Stiefel, frozen) and B2 beside it, d in [2,10], r in [1,d], H in [1,3], T in [1,30] steps of the sequence "
      "claims' "
      "gradients (seven profiles, scale 10^[-6,6]), rate 10^[-2,0], about half the cases of core/ and the trainer (the "
      "first among them) at eta_R = 1, the paper's (the cap binds there: the share of (step, "
      "head) pairs it rescales, core/'s B2 on the case's sequence, is the detail's cap_binding_share_b2; a fixed-step "
      "rule's rate is divided by the case's largest ||G||), eps 1e-8; 40 cases";
  c.residual =
      "max |W_impl - W_core| over steps and entries (entries of size <= 1): in float64 against core/ in float64, "
      "in the 50-digit slot against core/ in 50 digits; factor d*r*T*(1 + ||eta||max), ||eta||max = 8 lr for an "
      "adaptive rule, lr max||G|| (= the drawn rate) for a fixed-step one (W + eta is formed to u ||eta||), in the "
      "implementation's "
      "unit roundoff u; where frames and gradients cross in a coarser dtype (u_io), core/ is fed the same "
      "rounded start frames and gradients, and the frames' rounding adds u_io/u; the worse of the case's rule and "
      "B2";
  c.analysis = "The same stages in the same order; only rounding separates the two.";
  c.generator_fn = [impl] { return half_at_paper_rate(impl, sequence_cases(2, 30, -2, 0, false)); };
  c.cap_must_bind = built_in(impl);  // a user's rule's cap is its own: the share is recorded, not asserted
  const auto bind = [impl](AgreementMutant m) {
    return Check{[impl, m](const Case& k) { return agreement<double>(impl, k, m); },
                 [impl, m](const Case& k) { return agreement<mp50>(impl, k, m); }};
  };
  c.check = bind(AgreementMutant::kNone);
  c.controls = {{"reference-rate-and-cap-10pct",
                 "core/'s rules with a rate and a cap 10 % larger (a mis-set schedule): a reference that is not the "
                 "rule, at first order in "
                 "eta whether the cap binds or not" +
                     for_float32(impl, "60 % larger: the rule computes in float32"),
                 bind(AgreementMutant::kRateAndCapTenPercent)}};
  // The fourth-order near miss is below a float32 gradient's rounding at the small rates.
  if (!(impl.io_roundoff > 0x1p-40))
    c.controls.push_back({"reference-second-order-polar",
                          "core/'s adaptive rules retracting by the second-order expansion (W + eta)(I - eta^T eta / "
                          "2), both sides at eps 0: a reference that is not the rule",
                          bind(AgreementMutant::kSecondOrderPolar)});
  return c;
}

// --- the paper's sizes over thousands of steps (group paper-size) ---------------------------------

// The paper's two shapes at eta_R = 1, where the cap binds: the image task (d = 128, r = 16, H = 8,
// warm-up over the first eighth then cosine to zero, eps 1e-8, 1 600 steps: 40 epochs of n = 10k in
// batches of 256) and the grokking task (d = 128, r = 32, H = 4, constant rate, eps 1e-3, the first
// 1 000 of its 20 000 full-batch steps); drifting correlated Gaussian gradients (gradient_sequences.h).
struct PaperSizeShape {
  const char* task;
  int r, heads, steps, schedule;
  double eps;
};
constexpr PaperSizeShape kPaperSizeShapes[] = {{"image", 16, 8, 1600, 1, 1e-8}, {"grokking", 32, 4, 1000, 0, 1e-3}};

// The references the implementation is compared with, in lockstep on the same draws: core/'s rule,
// and two near misses, core/ with a rate and a cap 10 % larger (a mis-set schedule), and core/ with
// the cap taken over the whole [H, d, r] step in place of each head's (the cap over the wrong axis).
enum class PaperSizeReference { kCore, kRateAndCapTenPercent, kCapWholeTensor };
constexpr PaperSizeReference kPaperSizeReferences[] = {
    PaperSizeReference::kCore, PaperSizeReference::kRateAndCapTenPercent, PaperSizeReference::kCapWholeTensor};

// One of a paper-size run's references to core/: its frames, moments and how far the implementation
// has moved from it.
struct Reference {
  PaperSizeReference kind;
  Frames<double> w;
  RiemannianAdamState<double> state;
  double worst = 0;
  int steps_run = 0, capped_steps = 0;
  long capped_pairs = 0, pairs = 0;  // (step, head) pairs, and those the cap rescales
};

// One step of a reference at RATE on the gradients G_IN: core/'s rule, or its mutant (a rate and a
// cap 10 % larger, or the cap taken over the whole [H, d, r] step).
void step_reference(Reference& ref, FrameRule rule, double rate, double eps, const Frames<double>& g_in) {
  const double bump = ref.kind == PaperSizeReference::kRateAndCapTenPercent ? 1.1 : 1.0;
  auto hyper = adam_rule_hyper<double>(rule, rate * bump, eps);
  const std::optional<double> cap = hyper.cap_tau;
  if (hyper.cap_tau) *hyper.cap_tau *= bump;
  if (ref.kind == PaperSizeReference::kCapWholeTensor) hyper.cap_tau.reset();
  auto dir = riemannian_adam_direction<double>(ref.w, g_in, ref.state, hyper);
  if (ref.kind == PaperSizeReference::kCapWholeTensor && cap) {
    double total = 0;
    for (const auto& e : dir.eta) total += e.squaredNorm();
    total = std::sqrt(total);
    const double limit = *cap * std::sqrt(double(ref.w.front().cols()));
    if (total > limit)
      for (auto& e : dir.eta) e *= limit / total;
  }
  ref.capped_steps += std::any_of(dir.report.capped.begin(), dir.report.capped.end(), [](bool b) { return b; });
  for (const bool capped : dir.report.capped) {
    ref.capped_pairs += capped;
    ++ref.pairs;
  }
  auto next = finish_riemannian_adam_step<double>(ref.w, std::move(dir), hyper);
  ref.w = std::move(next.frames);
  ref.state = std::move(next.state);
}

// The implementation's isometry error over a run: its largest, over the first and the last 100
// steps, and the unit roundoff it is judged at.
struct RunIsometry {
  double max, first, last, unit_roundoff;
};

// A reference's result for one task into R (the worse of the tasks): the difference, and for core/
// itself the frames' isometry, and a run where the cap never binds failing the claim.
void record_reference(CheckResult& r, const Reference& ref, const std::string& task, const Case& c, double normaliser,
                      const RunIsometry& iso) {
  double ratio = ref.worst / normaliser;
  nlohmann::json detail = {{"max_difference", ref.worst}, {"steps", c.steps}, {"steps_run", ref.steps_run}};
  if (ref.kind == PaperSizeReference::kCore) {
    detail["steps_capped"] = ref.capped_steps;
    detail["cap_binding_share"] = double(ref.capped_pairs) / double(std::max(ref.pairs, 1L));
    detail["isometry_running_max"] = iso.max;
    detail["isometry_first_100_steps"] = iso.first;
    detail["isometry_last_100_steps"] = iso.last;
    // The frames stay on St(d, r): the isometry error within d*r of the frames' unit roundoff
    // (update-long-run-isometry's factor), whichever is the larger ratio.
    const double iso_unit = iso.unit_roundoff * double(c.d * c.r);
    detail["isometry_ratio"] = iso.max / iso_unit;
    ratio = worse(ratio, iso.max / iso_unit);
    // Where the cap never binds, the run is not the one the claim states.
    if (ref.capped_steps == 0) ratio = std::numeric_limits<double>::infinity();
  }
  r.detail[task] = detail;
  if (!(ratio <= r.ratio)) {
    r.ratio = ratio;
    r.residual = ref.worst;
    r.normaliser = normaliser;
  }
}

// One run of each shape: the implementation every step, each reference until its running maximum
// difference is past the control margin (a running maximum never falls). Results by reference.
std::array<CheckResult, 3> paper_size_runs(const RuleImplementation& impl, double tolerance, double margin) {
  const FrameRule rule = impl.only_rule.empty() ? FrameRule::kB2 : rules_for(impl, {}).front();
  std::array<CheckResult, 3> out;
  for (CheckResult& r : out) r.ratio = 0;
  long capped_pairs = 0, pairs = 0;  // core/'s, over both runs: the share the claim states
  for (const auto& shape : kPaperSizeShapes) {
    Case c;
    c.d = 128;
    c.r = shape.r;
    c.heads = shape.heads;
    c.steps = shape.steps;
    c.corr = kDriftingCorr;
    c.seed = 20261203;
    const RuleSettings peak = settings_of(rule, 1.0, shape.eps);
    const double normaliser =
        impl.unit_roundoff * rounding_factor(impl, c, peak, 0, /*same_gradients=*/true);  // as rule-agrees-with-core
    Rng rng(c.seed);
    const Frames<double> w0 = random_frames<double>(rng, {c.d, c.r}, c.heads);
    Frames<double> direction;
    // core/ is fed what the implementation is fed (rounded to its input dtype, as in the agreement claim).
    const Frames<double> w0_in = rounded_to_unit<double>(w0, impl.io_roundoff);
    auto mine_rule = impl.make();
    mine_rule->start(w0, settings_of(rule, schedule_factor(shape.schedule, 0, c.steps), shape.eps));
    Frames<double> mine = w0;
    std::vector<Reference> refs;
    for (const auto kind : kPaperSizeReferences)
      refs.push_back(
          {kind, w0_in, make_riemannian_adam_state<double>(w0_in, adam_rule_hyper<double>(rule, 1.0, 0).moment)});
    double iso_first = 0, iso_last = 0, iso_max = 0;
    for (int t = 0; t < c.steps; ++t) {
      const double rate = schedule_factor(shape.schedule, t, c.steps);
      const Frames<double> g = drifting_gradients<double>(rng, direction, c, t);
      mine_rule->set_rate(rate);
      mine = mine_rule->step(mine, g);
      double iso = 0;
      for (const auto& f : mine) iso = worse(iso, isometry_error<double>(f));
      iso_max = worse(iso_max, iso);
      if (t < 100) iso_first = worse(iso_first, iso);
      if (t >= c.steps - 100) iso_last = worse(iso_last, iso);
      const Frames<double> g_in = rounded_to_unit<double>(g, impl.io_roundoff);
      for (Reference& ref : refs) {
        if (ref.kind != PaperSizeReference::kCore && !(ref.worst < margin * tolerance * normaliser)) continue;
        step_reference(ref, rule, rate, shape.eps, g_in);
        ref.steps_run = t + 1;
        ref.worst = worse(ref.worst, max_abs_difference(ref.w, mine));
      }
    }
    for (const Reference& ref : refs)
      record_reference(out[std::size_t(ref.kind)], ref, shape.task, c, normaliser,
                       {iso_max, iso_first, iso_last, std::max(impl.unit_roundoff, impl.io_roundoff)});
    capped_pairs += refs.front().capped_pairs;
    pairs += refs.front().pairs;
  }
  out[std::size_t(PaperSizeReference::kCore)].detail["cap_binding_share"] =
      double(capped_pairs) / double(std::max(pairs, 1L));
  return out;
}

Claim paper_size_claim(const RuleImplementation& impl) {
  Claim c = base_claim(impl, "rule-agrees-with-core-at-paper-size", "§3.2, §4.1, §4.3, Table 6", "identity",
                       "At the paper's sizes and rates, over a whole run, the implementation's rule is core/'s: with "
                       "eta_R = 1 (the cap binds), the image task's warm-up and cosine schedule and the grokking "
                       "task's constant rate, its frames equal core/'s at every step, and they stay on St(d, r) "
                       "without growth of the isometry error.");
  c.own_dtype_only = true;  // the 50-digit slot repeats the implementation's run
  c.generator =
      "two deterministic runs of B2 (the implementation's rule where it has one): the image task (d = 128, r = 16, "
      "H = 8, eta_R = 1, warm-up over the first eighth then cosine to zero, eps 1e-8, 1 600 steps: 40 epochs of "
      "n = 10k in batches of 256) and the grokking task (d = 128, r = 32, H = 4, eta_R = 1 constant, eps 1e-3, "
      "1 000 steps); gradients sqrt(0.9) D + sqrt(0.1) N_t of unit scale with the direction D drawn afresh every 25 "
      "steps (a fixed D is reached within a few dozen steps, after which the cap never binds); the rate is set before "
      "each step "
      "through UpdateRule::set_rate, as the trainer's schedule sets it";
  c.residual =
      "max |W_impl - W_core| over every step, head and entry of both runs (core/ in float64, fed the same rounded "
      "start frames and gradients where the implementation's dtype is coarser); factor d*r*T*(1 + 8 eta_R) + "
      "u_io/u, as for rule-agrees-with-core; and the isometry error max|W^T W - I| of the implementation's frames "
      "over u*d*r (u the coarser of its two unit roundoffs), the larger ratio. A run in which the cap never binds "
      "counts as failed. The figures per "
      "task: steps capped and the share of (step, head) pairs the cap rescales (over both runs: the detail's "
      "cap_binding_share), and the isometry error max|W^T W - I| of the implementation's frames over the whole run, "
      "its first 100 and its last 100 steps (the growth law)";
  c.analysis =
      "The same stages in the same order; only rounding separates the two, and B2's step does not amplify it "
      "(measured: 2e-15 between the trainer and core/ at step 1 600). The runs are float64 by definition (50 "
      "digits over 2 600 steps at d = 128 is out of reach): the 50-digit slot reports the same run.";
  c.randomised = false;
  c.generator_fn = [] { return rc::gen::just(Case{}); };
  c.cost = 40;
  c.group = "paper-size";
  const double tolerance = c.tolerance, margin = c.control_margin;
  struct Memo {
    std::once_flag once;
    std::array<CheckResult, 3> results;
  };
  auto memo = std::make_shared<Memo>();
  const auto bind = [impl, memo, tolerance, margin](PaperSizeReference k) {
    const CheckFn f = [impl, memo, tolerance, margin, k](const Case&) {
      std::call_once(memo->once, [&] { memo->results = paper_size_runs(impl, tolerance, margin); });
      return memo->results[std::size_t(k)];
    };
    return Check{f, f};
  };
  c.check = bind(PaperSizeReference::kCore);
  c.controls = {{"reference-rate-and-cap-10pct",
                 "core/ with a rate and a cap 10 % larger (a mis-set schedule), stopped once past the margin",
                 bind(PaperSizeReference::kRateAndCapTenPercent)},
                {"reference-cap-whole-tensor",
                 "core/ with the cap tau sqrt(r) taken over the whole [H, d, r] step in place of each head's (the cap "
                 "over the wrong axis), stopped once past the margin",
                 bind(PaperSizeReference::kCapWholeTensor)}};
  return c;
}

// core/'s rule through the interface (float64, Jacobi SVD for the polar factor).
class CoreRule final : public UpdateRule {
 public:
  void start(const Frames<double>& w, const RuleSettings& s) override {
    s_ = s;
    state_ = make_riemannian_adam_state<double>(w, s.moment);
  }
  Frames<double> step(const Frames<double>& w, const Frames<double>& g) override {
    if (!s_.adaptive) return riemannian_sgd_step<double>(w, g, rules::sgd_hyper_of(s_));
    auto next = riemannian_adam_step<double>(w, g, state_, rules::adam_hyper_of(s_));
    state_ = std::move(next.state);
    return next.frames;
  }
  void set_rate(double lr) override { s_.lr = lr; }

 private:
  RuleSettings s_;
  RiemannianAdamState<double> state_;
};

std::unique_ptr<UpdateRule> make_core_rule() { return std::make_unique<CoreRule>(); }

// The stages of one step, each isolated by a probe on the case's frames and a Gaussian gradient,
// the implementation and core/'s reference run side by side from fresh state (weight decay 0):
//   direction    one step at rate 1e-6: (W_1 - W_0) / lr is the projected, normalised first step,
//                to first order (a retraction's difference is O(lr) relative)
//   retraction   one step at rate 1e-2, below the cap: the second-order part of the displacement
//   cap          one step at rate 1, where the cap binds (tau sqrt(r) per frame)
//   moment       four steps at rate 0.1 on changing gradients: the first and second moments,
//                their bias correction and the first moment's transport
// A probe differs when the largest entry of the difference exceeds 1e-6 of the displacement's
// (relative: rounding is far below). The first that differs is named; none differing means the
// rules part only over longer runs (the case's own steps).
nlohmann::json diagnose_stages(const RuleImplementation& impl, FrameRule reference, const Case& c) {
  struct Probe {
    const char* stage;
    double lr;
    int steps;
  };
  constexpr Probe kProbes[] = {{"direction (projection and normalisation of the first step)", 1e-6, 1},
                               {"retraction", 1e-2, 1},
                               {"step cap", 1.0, 1},
                               {"moments (bias correction, transport of the first moment)", 1e-1, 4}};
  nlohmann::json probes = nlohmann::json::array();
  std::string first;
  for (const Probe& p : kProbes) {
    RuleSettings mine = impl.declaration ? impl.declaration->settings : settings_of(reference, p.lr, 1e-8);
    mine.lr = p.lr;
    mine.eps = 1e-8;
    if (mine.weight_decay) mine.weight_decay = 0.0;
    const RuleSettings ref = settings_of(reference, p.lr, 1e-8);
    Rng rng(c.seed ^ 0x9e3779b97f4a7c15ULL);
    const Frames<double> w0 = random_frames<double>(rng, {c.d, c.r}, c.heads);
    auto a = impl.make();
    auto b = core_rule_implementation().make();
    a->start(w0, mine);
    b->start(w0, ref);
    Frames<double> wa = w0, wb = w0;
    double diff = 0, moved = 0;
    for (int t = 0; t < p.steps; ++t) {
      Frames<double> g;
      for (int h = 0; h < c.heads; ++h) g.push_back(gaussian_matrix<double>(rng, c.d, c.r));
      wa = a->step(wa, g);
      wb = b->step(wb, g);
    }
    diff = max_abs_difference(wa, wb);
    moved = max_abs_difference(wb, w0);
    const double relative = diff / std::max(moved, 1e-300);
    const bool differs = !(relative <= 1e-6);
    probes.push_back({{"stage", p.stage}, {"lr", p.lr}, {"steps", p.steps}, {"relative_difference", relative}});
    if (differs && first.empty()) first = p.stage;
  }
  return {{"first_stage_differing",
           first.empty() ? "none of the isolated stages (the rules part over longer runs)" : first},
          {"probes", probes}};
}

}  // namespace stiefel::certificates::rule_detail
