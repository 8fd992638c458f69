// Runs the registered claims and builds the JSON certificate.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace stiefel::certificates {

enum class Precision { kDouble, kMp50, kBoth };

struct RunOptions {
  std::uint64_t seed = 20260916;
  int cases = 200;            // per randomised claim
  std::string claims = ".*";  // ECMAScript regex on claim ids (search)
  // The claims' group (Claim::group): "default", "paper-size", or "all"; a claim runs when it is in
  // the group and its id matches `claims`.
  std::string group = "default";
  Precision precision = Precision::kBoth;
  int jobs = 0;  // 0: one per hardware thread
  // "CLAIM_ID:CONTROL_ID" pairs, at most one per claim: run each control in place of its claim's
  // own check (the test that every control, swapped into the real pipeline, makes the certificate
  // fail: one run can swap a control into each of several claims).
  std::vector<std::string> swap_controls;
  std::string command_line;  // recorded in the certificate
  // Options that register what the claims run on (`--rule FILE --rule-config FILE`), appended to
  // every reproduce command so that it replays.
  std::string reproduce_options;
};

struct RunResult {
  nlohmann::json certificate;
  int passed = 0;  // claims that met their expected outcome with every control killed
  int failed = 0;
};

// The id of the claim this thread is running, empty outside one: what an implementation under test
// names when it fails (RuleError) or is watched (the --rule sandbox's "which call").
const std::string& claim_in_progress();

// Throws std::invalid_argument for a bad regex, a regex matching no claim, or an unknown
// --swap-control target, and rethrows the first RuleError a claim's implementation raised (the
// remaining claims are not started). `log` receives the readable table (the caller prints the closing
// "N passed, N failed" line once the certificate is written).
RunResult run_certificate(const RunOptions& options, std::ostream& log);

}  // namespace stiefel::certificates
