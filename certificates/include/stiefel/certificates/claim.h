// A registered claim of the paper: what is asserted, where, how it is checked, what we expect.
// A claim is checked by one function per precision; each of its non-vacuity controls is the same
// check run with a named mutant (of the code or of the input) that must fail it on every case.
// A check passes iff ratio ≤ tolerance.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace stiefel::certificates {

// The generated parameters of one case; matrices are drawn from `seed` in double and converted,
// so both precisions see the same inputs. Fields a claim does not use stay at their defaults.
struct Case {
  int d = 2, r = 1, heads = 1, tokens = 4, steps = 1;
  int profile = 0;         // gradient magnitude profile over the steps (see profile_name)
  double log10_scale = 0;  // base magnitude of the gradients / inputs
  double log10_c = 0;      // scale factor c of invariance claims
  double log10_lr = 0;     // step size η
  double log10_eps = -8;   // Adam ε (−inf encoded as eps_zero)
  bool eps_zero = false;
  double x = 0;     // claim-specific real parameter (ηλ, τ, δ, …)
  double corr = 0;  // weight of a persistent direction in gradient sequences, in [0, 1]
  std::uint64_t seed = 0;
};

const char* profile_name(int profile);
nlohmann::json to_json(const Case& c);
std::ostream& operator<<(std::ostream& os, const Case& c);

struct CheckResult {
  double ratio = 0;       // compared with the claim's tolerance
  double residual = 0;    // the raw residual (or statistic)
  double normaliser = 1;  // what the residual was divided by
  nlohmann::json detail = nlohmann::json::object();
};

// A check with its mutant bound (none for the claim itself), in one precision.
using CheckFn = std::function<CheckResult(const Case&)>;

// The same check in float64 and in 50 digits.
struct Check {
  CheckFn float64;
  CheckFn mp50;
};

using FiguresFn = nlohmann::json (*)();

// kObserved: a property the rule under test does not claim, measured and reported for what it is;
// whatever is observed meets it.
enum class Expected { kCertified, kRefuted, kObserved };

// A refutation's proof: the violated quantity re-computed on the shrunk counterexample in exact
// rational or interval arithmetic, so that its sign needs no rounding argument. `established` is
// "exact" or "interval" when the enclosure excludes every value the claim allows, "numeric" when
// it does not (the violation then rests on the float64 and 50-digit runs alone).
struct Proof {
  std::string established = "numeric";
  std::string quantity;         // what is enclosed, and the values the claim allows it
  double lower = 0, upper = 0;  // the enclosure, rounded outward to float64
  std::string inputs;           // how the counterexample's inputs were made exact
  bool decided = true;          // false: the computation stopped (an undecidable comparison, an error)
};

// The proof of a refuted claim, and its non-vacuity control: the same computation run on a near miss
// of the counterexample where the claim (or its corrected form) holds (control_description says
// which), which must run to the end and establish nothing.
struct RefutationProof {
  Proof (*prove)(const Case&) = nullptr;
  Proof (*control)(const Case&) = nullptr;
  std::string control_description;
};

struct Control {
  std::string id;  // the mutant's name in the certificate
  std::string description;
  Check check;  // the claim's check, run with this mutant
};

struct Claim {
  std::string id;
  std::string source;          // where the paper states it
  std::string statement;       // what the paper asserts, in its terms
  std::string kind;            // identity, inequality, equivariance, invariance, statistical, order, arithmetic
  std::string generator;       // what the cases range over
  std::string residual;        // how the residual and its normaliser are defined
  std::string factor;          // the stated dimension factor and the tolerance's meaning
  double tolerance = 30;       // pass iff ratio ≤ tolerance
  double control_margin = 10;  // a control is killed iff ratio ≥ margin · tolerance on every case
  Expected expected = Expected::kCertified;
  std::string analysis;    // one line: why we expect what we expect
  bool randomised = true;  // false: one deterministic case
  int max_cases = 0;       // > 0: at most this many cases (a claim with one free parameter)
  int cost = 1;            // relative run time: the runner starts the costly claims first
  // The claim is about the regime where B2's step cap binds: its cases state their share of capped
  // steps (a detail key "cap_binding_share..."; the certificate's figures.cap_binding), and where
  // the cap binds in none of them the claim is vacuous.
  bool cap_must_bind = false;
  std::function<rc::Gen<Case>()> generator_fn;  // empty: the default generator
  Check check;
  std::vector<Control> controls;
  FiguresFn figures_double = nullptr;  // extra figures (e.g. Table 9), per precision
  FiguresFn figures_mp50 = nullptr;
  RefutationProof proof;  // set for every claim expected to be refuted
  // What the checks run: core/'s templates, or an implementation registered through UpdateRule.
  std::string implementation = "core/ (Eigen), float64 and 50 digits";
  // The implementation under test runs in its own dtype only (a TorchScript rule, the trainer): no
  // higher-precision run of it exists (its 50-digit slot repeats the run, or compares it with core/
  // in 50 digits), so a refutation states its margin over the rounding bound, never that the
  // violation "persists at 50 digits".
  bool own_dtype_only = false;
  // The group a run selects it by (RunOptions::group): "default", or "paper-size" (the claims run at
  // the paper's sizes, d = 128: the sequence claims' deterministic cases, the float32 isometry bound
  // over whole runs, every implementation's update over whole runs; timed on their own).
  std::string group = "default";
};

// Every registered claim, in the order of the paper.
const std::vector<Claim>& registry();

}  // namespace stiefel::certificates
