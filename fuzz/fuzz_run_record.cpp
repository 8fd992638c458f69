// Run records: any JSON either passes check_run_record, after which everything the tables read
// from it can be read (the grokking metrics here), or raises ExperimentError; never another exception.
#include <stiefel/reports/experiment.h>
#include <stiefel/reports/tables.h>

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto run = nlohmann::json::parse(data, data + size, nullptr, false);
  if (run.is_discarded()) return 0;
  try {
    stiefel::reports::check_run_record(run, "run.json");
  } catch (const stiefel::reports::ExperimentError&) {
    return 0;
  }
  stiefel::reports::grok_metrics(run);
  return 0;
}
