// The paper's tables from an experiment's results folder: per run, the summary of its run.json
// (final test accuracy, isometry error, speed, late step-per-gradient, grokking epochs and tail);
// per arm, mean ± sd over seeds; per arm against the baseline, the paired statistics of
// paired_statistics.h; the paper's value beside every figure that has one.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include <stiefel/reports/experiment.h>

namespace stiefel::reports {

struct GrokMetrics {
  std::optional<std::int64_t> memorized, grokked, sustained;  // first epochs: train ≥ 0.99; test ≥ 0.95; 3 windows
  double end_acc = 0, tail_mean = 0;                          // tail: records in the last quarter of the epochs
  double min_train_after_memorized =
      std::numeric_limits<double>::quiet_NaN();  // the slingshot's depth: NaN without a record after memorising
};

// Throws ExperimentError("PATH: FIELD: what was expected") unless RUN has every field the tables read,
// with its type: status, config.epochs, epochs[] (epoch, train_acc, isometry_error_max and the
// numeric diagnostics), and for a completed run final (test_acc, train_acc, isometry_error_max); and
// unless its parts agree (final is its last epoch's; options and config state the same task, arm,
// seed, epochs, device, init scale, threads and validation split).
void check_run_record(const nlohmann::json& run, const std::string& path);

// Grokking metrics of a run record (records evaluated every eval_every epochs). Pure; tested.
GrokMetrics grok_metrics(const nlohmann::json& run, int sustained_windows = 3);

// Reads RESULTS/experiment.json and RESULTS/runs/*/run.json; returns the table as JSON. Labels,
// paper values and contrasts come from DEFINITIONS/NAME.json when that file exists and describes the
// same grid (so a corrected paper value needs no rerun), else from the copy stored with the results.
// The table records the budget run ("budget": n, epochs, … and the seed count), the paper profile's
// ("paper_budget"), the settings in which the grid differs from the paper's ("differs_from_paper")
// and "at_paper_budget" (no difference but data and device); per arm the seeds completed ("n") of
// those planned, per comparison the per-seed differences; with a definition's "select", the arm of
// highest mean validation accuracy ("selection", per group).
nlohmann::json analyse_results(const std::string& results_dir, int bootstrap_resamples = 20000,
                               std::uint64_t bootstrap_seed = 0, const std::string& definitions_dir = "");

// "n = 5000, 12 epochs, 6 seeds": a budget (analyse_results' "budget" or "paper_budget") in words — n,
// epochs and seeds always, the other settings too when every_setting, else those that differ from
// reference (when it is an object). A setting that varies across the grid lists its values, a/b/c;
// settings that vary together ("combinations") read as pairs, "n = 1000 (500 epochs) / 2000 (250 epochs)".
std::string budget_phrase(const nlohmann::json& budget, bool every_setting = true,
                          const nlohmann::json& reference = nullptr);

// The table's title, with the budget actually run appended when it is not the paper's (for the
// Markdown heading and the figures' titles).
std::string table_heading(const nlohmann::json& table);

// The table as Markdown, laid out like the paper's, with the paper's value beside ours.
std::string table_markdown(const nlohmann::json& table);

}  // namespace stiefel::reports
