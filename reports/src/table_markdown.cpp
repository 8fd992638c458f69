// A table as Markdown, laid out as the paper's with its value beside ours: the preamble
// (budget, runs, provenance), the arms, contrasts, selections and unfinished runs.
#include "table_detail.h"

namespace stiefel::reports {
namespace table_detail {

namespace {

// A statistic of O as a table cell: fixed-point with DIGITS digits, or in scientific notation; "–"
// when O does not hold it.
std::string number_cell(const json& o, const char* k, int digits) {
  return o.contains(k) && o[k].is_number() ? fixed(o[k].get<double>(), digits) : "–";
}

std::string sci_cell(const json& o, const char* k) {
  return o.contains(k) && o[k].is_number() ? sci(o[k].get<double>()) : "–";
}

// "mean ± sd" over seeds (the sd where there is one), or "–".
std::string mean_sd_cell(const json& a, const char* mean_key, const char* sd_key) {
  if (!a.contains(mean_key)) return "–";
  return fixed(a[mean_key].get<double>(), 2) + (a.contains(sd_key) ? " ± " + fixed(a[sd_key].get<double>(), 2) : "");
}

// The cells of a paired comparison C: its signed mean difference (MISSING when it has none), its CI
// and its wins out of the pairs.
std::string diff_cell(const json& c, int digits, const std::string& missing) {
  if (!c.contains("diff_mean")) return missing;
  const double diff = c["diff_mean"].get<double>();
  return (diff >= 0 ? "+" : "") + fixed(diff, digits);
}

std::string ci_cell(const json& c, int digits) {
  return c.contains("ci_low")
             ? "[" + fixed(c["ci_low"].get<double>(), digits) + ", " + fixed(c["ci_high"].get<double>(), digits) + "]"
             : "–";
}

std::string wins_cell(const json& c) {
  return c.contains("wins") ? std::to_string(c["wins"].get<int>()) + "/" + std::to_string(c["pairs"].get<int>()) : "–";
}

std::string comma_list(const json& strings) {
  std::string s;
  for (const auto& x : strings) s += (s.empty() ? "" : ", ") + x.get<std::string>();
  return s;
}

bool any_arm_has(const json& t, const char* key) {
  bool any = false;
  for (const auto& g : t["groups"])
    for (const auto& a : g["arms"]) any = any || a.contains(key);
  return any;
}

// What the completed records say of the program and the kernels that made them. Records from before
// provenance was recorded are kept as they are: the line says what they lack.
void write_provenance_line(std::ostream& md, const json& t) {
  if (!t.contains("provenance")) return;
  const auto& p = t["provenance"];
  const auto n = p["records"].get<std::size_t>(), named = p["naming_their_program"].get<std::size_t>();
  if (n == 0) return;
  md << "- Provenance: " << named << " of " << n << " completed records name the program that made them";
  if (named < n)
    md << " (the other " << n - named << " predate it: their commit is found from the repository's history, "
       << "and `stiefel replicate` reruns them from their settings)";
  const std::string kernels = comma_list(p["blas_kernels"]);
  md << "; OpenBLAS kernels: " << (kernels.empty() ? "not named" : kernels);
  if (const auto k = p["without_blas_kernels"].get<std::size_t>(); k > 0)
    md << " (" << k << " record" << (k == 1 ? "" : "s") << " name none)";
  md << ".\n";
}

void write_budget_line(std::ostream& md, const json& t) {
  if (!t.contains("budget")) return;
  md << "- Budget run: " << budget_phrase(t["budget"]);
  if (t.value("at_paper_budget", false))
    md << " (the paper's)";
  else
    md << " (reduced: the paper's claims at " << budget_phrase(t["paper_budget"]) << " are not decided by this table)";
  md << "\n";
}

void write_runs_line(std::ostream& md, const json& t) {
  md << "- Runs completed: " << t["runs_completed"].get<int>() << " of " << t["runs_planned"].get<int>();
  if (t.value("runs_unfinished", 0) > 0) md << "; unfinished: " << t["runs_unfinished"].get<int>() << " (listed below)";
  if (t.value("runs_diverged", 0) > 0) {
    md << "; diverged (a non-finite loss, gradient or parameter; excluded from the statistics): "
       << t["runs_diverged"].get<int>() << " —";
    for (const auto& g : t["groups"])
      for (const auto& a : g["arms"])
        for (const auto& dv : a.value("diverged", json::array()))
          md << " " << a["id"].get<std::string>() << " seed " << dv["seed"] << " (epoch " << dv["epoch"] << ", "
             << dv["tensor"].get<std::string>() << ")";
  }
  md << "\n";
  if (t.contains("run_hours") && t["runs_completed"].get<int>() > 0)
    md << "- Machine time: " << std::fixed << std::setprecision(1) << t["run_hours"].get<double>() << std::defaultfloat
       << " h, the completed runs' recorded wall time summed (runs that shared the machine "
       << "each count their own; a run reused from another grid counts here too)\n";
  const json mismatched = t.value("runs_mismatched", json::array());
  if (!mismatched.empty()) {
    md << "- Not tabulated: " << mismatched.size()
       << " records that are not their grid cell's run (copied from another cell, or of another budget):";
    for (const auto& m : mismatched)
      md << " `" << m["run"].get<std::string>() << "` (" << m["why"].get<std::string>() << ");";
    md << "\n";
  }
}

// The heading and the list under it: section, profile, budget, data, runs and the statistics used.
void write_preamble(std::ostream& md, const json& t) {
  md << "# " << table_heading(t) << "\n\n";
  md << "- Paper: " << t["section"].get<std::string>() << "\n";
  md << "- Profile: `" << t["profile"].get<std::string>() << "` — reductions: " << t["reductions"].get<std::string>()
     << "\n";
  if (t.contains("reading"))
    md << "- Reading: " << t["reading"].get<std::string>()
       << " (the paper's budget; complete, it decides the claims as the paper profile does, and where the two "
       << "readings disagree a claim is not confirmed)\n";
  for (const auto& o : t.value("other_readings", json::array()))
    md << "- Reading: the definition's settings as stated (the paper also states the protocol as profile `"
       << o["profile"].get<std::string>() << "`: " << o["reading"].get<std::string>() << ")\n";
  write_budget_line(md, t);
  const std::string ds = comma_list(t["datasets"]), dev = comma_list(t["devices"]);
  md << "- Data: " << (ds.empty() ? "none completed" : ds) << "; device: " << (dev.empty() ? "-" : dev) << "\n";
  write_runs_line(md, t);
  write_provenance_line(md, t);
  md << "- Statistics: mean ± sd (ddof " << t["std_ddof"].get<int>() << ") over seeds; differences paired within "
     << "seed against `" << t["baseline"].get<std::string>()
     << "`; paired t (Boost.Math); 95% percentile bootstrap CI, "
     << t["statistics"]["bootstrap"]["resamples"].get<int>() << " resamples, seed "
     << t["statistics"]["bootstrap"]["seed"].get<std::uint64_t>()
     << "; wins = seeds where the arm beats the baseline.\n";
  if (t["analysis"] == "grok") {
    const auto epochs = t["epochs"].get<double>();
    md << "- Grokking, per seed (§4.3, Table 4, §4.4): memorized = the first evaluated epoch with training accuracy ≥ "
       << "0.99; grokked = the first with held-out accuracy ≥ 0.95 (a single crossing); sustained = the first of 3 "
       << "consecutive evaluations ≥ 0.95; tail mean = the held-out accuracy averaged over the evaluations after "
       << "epoch " << std::llround(0.75 * epochs) << " (the last quarter of the " << std::llround(epochs)
       << " epochs; the paper's \"final 5 000 epochs\" of 20 000); end = the held-out accuracy at the last "
       << "epoch. The paired test compares the tail means.\n";
  }
  md << "- Paper values in parentheses where the paper states them.\n\n";
}

// The per-arm table of a paired analysis (accuracy, the paired difference against the baseline,
// isometry, speed); a validation-accuracy column when HAS_VAL.
void write_paired_arms(std::ostream& md, const json& t, const json& g, bool has_val) {
  md << "| arm | seeds | test acc % (paper) | " << (has_val ? "val acc % | " : "")
     << "Δ vs baseline pp (paper) | 95% CI | t (paper) | p | wins (paper) | iso final | iso max | s/epoch |\n"
     << "|---|---|---|" << (has_val ? "---|" : "") << "---|---|---|---|---|---|---|---|\n";
  for (const auto& a : g["arms"]) {
    const json paper = a.value("paper", json::object());
    const json c = a.value("vs_baseline", json::object());
    const std::string seeds = std::to_string(a["n"].get<int>()) + "/" + std::to_string(a["planned"].get<int>());
    const std::string diff = diff_cell(c, 2, a["id"] == t["baseline"] ? "baseline" : "–");
    const std::string val = mean_sd_cell(a, "val_acc_mean", "val_acc_sd");
    md << "| " << a.value("label", a["id"].get<std::string>()) << " | " << seeds << " | "
       << cell(mean_sd_cell(a, "acc_mean", "acc_sd"), paper, "acc") << " | " << (has_val ? val + " | " : "")
       << cell(diff, paper, "diff") << " | " << ci_cell(c, 2) << " | " << cell(number_cell(c, "t", 2), paper, "t")
       << " | " << sci_cell(c, "p") << " | " << cell(wins_cell(c), paper, "wins") << " | "
       << sci_cell(a, "iso_final_mean") << " | " << sci_cell(a, "iso_max_run") << " | "
       << number_cell(a, "seconds_per_epoch", 2) << " |\n";
  }
  md << "\n";
}

// The run-to-run spread of a grokking table's arms (add_seed_spread), where two seeds completed.
void write_seed_spread(std::ostream& md, const json& g) {
  bool any = false;
  for (const auto& a : g["arms"]) any = any || a.contains("seed_spread");
  if (!any) return;
  md << "Run-to-run spread. These runs are deterministic: the same command gives the same record, bit for bit "
        "on the CPU (tested), where the paper's reruns of one configuration differed. Two runs here differ only "
        "by their seed, so the spread between runs is the gap between seeds' held-out accuracy, over the epochs "
        "both evaluated:\n\n"
        "| arm | seed pairs | mean gap | median of the largest gap | largest gap (epoch, seeds) |\n"
        "|---|---|---|---|---|\n";
  for (const auto& a : g["arms"]) {
    if (!a.contains("seed_spread")) continue;
    const auto& s = a["seed_spread"];
    const auto& w = s["widest"];
    md << "| " << a.value("label", a["id"].get<std::string>()) << " | " << s["pairs"].get<int>() << " | "
       << fixed(s["mean_gap"].get<double>(), 3) << " | " << fixed(s["median_max_gap"].get<double>(), 3) << " | "
       << fixed(w["gap"].get<double>(), 3) << " (epoch " << w["epoch"].get<std::int64_t>() << ", seeds "
       << w["seeds"][0].get<std::uint64_t>() << " and " << w["seeds"][1].get<std::uint64_t>() << ") |\n";
  }
  md << "\n";
}

// A text as one Markdown table cell: pipes escaped, line breaks as spaces.
std::string table_cell_text(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '|')
      out += "\\|";
    else
      out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return out;
}

// The runs that have not ended (unfinished_entry), where any: none is in the statistics above.
// Accuracies in the units of the table above them: fractions for grokking, percent otherwise.
void write_unfinished(std::ostream& md, const json& t, const json& g) {
  bool any = false;
  for (const auto& a : g["arms"]) any = any || !a.value("unfinished", json::array()).empty();
  if (!any) return;
  const bool grok = t["analysis"] == "grok";
  md << "Unfinished runs, in none of the statistics above: a `running` run is training, or stopped and "
        "resumes from its checkpoint with the same command; a `failed` one stopped on the error shown.\n\n"
     << "| arm | seed | status | epoch reached (of) | checkpoint | " << (grok ? "held-out acc" : "test acc %")
     << " (epoch) | train acc" << (grok ? "" : " %") << " |" << (grok ? " first memorized | first grokked |" : "")
     << "\n|---|---|---|---|---|---|---|" << (grok ? "---|---|" : "") << "\n";
  auto epoch_or_dash = [](const json& u, const char* k) {
    return u.contains(k) && u[k].is_number() ? std::to_string(u[k].get<std::int64_t>()) : std::string("–");
  };
  auto accuracy = [&](const json& u, const char* k) {
    if (!u.contains(k)) return std::string("–");
    const double v = u[k].get<double>();
    return grok ? fixed(v, 3) : fixed(100 * v, 2);
  };
  for (const auto& a : g["arms"])
    for (const auto& u : a.value("unfinished", json::array())) {
      std::string status = u["status"].get<std::string>();
      if (u.contains("failure"))
        status += " at epoch " + epoch_or_dash(u["failure"], "epoch") + ": " +
                  table_cell_text(u["failure"]["error"].get<std::string>());
      const std::string checkpoint =
          u["checkpoint"] == "resumable" ? epoch_or_dash(u, "checkpoint_epoch") : u["checkpoint"].get<std::string>();
      md << "| " << a.value("label", a["id"].get<std::string>()) << " | " << u["seed"].get<std::uint64_t>() << " | "
         << status << " | " << epoch_or_dash(u, "epoch") << " (" << epoch_or_dash(u, "epochs_planned") << ") | "
         << checkpoint << " | " << accuracy(u, "test_acc")
         << (u.contains("test_epoch") ? " (" + epoch_or_dash(u, "test_epoch") + ")" : std::string()) << " | "
         << accuracy(u, "train_acc") << " |";
      if (grok) md << " " << epoch_or_dash(u, "memorized") << " | " << epoch_or_dash(u, "grokked") << " |";
      md << "\n";
    }
  md << "\n";
}

// The per-arm table of a grokking analysis (grokked seeds, the epochs, the held-out tail and end).
void write_grok_arms(std::ostream& md, const json& t, const json& g) {
  md << "| arm | seeds | grokked (paper) | median grok epoch (paper) | sustained k=3 (paper) | median memorized "
        "(paper) | tail mean (paper) | end mean (paper) | Δ tail vs baseline (paper) | 95% CI | t (paper) | p | "
        "iso final (paper) | iso max |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& a : g["arms"]) {
    const json paper = a.value("paper", json::object());
    const json c = a.value("vs_baseline", json::object());
    const std::string seeds = std::to_string(a["n"].get<int>()) + "/" + std::to_string(a["planned"].get<int>());
    const std::string diff = diff_cell(c, 3, a["id"] == t["baseline"] ? "baseline" : "–");
    const std::string grokked = a.contains("grokked_count") ? std::to_string(a["grokked_count"].get<int>()) + "/" +
                                                                  std::to_string(a["n"].get<int>())
                                                            : "–";
    md << "| " << a.value("label", a["id"].get<std::string>()) << " | " << seeds << " | "
       << cell(grokked, paper, "grokked") << " | "
       << cell(number_cell(a, "median_grok_epoch", 0), paper, "median_grok", 0) << " | "
       << cell(number_cell(a, "median_sustained_epoch", 0), paper, "sustained", 0) << " | "
       << cell(number_cell(a, "median_memorized_epoch", 0), paper, "memorized", 0) << " | "
       << cell(number_cell(a, "tail_mean", 3), paper, "tail") << " | "
       << cell(number_cell(a, "end_mean", 3), paper, "end", 3) << " | " << cell(diff, paper, "diff", 2) << " | "
       << ci_cell(c, 3) << " | " << cell(number_cell(c, "t", 2), paper, "t") << " | " << sci_cell(c, "p") << " | "
       << cell(sci_cell(a, "iso_final_mean"), paper, "iso", 6) << " | " << sci_cell(a, "iso_max_run") << " |\n";
  }
  md << "\n";
  write_seed_spread(md, g);
}

void write_contrasts(std::ostream& md, const json& g) {
  if (g["contrasts"].empty()) return;
  md << "| contrast (paired within seed) | pairs | Δ pp (paper) | 95% CI | t (paper) | p | wins (paper) |\n"
        "|---|---|---|---|---|---|---|\n";
  for (const auto& k : g["contrasts"]) {
    const json paper = k.value("paper", json::object());
    const json& c = k["vs_baseline"];
    md << "| " << k["label"].get<std::string>() << " | " << c["pairs"].get<int>() << " | "
       << cell(diff_cell(c, 2, "–"), paper, "diff") << " | " << ci_cell(c, 2) << " | "
       << cell(number_cell(c, "t", 2), paper, "t") << " | " << sci_cell(c, "p") << " | "
       << cell(wins_cell(c), paper, "wins") << " |\n";
  }
  md << "\n";
}

void write_selection(std::ostream& md, const json& g) {
  if (!g.contains("selection")) return;
  const auto& s = g["selection"];
  md << "Selected on the validation split: ";
  if (s["arm"].is_null()) {
    md << "none (" << s.value("why", "") << ")";
  } else {
    md << s["label"].get<std::string>() << " (val acc " << fixed(s["val_acc"].get<double>(), 2) << "%, "
       << s["seeds"].get<int>() << "/" << s["planned"].get<int>() << " seeds";
    if (s["runner_up"].is_object())
      md << "; runner-up " << s["runner_up"]["label"].get<std::string>() << ", "
         << fixed(s["runner_up"]["val_acc"].get<double>(), 2) << "%";
    md << ")";
  }
  if (!s.value("statement", "").empty()) md << " — " << s["statement"].get<std::string>();
  md << "\n\n";
}

void write_frame_diagnostics(std::ostream& md, const json& t) {
  if (!any_arm_has(t, "late_step_per_gradient")) return;
  md << "Frame diagnostics (means over seeds; late = last quarter of the epochs):\n\n"
        "| group | arm | late step/gradient (paper) | late tangent gradient norm | gauge fraction (paper) | cap "
        "active |\n|---|---|---|---|---|---|\n";
  for (const auto& g : t["groups"])
    for (const auto& a : g["arms"]) {
      if (!a.contains("late_step_per_gradient")) continue;
      const json paper = a.value("paper", json::object());
      md << "| " << g["label"].get<std::string>() << " | " << a.value("label", a["id"].get<std::string>()) << " | "
         << cell(sci_cell(a, "late_step_per_gradient"), paper, "step_per_gradient", 3) << " | "
         << sci_cell(a, "late_tangent_grad_norm") << " | "
         << cell(number_cell(a, "gauge_fraction", 3), paper, "gauge_fraction") << " | "
         << number_cell(a, "cap_active_fraction", 3) << " |\n";
    }
  md << "\n";
}

}  // namespace

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

std::string sci(double v) {
  std::ostringstream os;
  os << std::setprecision(2) << v;
  return os.str();
}

// "ours (paper X)" when the paper gives X.
std::string cell(const std::string& ours, const json& paper, const char* key, int digits) {
  if (!paper.is_object() || !paper.contains(key) || paper[key].is_null()) return ours;
  const auto& p = paper[key];
  std::string ps = p.is_string()           ? p.get<std::string>()
                   : p.is_number_integer() ? p.dump()
                                           : fixed(p.get<double>(), digits);
  return ours + " (" + ps + ")";
}

}  // namespace table_detail

using namespace table_detail;

std::string table_markdown(const json& t) {
  std::ostringstream md;
  write_preamble(md, t);
  // A validation-accuracy column only for tables whose runs hold a validation split.
  const bool has_val = any_arm_has(t, "val_acc_mean");
  for (const auto& g : t["groups"]) {
    if (t["groups"].size() > 1) md << "## " << g["label"].get<std::string>() << "\n\n";
    if (t["analysis"] == "grok")
      write_grok_arms(md, t, g);
    else
      write_paired_arms(md, t, g, has_val);
    write_contrasts(md, g);
    write_selection(md, g);
    write_unfinished(md, t, g);
  }
  write_frame_diagnostics(md, t);
  for (const auto& ni : t["not_implemented"])
    md << "- Not implemented: **" << ni.value("label", ni.value("id", "")) << "** — " << ni.value("why", "") << "\n";
  for (const auto& n : t["notes"]) md << "- " << n.get<std::string>() << "\n";
  return md.str();
}

}  // namespace stiefel::reports
