// A grid on a Slurm cluster: one array job whose tasks each run `stiefel experiment ... --shard
// i/N` (one run per task by default, so each task runs exactly the `stiefel train` command the
// local runner would), and a report job that depends on the array (afterany) and runs
// `stiefel report` on the results folder. The scripts are kept in OUT/slurm/ with the results, and
// OUT/slurm/submissions.json lists every submission's job ids. A resubmission submits only the
// unfinished runs: finished ones are skipped, interrupted ones resume from their checkpoints.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "grid.h"

namespace stiefel::runner {

struct SlurmOptions {
  std::string partition, time;  // sbatch's --partition and --time (empty: the cluster's defaults)
  int gpus_per_task = 0;        // GPUs per array task (--device cuda only; 1 when not given)
  int max_parallel = 0;         // at most K array tasks at once (the array's %K); 0: no limit
  int array_tasks = 0;          // 0: one task per run; N: N tasks, task i runs shard i/N
  int jobs = 1;                 // runs at a time inside one task (its --cpus-per-task)
  std::string executable;       // the absolute path of the `stiefel` the jobs run
  std::string workdir;          // the jobs' working folder (where relative paths resolve)
  std::string sbatch = "sbatch";
};

struct SlurmPlan {
  std::size_t task_count = 0;       // N of --shard i/N
  std::vector<std::size_t> tasks;   // the array indices to submit: the tasks with unfinished runs
  std::string array_spec;           // sbatch --array, e.g. "0-3,7,9-11%4"
  std::string array_script, report_script;
  std::filesystem::path array_path, report_path, log_folder;
};

// Checks the options (std::invalid_argument naming the option) and writes the scripts in memory.
SlurmPlan plan_slurm(const Grid& grid, const SlurmOptions& options);

// The sbatch command lines of a plan, for --dry-run (the array job's id shown as ARRAY_JOB_ID).
std::vector<std::string> sbatch_commands(const SlurmPlan& plan, const SlurmOptions& options);

struct Submission {
  std::string array_job, report_job;
};
// Pins the grid, writes the scripts into OUT/slurm/, submits the array and the report job, and
// appends both ids to OUT/slurm/submissions.json. Throws std::runtime_error with sbatch's message
// when a submission is refused (naming the array job when only the report job failed).
Submission submit_slurm(const Grid& grid, const SlurmPlan& plan, const SlurmOptions& options);

// "0-3,7,9-11": sorted indices with runs of consecutive ones as ranges.
std::string compress_indices(const std::vector<std::size_t>& sorted);

// ARG quoted for a POSIX shell (single quotes; ' as '\'').
std::string shell_quote(const std::string& arg);

}  // namespace stiefel::runner
