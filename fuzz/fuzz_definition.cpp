// Experiment definitions: any bytes either load and resolve for every profile they name, or raise
// ExperimentError naming the file; never another exception (a JSON type error escaping the checks).
#include <stiefel/reports/experiment.h>

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = stiefel::fuzz::as_file("definition.json", data, size);
  try {
    const auto d = stiefel::reports::load_definition(path);
    for (const auto& [profile, _] : d["profiles"].items()) {
      const auto ex = stiefel::reports::resolve(d, profile, path);
      for (const auto& run : ex.runs) stiefel::reports::train_arguments(run);
    }
  } catch (const stiefel::reports::ExperimentError&) {}
  return 0;
}
