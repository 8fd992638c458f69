// A grid's analysis: the experiment and its definition, each arm's runs and statistics over seeds,
// the paired comparisons with their bootstrap, the selection (its budget: table_budget.cpp).
#include "table_detail.h"

namespace stiefel::reports {
namespace table_detail {

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
    return json{{"arm", a["id"]},
                {"label", a.value("label", a["id"].get<std::string>())},
                {"val_acc", a["val_acc_mean"]},
                {"seeds", a["val_seeds"]},
                {"planned", a["planned"]}};
  };
  const auto best = entry(*ranked[0]);
  for (const auto& [k, v] : best.items()) s[k] = v;
  s["runner_up"] = ranked.size() > 1 ? entry(*ranked[1]) : json(nullptr);
  return s;
}

// The names a stored definition gives become file names (the report's NAME-PROFILE.md) and paths
// (runs/GROUP/ARM/seed-S): they must be the plain names experiment.schema.json allows, never a path.
void check_stored_names(const json& meta, const std::string& source) {
  // experiment.schema.json's patterns: a name, an arm's or group's id, a profile's name.
  static const std::regex plain("[a-z0-9_-]+"), id("[a-z0-9-][a-z0-9.-]*"), profile("[a-z0-9][a-z0-9.-]*");
  const auto check = [&](const json& v, const std::regex& re, const std::string& where) {
    if (!v.is_string() || !std::regex_match(v.get<std::string>(), re))
      throw ExperimentError(source + ": " + where + " " + v.dump(-1, ' ', true) +
                            " is not a plain name (a file or folder name of the results)");
  };
  const json& d = meta["definition"];
  if (!d.is_object()) throw ExperimentError(source + ": /definition is not an object");
  check(d.value("name", json()), plain, "/definition/name");
  check(meta["profile"], profile, "/profile");
  for (const char* list : {"arms", "groups"})
    for (const auto& e : d.value(list, json::array()))
      check(e.is_object() ? e.value("id", json()) : json(), id, std::string("/definition/") + list + "/…/id");
  if (d.contains("profiles") && d["profiles"].is_object())
    for (const auto& [p, spec] : d["profiles"].items())
      for (const auto& g : spec.is_object() ? spec.value("groups", json::array()) : json::array())
        check(g.is_object() ? g.value("id", json()) : json(), id, "/definition/profiles/" + p + "/groups/…/id");
}

AnalysedExperiment load_experiment(const std::string& dir, const std::string& definitions_dir) {
  const auto meta = read_json_file((fs::path(dir) / "experiment.json").string());
  if (!meta.is_object() || !meta.contains("definition") || !meta.contains("profile") || !meta.contains("grid"))
    throw ExperimentError(dir + "/experiment.json: not written by `stiefel experiment` (no definition/profile/grid)");
  // The stored definition is checked against the schema and for its structure (not the house rules,
  // which may postdate it), and named by the file that holds it: never by its own "source" field,
  // which whoever wrote the folder chose.
  const std::string stored = dir + "/experiment.json";
  check_stored_names(meta, stored);
  check_definition(meta["definition"], stored + " (its stored definition)", false);
  AnalysedExperiment a{resolve(meta["definition"], meta["profile"], stored), "stored with the results"};
  if (definitions_dir.empty()) return a;
  const auto current = fs::path(definitions_dir) / (a.ex.name + ".json");
  if (!fs::exists(current)) return a;
  auto cur = resolve(load_definition(current.string()), meta["profile"], current.string());
  // Every stored run, with the same settings, in the current grid (in any order: the order runs
  // are scheduled in is not part of what they measured); the current grid may have grown, as a
  // pinned grid may (runs it adds and that have not run yet are reported as missing).
  std::map<std::string, json> grid;
  for (const auto& r : cur.runs) grid[r.id] = r.train;
  bool extends = meta["grid"].is_array() && !meta["grid"].empty();
  for (const auto& r : meta["grid"]) {
    if (!r.is_object() || !r.contains("id")) {
      extends = false;
      break;
    }
    const auto it = grid.find(r.value("id", ""));
    extends = extends && it != grid.end() && it->second == r.value("train", json());
  }
  if (extends) {
    a.ex = std::move(cur);
    a.definition_used = "experiments/" + a.ex.name + ".json";
  }
  return a;
}

// The table's fields that come from the definition and the options, before any run is read.
json table_header(const AnalysedExperiment& a, int resamples, std::uint64_t bootstrap_seed) {
  const auto& ex = a.ex;
  const auto& d = ex.definition;
  const std::string analysis = d["analysis"];
  const bool unreduced = ex.profile == "paper" || ex.profile_spec.contains("reading");
  return {{"experiment", ex.name},
          {"title", d["title"]},
          {"section", d.value("section", "")},
          {"analysis", analysis},
          {"profile", ex.profile},
          {"reductions", ex.profile_spec.value("reductions", unreduced ? "none" : "smoke test sizes")},
          {"metric", analysis == "grok" ? "held-out accuracy, tail mean (fraction)" : "final test accuracy (%)"},
          {"std_ddof", d.value("std_ddof", 1)},
          {"baseline", d.value("baseline", "")},
          {"statistics",
           {{"test", "paired t-test on per-seed differences (Boost.Math one_sample_t_test)"},
            {"bootstrap",
             {{"resamples", resamples}, {"seed", bootstrap_seed}, {"level", 0.95}, {"method", BootstrapCi{}.method}}},
            {"sign_test", "exact two-sided binomial on non-tied seeds"}}},
          {"not_implemented", d.value("not_implemented", json::array())},
          {"notes", d.value("notes", json::array())},
          {"plots", d.value("plots", json::array())},
          {"definition", a.definition_used}};
}

// Where an unfinished run stands (status "running": still training, or stopped and resumable from
// its checkpoint with the same command; or "failed", with its failure): the last epoch recorded of
// those planned; the checkpoint beside the record ("checkpoint": "resumable" at "checkpoint_epoch"
// when the record names its SHA-256, as a resume requires, else "none" or "not named by the
// record"); the last evaluated test accuracy and the last training accuracy; for a grokking run its
// first memorised and first grokked epochs so far. Never in the statistics.
json unfinished_entry(const json& rec, std::uint64_t seed, const std::string& analysis, const fs::path& checkpoint) {
  const auto& ep = rec.at("epochs");
  json u = {{"seed", seed},
            {"status", rec.at("status")},
            {"epochs_planned", rec.at("config").at("epochs")},
            {"epoch", ep.empty() ? json(nullptr) : ep.back().at("epoch")},
            {"checkpoint", "none"},
            {"checkpoint_epoch", nullptr}};
  if (rec.contains("failure")) u["failure"] = rec["failure"];
  // The record names the last two checkpoints written (the one kept and the one about to replace
  // it): the file's own hash says which one it is.
  if (fs::is_regular_file(fs::symlink_status(checkpoint))) {
    const auto hash = io::sha256_file(checkpoint);
    u["checkpoint"] = "not named by the record";
    const json named = rec.value("checkpoints", json::object());
    for (const auto& [epoch, h] : named.items())
      if (h == hash) {
        u["checkpoint"] = "resumable";
        u["checkpoint_epoch"] = std::stoll(epoch);
      }
  }
  if (ep.empty()) return u;
  u["train_acc"] = ep.back().at("train_acc");
  for (auto e = ep.rbegin(); e != ep.rend(); ++e)
    if (e->contains("test_acc")) {
      u["test_acc"] = (*e)["test_acc"];
      u["test_epoch"] = (*e)["epoch"];
      break;
    }
  if (analysis == "grok") {
    const auto g = grok_metrics(rec);
    u["memorized"] = g.memorized ? json(*g.memorized) : json(nullptr);
    u["grokked"] = g.grokked ? json(*g.grokked) : json(nullptr);
  }
  return u;
}

ArmRuns read_arm_runs(const std::string& dir, const ResolvedExperiment& ex, const std::string& gid,
                      const std::string& aid, GridTally& tally) {
  const std::string analysis = ex.definition["analysis"];
  ArmRuns a;
  for (const auto& run : ex.runs) {
    if (run.group != gid || run.arm != aid) continue;
    ++a.planned;
    const auto path = fs::path(dir) / "runs" / run.id / "run.json";
    std::error_code unreadable;
    if (!fs::exists(path, unreadable) && !unreadable) continue;
    if (unreadable) throw ExperimentError(path.string() + ": cannot be read (" + unreadable.message() + ")");
    const auto rec = read_json_file(path.string());
    check_run_record(rec, path.string());
    if (const auto why = cell_mismatch(rec, run); !why.empty()) {
      tally.mismatched.push_back({{"run", run.id}, {"why", why}});
      continue;
    }
    if (rec.value("status", "") == "diverged") {  // a result: counted, never averaged
      ++tally.diverged;
      const auto& dv = rec.value("divergence", json::object());
      a.diverged.push_back({{"seed", run.seed},
                            {"epoch", dv.value("epoch", json())},
                            {"step", dv.value("step", json())},
                            {"tensor", dv.value("tensor", "")}});
      continue;
    }
    const auto s = summarise(rec, analysis);
    if (!s.completed) {
      a.unfinished.push_back(unfinished_entry(rec, run.seed, analysis, path.parent_path() / "checkpoint.pt"));
      ++tally.unfinished;
      continue;
    }
    ++tally.completed;
    tally.run_seconds += recorded_seconds(rec);
    tally.datasets.insert(dataset_name(rec));
    tally.devices.insert(rec["config"].value("device", "cpu"));
    // Provenance: the program (records since it was recorded) and the BLAS core (since 7cf62df).
    if (rec.contains("environment") && rec["environment"].is_object() && rec["environment"].contains("program"))
      ++tally.with_program;
    const json compute = rec.value("compute", json::object());
    const json blas = compute.is_object() ? compute.value("blas", json()) : json();
    if (blas.is_object() && blas.contains("kernels") && blas["kernels"].is_string())
      tally.kernels.insert(blas["kernels"].get<std::string>());
    else
      ++tally.without_kernels;
    a.metric[run.seed] = s.metric;
    auto r = s.record;
    r["seed"] = run.seed;
    a.runs.push_back(rec);
    a.records.push_back(r);
  }
  return a;
}

// Grokking over seeds: how many grokked (and sustained it), the median epochs, the tail and end means.
void add_grok_statistics(json& arm, const std::vector<json>& records) {
  std::vector<double> grok_epochs, mem_epochs, tails, ends, sustained_epochs, lows;
  for (const auto& r : records) {
    // The slingshot (§4.3, Limitations): the lowest training accuracy after the run first memorised.
    if (r["min_train_after_memorized"].is_number() && std::isfinite(r["min_train_after_memorized"].get<double>()))
      lows.push_back(r["min_train_after_memorized"].get<double>());
    if (!r["grokked"].is_null()) grok_epochs.push_back(r["grokked"].get<double>());
    if (!r["memorized"].is_null()) mem_epochs.push_back(r["memorized"].get<double>());
    if (!r["sustained"].is_null()) sustained_epochs.push_back(r["sustained"].get<double>());
    if (r["tail_mean"].is_number()) tails.push_back(r["tail_mean"].get<double>());
    ends.push_back(r["end_acc"].get<double>());
  }
  arm["grokked_count"] = grok_epochs.size();
  arm["grok_rate"] = double(grok_epochs.size()) / double(records.size());
  arm["sustained_count"] = sustained_epochs.size();
  arm["memorized_count"] = mem_epochs.size();
  if (!sustained_epochs.empty()) arm["median_sustained_epoch"] = median(sustained_epochs);
  if (!grok_epochs.empty()) arm["median_grok_epoch"] = median(grok_epochs);
  if (!mem_epochs.empty()) arm["median_memorized_epoch"] = median(mem_epochs);
  // The shallowest of the runs' collapses after memorising: below a bound only where every run that
  // memorised fell below it.
  if (!lows.empty()) arm["shallowest_collapse"] = *std::max_element(lows.begin(), lows.end());
  if (!tails.empty()) arm["tail_mean"] = mean(tails);
  arm["end_mean"] = mean(ends);
}

// Run-to-run spread of a grokking arm. Runs are deterministic (the same command gives the same
// record), so two runs of one configuration differ only by their seed: for every pair of completed
// seeds, the held-out accuracy gap |acc_s(e) − acc_s'(e)| over the epochs both evaluated, its mean
// and its maximum (with the epoch). Needs two completed seeds.
void add_seed_spread(json& arm, const ArmRuns& a) {
  if (a.runs.size() < 2) return;
  std::vector<std::map<std::int64_t, double>> curves;
  for (const auto& run : a.runs) {
    std::map<std::int64_t, double> c;
    for (const auto& e : run["epochs"])
      if (e.contains("test_acc") && e["test_acc"].is_number()) c[e["epoch"].get<std::int64_t>()] = e["test_acc"];
    curves.push_back(std::move(c));
  }
  std::vector<double> mean_gaps, max_gaps;
  json widest;
  for (std::size_t i = 0; i < curves.size(); ++i)
    for (std::size_t j = i + 1; j < curves.size(); ++j) {
      double sum = 0, top = -1;
      std::int64_t at = 0, n = 0;
      for (const auto& [epoch, acc] : curves[i]) {
        const auto other = curves[j].find(epoch);
        if (other == curves[j].end()) continue;
        const double gap = std::abs(acc - other->second);
        sum += gap;
        ++n;
        if (gap > top) top = gap, at = epoch;
      }
      if (n == 0) continue;
      mean_gaps.push_back(sum / double(n));
      max_gaps.push_back(top);
      if (widest.is_null() || top > widest["gap"].get<double>())
        widest = {{"gap", top}, {"epoch", at}, {"seeds", {a.records[i]["seed"], a.records[j]["seed"]}}};
    }
  if (max_gaps.empty()) return;
  arm["seed_spread"] = {{"pairs", max_gaps.size()},
                        {"mean_gap", mean(mean_gaps)},
                        {"median_max_gap", median(max_gaps)},
                        {"widest", widest}};
}

// Each seed's held-out accuracy at its evaluated epochs and its sustained-grok epoch (null where it
// never sustained): the transitions the mean curve averages away, drawn one line per seed.
json seed_curves(const ArmRuns& a) {
  json out = json::array();
  for (std::size_t i = 0; i < a.runs.size(); ++i) {
    json c = {{"seed", a.records[i]["seed"]},
              {"sustained", a.records[i].value("sustained", json())},
              {"epoch", json::array()},
              {"test_acc", json::array()}};
    for (const auto& e : a.runs[i]["epochs"])
      if (e.contains("test_acc") && e["test_acc"].is_number()) {
        c["epoch"].push_back(e["epoch"]);
        c["test_acc"].push_back(e["test_acc"]);
      }
    out.push_back(std::move(c));
  }
  return out;
}

// Means over the completed seeds (and the sd of the accuracies), the worst isometry error and the
// mean curve. Needs at least one completed seed.
void add_arm_statistics(json& arm, const ArmRuns& a, int ddof, const std::string& analysis) {
  const auto& records = a.records;
  auto put_mean = [&](const char* k, const char* out) {
    const auto v = values_of(records, k);
    if (!v.empty()) arm[out] = mean(v);
  };
  const auto acc = values_of(records, "test_acc");
  arm["acc_mean"] = mean(acc);
  if (int(acc.size()) > ddof) arm["acc_sd"] = standard_deviation(acc, ddof);
  put_mean("train_acc", "train_acc_mean");
  const auto val = values_of(records, "val_acc");
  if (!val.empty()) {
    arm["val_acc_mean"] = mean(val);
    arm["val_seeds"] = val.size();
    if (int(val.size()) > ddof) arm["val_acc_sd"] = standard_deviation(val, ddof);
  }
  put_mean("iso_final", "iso_final_mean");
  const auto iso = values_of(records, "iso_max_run");
  arm["iso_max_run"] = *std::max_element(iso.begin(), iso.end());
  for (const char* k : {"seconds_per_epoch", "late_step_per_gradient", "late_tangent_grad_norm", "gauge_fraction",
                        "step_norm_mean", "cap_active_fraction"})
    put_mean(k, k);
  arm["curve"] = mean_curve(a.runs);
  if (analysis == "grok") {
    add_grok_statistics(arm, records);
    add_seed_spread(arm, a);
    if (a.runs.size() > 1) arm["seed_curves"] = seed_curves(a);
  }
}

// An arm of a group as the table lists it: its label and x from the definition, its seeds, its
// statistics and the paper's values.
json arm_entry(const ResolvedExperiment& ex, const std::string& gid, const std::string& aid, const ArmRuns& a) {
  const auto& d = ex.definition;
  json arm = {{"id", aid}};
  // The arm of the registry (stiefel::arms) the cell trains: its colour and label in every figure.
  for (const auto& r : ex.runs)
    if (r.group == gid && r.arm == aid) {
      arm["train_arm"] = cell_setting(r, "arm");
      break;
    }
  for (const auto& def : d["arms"])
    if (def["id"] == aid) {
      arm["label"] = def.value("label", aid);
      if (def.contains("x")) arm["x"] = def["x"];
    }
  arm["planned"] = a.planned;
  arm["n"] = a.records.size();
  arm["diverged"] = a.diverged;
  arm["finished"] = a.records.size() + a.diverged.size();
  arm["unfinished"] = a.unfinished;
  arm["runs"] = a.records;
  if (!a.records.empty()) add_arm_statistics(arm, a, d.value("std_ddof", 1), d["analysis"]);
  if (d.contains("paper") && d["paper"].contains(gid) && d["paper"][gid].contains(aid))
    arm["paper"] = d["paper"][gid][aid];
  return arm;
}

// The paired statistics of an arm against another on the seeds both completed (X: the arm's metric
// per seed, Y: the other's).
json paired_comparison(const std::map<std::uint64_t, double>& x_by_seed,
                       const std::map<std::uint64_t, double>& y_by_seed, int resamples, std::uint64_t bootstrap_seed) {
  std::vector<double> x, y;
  json per_seed = json::array();
  for (const auto& [seed, v] : x_by_seed) {
    const auto other = y_by_seed.find(seed);
    if (other != y_by_seed.end() && std::isfinite(v) && std::isfinite(other->second)) {
      x.push_back(v);
      y.push_back(other->second);
      per_seed.push_back({{"seed", seed}, {"diff", v - other->second}});
    }
  }
  json c = {{"pairs", x.size()}, {"differences", per_seed}};
  if (x.size() == 1) c["diff_mean"] = x[0] - y[0];
  if (x.size() < 2) return c;
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
  return c;
}

// A group's id, label and x, from the profile's groups or else the definition's.
json group_entry(const ResolvedExperiment& ex, const std::string& gid) {
  const auto& d = ex.definition;
  const json group_defs =
      ex.profile_spec.contains("groups") ? ex.profile_spec["groups"] : d.value("groups", json::array());
  json group = {{"id", gid}, {"arms", json::array()}};
  const json* gdef = nullptr;
  for (const auto& g : group_defs)
    if (g["id"] == gid) gdef = &g;
  group["label"] = gdef ? gdef->value("label", gid) : gid;
  if (gdef && gdef->contains("x")) group["x"] = (*gdef)["x"];
  return group;
}

json analyse_group(const std::string& dir, const ResolvedExperiment& ex, const std::string& gid, int resamples,
                   std::uint64_t bootstrap_seed, GridTally& tally) {
  const auto& d = ex.definition;
  json group = group_entry(ex, gid);
  std::map<std::string, std::map<std::uint64_t, double>> metric;
  for (const auto& aid : ex.arms) {
    auto runs = read_arm_runs(dir, ex, gid, aid, tally);
    group["arms"].push_back(arm_entry(ex, gid, aid, runs));
    metric[aid] = std::move(runs.metric);
  }
  // Paired comparisons on the seeds both arms completed: every arm against the baseline, and the
  // definition's named contrasts.
  auto compare = [&](const std::string& aid, const std::string& bid) {
    return paired_comparison(metric[aid], metric[bid], resamples, bootstrap_seed);
  };
  const std::string baseline = d.value("baseline", "");
  if (!baseline.empty())
    for (auto& arm : group["arms"])
      if (arm["id"] != baseline) arm["vs_baseline"] = compare(arm["id"], baseline);
  group["contrasts"] = json::array();
  auto in_grid = [&](const json& id) {
    return std::find(ex.arms.begin(), ex.arms.end(), id.get<std::string>()) != ex.arms.end();
  };
  for (const auto& k : d.value("contrasts", json::array())) {
    if (!in_grid(k["arm"]) || !in_grid(k["baseline"])) continue;
    json c = {{"id", k["id"]},
              {"label", k.value("label", k["id"].get<std::string>())},
              {"arm", k["arm"]},
              {"baseline", k["baseline"]},
              {"vs_baseline", compare(k["arm"], k["baseline"])}};
    c["n"] = c["vs_baseline"]["pairs"];
    if (k.contains("paper")) c["paper"] = k["paper"];
    group["contrasts"].push_back(c);
  }
  if (d.contains("select")) group["selection"] = select_on_validation(group, d["select"]);
  return group;
}

}  // namespace table_detail

using namespace table_detail;

std::string table_heading(const json& t) {
  std::string h = t["title"];
  if (t.contains("budget") && !t.value("at_paper_budget", false))
    h += " — run at " + budget_phrase(t["budget"], false, t.value("paper_budget", json())) + " (reduced budget)";
  return h;
}

json analyse_results(const std::string& dir, int resamples, std::uint64_t bootstrap_seed,
                     const std::string& definitions_dir) {
  const auto analysed = load_experiment(dir, definitions_dir);
  const auto& ex = analysed.ex;
  json table = table_header(analysed, resamples, bootstrap_seed);
  GridTally tally;
  json groups = json::array();
  for (const auto& gid : ex.groups) groups.push_back(analyse_group(dir, ex, gid, resamples, bootstrap_seed, tally));
  table["groups"] = groups;
  // Model selection is within a group (a group is a setting such as n that selection must not cross).
  if (ex.definition.contains("select") && groups.size() == 1) table["selection"] = groups[0]["selection"];
  add_budget(table, ex);
  table["runs_planned"] = ex.runs.size();
  table["runs_completed"] = tally.completed;
  table["runs_diverged"] = tally.diverged;
  table["runs_unfinished"] = tally.unfinished;
  table["run_hours"] = tally.run_seconds / 3600;
  table["runs_mismatched"] = tally.mismatched;
  table["datasets"] = tally.datasets;
  table["devices"] = tally.devices;
  table["provenance"] = {{"records", tally.completed},
                         {"naming_their_program", tally.with_program},
                         {"blas_kernels", tally.kernels},
                         {"without_blas_kernels", tally.without_kernels}};
  return table;
}

}  // namespace stiefel::reports
