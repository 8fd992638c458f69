// Figures of an analysed table, drawn by gnuplot (PNG, cairo): isometry error against epoch (log scale),
// grokking curves (train and held-out accuracy against epoch, per arm), the gap against n, the
// accuracy against ε, test accuracy against epoch with the min–max band over seeds ("accuracy") and
// the per-seed paired differences with their mean and 95% bootstrap CI ("paired"). Which figures a
// table gets is listed in its definition's "plots"; every title states the budget run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace stiefel::reports {

// TEXT as a gnuplot string constant that gnuplot shows as it is and never evaluates (single quotes:
// no backquote command substitution, no @macro, no escape); every text a definition, a results
// folder or the command line gives reaches a gnuplot script only through it. (STYLE.md, habit 15).
std::string gnuplot_string(const std::string& text);

// One figure as gnuplot gets it: the script, which reads the data files by their plain names and
// writes figure.png, and those files (name, content). An empty script when the table has nothing
// to draw in this figure. Throws ExperimentError for an unknown KIND.
struct FigureScript {
  std::string script;
  std::vector<std::pair<std::string, std::string>> files;
};
FigureScript figure_script(const nlohmann::json& table, const std::string& kind);

// The table's figures drawn, in memory: STEM-KIND.png and its bytes for each plot the table asks for
// that has something to draw. gnuplot runs as draw_plots says.
struct RenderedFigure {
  std::string name, png;
};
std::vector<RenderedFigure> render_plots(const nlohmann::json& table, const std::string& stem);
// Writes each rendered figure to OUT_DIR/NAME (atomically, the folder made where missing); returns
// the files written.
std::vector<std::string> write_figures(const std::vector<RenderedFigure>& figures, const std::string& out_dir);
// The names render_plots gives the table's figures (STEM-KIND.png), without drawing them.
std::vector<std::string> figure_names(const nlohmann::json& table, const std::string& stem);

// Writes OUT_DIR/STEM-KIND.png for each plot the table asks for, once all are drawn; returns the
// files written.
// gnuplot runs as an argv array (no shell) in a private scratch folder (mkdtemp), which holds the
// script and the data files and is removed on every path. Throws ExperimentError when gnuplot is
// missing or fails.
std::vector<std::string> draw_plots(const nlohmann::json& table, const std::string& out_dir, const std::string& stem);

}  // namespace stiefel::reports
