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
#include <utility>

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
  return "set terminal pngcairo size 1000,600 enhanced font 'sans,10'\nset output " + quoted(output) + "\nset title " +
         quoted(title) + " noenhanced\nset xlabel " + quoted(xlabel) + " noenhanced\nset ylabel " + quoted(ylabel) +
         " noenhanced\nset key outside right top noenhanced\nset grid\n";
}

// One figure's gnuplot script as it is built: its settings, the series of its plot command, and the
// data files those read (s0.dat, s1.dat, … in the work folder).
struct Figure {
  Figure(fs::path work_folder, fs::path png, std::string figure_title)
      : work(std::move(work_folder)), output(std::move(png)), title(std::move(figure_title)) {}

  void head(const std::string& xlabel, const std::string& ylabel) {
    gp << header(output.string(), title, xlabel, ylabel);
  }
  fs::path data_file() { return work / ("s" + std::to_string(files++) + ".dat"); }

  fs::path work, output;  // output: the PNG gnuplot writes (a temporary name; io renames it into place)
  std::string title;
  std::ostringstream gp;
  std::vector<std::string> series;
  int files = 0;
};

// Every figure's title states the budget run, on a second line (the title states the paper's).
std::string figure_title(const json& t) {
  std::string title = t["title"];
  if (t.contains("budget")) {
    const auto phrase = budget_phrase(t["budget"], false, t.value("paper_budget", json()));
    title += t.value("at_paper_budget", false) ? "\nrun at the paper's budget: " + phrase
                                               : "\nrun at " + phrase + " (reduced budget)";
  }
  return title + " [" + t["profile"].get<std::string>() + "]";
}

// "GROUP: " before an arm's name when the table has more than one group.
std::string group_prefix(const json& t, const json& g) {
  return t["groups"].size() > 1 ? g["id"].get<std::string>() + ": " : "";
}

// kind "isometry": the isometry error against epoch; kind "grok": train and held-out accuracy against
// epoch. One curve (mean over seeds) per arm.
void draw_curves(Figure& f, const json& t, const std::string& kind) {
  f.head("epoch", kind == "isometry" ? "isometry error max_h |W^T W - I|_max (mean over seeds)" : "accuracy");
  if (kind == "isometry")
    f.gp << "set logscale y\nset format y '10^{%L}'\n";
  else
    f.gp << "set yrange [0:1.02]\n";
  for (const auto& g : t["groups"])
    for (const auto& a : g["arms"]) {
      if (!a.contains("curve")) continue;
      const auto& c = a["curve"];
      const fs::path dat = f.data_file();
      std::ofstream out(dat);
      for (std::size_t i = 0; i < c["epoch"].size(); ++i) {
        out << c["epoch"][i].get<double>() << " " << c["train_acc"][i].get<double>() << " ";
        out << (c["test_acc"][i].is_null() ? std::string("NaN") : std::to_string(c["test_acc"][i].get<double>()));
        out << " " << std::max(1e-300, c["isometry_error_max"][i].get<double>()) << "\n";
      }
      const std::string label = (t["groups"].size() > 1 ? g["label"].get<std::string>() + " " : "") +
                                a.value("label", a["id"].get<std::string>());
      if (kind == "isometry") {
        f.series.push_back(quoted(dat.string()) + " using 1:4 with lines lw 2 title " + quoted(label));
      } else {
        f.series.push_back(quoted(dat.string()) + " using 1:3 with lines lw 2 title " + quoted(label + " held-out"));
        f.series.push_back(quoted(dat.string()) + " using 1:2 with lines dt 2 title " + quoted(label + " train"));
      }
    }
}

// gap: one point per group (x = n) with its CI; eps: one point per arm (x = ε) with its sd.
void write_sweep_points(const fs::path& dat, const json& t, bool gap) {
  std::ofstream out(dat);
  for (const auto& g : t["groups"])
    for (const auto& a : g["arms"]) {
      if (gap && g.contains("x") && a.contains("vs_baseline") && a["vs_baseline"].contains("ci_low")) {
        const auto& c = a["vs_baseline"];
        out << g["x"].get<double>() << " " << c["diff_mean"].get<double>() << " " << c["ci_low"].get<double>() << " "
            << c["ci_high"].get<double>() << "\n";
      } else if (!gap && a.contains("x") && a.contains("acc_mean")) {
        out << a["x"].get<double>() << " " << a["acc_mean"].get<double>() << " " << a.value("acc_sd", 0.0) << "\n";
      }
    }
}

// The paper's values, where the definition gives them per group or arm; returns how many.
int write_sweep_paper_points(const fs::path& pdat, const json& t, bool gap) {
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
  return paper_points;
}

// kind "gap_vs_n": the paired gap against n; kind "eps": the final accuracy against ε. Ours, and the
// paper's where it states them.
void draw_sweep(Figure& f, const json& t, const std::string& kind) {
  const bool gap = kind == "gap_vs_n";
  f.head(gap ? "training images n" : "epsilon",
         gap ? "paired gap vs baseline (pp), 95% bootstrap CI" : "final test accuracy (%), mean +- sd");
  f.gp << "set logscale x\n";
  if (!gap) f.gp << "set format x '10^{%L}'\nset xrange [3e-9:0.3]\n";
  const fs::path dat = f.data_file();
  write_sweep_points(dat, t, gap);
  if (gap) {
    f.gp << "set xzeroaxis lt -1\n";
    f.series.push_back(quoted(dat.string()) + " using 1:2:3:4 with yerrorlines lw 2 title 'ours'");
  } else {
    f.series.push_back(quoted(dat.string()) + " using 1:2:3 with yerrorlines lw 2 title 'ours'");
  }
  const fs::path pdat = f.data_file();
  if (write_sweep_paper_points(pdat, t, gap))
    f.series.push_back(quoted(pdat.string()) + " using 1:2 with linespoints dt 2 title 'paper'");
}

// Rows "epoch test min max val" (accuracies in %) at the evaluated epochs of a mean curve; val is NaN
// where the runs hold no validation split. Returns the rows written and those with a validation value.
std::pair<int, int> write_accuracy_rows(const fs::path& dat, const json& c) {
  const bool has_val = c.contains("val_acc");
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
  return {rows, val_rows};
}

// Test accuracy at the evaluated epochs (the others have none), mean over seeds with the min–max
// band; validation accuracy dashed where the runs hold a validation split.
void draw_accuracy(Figure& f, const json& t) {
  f.head("epoch", "test accuracy (%): mean, band min to max over seeds");
  f.gp << "set style fill transparent solid 0.15 noborder\n";
  int colour = 0;
  for (const auto& g : t["groups"])
    for (const auto& a : g["arms"]) {
      if (!a.contains("curve")) continue;
      const fs::path dat = f.data_file();
      const auto [rows, val_rows] = write_accuracy_rows(dat, a["curve"]);
      if (!rows) continue;
      const std::string lc = " lc " + std::to_string(++colour);
      const std::string label = group_prefix(t, g) + a.value("label", a["id"].get<std::string>()) + ", " +
                                std::to_string(a.value("n", 0)) + " seeds";
      f.series.push_back(quoted(dat.string()) + " using 1:3:4 with filledcurves" + lc + " notitle");
      f.series.push_back(quoted(dat.string()) + " using 1:2 with linespoints lw 2 pt 7 ps 0.6" + lc + " title " +
                         quoted(label));
      if (val_rows)
        f.series.push_back(quoted(dat.string()) + " using 1:5 with linespoints dt 2 pt 6 ps 0.6" + lc + " title " +
                           quoted(label + ", validation"));
    }
}

// The data of the paired figure, one column per comparison: the per-seed differences, the mean with
// its CI, the paper's value, and the column's tic.
class PairedColumns {
 public:
  PairedColumns(const fs::path& seeds, const fs::path& mean, const fs::path& paper)
      : seeds_out_(seeds), mean_out_(mean), paper_out_(paper) {}

  void add(const std::string& label, const json& c, const json& paper) {
    if (!c.contains("differences") || c["differences"].empty()) return;
    const double x = ++columns;
    const auto& d = c["differences"];
    for (std::size_t j = 0; j < d.size(); ++j) {
      // Seeds spread across the left of the column, so that equal differences stay visible.
      const double jitter = d.size() > 1 ? 0.3 * double(j) / double(d.size() - 1) : 0.15;
      seeds_out_ << x - 0.3 + jitter << " " << d[j]["diff"].get<double>() << "\n";
    }
    mean_out_ << x + 0.15 << " " << c["diff_mean"].get<double>() << " "
              << c.value("ci_low", c["diff_mean"].get<double>()) << " "
              << c.value("ci_high", c["diff_mean"].get<double>()) << "\n";
    if (paper.is_object() && paper.contains("diff") && paper["diff"].is_number()) {
      paper_out_ << x + 0.15 << " " << paper["diff"].get<double>() << "\n";
      ++paper_points;
    }
    tics.push_back(quoted(label) + " " + std::to_string(columns));
  }
  void close() {
    seeds_out_.close();
    mean_out_.close();
    paper_out_.close();
  }

  std::vector<std::string> tics;
  int paper_points = 0, columns = 0;

 private:
  std::ofstream seeds_out_, mean_out_, paper_out_;
};

// One column per comparison (every arm against the baseline, then the named contrasts): the
// per-seed differences as points, their mean with its 95% bootstrap CI as an error bar beside
// them, the paper's value where it states one, and the zero line.
void draw_paired(Figure& f, const json& t) {
  const bool grok = t.value("analysis", "") == "grok";
  f.head("", grok ? "paired difference of the held-out tail mean (arm - baseline), fraction"
                  : "paired difference of final test accuracy (arm - baseline), pp");
  const fs::path seeds_dat = f.data_file();
  const fs::path mean_dat = f.data_file();
  const fs::path paper_dat = f.data_file();
  PairedColumns cols(seeds_dat, mean_dat, paper_dat);
  const std::string base = t.value("baseline", "");
  for (const auto& g : t["groups"]) {
    const std::string prefix = group_prefix(t, g);
    for (const auto& a : g["arms"])
      if (a.contains("vs_baseline"))
        cols.add(prefix + a["id"].get<std::string>() + " - " + base, a["vs_baseline"], a.value("paper", json()));
    for (const auto& k : g["contrasts"])
      cols.add(prefix + k["arm"].get<std::string>() + " - " + k["baseline"].get<std::string>(), k["vs_baseline"],
               k.value("paper", json()));
  }
  cols.close();
  if (!cols.columns) return;
  f.gp << "set xrange [0.4:" << cols.columns + 0.6 << "]\nset xtics (";
  for (std::size_t i = 0; i < cols.tics.size(); ++i) f.gp << (i ? ", " : "") << cols.tics[i];
  f.gp << ") rotate by 30 right noenhanced\nset xzeroaxis lt -1 lw 1.5\nset bmargin 8\n";
  f.series.push_back(quoted(seeds_dat.string()) + " using 1:2 with points pt 7 ps 0.8 lc 1 title 'per seed'");
  f.series.push_back(quoted(mean_dat.string()) +
                     " using 1:2:3:4 with yerrorbars lw 2 pt 5 ps 1.2 lc 2 title 'mean, 95% bootstrap CI'");
  if (cols.paper_points)
    f.series.push_back(quoted(paper_dat.string()) + " using 1:2 with points pt 6 ps 1.6 lc 3 title 'paper'");
}

void draw(Figure& f, const json& t, const std::string& kind) {
  if (kind == "isometry" || kind == "grok")
    draw_curves(f, t, kind);
  else if (kind == "gap_vs_n" || kind == "eps")
    draw_sweep(f, t, kind);
  else if (kind == "accuracy")
    draw_accuracy(f, t);
  else if (kind == "paired")
    draw_paired(f, t);
  else
    throw ExperimentError("plot kind \"" + kind + "\": expected isometry, grok, gap_vs_n, eps, accuracy or paired");
}

// gnuplot exits 0 even when its PNG could not be written in full: a PNG ends with its IEND chunk.
void check_png_complete(const fs::path& png_path, const fs::path& figure) {
  std::ifstream png(png_path, std::ios::binary | std::ios::ate);
  const auto size = png ? std::streamoff(png.tellg()) : std::streamoff(0);
  std::string tail(8, '\0');
  if (size >= 8) {
    png.seekg(size - 8);
    png.read(tail.data(), 8);
  }
  if (size < 8 || tail != std::string("IEND\xAE\x42\x60\x82", 8))
    throw io::IoError(figure.string() + ": gnuplot wrote an incomplete PNG (" + std::to_string(size) + " bytes)");
}

// Writes the script (the settings, then the plot command) and has gnuplot draw FIGURE.
void render(Figure& f, const fs::path& script, const fs::path& figure) {
  f.gp << "plot ";
  for (std::size_t i = 0; i < f.series.size(); ++i) f.gp << (i ? ", \\\n     " : "") << f.series[i];
  f.gp << "\n";
  std::ofstream(script) << f.gp.str();
  io::write_file_atomically(figure, [&](const fs::path& tmp) {
    if (tmp != f.output) throw io::IoError(tmp.string() + ": unexpected temporary name");
    run_gnuplot(script);
    check_png_complete(tmp, figure);
  });
}

}  // namespace

std::vector<std::string> draw_plots(const json& t, const std::string& out_dir, const std::string& stem) {
  std::vector<std::string> written;
  if (!t.contains("plots") || t["plots"].empty()) return written;
  fs::create_directories(out_dir);
  const fs::path work = fs::temp_directory_path() / ("stiefel-plot-" + std::to_string(::getpid()));
  fs::create_directories(work);
  const std::string title = figure_title(t);
  for (const auto& kind_j : t["plots"]) {
    const std::string kind = kind_j;
    const fs::path figure = fs::path(out_dir) / (stem + "-" + kind + ".png");
    Figure f(work, io::temporary_path(figure), title);
    draw(f, t, kind);
    if (f.series.empty()) continue;
    render(f, work / (kind + ".gp"), figure);
    written.push_back(figure.string());
  }
  fs::remove_all(work);
  return written;
}

}  // namespace stiefel::reports
