// Experiment definitions (experiments/*.json) and their grids: a definition names the task, the
// arms (each a set of `stiefel train` options), optional groups (a swept setting such as n), the
// seeds, and per-profile reductions (paper | cpu | smoke). A grid is groups × arms × seeds; each
// cell is one run with a stable id "GROUP/ARM/seed-S" that names its folder under OUT/runs/.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <cstddef>
#include <string>
#include <vector>

namespace stiefel::reports {

// A malformed definition, results folder or run record; the message names the file and the field.
struct ExperimentError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RunSpec {
  std::string id;  // "main/b2/seed-3"
  std::string group, arm;
  std::uint64_t seed = 0;
  nlohmann::json train;  // `stiefel train` options: {"task": "image", "n": 10000, ...}
};

struct ResolvedExperiment {
  std::string name, profile, source;  // source: the definition file
  nlohmann::json definition;          // the file as read
  nlohmann::json profile_spec;        // definition["profiles"][profile] (may be empty)
  std::vector<std::string> groups, arms;
  std::vector<std::uint64_t> seeds;
  std::vector<RunSpec> runs;  // group-major, then arm, then seed
};

// Reads and checks a definition file; throws ExperimentError naming the file and field.
nlohmann::json load_definition(const std::string& path);
// Checks a definition (experiment.schema.json, its arms, baseline and profiles) as load_definition
// does, named by WHERE. HOUSE_RULES adds the rules a definition is written to (a reduced profile says
// what it reduces, a cpu profile keeps six paired seeds): a definition stored with results is held to
// the schema and its structure, not to house rules that may postdate it.
void check_definition(const nlohmann::json& definition, const std::string& where, bool house_rules);

// The most seeds a grid runs (experiment.schema.json's seed_count says the same).
inline constexpr int kMaxSeeds = 1000;
// The most runs one grid may hold (groups x arms x seeds): the paper's largest grid has 66; a stored
// definition of 100 arms x 100 groups x 1 000 seeds (6 KB) would have a report build tables of 10^7
// runs (measured: 2.9 GB, then bad_alloc).
inline constexpr std::size_t kMaxGridRuns = 10000;

// The grid of one profile. Throws ExperimentError for an unknown profile, a bad override or a seed
// count outside [1, kMaxSeeds].
ResolvedExperiment resolve(const nlohmann::json& definition, const std::string& profile, const std::string& source);

// Whether KEY is a `stiefel train` option a definition may set (in its JSON spelling, e.g. "test_n").
bool is_train_option(const std::string& key);

// Why RECORD (a run.json) is not the run of grid cell CELL, in words ("n 5000 (the cell's: 10000),
// arm \"a2\" (the cell's: \"b2\")"), or "" when it is: its seed and every `stiefel train` setting
// but where the data was read must be the cell's, a setting the cell leaves unset at the default
// experiment.schema.json states (an option a record predates ran at its default); a record from
// before options were recorded is held to the settings its "config" states. A record copied
// into another cell, or of another budget, is never counted as that cell's run.
std::string cell_mismatch(const nlohmann::json& record, const RunSpec& cell);

// The value setting KEY of grid cell CELL runs with: the cell's own, else the default
// experiment.schema.json states, with a task default resolved to the cell's task ("adam_lr" of an
// image cell that sets none: 0.001). Null for a key that is no `stiefel train` setting.
nlohmann::json cell_setting(const RunSpec& cell, const std::string& key);

// The command-line arguments of `stiefel train` for one run (without --out/--resume).
std::vector<std::string> train_arguments(const RunSpec& run);

// What read_json_file accepts: a regular file of at most 32 MiB, nested at most schema::kMaxDepth
// levels deep. The largest committed record is 0.73 MB (Table 3's n = 1k, 500 epochs; a 20 000-epoch
// grokking record, evaluated every 100 epochs, is smaller); parsed JSON takes about 16 times its
// bytes, so a file at the bound costs about 0.5 GB (at 256 MiB it took 4.1 GB).
inline constexpr std::uintmax_t kMaxJsonBytes = std::uintmax_t(32) << 20;

// Reads a JSON file; throws ExperimentError("PATH: ...") when it is missing, not a regular file (a
// FIFO, a device, a folder), larger or deeper than the bounds above, or malformed.
nlohmann::json read_json_file(const std::string& path);

}  // namespace stiefel::reports
