#include <stiefel/reports/plots.h>

#include <stiefel/io/atomic_file.h>
#include <stiefel/reports/experiment.h>
#include <stiefel/reports/tables.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace stiefel::reports {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A gnuplot double-quoted string; a newline becomes the escape \n (a line break in titles).
std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s)
    q += c == '\n' ? std::string("\\n") : (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return q + "\"";
}

struct Plot {
  std::string script;
  fs::path data_dir;
};

void run_gnuplot(const fs::path& script) {
  const std::string cmd = "gnuplot " + quoted(script.string()) + " 2>" + quoted(script.string() + ".err");
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream err(script.string() + ".err");
    std::stringstream ss;
    ss << err.rdbuf();
    throw ExperimentError("gnuplot failed on " + script.string() + " (is gnuplot-nox installed?): " + ss.str());
  }
}

std::string header(const std::string& output, const std::string& title, const std::string& xlabel,
                   const std::string& ylabel) {
  return "set terminal pngcairo size 1000,600 enhanced font 'sans,10'\nset output " + quoted(output) +
         "\nset title " + quoted(title) + " noenhanced\nset xlabel " + quoted(xlabel) + " noenhanced\nset ylabel " +
         quoted(ylabel) + " noenhanced\nset key outside right top noenhanced\nset grid\n";
}

}  // namespace

std::vector<std::string> draw_plots(const json& t, const std::string& out_dir, const std::string& stem) {
  std::vector<std::string> written;
  if (!t.contains("plots") || t["plots"].empty()) return written;
  fs::create_directories(out_dir);
  const fs::path work = fs::temp_directory_path() / ("stiefel-plot-" + std::to_string(::getpid()));
  fs::create_directories(work);
  // Every figure's title states the budget run, on a second line (the title states the paper's).
  std::string subtitle = t["title"];
  if (t.contains("budget")) {
    const auto phrase = budget_phrase(t["budget"], false, t.value("paper_budget", json()));
    subtitle += t.value("at_paper_budget", false) ? "\nrun at the paper's budget: " + phrase
                                                  : "\nrun at " + phrase + " (reduced budget)";
  }
  subtitle += " [" + t["profile"].get<std::string>() + "]";
  for (const auto& kind_j : t["plots"]) {
    const std::string kind = kind_j;
    const fs::path figure = fs::path(out_dir) / (stem + "-" + kind + ".png");
    const fs::path tmp_file = io::temporary_path(figure);  // gnuplot writes it; io renames it into place
    std::ostringstream gp;
    std::vector<std::string> series;
    int file = 0;
    if (kind == "isometry" || kind == "grok") {
      gp << header(tmp_file.string(), subtitle, "epoch",
                   kind == "isometry" ? "isometry error max_h |W^T W - I|_max (mean over seeds)" : "accuracy");
      if (kind == "isometry") gp << "set logscale y\nset format y '10^{%L}'\n";
      else gp << "set yrange [0:1.02]\n";
      for (const auto& g : t["groups"])
        for (const auto& a : g["arms"]) {
          if (!a.contains("curve")) continue;
          const auto& c = a["curve"];
          const fs::path dat = work / ("s" + std::to_string(file++) + ".dat");
          std::ofstream out(dat);
          for (std::size_t i = 0; i < c["epoch"].size(); ++i) {
            out << c["epoch"][i].get<double>() << " " << c["train_acc"][i].get<double>() << " ";
            out << (c["test_acc"][i].is_null() ? std::string("NaN") : std::to_string(c["test_acc"][i].get<double>()));
            out << " " << std::max(1e-300, c["isometry_error_max"][i].get<double>()) << "\n";
          }
          const std::string label = (t["groups"].size() > 1 ? g["label"].get<std::string>() + " " : "") +
                                    a.value("label", a["id"].get<std::string>());
          if (kind == "isometry") {
            series.push_back(quoted(dat.string()) + " using 1:4 with lines lw 2 title " + quoted(label));
          } else {
            series.push_back(quoted(dat.string()) + " using 1:3 with lines lw 2 title " + quoted(label + " held-out"));
            series.push_back(quoted(dat.string()) + " using 1:2 with lines dt 2 title " + quoted(label + " train"));
          }
        }
    } else if (kind == "gap_vs_n" || kind == "eps") {
      const bool gap = kind == "gap_vs_n";
      gp << header(tmp_file.string(), subtitle, gap ? "training images n" : "epsilon",
                   gap ? "paired gap vs baseline (pp), 95% bootstrap CI" : "final test accuracy (%), mean +- sd");
      gp << "set logscale x\n";
      if (!gap) gp << "set format x '10^{%L}'\nset xrange [3e-9:0.3]\n";
      const fs::path dat = work / ("s" + std::to_string(file++) + ".dat");
      std::ofstream out(dat);
      // gap: one point per group (x = n) with its CI; eps: one point per arm (x = ε) with its sd.
      for (const auto& g : t["groups"])
        for (const auto& a : g["arms"]) {
          if (gap && g.contains("x") && a.contains("vs_baseline") && a["vs_baseline"].contains("ci_low")) {
            const auto& c = a["vs_baseline"];
            out << g["x"].get<double>() << " " << c["diff_mean"].get<double>() << " " << c["ci_low"].get<double>()
                << " " << c["ci_high"].get<double>() << "\n";
          } else if (!gap && a.contains("x") && a.contains("acc_mean")) {
            out << a["x"].get<double>() << " " << a["acc_mean"].get<double>() << " " << a.value("acc_sd", 0.0) << "\n";
          }
        }
      out.close();
      if (gap) {
        gp << "set xzeroaxis lt -1\n";
        series.push_back(quoted(dat.string()) + " using 1:2:3:4 with yerrorlines lw 2 title 'ours'");
      } else {
        series.push_back(quoted(dat.string()) + " using 1:2:3 with yerrorlines lw 2 title 'ours'");
      }
      // The paper's values, where the definition gives them per group or arm.
      const fs::path pdat = work / ("s" + std::to_string(file++) + ".dat");
      std::ofstream pout(pdat);
      int paper_points = 0;
      for (const auto& g : t["groups"])
        for (const auto& a : g["arms"]) {
          if (!a.contains("paper")) continue;
          if (gap && g.contains("x") && a["paper"].contains("diff")) {
            pout << g["x"].get<double>() << " " << a["paper"]["diff"].get<double>() << "\n";
            ++paper_points;
          }
          if (!gap && a.contains("x") && a["paper"].contains("acc")) {
            pout << a["x"].get<double>() << " " << a["paper"]["acc"].get<double>() << "\n";
            ++paper_points;
          }
        }
      pout.close();
      if (paper_points) series.push_back(quoted(pdat.string()) + " using 1:2 with linespoints dt 2 title 'paper'");
    } else if (kind == "accuracy") {
      // Test accuracy at the evaluated epochs (the others have none), mean over seeds with the min–max
      // band; validation accuracy dashed where the runs hold a validation split.
      gp << header(tmp_file.string(), subtitle, "epoch", "test accuracy (%): mean, band min to max over seeds");
      gp << "set style fill transparent solid 0.15 noborder\n";
      int colour = 0;
      for (const auto& g : t["groups"])
        for (const auto& a : g["arms"]) {
          if (!a.contains("curve")) continue;
          const auto& c = a["curve"];
          const bool has_val = c.contains("val_acc");
          const fs::path dat = work / ("s" + std::to_string(file++) + ".dat");
          std::ofstream out(dat);
          int rows = 0, val_rows = 0;
          for (std::size_t i = 0; i < c["epoch"].size(); ++i) {
            if (c["test_acc"][i].is_null()) continue;
            out << c["epoch"][i].get<double>() << " " << 100 * c["test_acc"][i].get<double>() << " "
                << 100 * c["test_acc_min"][i].get<double>() << " " << 100 * c["test_acc_max"][i].get<double>() << " ";
            if (has_val && !c["val_acc"][i].is_null()) {
              out << 100 * c["val_acc"][i].get<double>() << "\n";
              ++val_rows;
            } else {
              out << "NaN\n";
            }
            ++rows;
          }
          out.close();
          if (!rows) continue;
          const std::string lc = " lc " + std::to_string(++colour);
          const std::string label = (t["groups"].size() > 1 ? g["id"].get<std::string>() + ": " : "") +
                                    a.value("label", a["id"].get<std::string>()) + ", " +
                                    std::to_string(a.value("n", 0)) + " seeds";
          series.push_back(quoted(dat.string()) + " using 1:3:4 with filledcurves" + lc + " notitle");
          series.push_back(quoted(dat.string()) + " using 1:2 with linespoints lw 2 pt 7 ps 0.6" + lc + " title " +
                           quoted(label));
          if (val_rows)
            series.push_back(quoted(dat.string()) + " using 1:5 with linespoints dt 2 pt 6 ps 0.6" + lc + " title " +
                             quoted(label + ", validation"));
        }
    } else if (kind == "paired") {
      // One column per comparison (every arm against the baseline, then the named contrasts): the
      // per-seed differences as points, their mean with its 95% bootstrap CI as an error bar beside
      // them, the paper's value where it states one, and the zero line.
      const bool grok = t.value("analysis", "") == "grok";
      gp << header(tmp_file.string(), subtitle, "",
                   grok ? "paired difference of the held-out tail mean (arm - baseline), fraction"
                        : "paired difference of final test accuracy (arm - baseline), pp");
      const fs::path seeds_dat = work / ("s" + std::to_string(file++) + ".dat");
      const fs::path mean_dat = work / ("s" + std::to_string(file++) + ".dat");
      const fs::path paper_dat = work / ("s" + std::to_string(file++) + ".dat");
      std::ofstream seeds_out(seeds_dat), mean_out(mean_dat), paper_out(paper_dat);
      std::vector<std::string> tics;
      int paper_points = 0, columns = 0;
      auto column = [&](const std::string& label, const json& c, const json& paper) {
        if (!c.contains("differences") || c["differences"].empty()) return;
        const double x = ++columns;
        const auto& d = c["differences"];
        for (std::size_t j = 0; j < d.size(); ++j) {
          // Seeds spread across the left of the column, so that equal differences stay visible.
          const double jitter = d.size() > 1 ? 0.3 * double(j) / double(d.size() - 1) : 0.15;
          seeds_out << x - 0.3 + jitter << " " << d[j]["diff"].get<double>() << "\n";
        }
        mean_out << x + 0.15 << " " << c["diff_mean"].get<double>() << " "
                 << c.value("ci_low", c["diff_mean"].get<double>()) << " "
                 << c.value("ci_high", c["diff_mean"].get<double>()) << "\n";
        if (paper.is_object() && paper.contains("diff") && paper["diff"].is_number()) {
          paper_out << x + 0.15 << " " << paper["diff"].get<double>() << "\n";
          ++paper_points;
        }
        tics.push_back(quoted(label) + " " + std::to_string(columns));
      };
      const std::string base = t.value("baseline", "");
      for (const auto& g : t["groups"]) {
        const std::string prefix = t["groups"].size() > 1 ? g["id"].get<std::string>() + ": " : "";
        for (const auto& a : g["arms"])
          if (a.contains("vs_baseline"))
            column(prefix + a["id"].get<std::string>() + " - " + base, a["vs_baseline"], a.value("paper", json()));
        for (const auto& k : g["contrasts"])
          column(prefix + k["arm"].get<std::string>() + " - " + k["baseline"].get<std::string>(), k["vs_baseline"],
                 k.value("paper", json()));
      }
      seeds_out.close();
      mean_out.close();
      paper_out.close();
      if (columns) {
        gp << "set xrange [0.4:" << columns + 0.6 << "]\nset xtics (";
        for (std::size_t i = 0; i < tics.size(); ++i) gp << (i ? ", " : "") << tics[i];
        gp << ") rotate by 30 right noenhanced\nset xzeroaxis lt -1 lw 1.5\nset bmargin 8\n";
        series.push_back(quoted(seeds_dat.string()) + " using 1:2 with points pt 7 ps 0.8 lc 1 title 'per seed'");
        series.push_back(quoted(mean_dat.string()) +
                         " using 1:2:3:4 with yerrorbars lw 2 pt 5 ps 1.2 lc 2 title 'mean, 95% bootstrap CI'");
        if (paper_points)
          series.push_back(quoted(paper_dat.string()) + " using 1:2 with points pt 6 ps 1.6 lc 3 title 'paper'");
      }
    } else {
      throw ExperimentError("plot kind \"" + kind + "\": expected isometry, grok, gap_vs_n, eps, accuracy or paired");
    }
    if (series.empty()) continue;
    gp << "plot ";
    for (std::size_t i = 0; i < series.size(); ++i) gp << (i ? ", \\\n     " : "") << series[i];
    gp << "\n";
    const fs::path script = work / (kind + ".gp");
    std::ofstream(script) << gp.str();
    io::write_file_atomically(figure, [&](const fs::path& tmp) {
      if (tmp != tmp_file) throw io::IoError(tmp.string() + ": unexpected temporary name");
      run_gnuplot(script);
      // gnuplot exits 0 even when its PNG could not be written in full: a PNG ends with its IEND chunk.
      std::ifstream png(tmp, std::ios::binary | std::ios::ate);
      const auto size = png ? std::streamoff(png.tellg()) : std::streamoff(0);
      std::string tail(8, '\0');
      if (size >= 8) {
        png.seekg(size - 8);
        png.read(tail.data(), 8);
      }
      if (size < 8 || tail != std::string("IEND\xAE\x42\x60\x82", 8))
        throw io::IoError(figure.string() + ": gnuplot wrote an incomplete PNG (" + std::to_string(size) + " bytes)");
    });
    written.push_back(figure.string());
  }
  fs::remove_all(work);
  return written;
}

}  // namespace stiefel::reports
