// The tables' rooms share this header: a run's summary (run_summary.cpp), a grid's analysis
// (table_analysis.cpp) and the Markdown (table_markdown.cpp), all behind stiefel/reports/tables.h.
#pragma once

#include <stiefel/reports/tables.h>

#include <stiefel/io/sha256.h>
#include <stiefel/reports/paired_statistics.h>

#include <stiefel/schema.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace stiefel::reports::table_detail {

namespace fs = std::filesystem;
using nlohmann::json;

struct Summary {
  bool completed = false;
  double metric = 0;  // the paired metric: test accuracy in % (paired) or the tail mean (grok)
  json record;
};

// A run's summary (run_summary.cpp).
double median(std::vector<double> x);
double late_mean(const json& run, const char* field);
double mean_field(const json& run, const char* field);
json number_or_null(double v);
Summary summarise(const json& run, const std::string& analysis);
json mean_curve(const std::vector<json>& runs);
std::string dataset_name(const json& run);
double recorded_seconds(const json& rec);
std::vector<double> values_of(const std::vector<json>& records, const char* k);

// Cells of the tables (table_markdown.cpp).
std::string fixed(double v, int digits);
std::string sci(double v);
std::string cell(const std::string& ours, const json& paper, const char* key, int digits = 2);

// The grid a results folder was run with, resolved from the definition it is analysed with.
struct AnalysedExperiment {
  ResolvedExperiment ex;
  std::string definition_used;  // "stored with the results", or the current definition's file
};

// Over the whole grid: the runs completed, diverged and unfinished, and the data sets and devices the
// completed ones ran on.
struct GridTally {
  std::set<std::string> datasets, devices, kernels;
  std::size_t completed = 0, diverged = 0, unfinished = 0;
  std::size_t with_program = 0, without_kernels = 0;  // completed records that name their program; their BLAS core
  double run_seconds = 0;                             // the completed runs' recorded wall time, summed
  json mismatched = json::array();  // {"run", "why"}: records that are not their cell's run, never tabulated
};

// The runs of one arm in one group, read from RESULTS/runs/ID/run.json.
struct ArmRuns {
  std::size_t planned = 0;
  std::vector<json> runs;                  // the completed run records
  std::vector<json> records;               // their summaries, with "seed"
  json diverged = json::array();           // {"seed", "epoch", "step", "tensor"} of each diverged run
  json unfinished = json::array();         // unfinished_entry of each run that has not ended
  std::map<std::uint64_t, double> metric;  // the paired metric of each completed seed
};

// A grid's analysis (table_analysis.cpp).
const std::vector<std::string>& budget_keys();
json grid_budget(const ResolvedExperiment& ex);
json differences_from_paper(const ResolvedExperiment& ex, const ResolvedExperiment& paper);
json select_on_validation(const json& group, const json& select);
void check_stored_names(const json& meta, const std::string& source);
AnalysedExperiment load_experiment(const std::string& dir, const std::string& definitions_dir);
json table_header(const AnalysedExperiment& a, int resamples, std::uint64_t bootstrap_seed);
json unfinished_entry(const json& rec, std::uint64_t seed, const std::string& analysis, const fs::path& checkpoint);
ArmRuns read_arm_runs(const std::string& dir, const ResolvedExperiment& ex, const std::string& gid,
                      const std::string& aid, GridTally& tally);
void add_grok_statistics(json& arm, const std::vector<json>& records);
void add_seed_spread(json& arm, const ArmRuns& a);
json seed_curves(const ArmRuns& a);
void add_arm_statistics(json& arm, const ArmRuns& a, int ddof, const std::string& analysis);
json arm_entry(const ResolvedExperiment& ex, const std::string& gid, const std::string& aid, const ArmRuns& a);
json paired_comparison(const std::map<std::uint64_t, double>& x_by_seed,
                       const std::map<std::uint64_t, double>& y_by_seed, int resamples, std::uint64_t bootstrap_seed);
json group_entry(const ResolvedExperiment& ex, const std::string& gid);
json analyse_group(const std::string& dir, const ResolvedExperiment& ex, const std::string& gid, int resamples,
                   std::uint64_t bootstrap_seed, GridTally& tally);
void add_budget(json& table, const ResolvedExperiment& ex);

}  // namespace stiefel::reports::table_detail
