// The local job runner: the runs of a grid as child processes of `stiefel train`, J at a time.
// Finished runs are skipped, an interrupted one resumes from its checkpoint (--resume), so a rerun
// of the same command never loses or redoes a finished run. SIGINT/SIGTERM stop the children and
// return 130; the runs resume with the next command.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "grid.h"

namespace stiefel::runner {

struct LocalOptions {
  int jobs = 1;                               // runs at a time (each one LibTorch thread)
  std::string executable = "/proc/self/exe";  // the `stiefel` that trains
  std::string shard;                          // "i/N" when the indices are a shard (progress lines)
};

// Runs the grid's runs with the given indices (a shard, or all). Returns 0 when every run finished
// (completed or diverged), 1 when some failed (their log paths printed), 130 when interrupted.
// PROGRESS receives one line per run and the ETA.
int run_local(const Grid& grid, const std::vector<std::size_t>& indices, const LocalOptions& options,
              std::ostream& progress);

// The arguments of `stiefel train` for run K of the grid, as the local runner passes them.
std::vector<std::string> run_arguments(const Grid& grid, std::size_t k);

}  // namespace stiefel::runner
