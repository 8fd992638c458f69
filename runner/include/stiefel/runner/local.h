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
  // Seed batching (grokking grids): up to B pending runs whose training differs only in the seed
  // train in one child (`stiefel train --batch-seed`), which takes one of the J slots.
  int batch_seeds = 1;
};

// The pending runs in groups that train together: runs whose `stiefel train` arguments differ only
// in --seed, at most B to a group (B = 1: one run per group), in the order of their first run.
std::vector<std::vector<std::size_t>> seed_batches(const Grid& grid, const std::vector<std::size_t>& pending, int b);

// The grid cut into the units that a shard or a Slurm array task takes whole: each run alone when
// B = 1; with B > 1, the seed groups of seed_batches over every run of the grid whatever its state,
// so that a group is never split across shards and every shard cuts the grid the same way.
std::vector<std::vector<std::size_t>> shard_units(const Grid& grid, int b);
// The indices of the runs (sorted) of the units that shard S takes: units S.index-1, S.index-1+N, ...
// With B = 1 this is shard_runs(grid.runs.size(), S).
std::vector<std::size_t> shard_of_grid(const Grid& grid, Shard s, int b);

// Runs the grid's runs with the given indices (a shard, or all). Returns 0 when every run finished
// (completed or diverged), 1 when some failed (their log paths printed), 130 when interrupted.
// PROGRESS receives one line per run and the ETA.
int run_local(const Grid& grid, const std::vector<std::size_t>& indices, const LocalOptions& options,
              std::ostream& progress);

// The arguments of `stiefel train` for run K of the grid, as the local runner passes them; for a
// group, those of its first run and a --batch-seed SEED=DIR for each other.
std::vector<std::string> run_arguments(const Grid& grid, std::size_t k);
std::vector<std::string> group_arguments(const Grid& grid, const std::vector<std::size_t>& group);

}  // namespace stiefel::runner
