// An experiment's grid as the runners see it: the definition resolved for one profile, with the
// command line's --data and --device applied to every run, and the state of each run's folder
// OUT/runs/GROUP/ARM/seed-S. OUT/experiment.json pins the grid: a later command with other settings
// is refused rather than mixed into the same folder.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <stiefel/reports/experiment.h>

namespace stiefel::runner {

// What the command line asks for (`stiefel experiment NAME --profile P --out DIR ...`).
struct GridRequest {
  std::string name;  // experiments/NAME.json, or a definition file (*.json)
  std::string profile = "cpu";
  std::string data;  // image data: cifar10:DIR | fashion-mnist[:DIR]; empty: the default
  std::string device = "cpu";
  bool deterministic = false;        // every run with --deterministic (pinned with the grid)
  bool allow_kernel_change = false;  // run under other BLAS kernels than the grid's pinned ones (recorded)
  std::string out;                   // the results folder
  std::string definitions;           // the folder of definitions NAME is looked up in
};

struct Grid {
  GridRequest request;
  std::string source;  // the definition file read
  reports::ResolvedExperiment experiment;
  std::vector<reports::RunSpec> runs;  // the whole grid, --data and --device applied
  std::filesystem::path out;

  std::filesystem::path run_dir(std::size_t k) const { return out / "runs" / runs[k].id; }
};

// The definition file NAME names: NAME itself when it ends in .json, else DEFINITIONS/NAME.json.
std::string definition_path(const std::string& name, const std::string& definitions);

// Loads and resolves the grid; throws reports::ExperimentError naming the file and the field.
Grid load_grid(const GridRequest& request);

// Checks that OUT/experiment.json, when there, describes the same experiment and profile, a grid
// that this one equals or extends (every pinned run present with the same settings: a definition
// may gain rates, arms or seeds, never change or drop a run) and (unless `any_data`, as for
// --status, which reads the folder whatever data it was run on) the same --data; throws
// std::invalid_argument naming --out when it does not.
void check_pinned(const Grid& grid, bool any_data = false);
// check_pinned, then writes OUT/experiment.json when there is none or the grid has grown.
void pin_grid(const Grid& grid);

// The OpenBLAS kernels the grid's runs are computed with, pinned in OUT/experiment.json
// ("blas_kernel"): as pinned, else those its first record names, else this machine's (its
// OPENBLAS_CORETYPE, else OpenBLAS's choice for the CPU). Sets OPENBLAS_CORETYPE to them for every
// child. An OPENBLAS_CORETYPE that names others is refused, naming both, unless
// request.allow_kernel_change (then the new kernels are pinned and the old ones kept in
// "earlier_blas_kernels"). Returns the kernels ("" where BLAS is not OpenBLAS: nothing pinned).
std::string pin_blas_kernels(const Grid& grid);

// --shard i/N: every N-th run of the grid, starting at the i-th (1-based).
struct Shard {
  std::size_t index = 1, count = 1;
};
// Parses "i/N" strictly (digits only, 1 <= i <= N); throws std::invalid_argument naming --shard.
Shard parse_shard(const std::string& text);
// The indices of the grid's runs (0-based) that shard S of a grid of N runs takes.
std::vector<std::size_t> shard_runs(std::size_t n, Shard s);

// The state of a run folder.
//  completed, diverged: final (results); a rerun skips them.
//  repair:    a completed record whose final checkpoint is not the one it names (a kill before the
//             checkpoint's commit); a rerun resumes and recomputes it.
//  running:   a process holds the folder's lock (OUT/runs/.../.lock) now.
//  queued:    not finished, not running, and its Slurm task is pending or running (run_status
//             does not ask Slurm: grid_status sets it from the queue it is given).
//  failed:    started (a record or a log) but stopped before finishing, and no process holds it: a
//             kill, a cancelled Slurm task or an error. A rerun resumes it from its checkpoint.
//  missing:   never started.
//  mismatched: a finished record whose seed or settings are not its cell's (copied from another
//             cell, or run at another budget), or one the reports refuse (the run schema, final
//             not its last epoch, options against config): never counted, never overwritten;
//             move it away.
enum class RunState { missing, queued, running, failed, repair, completed, diverged, mismatched };
const char* to_string(RunState s);
bool is_finished(RunState s);

struct RunStatus {
  RunState state = RunState::missing;
  long long epoch = 0, epochs = 0;  // the last recorded epoch and the run's length, when known
  std::string detail;               // why (failed): the log's last line, or what was wrong with the record
};
// Throws std::runtime_error unless every folder from OUT/runs down to run K's folder is a folder or
// absent, never a symbolic link: a link planted in a results folder would lead a run's files out.
void check_inside_results(const Grid& grid, std::size_t k);

// The state of a run folder from its files alone.
RunStatus run_status(const std::filesystem::path& run_dir);
// The state of the grid's run K: run_status of its folder, and a finished record checked against
// its cell (reports::cell_mismatch): one that is not the cell's run is `mismatched`.
RunStatus run_status(const Grid& grid, std::size_t k);

}  // namespace stiefel::runner
