// The claims file: any JSON either builds a ledger (with no tables and no certificate) or raises
// ExperimentError naming the file; never another exception.
#include <stiefel/reports/experiment.h>
#include <stiefel/reports/ledger.h>

#include <nlohmann/json.hpp>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto claims = nlohmann::json::parse(data, data + size, nullptr, false);
  if (claims.is_discarded()) return 0;
  try {
    stiefel::reports::build_ledger(claims, {}, nullptr, "claims.json");
  } catch (const stiefel::reports::ExperimentError&) {}
  return 0;
}
