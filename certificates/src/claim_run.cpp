// One claim's run: its cases, its verdict (a failure shrunk with RapidCheck and, where the paper's
// claim is expected to fall, proved in interval arithmetic), its controls and figures, its entry.
#include "claim_run.h"

#include <sys/utsname.h>
#include <unistd.h>
#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <boost/version.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <stiefel/certificates/claim.h>
#include <stiefel/certificates/update_rule.h>
#include <stiefel/io/shell.h>
#include <stiefel/multiprecision.h>
#include <stiefel/scalar.h>
#include <thread>

namespace stiefel::certificates::run_detail {
namespace {

constexpr int kMaxShrinkEvaluations = 400;

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ULL;
  return h;
}

bool passes(const CheckResult& r, double tolerance) { return std::isfinite(r.ratio) && r.ratio <= tolerance; }

nlohmann::json finite_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

nlohmann::json result_json(const CheckResult& r) {
  return {{"ratio", finite_or_null(r.ratio)},
          {"residual", finite_or_null(r.residual)},
          {"normaliser", finite_or_null(r.normaliser)},
          {"detail", r.detail}};
}

// Runs a check, turning an exception into a failing result that says what was thrown; a rule under
// test that cannot be run (RuleError) is no result at all, and stops the certificate.
CheckResult guarded(const CheckFn& fn, const Case& c) {
  try {
    return fn(c);
  } catch (const RuleError&) {
    throw;
  } catch (const std::exception& e) {
    CheckResult r;
    r.ratio = std::numeric_limits<double>::infinity();
    r.residual = std::numeric_limits<double>::quiet_NaN();
    r.detail["error"] = e.what();
    return r;
  }
}

// RapidCheck's generation context is per process, not per thread: every call that runs a
// generator (drawing a case, walking its shrinks) holds this lock.
std::mutex& rapidcheck_mutex() {
  static std::mutex m;
  return m;
}

struct CaseRecord {
  rc::Shrinkable<Case> shrinkable;
  Case value;
};

std::vector<CaseRecord> draw_cases(const Claim& claim, std::uint64_t seed, int n) {
  std::lock_guard<std::mutex> lock(rapidcheck_mutex());
  const rc::Gen<Case> gen = claim.generator_fn();
  std::vector<CaseRecord> out;
  for (int i = 0; i < n; ++i) {
    const int size = n > 1 ? (i * rc::kNominalSize) / (n - 1) : rc::kNominalSize / 2;
    rc::Random random(mix(seed ^ mix(std::uint64_t(i))));
    auto shrinkable = gen(random, size);
    Case value = shrinkable.value();
    out.push_back({std::move(shrinkable), value});
  }
  return out;
}

// Greedy RapidCheck shrinking: move to the first smaller case that still fails, until none does.
std::pair<Case, int> shrink(rc::Shrinkable<Case> failing, const std::function<bool(const Case&)>& fails) {
  int evaluations = 0, steps = 0;
  bool progress = true;
  while (progress && evaluations < kMaxShrinkEvaluations) {
    progress = false;
    std::unique_lock<std::mutex> lock(rapidcheck_mutex());
    auto seq = failing.shrinks();
    while (auto next = seq.next()) {
      if (++evaluations > kMaxShrinkEvaluations) break;
      const Case candidate = next->value();
      lock.unlock();
      const bool still_fails = fails(candidate);
      lock.lock();
      if (still_fails) {
        failing = *next;
        progress = true;
        ++steps;
        break;
      }
    }
  }
  std::lock_guard<std::mutex> lock(rapidcheck_mutex());
  return {failing.value(), steps};
}

std::string expected_name(Expected e) {
  return e == Expected::kRefuted ? "refuted" : e == Expected::kObserved ? "observed" : "certified";
}

// One claim's run: the precisions it runs in, and the check in force (the claim's own, or the
// control swapped in for it).
struct ClaimSetting {
  const Claim& claim;
  bool use_double = true, use_mp50 = true;
  const Control* swapped = nullptr;
  const Check* active = nullptr;

  // A check in the primary precision: float64 unless only the 50-digit run is asked for.
  CheckResult primary(const Check& check, const Case& c) const {
    return use_double ? guarded(check.float64, c) : guarded(check.mp50, c);
  }
};

ClaimSetting claim_setting(const Claim& claim, const RunOptions& opt) {
  ClaimSetting s{claim, opt.precision != Precision::kMp50, opt.precision != Precision::kDouble};
  for (const auto& pair : opt.swap_controls) {
    const auto colon = pair.find(':');
    if (pair.substr(0, colon) == claim.id)
      for (const auto& ctl : claim.controls)
        if (ctl.id == pair.substr(colon + 1)) s.swapped = &ctl;
  }
  s.active = s.swapped ? &s.swapped->check : &claim.check;
  return s;
}

// The failures, worst ratios and residuals of the check in force over the cases, per precision.
struct CaseTally {
  int fail64 = 0, failmp = 0;
  double worst64 = -1, worstmp = -1, resid64 = 0, residmp = 0;
  nlohmann::json worst_case, worst_detail = nlohmann::json::object();
  std::optional<std::size_t> first_failure;
  // The cases' cap-binding shares (a detail key "cap_binding_share..."), in the primary precision.
  std::vector<double> cap_shares;
};

// A case's cap-binding share where its detail states one.
std::optional<double> cap_share_of(const nlohmann::json& detail) {
  if (!detail.is_object()) return std::nullopt;
  for (const auto& [key, value] : detail.items())
    if (key.rfind("cap_binding_share", 0) == 0 && value.is_number()) return value.get<double>();
  return std::nullopt;
}

CaseTally run_cases(const ClaimSetting& s, const std::vector<CaseRecord>& cases) {
  CaseTally t;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i].value;
    if (s.use_double) {
      const CheckResult r = guarded(s.active->float64, c);
      if (const auto share = cap_share_of(r.detail)) t.cap_shares.push_back(*share);
      if (!passes(r, s.claim.tolerance)) {
        ++t.fail64;
        if (!t.first_failure) t.first_failure = i;
      }
      const double ratio = std::isfinite(r.ratio) ? r.ratio : std::numeric_limits<double>::max();
      if (ratio > t.worst64) {
        t.worst64 = ratio;
        t.resid64 = r.residual;
        t.worst_case = to_json(c);
        t.worst_detail = r.detail;
      }
    }
    if (s.use_mp50) {
      const CheckResult r = guarded(s.active->mp50, c);
      if (!s.use_double)
        if (const auto share = cap_share_of(r.detail)) t.cap_shares.push_back(*share);
      if (!passes(r, s.claim.tolerance)) {
        ++t.failmp;
        if (!s.use_double && !t.first_failure) t.first_failure = i;
      }
      const double ratio = std::isfinite(r.ratio) ? r.ratio : std::numeric_limits<double>::max();
      if (ratio > t.worstmp) {
        t.worstmp = ratio;
        t.residmp = r.residual;
        if (!s.use_double) {
          t.worst_case = to_json(c);
          t.worst_detail = r.detail;
        }
      }
    }
  }
  return t;
}

// The observed status, and the shrunk counterexample of a failing claim in both precisions.
struct Verdict {
  std::string observed;
  nlohmann::json counterexample = nullptr;
  std::string behaviour;
  std::string established = "numeric";  // how the verdict is established: exact, interval or numeric
  bool proof_control_killed = false;    // a refutation proof's near miss ran and established nothing
};

nlohmann::json proof_json(const Proof& p) {
  return {{"established", p.established},
          {"decided", p.decided},
          {"quantity", p.quantity},
          {"enclosure", {finite_or_null(p.lower), finite_or_null(p.upper)}},
          {"inputs", p.inputs}};
}

// A refutation's proof on the shrunk counterexample, and its control on the near miss.
void prove_refutation(const Claim& claim, const Case& minimal, Verdict& v) {
  if (!claim.proof.prove) return;
  const Proof proof = claim.proof.prove(minimal);
  nlohmann::json entry = proof_json(proof);
  if (claim.proof.control) {
    const Proof control = claim.proof.control(minimal);
    v.proof_control_killed = control.decided && control.established == "numeric";
    entry["control"] = proof_json(control);
    entry["control"]["description"] = claim.proof.control_description;
    entry["control"]["status"] = v.proof_control_killed ? "killed" : "survived";
  }
  v.established = proof.established;
  v.counterexample["proof"] = std::move(entry);
}

Verdict judge(const ClaimSetting& s, const std::vector<CaseRecord>& cases, const CaseTally& t) {
  Verdict v;
  if (!t.first_failure && t.failmp == 0) {
    v.observed = "certified";
    std::ostringstream os;
    os << std::setprecision(3) << "passes in every case";
    if (s.use_double) os << "; float64 worst ratio " << t.worst64 << " (residual " << t.resid64 << ")";
    if (s.use_mp50) os << "; 50-digit worst ratio " << t.worstmp << " (residual " << t.residmp << ")";
    v.behaviour = os.str();
    return v;
  }
  if (!t.first_failure) {
    v.observed = "inconclusive";
    v.behaviour = "passes in float64 but fails at 50 digits";
    return v;
  }
  auto fails = [&](const Case& c) { return !passes(s.primary(*s.active, c), s.claim.tolerance); };
  const auto [minimal, steps] = shrink(cases[*t.first_failure].shrinkable, fails);
  v.counterexample = {{"case", to_json(minimal)}, {"shrink_steps", steps}};
  CheckResult r64, rmp;
  if (s.use_double) v.counterexample["float64"] = result_json(r64 = guarded(s.active->float64, minimal));
  if (s.use_mp50) v.counterexample["mp50"] = result_json(rmp = guarded(s.active->mp50, minimal));
  if (s.claim.own_dtype_only) {
    // The implementation's own arithmetic is all there is: the violation is measured against the
    // condition-aware rounding bound, and says by how much.
    const CheckResult& r = s.use_double ? r64 : rmp;
    v.observed = "refuted";
    std::ostringstream os;
    os << std::setprecision(4) << "violation in the implementation's own arithmetic (its dtype only: no 50-digit "
       << "cross-check): residual " << r.residual << ", " << r.ratio << " times the rounding bound (tolerance "
       << s.claim.tolerance << ")";
    v.behaviour = os.str();
  } else if (s.use_double && s.use_mp50) {
    // A false claim's violation does not shrink with precision; a rounding artefact does.
    // (A NaN residual, frames that are not finite, persists whatever the precision.)
    const bool persists = !passes(rmp, s.claim.tolerance) &&
                          (std::isnan(rmp.residual) || std::abs(rmp.residual) >= 0.01 * std::abs(r64.residual));
    v.observed = persists ? "refuted" : "inconclusive";
    std::ostringstream os;
    os << std::setprecision(4) << (persists ? "violation persists at 50 digits" : "violation shrinks with precision")
       << ": residual " << r64.residual << " (float64) vs " << rmp.residual << " (50-digit)";
    v.behaviour = os.str();
  } else {
    v.observed = "refuted";
    v.behaviour = "single precision run: violation not cross-checked";
  }
  if (v.observed == "refuted") prove_refutation(s.claim, minimal, v);
  return v;
}

// Non-vacuity controls: each must fail on every case by the claim's control margin.
struct ControlRuns {
  nlohmann::json entries = nlohmann::json::array();
  int killed = 0;
};

ControlRuns run_controls(const ClaimSetting& s, const std::vector<CaseRecord>& cases) {
  const Claim& claim = s.claim;
  ControlRuns out;
  for (const auto& ctl : claim.controls) {
    double min_margin = std::numeric_limits<double>::infinity();
    int survived = 0;
    nlohmann::json surviving = nullptr, example = nullptr;
    for (const auto& rec : cases) {
      const CheckResult r = s.primary(ctl.check, rec.value);
      const double margin =
          std::isfinite(r.ratio) ? r.ratio / claim.tolerance : std::numeric_limits<double>::infinity();
      if (example.is_null()) example = r.detail;
      if (margin < min_margin) min_margin = margin;
      if (!(margin >= claim.control_margin)) {
        ++survived;
        if (surviving.is_null()) surviving = {{"case", to_json(rec.value)}, {"result", result_json(r)}};
      }
    }
    const bool is_killed = survived == 0;
    out.killed += is_killed;
    out.entries.push_back({{"id", ctl.id},
                           {"description", ctl.description},
                           {"status", is_killed ? "killed" : "survived"},
                           {"min_margin", finite_or_null(min_margin)},
                           {"required_margin", claim.control_margin},
                           {"cases", int(cases.size())},
                           {"cases_survived", survived},
                           {"first_case_detail", example},
                           {"surviving_case", surviving}});
  }
  return out;
}

// The claim's extra figures (e.g. Table 9), per precision, and where its cases state how often the
// step cap binds, that regime over the cases.
nlohmann::json claim_figures(const ClaimSetting& s, const CaseTally& t) {
  nlohmann::json figures = nlohmann::json::object();
  if (s.claim.figures_double && s.use_double) figures["float64"] = s.claim.figures_double();
  if (s.claim.figures_mp50 && s.use_mp50) figures["mp50"] = s.claim.figures_mp50();
  if (!t.cap_shares.empty()) {
    double sum = 0, most = 0;
    int binding = 0;
    for (const double x : t.cap_shares) {
      sum += x;
      most = std::max(most, x);
      binding += x > 0;
    }
    figures["cap_binding"] = {{"cases", t.cap_shares.size()},
                              {"cases_where_it_binds", binding},
                              {"mean_share", sum / double(t.cap_shares.size())},
                              {"max_share", most}};
  }
  return figures;
}

// The claim's entry in the certificate.
nlohmann::json claim_entry(const ClaimSetting& s, const RunOptions& opt, int n, const CaseTally& t, const Verdict& v,
                           const ControlRuns& controls, nlohmann::json figures, const ClaimRun& run) {
  const Claim& claim = s.claim;
  return {
      {"id", claim.id},
      {"source", claim.source},
      {"statement", claim.statement},
      {"kind", claim.kind},
      {"generator", claim.generator},
      {"residual", claim.residual},
      {"tolerance", {{"value", claim.tolerance}, {"meaning", claim.factor}, {"control_margin", claim.control_margin}}},
      {"expected", expected_name(claim.expected)},
      {"analysis", claim.analysis},
      {"observed", run.observed},
      {"meets_expectation", run.met},
      {"established", v.established},
      {"swapped_control", s.swapped ? nlohmann::json(s.swapped->id) : nlohmann::json(nullptr)},
      {"cases", n},
      {"cases_mp50", s.use_mp50 ? n : 0},
      {"failures",
       {{"float64", s.use_double ? nlohmann::json(t.fail64) : nlohmann::json(nullptr)},
        {"mp50", s.use_mp50 ? nlohmann::json(t.failmp) : nlohmann::json(nullptr)}}},
      {"worst",
       {{"ratio_float64", s.use_double ? finite_or_null(t.worst64) : nullptr},
        {"ratio_mp50", s.use_mp50 ? finite_or_null(t.worstmp) : nullptr},
        {"residual_float64", s.use_double ? finite_or_null(t.resid64) : nullptr},
        {"residual_mp50", s.use_mp50 ? finite_or_null(t.residmp) : nullptr},
        {"case", t.worst_case},
        {"detail", t.worst_detail}}},
      {"precision_behaviour", v.behaviour},
      {"implementation", claim.implementation},
      {"group", claim.group},
      {"counterexample", v.counterexample},
      {"controls", controls.entries},
      {"figures", figures},
      {"seconds", run.seconds},
      {"reproduce", "stiefel certify --seed " + std::to_string(opt.seed) + " --cases " + std::to_string(opt.cases) +
                        " --claims '^" + claim.id + "$'" +
                        (claim.group == "default" ? std::string() : " --group " + claim.group) +
                        opt.reproduce_options}};
}

}  // namespace

// Runs one claim: its cases, its verdict, its controls, its figures.
ClaimRun run_claim(const Claim& claim, const RunOptions& opt, std::uint64_t base_seed) {
  const auto start = std::chrono::steady_clock::now();
  const rules::CallContext context(claim.id);
  const ClaimSetting s = claim_setting(claim, opt);
  const int n = !claim.randomised ? 1 : claim.max_cases > 0 ? std::min(opt.cases, claim.max_cases) : opt.cases;
  const auto cases = draw_cases(claim, mix(base_seed ^ fnv1a(claim.id)), n);
  const CaseTally tally = run_cases(s, cases);
  Verdict verdict = judge(s, cases, tally);
  const ControlRuns controls = run_controls(s, cases);
  if (controls.killed < int(claim.controls.size()) && verdict.observed == "certified") verdict.observed = "vacuous";
  // A claim about the regime where the cap binds decides nothing if it never does.
  if (claim.cap_must_bind && verdict.observed == "certified" &&
      std::none_of(tally.cap_shares.begin(), tally.cap_shares.end(), [](double x) { return x > 0; }))
    verdict.observed = "vacuous";

  ClaimRun out;
  out.observed = verdict.observed;
  out.controls = int(claim.controls.size());
  out.controls_killed = controls.killed;
  out.met = out.observed == expected_name(claim.expected) && controls.killed == out.controls && !s.swapped;
  if (claim.expected == Expected::kObserved) out.met = !s.swapped;  // not claimed: whatever it is
  // A refutation the paper's claim is expected to meet stands as a proof, or not at all.
  if (claim.expected == Expected::kRefuted && out.observed == "refuted")
    out.met = out.met && verdict.established != "numeric" && verdict.proof_control_killed;
  nlohmann::json figures = claim_figures(s, tally);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.entry = claim_entry(s, opt, n, tally, verdict, controls, std::move(figures), out);
  return out;
}

}  // namespace stiefel::certificates::run_detail
