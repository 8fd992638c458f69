// `stiefel experiment NAME --status --out DIR`: the state of every run of a grid (completed,
// diverged, running, queued, failed, repair, missing), with the log to read for each failed one, for local
// and Slurm grids alike.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <map>
#include <string>

#include "grid.h"

namespace stiefel::runner {

struct GridStatus {
  std::vector<RunStatus> runs;  // one per run of the grid, in grid order
  std::map<RunState, std::size_t> counts;
};
// QUEUED: the runs whose Slurm task is pending or running (queued_runs); a run in it that is
// neither finished nor running is "queued", with the Slurm state as its detail.
GridStatus grid_status(const Grid& grid, const std::map<std::size_t, std::string>& queued = {});

// Prints one line per run (id, state, epoch, the log to read) and a summary line first:
// "NAME [PROFILE]: N runs: a completed, b diverged, c running, d queued, e failed, f repair, g missing".
void print_status(const Grid& grid, const GridStatus& status, std::ostream& out);

}  // namespace stiefel::runner
