// A user's frame rule as a TorchScript module, certified through the update claims
// (stiefel/certificates/update_rule.h). The module's forward is one step on a batch of frames:
//
//   forward(self, w: Tensor, g: Tensor, state: List[Tensor], settings: Dict[str, float])
//       -> Tuple[Tensor, List[Tensor]]
//
// w and g are [H, d, r] in the configured dtype; state is [] before the first step and then
// whatever the previous call returned; settings holds "lr", "beta1", "beta2", "eps" and, where the
// rule is capped, "cap_tau" (the preset of the core rule the module implements, the rate and eps
// set by each claim). It returns the next frames [H, d, r] and the next state. State belongs in the
// list, not in the module's attributes: each run steps its own clone of the module.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <stiefel/certificates/update_rule.h>

namespace stiefel::training {

// What the module is: --rule-config's JSON object. Every key is optional.
//   "name":  the suffix of its claims' ids (default: the file's stem), [a-z0-9-]+
//   "rule":  the core rule it implements (default "b2"): the settings it is given and the reference
//            the agreement claim compares it with; one of b2, b2-mean-moment, b2-column, b2m,
//            b2m-can (the adaptive rules whose claims' controls a single rule can meet)
//   "dtype": "float64" (default, and the only one accepted: the claims' controls are not yet sized
//            to float32): the dtype of w, g and the returned frames
struct ScriptRuleConfig {
  std::string name, rule = "b2", dtype = "float64";
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
// inside a claim, throws certificates::RuleError naming the file, the claim and the call.
certificates::RuleImplementation script_rule_implementation(const std::filesystem::path& file, ScriptRuleConfig config);

}  // namespace stiefel::training
