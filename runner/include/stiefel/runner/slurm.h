// A grid on a Slurm cluster: one array job whose tasks each run `stiefel experiment ... --shard
// i/N` (one run per task by default, so each task runs exactly the `stiefel train` command the
// local runner would), and a report job that depends on the array (afterany) and runs
// `stiefel report` on the results folder. Each submission's scripts are kept in OUT/slurm/
// (array-S.sbatch, report-S.sbatch) with a copy of the `stiefel` binary they run, so that a rebuild
// does not change a queued grid; OUT/slurm/submissions.json lists every submission's job ids. A
// resubmission submits only the unfinished runs that no earlier submission still has queued or
// running: finished ones are skipped, interrupted ones resume from their checkpoints.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <stiefel/io/shell.h>
#include <vector>

#include "grid.h"

namespace stiefel::runner {

struct SlurmOptions {
  std::string partition, time;  // sbatch's --partition and --time (empty: the cluster's defaults)
  int gpus_per_task = -1;       // GPUs per array task, --device cuda only (-1: 1 with cuda, 0 without)
  int max_parallel = 0;         // at most K array tasks at once (the array's %K); 0: no limit
  int array_tasks = 0;          // 0: one task per run; N: N tasks, task i runs shard i/N
  int jobs = 1;                 // runs at a time inside one task (its --cpus-per-task)
  int batch_seeds = 1;          // B > 1: a task takes whole seed groups (shard_units) and trains
                                // each group in one process (--batch-seeds B)
  std::string executable;       // the absolute path of the `stiefel` to copy and run
  std::string workdir;          // the jobs' working folder (where relative paths resolve)
  std::string sbatch = "sbatch";
  // squeue: beside sbatch when --sbatch names a path, else from PATH.
  std::string squeue() const;
};

// The runs of the grid whose Slurm task, in any submission recorded in OUT/slurm/submissions.json,
// is still PENDING or RUNNING (asked of squeue), with that state. Empty when nothing was submitted.
// Throws std::runtime_error when squeue cannot be asked (naming it and why).
std::map<std::size_t, std::string> queued_runs(const Grid& grid, const SlurmOptions& options);

struct SlurmPlan {
  std::size_t submission = 1;      // S: this is the S-th submission of the folder
  std::size_t task_count = 0;      // N of --shard i/N (at most one task per unit of shard_units)
  std::vector<std::size_t> tasks;  // the array indices to submit
  std::vector<std::size_t> held;   // tasks left out: a run of theirs is queued in an earlier
                                   // submission or running now
  std::string array_spec;          // sbatch --array, e.g. "0-3,7,9-11%4"
  std::string array_script, report_script;
  std::filesystem::path array_path, report_path, log_folder, binary;
};

// Checks the options and the folder's pinned grid (std::invalid_argument naming the option or the
// folder) and writes the scripts in memory. QUEUED: queued_runs (their tasks are left out).
SlurmPlan plan_slurm(const Grid& grid, const SlurmOptions& options,
                     const std::map<std::size_t, std::string>& queued = {});

// The sbatch command lines of a plan, for --dry-run (the array job's id shown as ARRAY_JOB_ID).
std::vector<std::string> sbatch_commands(const SlurmPlan& plan, const SlurmOptions& options);

struct Submission {
  std::string array_job, report_job;
};
// Pins the grid, copies the binary, writes the scripts into OUT/slurm/, submits the array and the
// report job, and appends both ids to OUT/slurm/submissions.json. Throws std::runtime_error with
// sbatch's message when a submission is refused; a message after the array's submission names its
// job id.
Submission submit_slurm(const Grid& grid, const SlurmPlan& plan, const SlurmOptions& options);

// "0-3,7,9-11": sorted indices with runs of consecutive ones as ranges.
std::string compress_indices(const std::vector<std::size_t>& sorted);

using io::shell_quote;

}  // namespace stiefel::runner
