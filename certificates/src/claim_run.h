// One claim's run (claim_run.cpp): its cases drawn and checked in both precisions, a failure shrunk
// and proved, its controls, its figures, and its entry in the certificate; runner.cpp runs the
// selected claims through it on its threads.
#pragma once

#include <stiefel/certificates/claim.h>
#include <stiefel/certificates/runner.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace stiefel::certificates::run_detail {

struct ClaimRun {
  nlohmann::json entry;
  bool met = false;
  int controls = 0, controls_killed = 0;
  std::string observed;
  double seconds = 0;
};

// Runs CLAIM under OPT: its cases are drawn from BASE_SEED and the claim's id.
ClaimRun run_claim(const Claim& claim, const RunOptions& opt, std::uint64_t base_seed);

}  // namespace stiefel::certificates::run_detail
