// A user's frame rule as a TorchScript module, certified through the update claims
// (stiefel/rules/update_rule.h). The module's forward is one step on a batch of frames:
//
//   forward(self, w: Tensor, g: Tensor, state: List[Tensor], settings: Dict[str, float])
//       -> Tuple[Tensor, List[Tensor]]    (or Tuple[Tensor, List[Tensor], Tensor])
//
// w and g are [H, d, r] in the configured dtype; state is [] before the first step and then
// whatever the previous call returned; settings holds "lr", "beta1", "beta2", "eps" and, where the
// rule is capped, "cap_tau" (the preset of the core rule the module implements, the rate and eps
// set by each claim). It returns the next frames [H, d, r] and the next state, and may return as a
// third result the step it retracted (the tangent vector eta with next = R(w, eta): the claim
// rule-tangent-step). State belongs in the list, not in the module's attributes: each run steps its
// own clone of the module.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <stiefel/rules/update_rule.h>

namespace stiefel::training {

// What the module is: --rule-config's JSON object. Every key is optional.
//   "name":       the suffix of its claims' ids (default: the file's stem), [a-z0-9-]+
//   "dtype":      "float64" (default) or "float32": the dtype of w, g and the returned frames; a
//                 float32 rule is judged at u = 2^-24 with its controls sized to that rounding
// A rule of the paper's family names the core rule it implements (its settings are that rule's, and
// every claim of the family runs on it):
//   "rule":       b2 (default), b2-mean-moment, b2-column, b2m, b2m-can
// A rule declares what it is instead (docs/certify-your-optimizer.md):
//   "properties": the properties it claims (rules::rule_property_names()); every other one
//                 that applies is measured and reported as an observation
//   "reference":  a core rule its frames must equal (with "agrees-with-reference"): one of the
//                 rules above or b2-grassmann; its settings are the defaults of "settings"
//   "settings":   what forward's settings hold besides lr and eps (each claim sets those): beta1,
//                 beta2, cap_tau (absent: uncapped), weight_decay (absent: the rule takes none; the
//                 decay claim then varies it), adaptive (true; false: a fixed-step rule, its rate
//                 set against the gradients' size), map ("stiefel", the default, or "grassmann":
//                 the horizontal space; its cases keep r < d), and any other number, passed through
//                 unchanged
// The module may expose components, certified on their own where present, each on [H, d, r]
// batches: project(w, x), rgrad(w, g), retract(w, eta), transport(w, w_new, x) -> Tensor, and
// metric(w, x, y) -> Tensor [H], one inner product per frame.
struct ScriptRuleConfig {
  std::string name, rule = "b2", dtype = "float64";
  bool declared = false;  // "properties" given
  std::string reference;
  std::vector<std::string> properties;
  rules::RuleSettings settings;
  std::map<std::string, double> extra_settings;
};

// The module's forward calls as a supervisor in another process sees them (`certify --rule` runs
// the claims in a child process, stops one whose forward does not return, and names the call a
// crash happened in). The struct lives in memory shared with the supervisor: each thread that calls
// forward owns a slot, which holds the call's start (steady clock, ns; 0 while no call runs) and
// what the call was: the claim, the step of the run, the shapes and settings.
struct ForwardWatch {
  static constexpr int kSlots = 64;
  struct Slot {
    std::atomic<std::int64_t> started_ns{0};
    char what[480] = {};
  };
  Slot slots[kSlots];
  std::atomic<int> threads{0};
  std::atomic<std::uint64_t> calls{0};
};
// Every forward call of every loaded module is announced to `watch` (null: to none).
void watch_forward_calls(ForwardWatch* watch);

// The message of an error a module's forward raised, as the user sees it: LibTorch's C++ backtrace
// dropped, and, where it is long, its head and its tail kept (a TorchScript error states its cause
// last, after the script's traceback: "KeyError: weight_decay").
std::string rule_error_text(const std::string& what);

// Reads --rule-config (a JSON file); throws std::invalid_argument naming the file and the key.
ScriptRuleConfig read_script_rule_config(const std::filesystem::path& file);

// Loads FILE (a TorchScript archive) and runs two probe steps, on a clone of the module, on a small
// case to check its signature, the shape and dtype of what it returns, and that it returns finite
// frames; throws std::invalid_argument naming the file and what is wrong. A call that fails later,
// inside a claim, throws rules::RuleError naming the file, the claim and the call.
rules::RuleImplementation script_rule_implementation(const std::filesystem::path& file, ScriptRuleConfig config);

}  // namespace stiefel::training
