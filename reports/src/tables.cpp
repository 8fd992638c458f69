#include <stiefel/reports/tables.h>

#include <stiefel/reports/paired_statistics.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace stiefel::reports {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const auto n = x.size();
  return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

// Mean of FIELD over the records in the last quarter of the run (epoch > 0.75·epochs).
double late_mean(const json& run, const char* field) {
  const auto& ep = run["epochs"];
  const double epochs = run["config"]["epochs"].get<double>();
  double s = 0;
  int k = 0;
  for (const auto& e : ep)
    if (e["epoch"].get<double>() > 0.75 * epochs && e.contains(field)) {
      s += e[field].get<double>();
      ++k;
    }
  return k ? s / k : std::nan("");
}

double mean_field(const json& run, const char* field) {
  double s = 0;
  int k = 0;
  for (const auto& e : run["epochs"])
    if (e.contains(field)) {
      s += e[field].get<double>();
      ++k;
    }
  return k ? s / k : std::nan("");
}

json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

struct Summary {
  bool completed = false;
  double metric = 0;  // the paired metric: test accuracy in % (paired) or the tail mean (grok)
  json record;
};

Summary summarise(const json& run, const std::string& analysis) {
  Summary s;
  json r;
  s.completed = run.value("status", "") == "completed";
  if (!s.completed) return s;
  const auto& f = run["final"];
  r["test_acc"] = 100 * f["test_acc"].get<double>();
  r["train_acc"] = 100 * f["train_acc"].get<double>();
  // Accuracy on the held-out validation split of the training images (runs with val_n > 0).
  if (f.contains("val_acc") && f["val_acc"].is_number()) r["val_acc"] = 100 * f["val_acc"].get<double>();
  r["iso_final"] = f["isometry_error_max"];
  double iso_max = 0;
  for (const auto& e : run["epochs"]) iso_max = std::max(iso_max, e["isometry_error_max"].get<double>());
  r["iso_max_run"] = iso_max;
  r["seconds_per_epoch"] = number_or_null(mean_field(run, "seconds"));
  r["late_step_per_gradient"] = number_or_null(late_mean(run, "step_per_gradient"));
  r["late_tangent_grad_norm"] = number_or_null(late_mean(run, "tangent_grad_norm"));
  r["gauge_fraction"] = number_or_null(mean_field(run, "gauge_fraction"));
  r["step_norm_mean"] = number_or_null(mean_field(run, "step_norm"));
  r["cap_active_fraction"] = number_or_null(mean_field(run, "cap_active_fraction"));
  s.metric = r["test_acc"];
  if (analysis == "grok") {
    const auto g = grok_metrics(run);
    auto opt = [](const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); };
    r["memorized"] = opt(g.memorized);
    r["grokked"] = opt(g.grokked);
    r["sustained"] = opt(g.sustained);
    r["end_acc"] = g.end_acc;
    r["tail_mean"] = g.tail_mean;
    r["min_train_after_memorized"] = g.min_train_after_memorized;
    s.metric = g.tail_mean;
  }
  s.record = r;
  return s;
}

// Mean curve over seeds at the epochs every completed run recorded. Test (and validation) accuracy
// exist only at evaluated epochs: they are null elsewhere, and so is the min–max band of the test
// accuracy over seeds.
json mean_curve(const std::vector<json>& runs) {
  struct Point {
    double train = 0, test = 0, val = 0, iso = 0;
    double test_min = std::numeric_limits<double>::infinity(), test_max = -std::numeric_limits<double>::infinity();
    int count = 0, tests = 0, vals = 0;
  };
  std::map<std::int64_t, Point> acc;
  bool any_val = false;
  for (const auto& run : runs)
    for (const auto& e : run["epochs"]) {
      auto& a = acc[e["epoch"].get<std::int64_t>()];
      a.train += e["train_acc"].get<double>();
      a.iso += e["isometry_error_max"].get<double>();
      ++a.count;
      if (e.contains("test_acc") && e["test_acc"].is_number()) {
        const double v = e["test_acc"].get<double>();
        a.test += v;
        a.test_min = std::min(a.test_min, v);
        a.test_max = std::max(a.test_max, v);
        ++a.tests;
      }
      if (e.contains("val_acc") && e["val_acc"].is_number()) {
        a.val += e["val_acc"].get<double>();
        ++a.vals;
        any_val = true;
      }
    }
  json c = {{"epoch", json::array()}, {"train_acc", json::array()}, {"test_acc", json::array()},
            {"test_acc_min", json::array()}, {"test_acc_max", json::array()}, {"isometry_error_max", json::array()}};
  if (any_val) c["val_acc"] = json::array();
  for (const auto& [ep, a] : acc) {
    if (a.count < int(runs.size())) continue;
    const bool tested = a.tests == a.count;
    c["epoch"].push_back(ep);
    c["train_acc"].push_back(a.train / a.count);
    c["test_acc"].push_back(tested ? json(a.test / a.count) : json(nullptr));
    c["test_acc_min"].push_back(tested ? json(a.test_min) : json(nullptr));
    c["test_acc_max"].push_back(tested ? json(a.test_max) : json(nullptr));
    c["isometry_error_max"].push_back(a.iso / a.count);
    if (any_val) c["val_acc"].push_back(a.vals == a.count ? json(a.val / a.count) : json(nullptr));
  }
  return c;
}

// The settings of `stiefel train` that fix how much a run learns from (its budget): what the paper
// states its claims at, beside the seed count.
const std::vector<std::string>& budget_keys() {
  static const std::vector<std::string> keys = {"n", "epochs", "batch", "test_n", "val_n", "pca_samples",
                                                "warmup_epochs"};
  return keys;
}

// The budget of a grid: each budget setting its runs set (one value when all runs share it, else the
// sorted distinct values, "default" for runs that leave it to the trainer), and the number of seeds.
json grid_budget(const ResolvedExperiment& ex) {
  json b = json::object();
  for (const auto& k : budget_keys()) {
    std::set<json> values;
    bool set_somewhere = false;
    for (const auto& r : ex.runs) {
      if (r.train.contains(k)) {
        values.insert(r.train[k]);
        set_somewhere = true;
      } else {
        values.insert(json("default"));
      }
    }
    if (!set_somewhere) continue;
    b[k] = values.size() == 1 ? *values.begin() : json(values);
  }
  b["seeds"] = ex.seeds.size();
  return b;
}

// How a profile's grid differs from the paper profile's: the train settings that differ on a run both
// grids hold ("data" and "device" say where, not how much, and are ignored), "seeds" when the seed
// lists differ, "arms" or "groups" when those sets differ, and "runs" when the profile has a run the
// paper's grid lacks (so some of its settings were compared with nothing). Sorted; empty when the
// profile runs exactly the paper's grid.
json differences_from_paper(const ResolvedExperiment& ex, const ResolvedExperiment& paper) {
  std::set<std::string> diff;
  if (ex.seeds != paper.seeds) diff.insert("seeds");
  auto as_set = [](const std::vector<std::string>& v) { return std::set<std::string>(v.begin(), v.end()); };
  if (as_set(ex.arms) != as_set(paper.arms)) diff.insert("arms");
  if (as_set(ex.groups) != as_set(paper.groups)) diff.insert("groups");
  std::map<std::string, const json*> paper_runs;
  for (const auto& r : paper.runs) paper_runs[r.id] = &r.train;
  for (const auto& r : ex.runs) {
    const auto it = paper_runs.find(r.id);
    if (it == paper_runs.end()) {
      diff.insert("runs");
      continue;
    }
    const json& p = *it->second;
    const json reading = ex.profile_spec.value("reading_settings", json::array());
    for (const auto* side : {&r.train, &p})
      for (const auto& [k, _] : side->items()) {
        if (k == "data" || k == "device") continue;
        // A reading profile runs the paper's budget with the settings its reading changes.
        if (std::find(reading.begin(), reading.end(), json(k)) != reading.end()) continue;
        if (!r.train.contains(k) || !p.contains(k) || r.train[k] != p[k]) diff.insert(k);
      }
  }
  return diff;
}

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
std::string cell(const std::string& ours, const json& paper, const char* key, int digits = 2) {
  if (!paper.is_object() || !paper.contains(key) || paper[key].is_null()) return ours;
  const auto& p = paper[key];
  std::string ps = p.is_string() ? p.get<std::string>() : p.is_number_integer() ? p.dump() : fixed(p.get<double>(), digits);
  return ours + " (" + ps + ")";
}

std::string dataset_name(const json& run) {
  if (run.contains("dataset") && run["dataset"].contains("name")) return run["dataset"]["name"];
  return run["config"].value("task", "") == "grok" ? "modular addition (a + b) mod 97" : "unknown";
}

// The arm of a group with the highest mean validation accuracy, and the runner-up; ties go to the arm
// listed first in the definition.
json select_on_validation(const json& group, const json& select) {
  json s = {{"metric", "val_acc"}, {"statement", select.value("statement", "")}};
  std::vector<const json*> ranked;
  for (const auto& a : group["arms"])
    if (a.contains("val_acc_mean")) ranked.push_back(&a);
  std::stable_sort(ranked.begin(), ranked.end(), [](const json* a, const json* b) {
    return (*a)["val_acc_mean"].get<double>() > (*b)["val_acc_mean"].get<double>();
  });
  if (ranked.empty()) {
    s["arm"] = nullptr;
    s["why"] = "no completed run records val_acc (runs need val_n > 0)";
    return s;
  }
  auto entry = [](const json& a) {
    return json{{"arm", a["id"]}, {"label", a.value("label", a["id"].get<std::string>())},
                {"val_acc", a["val_acc_mean"]}, {"seeds", a["val_seeds"]}, {"planned", a["planned"]}};
  };
  const auto best = entry(*ranked[0]);
  for (const auto& [k, v] : best.items()) s[k] = v;
  s["runner_up"] = ranked.size() > 1 ? entry(*ranked[1]) : json(nullptr);
  return s;
}

}  // namespace

std::string budget_phrase(const json& budget, bool every_setting, const json& reference) {
  auto value = [](const json& v) {
    if (!v.is_array()) return v.is_string() ? v.get<std::string>() : v.dump();
    std::string s;
    for (const auto& e : v) s += (s.empty() ? "" : "/") + (e.is_string() ? e.get<std::string>() : e.dump());
    return s;
  };
  auto count = [&](const char* key, const char* one, const char* many) {
    const auto& v = budget[key];
    return value(v) + " " + (v.is_number() && v.get<double>() == 1 ? one : many);
  };
  std::vector<std::string> parts;
  if (budget.contains("n")) parts.push_back("n = " + value(budget["n"]));
  if (budget.contains("epochs")) parts.push_back(count("epochs", "epoch", "epochs"));
  if (budget.contains("seeds")) parts.push_back(count("seeds", "seed", "seeds"));
  for (const auto& [k, v] : budget.items()) {
    if (k == "n" || k == "epochs" || k == "seeds") continue;
    const bool differs = reference.is_object() && (!reference.contains(k) || reference[k] != v);
    if (every_setting || differs) parts.push_back(k + " = " + value(v));
  }
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

std::string table_heading(const json& t) {
  std::string h = t["title"];
  if (t.contains("budget") && !t.value("at_paper_budget", false))
    h += " — run at " + budget_phrase(t["budget"], false, t.value("paper_budget", json())) + " (reduced budget)";
  return h;
}

void check_run_record(const json& run, const std::string& path) {
  auto bad = [&](const std::string& field, const std::string& what) {
    throw ExperimentError(path + ": " + field + ": " + what + " (not a run record of `stiefel train`?)");
  };
  if (!run.is_object()) bad("(top level)", "expected a JSON object");
  if (!run.contains("status") || !run["status"].is_string()) bad("status", "expected a string");
  if (!run.contains("config") || !run["config"].is_object()) bad("config", "expected an object");
  const auto& cfg = run["config"];
  if (!cfg.contains("epochs") || !cfg["epochs"].is_number_integer() || cfg["epochs"].get<std::int64_t>() < 1)
    bad("config.epochs", "expected a positive integer");
  for (const char* k : {"device", "task"})
    if (cfg.contains(k) && !cfg[k].is_string()) bad(std::string("config.") + k, "expected a string");
  if (run.contains("dataset") && (!run["dataset"].is_object() ||
                                  (run["dataset"].contains("name") && !run["dataset"]["name"].is_string())))
    bad("dataset", "expected an object with a string \"name\"");
  static const char* numeric[] = {"train_loss", "train_acc", "test_acc", "val_acc", "isometry_error_max",
                                  "tangent_grad_norm", "step_norm", "step_per_gradient", "cap_active_fraction",
                                  "gauge_fraction", "seconds"};
  auto check_metrics = [&](const json& e, const std::string& where, bool final_record) {
    if (!e.is_object()) bad(where, "expected an object");
    if (!e.contains("epoch") || !e["epoch"].is_number_integer() || e["epoch"].get<std::int64_t>() < 1)
      bad(where + ".epoch", "expected a positive integer");
    for (const char* k : {"train_acc", "isometry_error_max"})
      if (!e.contains(k)) bad(where + "." + k, "missing");
    if (final_record && !e.contains("test_acc")) bad(where + ".test_acc", "missing");
    for (const char* k : numeric)
      if (e.contains(k) && !(e[k].is_number() && std::isfinite(e[k].get<double>())))
        bad(where + "." + k, "expected a finite number, found " + e[k].dump());
  };
  if (!run.contains("epochs") || !run["epochs"].is_array()) bad("epochs", "expected an array");
  std::int64_t last = 0;
  for (std::size_t i = 0; i < run["epochs"].size(); ++i) {
    const std::string where = "epochs[" + std::to_string(i) + "]";
    check_metrics(run["epochs"][i], where, false);
    const auto epoch = run["epochs"][i]["epoch"].get<std::int64_t>();
    if (epoch <= last) bad(where + ".epoch", "epochs must increase");
    last = epoch;
  }
  if (run["status"] == "completed") {
    if (!run.contains("final")) bad("final", "missing in a completed run");
    check_metrics(run["final"], "final", true);
  }
  if (run["status"] == "diverged") {
    const auto& d = run.contains("divergence") ? run["divergence"] : json();
    if (!d.is_object() || !d.contains("tensor") || !d["tensor"].is_string() || !d.contains("epoch") ||
        !d["epoch"].is_number_integer() || !d.contains("step") || !d["step"].is_number_integer())
      bad("divergence", "a diverged run records {\"epoch\", \"step\", \"tensor\"}");
  }
}

GrokMetrics grok_metrics(const json& run, int sustained_windows) {
  GrokMetrics g;
  const auto& ep = run.at("epochs");
  const double epochs = run.at("config").at("epochs").get<double>();
  int streak = 0;
  std::int64_t streak_start = 0;
  double tail = 0;
  int tail_n = 0;
  for (const auto& e : ep) {
    const auto epoch = e.at("epoch").get<std::int64_t>();
    const double train = e.at("train_acc").get<double>();
    if (!g.memorized && train >= 0.99) g.memorized = epoch;
    if (g.memorized && epoch > *g.memorized) g.min_train_after_memorized = std::min(g.min_train_after_memorized, train);
    if (!e.contains("test_acc")) continue;
    const double test = e["test_acc"].get<double>();
    if (test >= 0.95) {
      if (!g.grokked) g.grokked = epoch;
      if (streak++ == 0) streak_start = epoch;
      if (streak == sustained_windows && !g.sustained) g.sustained = streak_start;
    } else {
      streak = 0;
    }
    g.end_acc = test;
    if (double(epoch) > 0.75 * epochs) {
      tail += test;
      ++tail_n;
    }
  }
  if (!g.memorized) g.min_train_after_memorized = std::nan("");
  g.tail_mean = tail_n ? tail / tail_n : std::nan("");
  return g;
}

json analyse_results(const std::string& dir, int resamples, std::uint64_t bootstrap_seed,
                     const std::string& definitions_dir) {
  const auto meta = read_json_file((fs::path(dir) / "experiment.json").string());
  if (!meta.contains("definition") || !meta.contains("profile") || !meta.contains("grid"))
    throw ExperimentError(dir + "/experiment.json: not written by `stiefel experiment` (no definition/profile/grid)");
  auto ex = resolve(meta["definition"], meta["profile"], meta.value("source", ""));
  std::string definition_used = "stored with the results";
  if (!definitions_dir.empty()) {
    const auto current = fs::path(definitions_dir) / (ex.name + ".json");
    if (fs::exists(current)) {
      auto cur = resolve(load_definition(current.string()), meta["profile"], current.string());
      // The same runs with the same settings, in any order (the order runs are scheduled in is not
      // part of what they measured).
      std::map<std::string, json> grid, stored;
      for (const auto& r : cur.runs) grid[r.id] = r.train;
      for (const auto& r : meta["grid"]) stored[r.value("id", "")] = r.value("train", json());
      if (grid == stored && grid.size() == meta["grid"].size()) {
        ex = std::move(cur);
        definition_used = "experiments/" + ex.name + ".json";
      }
    }
  }
  const auto& d = ex.definition;
  const std::string analysis = d["analysis"];
  const int ddof = d.value("std_ddof", 1);
  const std::string baseline = d.value("baseline", "");

  json table = {{"experiment", ex.name},
                {"title", d["title"]},
                {"section", d.value("section", "")},
                {"analysis", analysis},
                {"profile", ex.profile},
                {"reductions", ex.profile_spec.value("reductions", ex.profile == "paper" || ex.profile_spec.contains("reading")
                                                                     ? "none"
                                                                     : "smoke test sizes")},
                {"metric", analysis == "grok" ? "held-out accuracy, tail mean (fraction)" : "final test accuracy (%)"},
                {"std_ddof", ddof},
                {"baseline", baseline},
                {"statistics",
                 {{"test", "paired t-test on per-seed differences (Boost.Math one_sample_t_test)"},
                  {"bootstrap", {{"resamples", resamples}, {"seed", bootstrap_seed}, {"level", 0.95},
                                 {"method", BootstrapCi{}.method}}},
                  {"sign_test", "exact two-sided binomial on non-tied seeds"}}},
                {"not_implemented", d.value("not_implemented", json::array())},
                {"notes", d.value("notes", json::array())},
                {"plots", d.value("plots", json::array())},
                {"definition", definition_used}};
  std::set<std::string> datasets, devices;
  std::size_t completed = 0, diverged = 0;
  json groups = json::array();
  const json group_defs = ex.profile_spec.contains("groups") ? ex.profile_spec["groups"] : d.value("groups", json::array());
  for (const auto& gid : ex.groups) {
    json group = {{"id", gid}, {"arms", json::array()}};
    const json* gdef = nullptr;
    for (const auto& g : group_defs)
      if (g["id"] == gid) gdef = &g;
    group["label"] = gdef ? gdef->value("label", gid) : gid;
    if (gdef && gdef->contains("x")) group["x"] = (*gdef)["x"];
    std::map<std::string, std::map<std::uint64_t, double>> metric;
    for (const auto& aid : ex.arms) {
      json arm = {{"id", aid}};
      for (const auto& a : d["arms"])
        if (a["id"] == aid) {
          arm["label"] = a.value("label", aid);
          if (a.contains("x")) arm["x"] = a["x"];
        }
      std::vector<json> runs, records;
      json per_seed = json::array(), diverged_runs = json::array();
      std::size_t planned = 0;
      for (const auto& run : ex.runs) {
        if (run.group != gid || run.arm != aid) continue;
        ++planned;
        const auto path = fs::path(dir) / "runs" / run.id / "run.json";
        if (!fs::exists(path)) continue;
        const auto rec = read_json_file(path.string());
        check_run_record(rec, path.string());
        if (rec.value("status", "") == "diverged") {  // a result: counted, never averaged
          ++diverged;
          const auto& dv = rec.value("divergence", json::object());
          diverged_runs.push_back({{"seed", run.seed}, {"epoch", dv.value("epoch", json())},
                                   {"step", dv.value("step", json())}, {"tensor", dv.value("tensor", "")}});
          continue;
        }
        const auto s = summarise(rec, analysis);
        if (!s.completed) continue;
        ++completed;
        datasets.insert(dataset_name(rec));
        devices.insert(rec["config"].value("device", "cpu"));
        metric[aid][run.seed] = s.metric;
        auto r = s.record;
        r["seed"] = run.seed;
        per_seed.push_back(r);
        runs.push_back(rec);
        records.push_back(r);
      }
      arm["planned"] = planned;
      arm["n"] = records.size();
      arm["diverged"] = diverged_runs;
      arm["finished"] = records.size() + diverged_runs.size();
      arm["runs"] = per_seed;
      auto collect = [&](const char* k) {
        std::vector<double> v;
        for (const auto& r : records)
          if (r.contains(k) && r[k].is_number()) v.push_back(r[k].get<double>());
        return v;
      };
      auto put_mean = [&](const char* k, const char* out) {
        const auto v = collect(k);
        if (!v.empty()) arm[out] = mean(v);
      };
      if (!records.empty()) {
        const auto acc = collect("test_acc");
        arm["acc_mean"] = mean(acc);
        if (int(acc.size()) > ddof) arm["acc_sd"] = standard_deviation(acc, ddof);
        put_mean("train_acc", "train_acc_mean");
        const auto val = collect("val_acc");
        if (!val.empty()) {
          arm["val_acc_mean"] = mean(val);
          arm["val_seeds"] = val.size();
          if (int(val.size()) > ddof) arm["val_acc_sd"] = standard_deviation(val, ddof);
        }
        put_mean("iso_final", "iso_final_mean");
        const auto iso = collect("iso_max_run");
        arm["iso_max_run"] = *std::max_element(iso.begin(), iso.end());
        put_mean("seconds_per_epoch", "seconds_per_epoch");
        put_mean("late_step_per_gradient", "late_step_per_gradient");
        put_mean("late_tangent_grad_norm", "late_tangent_grad_norm");
        put_mean("gauge_fraction", "gauge_fraction");
        put_mean("step_norm_mean", "step_norm_mean");
        put_mean("cap_active_fraction", "cap_active_fraction");
        arm["curve"] = mean_curve(runs);
        if (analysis == "grok") {
          std::vector<double> grok_epochs, mem_epochs, tails, ends, sustained_epochs;
          for (const auto& r : records) {
            if (!r["grokked"].is_null()) grok_epochs.push_back(r["grokked"].get<double>());
            if (!r["memorized"].is_null()) mem_epochs.push_back(r["memorized"].get<double>());
            if (!r["sustained"].is_null()) sustained_epochs.push_back(r["sustained"].get<double>());
            if (r["tail_mean"].is_number()) tails.push_back(r["tail_mean"].get<double>());
            ends.push_back(r["end_acc"].get<double>());
          }
          arm["grokked_count"] = grok_epochs.size();
          arm["grok_rate"] = double(grok_epochs.size()) / double(records.size());
          arm["sustained_count"] = sustained_epochs.size();
          if (!sustained_epochs.empty()) arm["median_sustained_epoch"] = median(sustained_epochs);
          if (!grok_epochs.empty()) arm["median_grok_epoch"] = median(grok_epochs);
          if (!mem_epochs.empty()) arm["median_memorized_epoch"] = median(mem_epochs);
          if (!tails.empty()) arm["tail_mean"] = mean(tails);
          arm["end_mean"] = mean(ends);
        }
      }
      if (d.contains("paper") && d["paper"].contains(gid) && d["paper"][gid].contains(aid))
        arm["paper"] = d["paper"][gid][aid];
      group["arms"].push_back(arm);
    }
    // Paired comparisons on the seeds both arms completed: every arm against the baseline, and the
    // definition's named contrasts.
    auto compare = [&](const std::string& aid, const std::string& bid) {
      std::vector<double> x, y;
      json per_seed = json::array();
      for (const auto& [seed, v] : metric[aid])
        if (metric[bid].count(seed) && std::isfinite(v) && std::isfinite(metric[bid][seed])) {
          x.push_back(v);
          y.push_back(metric[bid][seed]);
          per_seed.push_back({{"seed", seed}, {"diff", v - metric[bid][seed]}});
        }
      json c = {{"pairs", x.size()}, {"differences", per_seed}};
      if (x.size() >= 2) {
        const auto p = compare_paired(x, y, resamples, bootstrap_seed);
        c["diff_mean"] = p.mean_difference;
        c["diff_sd"] = p.sd_difference;
        c["standard_error"] = p.standard_error;
        c["ci_low"] = p.ci.low;
        c["ci_high"] = p.ci.high;
        if (p.sd_difference > 0) {
          c["t"] = p.t.t;
          c["df"] = p.t.df;
          c["p"] = p.t.p_two_sided;
        }
        c["wins"] = p.wins;
        c["losses"] = p.losses;
        c["ties"] = p.ties;
        c["sign_p"] = p.sign_p;
      } else if (x.size() == 1) {
        c["diff_mean"] = x[0] - y[0];
      }
      return c;
    };
    if (!baseline.empty())
      for (auto& arm : group["arms"])
        if (arm["id"] != baseline) arm["vs_baseline"] = compare(arm["id"], baseline);
    group["contrasts"] = json::array();
    for (const auto& k : d.value("contrasts", json::array())) {
      if (std::find(ex.arms.begin(), ex.arms.end(), k["arm"].get<std::string>()) == ex.arms.end() ||
          std::find(ex.arms.begin(), ex.arms.end(), k["baseline"].get<std::string>()) == ex.arms.end())
        continue;
      json c = {{"id", k["id"]}, {"label", k.value("label", k["id"].get<std::string>())}, {"arm", k["arm"]},
                {"baseline", k["baseline"]}, {"vs_baseline", compare(k["arm"], k["baseline"])}};
      c["n"] = c["vs_baseline"]["pairs"];
      if (k.contains("paper")) c["paper"] = k["paper"];
      group["contrasts"].push_back(c);
    }
    if (d.contains("select")) group["selection"] = select_on_validation(group, d["select"]);
    groups.push_back(group);
  }
  table["groups"] = groups;
  // Model selection is within a group (a group is a setting such as n that selection must not cross).
  if (d.contains("select") && groups.size() == 1) table["selection"] = groups[0]["selection"];
  // The budget run and the paper's: a claim the paper states at its budget is decided only by a table
  // run at it (see build_ledger).
  const auto paper = resolve(d, "paper", ex.source);
  table["budget"] = grid_budget(ex);
  table["paper_budget"] = grid_budget(paper);
  table["differs_from_paper"] = differences_from_paper(ex, paper);
  table["at_paper_budget"] = table["differs_from_paper"].empty();
  double max_epochs = 0;
  for (const auto& r : ex.runs) max_epochs = std::max(max_epochs, r.train.value("epochs", 0.0));
  table["epochs"] = std::int64_t(max_epochs);
  if (ex.profile_spec.contains("reading")) {
    table["reading"] = ex.profile_spec["reading"];
    table["reading_settings"] = ex.profile_spec["reading_settings"];
  }
  table["runs_planned"] = ex.runs.size();
  table["runs_completed"] = completed;
  table["runs_diverged"] = diverged;
  table["datasets"] = datasets;
  table["devices"] = devices;
  return table;
}

std::string table_markdown(const json& t) {
  std::ostringstream md;
  const bool grok = t["analysis"] == "grok";
  md << "# " << table_heading(t) << "\n\n";
  md << "- Paper: " << t["section"].get<std::string>() << "\n";
  md << "- Profile: `" << t["profile"].get<std::string>() << "` — reductions: " << t["reductions"].get<std::string>()
     << "\n";
  if (t.contains("reading"))
    md << "- Reading: " << t["reading"].get<std::string>() << " (the paper's budget; the paper profile's reading decides "
       << "the claims, this one is shown beside it)\n";
  if (t.contains("budget")) {
    md << "- Budget run: " << budget_phrase(t["budget"]);
    if (t.value("at_paper_budget", false))
      md << " (the paper's)";
    else
      md << " (reduced: the paper's claims at " << budget_phrase(t["paper_budget"])
         << " are not decided by this table)";
    md << "\n";
  }
  std::string ds;
  for (const auto& d : t["datasets"]) ds += (ds.empty() ? "" : ", ") + d.get<std::string>();
  std::string dev;
  for (const auto& d : t["devices"]) dev += (dev.empty() ? "" : ", ") + d.get<std::string>();
  md << "- Data: " << (ds.empty() ? "none completed" : ds) << "; device: " << (dev.empty() ? "-" : dev) << "\n";
  md << "- Runs completed: " << t["runs_completed"].get<int>() << " of " << t["runs_planned"].get<int>();
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
  md << "- Statistics: mean ± sd (ddof " << t["std_ddof"].get<int>() << ") over seeds; differences paired within "
     << "seed against `" << t["baseline"].get<std::string>() << "`; paired t (Boost.Math); 95% percentile bootstrap CI, "
     << t["statistics"]["bootstrap"]["resamples"].get<int>() << " resamples, seed "
     << t["statistics"]["bootstrap"]["seed"].get<int>() << "; wins = seeds where the arm beats the baseline.\n";
  md << "- Paper values in parentheses where the paper states them.\n\n";
  auto num = [](const json& o, const char* k, int digits) -> std::string {
    return o.contains(k) && o[k].is_number() ? fixed(o[k].get<double>(), digits) : "–";
  };
  auto scin = [](const json& o, const char* k) -> std::string {
    return o.contains(k) && o[k].is_number() ? sci(o[k].get<double>()) : "–";
  };
  // A validation-accuracy column only for tables whose runs hold a validation split.
  bool has_val = false;
  for (const auto& g : t["groups"])
    for (const auto& a : g["arms"]) has_val = has_val || a.contains("val_acc_mean");
  for (const auto& g : t["groups"]) {
    if (t["groups"].size() > 1) md << "## " << g["label"].get<std::string>() << "\n\n";
    if (!grok) {
      md << "| arm | seeds | test acc % (paper) | " << (has_val ? "val acc % | " : "")
         << "Δ vs baseline pp (paper) | 95% CI | t (paper) | p | wins (paper) | iso final | iso max | s/epoch |\n"
         << "|---|---|---|" << (has_val ? "---|" : "") << "---|---|---|---|---|---|---|---|\n";
    } else {
      md << "| arm | seeds | grokked (paper) | median grok epoch (paper) | sustained k=3 (paper) | median memorized "
            "(paper) | tail mean (paper) | end mean (paper) | Δ tail vs baseline (paper) | 95% CI | t (paper) | p | "
            "iso final (paper) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    }
    for (const auto& a : g["arms"]) {
      const json paper = a.value("paper", json::object());
      const json c = a.value("vs_baseline", json::object());
      std::string seeds = std::to_string(a["n"].get<int>()) + "/" + std::to_string(a["planned"].get<int>());
      std::string acc = a.contains("acc_mean")
                            ? fixed(a["acc_mean"].get<double>(), 2) +
                                  (a.contains("acc_sd") ? " ± " + fixed(a["acc_sd"].get<double>(), 2) : "")
                            : "–";
      std::string diff = c.contains("diff_mean") ? (c["diff_mean"].get<double>() >= 0 ? "+" : "") +
                                                       fixed(c["diff_mean"].get<double>(), grok ? 3 : 2)
                                                 : (a["id"] == t["baseline"] ? "baseline" : "–");
      std::string ci = c.contains("ci_low") ? "[" + fixed(c["ci_low"].get<double>(), grok ? 3 : 2) + ", " +
                                                  fixed(c["ci_high"].get<double>(), grok ? 3 : 2) + "]"
                                            : "–";
      std::string wins = c.contains("wins") ? std::to_string(c["wins"].get<int>()) + "/" +
                                                  std::to_string(c["pairs"].get<int>())
                                            : "–";
      const std::string label = a.value("label", a["id"].get<std::string>());
      if (!grok) {
        std::string val = "–";
        if (a.contains("val_acc_mean")) {
          val = fixed(a["val_acc_mean"].get<double>(), 2);
          if (a.contains("val_acc_sd")) val += " ± " + fixed(a["val_acc_sd"].get<double>(), 2);
        }
        md << "| " << label << " | " << seeds << " | " << cell(acc, paper, "acc") << " | "
           << (has_val ? val + " | " : "") << cell(diff, paper, "diff")
           << " | " << ci << " | " << cell(num(c, "t", 2), paper, "t") << " | " << scin(c, "p") << " | "
           << cell(wins, paper, "wins") << " | " << scin(a, "iso_final_mean") << " | " << scin(a, "iso_max_run")
           << " | " << num(a, "seconds_per_epoch", 2) << " |\n";
      } else {
        std::string grokked = a.contains("grokked_count") ? std::to_string(a["grokked_count"].get<int>()) + "/" +
                                                                std::to_string(a["n"].get<int>())
                                                          : "–";
        md << "| " << label << " | " << seeds << " | " << cell(grokked, paper, "grokked") << " | "
           << cell(num(a, "median_grok_epoch", 0), paper, "median_grok", 0) << " | "
           << cell(num(a, "median_sustained_epoch", 0), paper, "sustained", 0) << " | "
           << cell(num(a, "median_memorized_epoch", 0), paper, "memorized", 0) << " | "
           << cell(num(a, "tail_mean", 3), paper, "tail") << " | "
           << cell(num(a, "end_mean", 3), paper, "end", 3) << " | " << cell(diff, paper, "diff", 2) << " | " << ci
           << " | " << cell(num(c, "t", 2), paper, "t") << " | " << scin(c, "p") << " | "
           << cell(scin(a, "iso_final_mean"), paper, "iso", 6) << " |\n";
      }
    }
    md << "\n";
    if (!g["contrasts"].empty()) {
      md << "| contrast (paired within seed) | pairs | Δ pp (paper) | 95% CI | t (paper) | p | wins (paper) |\n"
            "|---|---|---|---|---|---|---|\n";
      for (const auto& k : g["contrasts"]) {
        const json paper = k.value("paper", json::object());
        const json& c = k["vs_baseline"];
        std::string diff = c.contains("diff_mean") ? (c["diff_mean"].get<double>() >= 0 ? "+" : "") +
                                                         fixed(c["diff_mean"].get<double>(), 2)
                                                   : "–";
        std::string ci = c.contains("ci_low") ? "[" + fixed(c["ci_low"].get<double>(), 2) + ", " +
                                                    fixed(c["ci_high"].get<double>(), 2) + "]"
                                              : "–";
        std::string wins = c.contains("wins") ? std::to_string(c["wins"].get<int>()) + "/" +
                                                    std::to_string(c["pairs"].get<int>())
                                              : "–";
        md << "| " << k["label"].get<std::string>() << " | " << c["pairs"].get<int>() << " | "
           << cell(diff, paper, "diff") << " | " << ci << " | " << cell(num(c, "t", 2), paper, "t") << " | "
           << scin(c, "p") << " | " << cell(wins, paper, "wins") << " |\n";
      }
      md << "\n";
    }
    if (g.contains("selection")) {
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
  }
  bool extra = false;
  for (const auto& g : t["groups"])
    for (const auto& a : g["arms"]) extra = extra || a.contains("late_step_per_gradient");
  if (extra) {
    md << "Frame diagnostics (means over seeds; late = last quarter of the epochs):\n\n"
          "| group | arm | late step/gradient (paper) | late tangent gradient norm | gauge fraction (paper) | cap "
          "active |\n|---|---|---|---|---|---|\n";
    for (const auto& g : t["groups"])
      for (const auto& a : g["arms"]) {
        if (!a.contains("late_step_per_gradient")) continue;
        const json paper = a.value("paper", json::object());
        md << "| " << g["label"].get<std::string>() << " | " << a.value("label", a["id"].get<std::string>()) << " | "
           << cell(scin(a, "late_step_per_gradient"), paper, "step_per_gradient", 3) << " | "
           << scin(a, "late_tangent_grad_norm") << " | " << cell(num(a, "gauge_fraction", 3), paper, "gauge_fraction")
           << " | " << num(a, "cap_active_fraction", 3) << " |\n";
      }
    md << "\n";
  }
  for (const auto& ni : t["not_implemented"])
    md << "- Not implemented: **" << ni.value("label", ni.value("id", "")) << "** — " << ni.value("why", "") << "\n";
  for (const auto& n : t["notes"]) md << "- " << n.get<std::string>() << "\n";
  return md.str();
}

}  // namespace stiefel::reports
