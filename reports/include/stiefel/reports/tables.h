// The paper's tables from an experiment's results folder: per run, the summary of its run.json
// (final test accuracy, isometry error, speed, late step-per-gradient, grokking epochs and tail);
// per arm, mean ± sd over seeds; per arm against the baseline, the paired statistics of
// paired_statistics.h; the paper's value beside every figure that has one.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include <stiefel/reports/experiment.h>

namespace stiefel::reports {

struct GrokMetrics {
  std::optional<std::int64_t> memorized, grokked, sustained;  // first epochs: train ≥ 0.99; test ≥ 0.95; 3 windows
  double end_acc = 0, tail_mean = 0;                          // tail: records in the last quarter of the epochs
  double min_train_after_memorized = 1;                        // the slingshot's depth
};

// Grokking metrics of a run record (records evaluated every eval_every epochs). Pure; tested.
GrokMetrics grok_metrics(const nlohmann::json& run, int sustained_windows = 3);

// Reads RESULTS/experiment.json and RESULTS/runs/*/run.json; returns the table as JSON. Labels,
// paper values and contrasts come from DEFINITIONS/NAME.json when that file exists and describes the
// same grid (so a corrected paper value needs no rerun), else from the copy stored with the results.
nlohmann::json analyse_results(const std::string& results_dir, int bootstrap_resamples = 20000,
                               std::uint64_t bootstrap_seed = 0, const std::string& definitions_dir = "");

// The table as Markdown, laid out like the paper's, with the paper's value beside ours.
std::string table_markdown(const nlohmann::json& table);

}  // namespace stiefel::reports
