#include <stiefel/reports/plots.h>

#include <stiefel/arms.h>
#include <stiefel/io/atomic_file.h>
#include <stiefel/reports/experiment.h>
#include <stiefel/reports/tables.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <utility>

extern char** environ;

namespace stiefel::reports {

// gnuplot evaluates nothing inside single quotes (no backquote command, no @macro, no backslash
// escape). A quote, and a line break, are the double-quoted constants "'" and "\n" joined by
// gnuplot's string concatenation (a doubled quote is misread at the start of a string); any other
// control character is shown as U+FFFD.
std::string gnuplot_string(const std::string& text) {
  std::string q = "'";
  for (const char c : text) {
    if (c == '\'') {
      q += "'.\"'\".'";
    } else if (c == '\n') {
      q += "'.\"\\n\".'";
    } else if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
      q += "\xEF\xBF\xBD";
    } else {
      q += c;
    }
  }
  return q + "'";
}

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The scratch folders that reports killed before their end (SIGKILL runs no destructor) left in
// TMP: those named by a process that no longer exists, owned by this user, folders and not links.
void remove_abandoned_scratch(const fs::path& tmp) {
  std::error_code ec;
  for (fs::directory_iterator it(tmp, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string prefix = "stiefel-plot-";
    if (name.rfind(prefix, 0) != 0) continue;
    const std::size_t dash = name.find('-', prefix.size());
    const std::string pid_text = name.substr(prefix.size(), dash == std::string::npos ? 0 : dash - prefix.size());
    if (pid_text.empty() || pid_text.size() > 9 || pid_text.find_first_not_of("0123456789") != std::string::npos)
      continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    const pid_t pid = pid_t(std::stol(pid_text));
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // its report is running (or not ours to judge)
    std::error_code remove_error;
    fs::remove_all(it->path(), remove_error);  // removes links themselves, never what they point to
  }
}

// Scratch space of one report's figures: a private folder made by mkdtemp (mode 0700) and named by
// this process, files created with O_EXCL|O_NOFOLLOW (never through a link, never a file that was
// already there), and the folder removed with everything in it on every path out, gnuplot's
// failures included; what a killed report left is removed by the next one.
class ScratchFolder {
 public:
  ScratchFolder() {
    remove_abandoned_scratch(fs::temp_directory_path());
    std::string pattern =
        (fs::temp_directory_path() / ("stiefel-plot-" + std::to_string(::getpid()) + "-XXXXXX")).string();
    if (!::mkdtemp(pattern.data()))
      throw io::IoError(pattern + ": cannot make a private scratch folder for the figures (" + std::strerror(errno) +
                        ")");
    path_ = pattern;
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  ~ScratchFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);  // removes links themselves, never what they point to
  }

  const fs::path& path() const { return path_; }

  void write(const std::string& name, const std::string& content) const {
    const fs::path p = path_ / name;
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) throw io::IoError(p.string() + ": cannot be created (" + std::strerror(errno) + ")");
    std::size_t done = 0;
    while (done < content.size()) {
      const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int e = errno;
        ::close(fd);
        throw io::IoError(p.string() + ": cannot be written (" + std::strerror(e) + ")");
      }
      done += std::size_t(n);
    }
    if (::close(fd) != 0) throw io::IoError(p.string() + ": cannot be written (" + std::strerror(errno) + ")");
  }

  // The file NAME (a regular file, not a link), at most MAX_BYTES of it.
  std::string read(const std::string& name, std::size_t max_bytes) const {
    const fs::path p = path_ / name;
    const int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return {};
    struct stat st {};
    std::string out;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      char buf[65536];
      ssize_t n;
      while (out.size() < max_bytes && ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
        if (n > 0) out.append(buf, std::size_t(n));
    }
    ::close(fd);
    return out.substr(0, max_bytes);
  }

 private:
  fs::path path_;
};

// gnuplot itself, as an argv array (no shell), in the scratch folder: it reads the script SCRIPT
// and the data files there by their plain names, and writes its messages to gnuplot.err there.
void run_gnuplot(const ScratchFolder& work, const std::string& script) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addchdir_np(&actions, work.path().c_str());
  posix_spawn_file_actions_addopen(&actions, 2, "gnuplot.err", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
  std::string program = "gnuplot", argument = script;
  char* argv[] = {program.data(), argument.data(), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw ExperimentError("gnuplot cannot be started (" + std::string(std::strerror(rc)) +
                          "; is gnuplot-nox installed?)");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      throw ExperimentError("gnuplot: cannot wait for it (" + std::string(std::strerror(errno)) + ")");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw ExperimentError("gnuplot failed (" +
                          (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                             : "signal " + std::to_string(WTERMSIG(status))) +
                          "; is gnuplot-nox installed?): " + work.read("gnuplot.err", 4096));
}

// A figure's settings as gnuplot reads them. Every text from a definition, a results folder or the
// command line reaches the script only through gnuplot_string; file names are the scratch folder's.
// The legend sits below the plot (terminal()), never over a curve; autoscaled axes keep a margin of
// their own, not rounded out to the next tic, so that no marker is cut at the border.
std::string header(const std::string& title, const std::string& xlabel, const std::string& ylabel) {
  return "set title " + gnuplot_string(title) + " noenhanced\nset xlabel " + gnuplot_string(xlabel) +
         " noenhanced\nset ylabel " + gnuplot_string(ylabel) +
         " noenhanced\nset grid\nset autoscale fix\nset offsets graph 0.02, graph 0.02, graph 0.04, graph 0.04\n";
}

// The canvas grows with the legend's rows, so that the plotting area is the same size however many
// series a figure has: two entries a row where every title is short enough for half the width,
// else one (the key's columns are fixed here, never left to gnuplot).
std::string terminal(const std::vector<std::string>& legend_titles) {
  std::size_t widest = 0;
  for (const auto& t : legend_titles) widest = std::max(widest, t.size());
  const std::size_t columns = widest <= 60 ? 2 : 1;
  const std::size_t rows = (legend_titles.size() + columns - 1) / columns;
  return "set terminal pngcairo size 1000," + std::to_string(600 + 18 * rows) +
         " enhanced font 'sans,10'\nset output 'figure.png'\nset key outside below center horizontal maxcols " +
         std::to_string(columns) + " noenhanced\n";
}

// One figure's gnuplot script as it is built: its settings, the series of its plot command, and the
// data files those read (s0.dat, s1.dat, …), held in memory until the figure is rendered.
struct Figure {
  explicit Figure(std::string figure_title) : title(std::move(figure_title)) {}

  void head(const std::string& xlabel, const std::string& ylabel) { gp << header(title, xlabel, ylabel); }
  // A new data file; the returned name is what the plot command reads.
  std::string data_file(std::string content) {
    std::string name = "s" + std::to_string(files.size()) + ".dat";
    files.emplace_back(name, std::move(content));
    return name;
  }

  // " title 'TEXT'" for a series, TEXT kept for the legend's size.
  std::string titled(const std::string& text) {
    legend.push_back(text);
    return " title " + gnuplot_string(text);
  }

  std::string title;
  std::ostringstream gp;
  std::vector<std::string> series;
  std::vector<std::string> legend;                         // the series' titles
  std::vector<std::pair<std::string, std::string>> files;  // name, content
  // Small multiples: where any are set, the figure is these panels (gp and series unused), each its
  // settings and its plot command's series, laid out one or two to a row under the title.
  struct Panel {
    std::string settings;
    std::vector<std::string> series;
  };
  std::vector<Panel> panels;
};

// Every figure's title states the budget run, on a second line (the title states the paper's).
std::string figure_title(const json& t) {
  std::string title = t.at("title");
  if (t.contains("budget")) {
    const auto phrase = budget_phrase(t.at("budget"), false, t.value("paper_budget", json()));
    title += t.value("at_paper_budget", false) ? "\nrun at the paper's budget: " + phrase
                                               : "\nrun at " + phrase + " (reduced budget)";
  }
  if (t.contains("adam_lr")) {  // the AdamW rate of the non-frame parameters
    const auto& lr = t.at("adam_lr");
    std::ostringstream rate;
    if (lr.is_array())
      for (std::size_t i = 0; i < lr.size(); ++i) rate << (i ? "/" : "") << lr.at(i).get<double>();
    else
      rate << lr.get<double>();
    title += "; AdamW rate " + rate.str();
  }
  return title + " [" + t.at("profile").get<std::string>() + "]";
}

// The arm of the registry that table entry A trains ("train_arm"; a table without it: the entry's id
// where that names an arm), or null.
const arms::Arm* registry_arm(const json& a) {
  const std::string name =
      a.contains("train_arm") ? a.at("train_arm").get<std::string>() : a.at("id").get<std::string>();
  for (const auto& arm : arms::all())
    if (arm.name == name) return &arm;
  return nullptr;
}

// How an arm's series look in every figure: the registry's colour, and its label first. Where a
// table holds the same registry arm more than once (ε values, λ values, groups), each further entry
// is a shade of that colour (darker, lighter, darker still, …), so that no two entries look alike
// and dash patterns stay free for what they mean within an entry (train vs held-out, validation).
struct SeriesStyle {
  std::string colour;  // " lc rgb '#rrggbb'", or "" for an entry of no registry arm
  std::string label;
};

// Shade K of colour #rrggbb: K = 0 the colour itself; odd K darker, even K lighter, by 25% steps.
std::string shade(const std::string& hex, int k) {
  if (k == 0) return hex;
  const double step = 0.25 * double((k + 1) / 2);
  const bool darker = k % 2 == 1;
  char out[8];
  int rgb[3];
  for (int i = 0; i < 3; ++i) {
    const int v = std::stoi(hex.substr(1 + 2 * i, 2), nullptr, 16);
    const double w = darker ? double(v) * (1 - step) : double(v) + (255.0 - double(v)) * step;
    rgb[i] = std::clamp(int(std::lround(w)), 0, 255);
  }
  std::snprintf(out, sizeof out, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
  return out;
}

SeriesStyle series_style(const json& t, const json& g, const json& a) {
  SeriesStyle s;
  const arms::Arm* arm = registry_arm(a);
  const std::string own = a.value("label", a.at("id").get<std::string>());
  const std::string group = t.at("groups").size() > 1 ? g.at("label").get<std::string>() + ": " : "";
  if (!arm) {
    s.label = group + own;
    return s;
  }
  int before = 0, total = 0;  // entries of the same registry arm (before this one, in all)
  bool seen = false;
  for (const auto& gg : t.at("groups"))
    for (const auto& aa : gg.at("arms")) {
      if (&aa == &a) seen = true;
      if (registry_arm(aa) != arm) continue;
      ++total;
      if (!seen) ++before;
    }
  s.colour = " lc rgb " + gnuplot_string(shade(arm->colour, before % 7));
  // The registry's label; where the arm appears more than once, the definition's label of the entry
  // after it (without a closing " (LABEL)" that would repeat it).
  std::string rest = own;
  const std::string suffix = " (" + arm->label + ")";
  if (rest.size() > suffix.size() && rest.compare(rest.size() - suffix.size(), suffix.size(), suffix) == 0)
    rest.erase(rest.size() - suffix.size());
  s.label = group + (total == 1 || rest == arm->label ? arm->label : arm->label + " — " + rest);
  return s;
}

// "GROUP: " before an arm's name when the table has more than one group.
std::string group_prefix(const json& t, const json& g) {
  return t.at("groups").size() > 1 ? g.at("id").get<std::string>() + ": " : "";
}

// A seed or an epoch of a table: a whole number, refused by name otherwise (it names a panel or
// places a line; a fraction would be truncated without a word).
long long whole_number(const json& v, const std::string& what) {
  if (!v.is_number_integer()) throw ExperimentError("figure grok: " + what + " " + v.dump() + " is not a whole number");
  return v.get<long long>();
}

// A mean curve's rows for gnuplot: epoch, train accuracy, held-out accuracy (NaN where not
// evaluated), isometry error (floored at 1e-300 for the log scale).
std::string curve_rows(const json& c) {
  std::ostringstream out;
  for (std::size_t i = 0; i < c.at("epoch").size(); ++i)
    out << c.at("epoch").at(i).get<double>() << " " << c.at("train_acc").at(i).get<double>() << " "
        << (c.at("test_acc").at(i).is_null() ? std::string("NaN")
                                             : std::to_string(c.at("test_acc").at(i).get<double>()))
        << " " << std::max(1e-300, c.at("isometry_error_max").at(i).get<double>()) << "\n";
  return out.str();
}

// Kind "grok" where an arm has several seeds: small multiples, so that each seed's transition is
// seen (the paper reports one epoch a seed). The first panel holds each arm's mean held-out (solid)
// and train (dashed) accuracy; then one panel a seed (the first kMaxSeedPanels seeds), with the
// held-out accuracy of every arm that ran it and its sustained-grok epoch as a dashed vertical line
// in the arm's colour, the epochs stated in the panel's title; the legend has a cell of its own,
// last, so that it covers no curve. An arm without a registry colour gets one of gnuplot's by its
// place in the table, the same in every panel.
struct GrokPanels {
  static constexpr std::size_t kMaxSeedPanels = 12;  // 8 rows of two at most (cairo's canvas stays small)

  static std::string head(const std::string& title) {
    return header(title, "epoch", "accuracy") + "set yrange [0:1.02]\nunset arrow\nunset key\n";
  }

  explicit GrokPanels(const json& t) {
    for (const auto& g : t.at("groups"))
      for (const auto& a : g.at("arms"))
        if (a.contains("curve") && a.contains("seed_curves"))
          for (const auto& s : a.at("seed_curves")) seeds.push_back(whole_number(s.at("seed"), "seed"));
    std::sort(seeds.begin(), seeds.end());
    seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
    std::string title = "mean over seeds";
    if (seeds.size() > kMaxSeedPanels) {
      title += " (a panel for each of the first " + std::to_string(kMaxSeedPanels) + " of " +
               std::to_string(seeds.size()) + " seeds)";
      seeds.resize(kMaxSeedPanels);
    }
    means.settings = head(title);
    per_seed.resize(seeds.size());
    grok_epochs.resize(seeds.size());
  }

  // Arm A's mean curves, its key entries, and its seeds' held-out curves and sustained-grok epochs.
  void add(Figure& f, const json& a, SeriesStyle style) {
    if (style.colour.empty()) style.colour = " lc " + std::to_string(++uncoloured);
    const std::string dat = gnuplot_string(f.data_file(curve_rows(a.at("curve"))));
    means.series.push_back(dat + " using 1:3 with lines lw 2" + style.colour + " notitle");
    means.series.push_back(dat + " using 1:2 with lines lw 1 dt 2" + style.colour + " notitle");
    key.push_back("NaN with lines lw 2" + style.colour + f.titled(style.label + " held-out"));
    key.push_back("NaN with lines lw 1 dt 2" + style.colour + f.titled(style.label + " train (first panel)"));
    if (!a.contains("seed_curves")) return;
    key.push_back("NaN with lines lw 2 dt 2" + style.colour + f.titled(style.label + " sustained grok (seed panels)"));
    for (const auto& s : a.at("seed_curves")) {
      const auto at = std::lower_bound(seeds.begin(), seeds.end(), whole_number(s.at("seed"), "seed"));
      const auto& ep = s.at("epoch");
      if (at == seeds.end() || *at != s.at("seed").get<long long>() || ep.empty()) continue;
      const auto k = std::size_t(at - seeds.begin());
      std::ostringstream line;
      for (std::size_t i = 0; i < ep.size(); ++i)
        line << ep.at(i).get<double>() << " " << s.at("test_acc").at(i).get<double>() << "\n";
      per_seed[k].series.push_back(gnuplot_string(f.data_file(line.str())) + " using 1:2 with lines lw 1" +
                                   style.colour + " notitle");
      const bool grokked = !s.at("sustained").is_null();
      const std::string epoch = grokked ? std::to_string(whole_number(s.at("sustained"), "sustained-grok epoch")) : "";
      if (grokked)
        per_seed[k].settings +=
            "set arrow from " + epoch + ", graph 0 to " + epoch + ", graph 1 nohead lw 2 dt 2" + style.colour + "\n";
      grok_epochs[k] += (grok_epochs[k].empty() ? "" : ", ") + style.label + (grokked ? " at " + epoch : " never");
    }
  }

  // The panels into F: the means, each seed that has a curve to draw, the legend.
  void finish(Figure& f) {
    if (means.series.empty()) return;
    f.panels.push_back(std::move(means));
    for (std::size_t k = 0; k < seeds.size(); ++k)
      if (!per_seed[k].series.empty())
        f.panels.push_back({head("seed " + std::to_string(seeds[k]) + ", held-out; sustained grok: " + grok_epochs[k]) +
                                per_seed[k].settings,
                            std::move(per_seed[k].series)});
    f.panels.push_back(
        {"unset title\nunset border\nunset tics\nunset xlabel\nunset ylabel\nunset grid\n"
         "unset arrow\nset xrange [0:1]\nset yrange [0:1]\nset key center center maxcols 1 noenhanced\n",
         std::move(key)});
  }

  std::vector<long long> seeds;
  Figure::Panel means;
  std::vector<Figure::Panel> per_seed;
  std::vector<std::string> grok_epochs;  // "A2 at 3900, B2 never" for each seed's title
  std::vector<std::string> key;
  int uncoloured = 0;
};

void draw_grok_panels(Figure& f, const json& t) {
  GrokPanels panels(t);
  for (const auto& g : t.at("groups"))
    for (const auto& a : g.at("arms"))
      if (a.contains("curve")) panels.add(f, a, series_style(t, g, a));
  panels.finish(f);
}

// kind "isometry": the isometry error against epoch; kind "grok": train and held-out accuracy against
// epoch, one curve (mean over seeds) per arm, or small multiples where an arm has several seeds
// (draw_grok_panels).
void draw_curves(Figure& f, const json& t, const std::string& kind) {
  if (kind == "grok")
    for (const auto& g : t.at("groups"))
      for (const auto& a : g.at("arms"))
        if (a.contains("curve") && a.contains("seed_curves")) return draw_grok_panels(f, t);
  f.head("epoch", kind == "isometry" ? "isometry error max_h |W^T W - I|_max (mean over seeds)" : "accuracy");
  if (kind == "isometry")
    f.gp << "set logscale y\nset format y '10^{%L}'\n";
  else
    f.gp << "set yrange [0:1.02]\n";
  for (const auto& g : t.at("groups"))
    for (const auto& a : g.at("arms")) {
      if (!a.contains("curve")) continue;
      const std::string dat = gnuplot_string(f.data_file(curve_rows(a.at("curve"))));
      const auto style = series_style(t, g, a);
      if (kind == "isometry") {
        f.series.push_back(dat + " using 1:4 with lines lw 2" + style.colour + f.titled(style.label));
      } else {  // held-out solid, train dashed, in the arm's colour
        f.series.push_back(dat + " using 1:3 with lines lw 2" + style.colour + f.titled(style.label + " held-out"));
        f.series.push_back(dat + " using 1:2 with lines lw 1 dt 2" + style.colour + f.titled(style.label + " train"));
      }
    }
}

// gap: one point per group (x = n) with its CI; eps: one point per arm (x = ε) with its sd.
std::string sweep_points(const json& t, bool gap) {
  std::ostringstream out;
  for (const auto& g : t.at("groups"))
    for (const auto& a : g.at("arms")) {
      if (gap && g.contains("x") && a.contains("vs_baseline") && a.at("vs_baseline").contains("ci_low")) {
        const auto& c = a.at("vs_baseline");
        out << g.at("x").get<double>() << " " << c.at("diff_mean").get<double>() << " " << c.at("ci_low").get<double>()
            << " " << c.at("ci_high").get<double>() << "\n";
      } else if (!gap && a.contains("x") && a.contains("acc_mean")) {
        out << a.at("x").get<double>() << " " << a.at("acc_mean").get<double>() << " " << a.value("acc_sd", 0.0)
            << "\n";
      }
    }
  return out.str();
}

// The paper's values, where the definition gives them per group or arm (empty when it gives none).
std::string sweep_paper_points(const json& t, bool gap) {
  std::ostringstream pout;
  for (const auto& g : t.at("groups"))
    for (const auto& a : g.at("arms")) {
      if (!a.contains("paper")) continue;
      if (gap && g.contains("x") && a.at("paper").contains("diff"))
        pout << g.at("x").get<double>() << " " << a.at("paper").at("diff").get<double>() << "\n";
      if (!gap && a.contains("x") && a.at("paper").contains("acc"))
        pout << a.at("x").get<double>() << " " << a.at("paper").at("acc").get<double>() << "\n";
    }
  return pout.str();
}

// kind "gap_vs_n": the paired gap against n; kind "eps": the final accuracy against ε. Ours, and the
// paper's where it states them.
void draw_sweep(Figure& f, const json& t, const std::string& kind) {
  const bool gap = kind == "gap_vs_n";
  f.head(gap ? "training images n" : "epsilon",
         gap ? "paired gap vs baseline (pp), 95% bootstrap CI" : "final test accuracy (%), mean +- sd");
  // The x axis is logarithmic: an x <= 0 would stop gnuplot with an error no reader can act on.
  for (const auto& g : t.at("groups")) {
    if (gap && g.contains("x") && g.at("x").is_number() && !(g.at("x").get<double>() > 0))
      throw ExperimentError("figure gap_vs_n: group " + g.at("id").get<std::string>() + " has x = " + g.at("x").dump() +
                            " on a logarithmic axis (the definition's \"x\" must be > 0)");
    if (!gap)
      for (const auto& a : g.at("arms"))
        if (a.contains("x") && a.at("x").is_number() && !(a.at("x").get<double>() > 0))
          throw ExperimentError("figure eps: arm " + a.at("id").get<std::string>() + " has x = " + a.at("x").dump() +
                                " on a logarithmic axis (the definition's \"x\" must be > 0)");
  }
  f.gp << "set logscale x\n";
  if (!gap) f.gp << "set format x '10^{%L}'\nset xrange [3e-9:0.3]\n";
  const std::string dat = gnuplot_string(f.data_file(sweep_points(t, gap)));
  if (gap) {
    f.gp << "set xzeroaxis lt -1\n";
    f.series.push_back(dat + " using 1:2:3:4 with yerrorlines lw 2" + f.titled("ours"));
  } else {
    f.series.push_back(dat + " using 1:2:3 with yerrorlines lw 2" + f.titled("ours"));
  }
  const std::string paper = sweep_paper_points(t, gap);
  if (!paper.empty())
    f.series.push_back(gnuplot_string(f.data_file(paper)) + " using 1:2 with linespoints dt 2" + f.titled("paper"));
}

// Rows "epoch test min max val" (accuracies in %) at the evaluated epochs of a mean curve; val is NaN
// where the runs hold no validation split. Returns the rows written and those with a validation value.
std::pair<int, int> write_accuracy_rows(std::ostream& out, const json& c) {
  const bool has_val = c.contains("val_acc");
  int rows = 0, val_rows = 0;
  for (std::size_t i = 0; i < c.at("epoch").size(); ++i) {
    if (c.at("test_acc").at(i).is_null()) continue;
    out << c.at("epoch").at(i).get<double>() << " " << 100 * c.at("test_acc").at(i).get<double>() << " "
        << 100 * c.at("test_acc_min").at(i).get<double>() << " " << 100 * c.at("test_acc_max").at(i).get<double>()
        << " ";
    if (has_val && !c.at("val_acc").at(i).is_null()) {
      out << 100 * c.at("val_acc").at(i).get<double>() << "\n";
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
  for (const auto& g : t.at("groups"))
    for (const auto& a : g.at("arms")) {
      if (!a.contains("curve")) continue;
      std::ostringstream out;
      const auto [rows, val_rows] = write_accuracy_rows(out, a.at("curve"));
      if (!rows) continue;
      const std::string dat = gnuplot_string(f.data_file(out.str()));
      const auto style = series_style(t, g, a);
      ++colour;
      const std::string lc = style.colour.empty() ? " lc " + std::to_string(colour) : style.colour;
      const std::string label = style.label + ", " + std::to_string(a.value("n", 0)) + " seeds";
      f.series.push_back(dat + " using 1:3:4 with filledcurves" + lc + " notitle");
      f.series.push_back(dat + " using 1:2 with linespoints lw 2 pt 7 ps 0.6" + lc + f.titled(label));
      if (val_rows)
        f.series.push_back(dat + " using 1:5 with linespoints dt 2 pt 6 ps 0.6" + lc +
                           f.titled(label + ", validation"));
    }
}

// The data of the paired figure, one column per comparison: the per-seed differences, the mean with
// its CI, the paper's value, and the column's tic.
struct PairedColumns {
  void add(const std::string& label, const json& c, const json& paper) {
    if (!c.contains("differences") || c.at("differences").empty()) return;
    const double x = ++columns;
    const auto& d = c.at("differences");
    for (std::size_t j = 0; j < d.size(); ++j) {
      // Seeds spread across the left of the column, so that equal differences stay visible.
      const double jitter = d.size() > 1 ? 0.3 * double(j) / double(d.size() - 1) : 0.15;
      seeds << x - 0.3 + jitter << " " << d.at(j).at("diff").get<double>() << "\n";
    }
    mean << x + 0.15 << " " << c.at("diff_mean").get<double>() << " "
         << c.value("ci_low", c.at("diff_mean").get<double>()) << " "
         << c.value("ci_high", c.at("diff_mean").get<double>()) << "\n";
    if (paper.is_object() && paper.contains("diff") && paper.at("diff").is_number()) {
      paper_values << x + 0.15 << " " << paper.at("diff").get<double>() << "\n";
      ++paper_points;
    }
    tics.push_back(gnuplot_string(label) + " " + std::to_string(columns));
  }

  std::ostringstream seeds, mean, paper_values;
  std::vector<std::string> tics;
  int paper_points = 0, columns = 0;
};

// One column per comparison (every arm against the baseline, then the named contrasts): the
// per-seed differences as points, their mean with its 95% bootstrap CI as an error bar beside
// them, the paper's value where it states one, and the zero line.
void draw_paired(Figure& f, const json& t) {
  const bool grok = t.value("analysis", "") == "grok";
  f.head("", grok ? "paired difference of the held-out tail mean (arm - baseline), fraction"
                  : "paired difference of final test accuracy (arm - baseline), pp");
  PairedColumns cols;
  const std::string base = t.value("baseline", "");
  for (const auto& g : t.at("groups")) {
    const std::string prefix = group_prefix(t, g);
    for (const auto& a : g.at("arms"))
      if (a.contains("vs_baseline"))
        cols.add(prefix + a.at("id").get<std::string>() + " - " + base, a.at("vs_baseline"), a.value("paper", json()));
    for (const auto& k : g.at("contrasts"))
      cols.add(prefix + k.at("arm").get<std::string>() + " - " + k.at("baseline").get<std::string>(),
               k.at("vs_baseline"), k.value("paper", json()));
  }
  if (!cols.columns) return;
  f.gp << "set xrange [0.4:" << cols.columns + 0.6 << "]\nset xtics (";
  for (std::size_t i = 0; i < cols.tics.size(); ++i) f.gp << (i ? ", " : "") << cols.tics.at(i);
  f.gp << ") rotate by 30 right noenhanced\nset xzeroaxis lt -1 lw 1.5\n";
  f.series.push_back(gnuplot_string(f.data_file(cols.seeds.str())) + " using 1:2 with points pt 7 ps 0.8 lc 1" +
                     f.titled("per seed"));
  f.series.push_back(gnuplot_string(f.data_file(cols.mean.str())) +
                     " using 1:2:3:4 with yerrorbars lw 2 pt 5 ps 1.2 lc 2" + f.titled("mean, 95% bootstrap CI"));
  if (cols.paper_points)
    f.series.push_back(gnuplot_string(f.data_file(cols.paper_values.str())) +
                       " using 1:2 with points pt 6 ps 1.6 lc 3" + f.titled("paper"));
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
void check_png_complete(const std::string& png, const fs::path& figure) {
  if (png.size() < 8 || png.compare(png.size() - 8, 8, std::string("IEND\xAE\x42\x60\x82", 8)) != 0)
    throw io::IoError(figure.string() + ": gnuplot wrote an incomplete PNG (" + std::to_string(png.size()) + " bytes)");
}

// Writes the figure's data files and script into a fresh scratch folder, has gnuplot draw it
// there, and returns the PNG's bytes (FIGURE names it in errors).
std::string render(const FigureScript& f, const fs::path& figure) {
  const ScratchFolder work;
  for (const auto& [name, content] : f.files) work.write(name, content);
  work.write("figure.gp", f.script);
  run_gnuplot(work, "figure.gp");
  std::string png = work.read("figure.png", std::size_t(64) << 20);
  check_png_complete(png, figure);
  return png;
}

}  // namespace

FigureScript figure_script(const json& t, const std::string& kind) {
  Figure f(figure_title(t));
  draw(f, t, kind);
  FigureScript out;
  if (!f.panels.empty()) {
    const std::size_t n = f.panels.size(), columns = n <= 3 ? 1 : 2, rows = (n + columns - 1) / columns;
    out.script = "set terminal pngcairo size 1000," + std::to_string(80 + 330 * rows) +
                 " enhanced font 'sans,9'\nset output 'figure.png'\nset multiplot layout " + std::to_string(rows) +
                 "," + std::to_string(columns) + " rowsfirst title " + gnuplot_string(f.title) + " noenhanced\n";
    for (const auto& p : f.panels) {
      out.script += p.settings + "plot ";
      for (std::size_t i = 0; i < p.series.size(); ++i) out.script += (i ? ", \\\n     " : "") + p.series.at(i);
      out.script += "\n";
    }
    out.script += "unset multiplot\n";
    out.files = std::move(f.files);
    return out;
  }
  if (f.series.empty()) return out;
  out.script = terminal(f.legend) + f.gp.str() + "plot ";
  for (std::size_t i = 0; i < f.series.size(); ++i) out.script += (i ? ", \\\n     " : "") + f.series.at(i);
  out.script += "\n";
  out.files = std::move(f.files);
  return out;
}

std::vector<RenderedFigure> render_plots(const json& t, const std::string& stem) {
  std::vector<RenderedFigure> out;
  if (!t.contains("plots")) return out;
  for (const auto& kind_j : t.at("plots")) {
    const std::string kind = kind_j;
    const auto script = figure_script(t, kind);
    if (script.script.empty()) continue;
    const std::string name = stem + "-" + kind + ".png";
    out.push_back({name, render(script, name)});
  }
  return out;
}

std::vector<std::string> figure_names(const json& t, const std::string& stem) {
  std::vector<std::string> out;
  if (!t.contains("plots")) return out;
  for (const auto& kind_j : t.at("plots")) {
    const std::string kind = kind_j;
    if (!figure_script(t, kind).script.empty()) out.push_back(stem + "-" + kind + ".png");
  }
  return out;
}

std::vector<std::string> write_figures(const std::vector<RenderedFigure>& figures, const std::string& out_dir) {
  std::vector<std::string> written;
  if (figures.empty()) return written;
  fs::create_directories(out_dir);
  for (const auto& f : figures) {
    const fs::path figure = fs::path(out_dir) / f.name;
    io::write_file_atomically(figure, f.png);
    written.push_back(figure.string());
  }
  return written;
}

std::vector<std::string> draw_plots(const json& t, const std::string& out_dir, const std::string& stem) {
  return write_figures(render_plots(t, stem), out_dir);  // all drawn before the first is written
}

}  // namespace stiefel::reports
