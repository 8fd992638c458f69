// Figures of an analysed table, drawn by gnuplot (PNG, cairo): isometry error against epoch (log scale),
// grokking curves (train and held-out accuracy against epoch, per arm), the gap against n, the
// accuracy against ε, test accuracy against epoch with the min–max band over seeds ("accuracy") and
// the per-seed paired differences with their mean and 95% bootstrap CI ("paired"). Which figures a
// table gets is listed in its definition's "plots"; every title states the budget run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace stiefel::reports {

// Writes OUT_DIR/STEM-KIND.png for each plot the table asks for; returns the files written.
// Throws ExperimentError when gnuplot is missing or fails.
std::vector<std::string> draw_plots(const nlohmann::json& table, const std::string& out_dir, const std::string& stem);

}  // namespace stiefel::reports
