// A grid's budget: the settings that fix how much its runs learn from, against the paper profile's,
// and the phrase the tables, figures and ledger give it.
#include "table_detail.h"

namespace stiefel::reports {
namespace table_detail {

// The settings of `stiefel train` that fix how much a run learns from (its budget): what the paper
// states its claims at, beside the seed count.
const std::vector<std::string>& budget_keys() {
  static const std::vector<std::string> keys = {"n",     "epochs",      "batch",        "test_n",
                                                "val_n", "pca_samples", "warmup_epochs"};
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
  // Settings that vary together (Table 3's n with its epochs): the combinations the runs hold,
  // sorted, when they are fewer than every value of one with every value of the other; without them
  // the sorted lists of each setting would read as the wrong pairs.
  std::vector<std::string> varying;
  std::size_t product = 1;
  for (const auto& k : budget_keys())
    if (b.contains(k) && b[k].is_array()) {
      varying.push_back(k);
      product *= b[k].size();
    }
  if (varying.size() >= 2) {
    std::set<json> combinations;
    for (const auto& r : ex.runs) {
      json c = json::array();
      for (const auto& k : varying) c.push_back(r.train.contains(k) ? r.train[k] : json("default"));
      combinations.insert(c);
    }
    if (combinations.size() < product) b["combinations"] = {{"settings", varying}, {"values", combinations}};
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

// The budget run and the paper's: a claim the paper states at its budget is decided only by a table
// run at it (see build_ledger).
void add_budget(json& table, const ResolvedExperiment& ex) {
  const auto paper = resolve(ex.definition, "paper", ex.source);
  table["budget"] = grid_budget(ex);
  table["paper_budget"] = grid_budget(paper);
  std::set<json> adam_lr;  // the AdamW rate of the non-frame parameters, which every title states
  for (const auto& r : ex.runs) adam_lr.insert(cell_setting(r, "adam_lr"));
  if (!adam_lr.empty()) table["adam_lr"] = adam_lr.size() == 1 ? *adam_lr.begin() : json(adam_lr);
  table["differs_from_paper"] = differences_from_paper(ex, paper);
  table["at_paper_budget"] = table["differs_from_paper"].empty();
  double max_epochs = 0;
  for (const auto& r : ex.runs) max_epochs = std::max(max_epochs, r.train.value("epochs", 0.0));
  table["epochs"] = std::int64_t(max_epochs);
  if (ex.profile_spec.contains("reading")) {
    table["reading"] = ex.profile_spec["reading"];
    table["reading_settings"] = ex.profile_spec["reading_settings"];
  } else if (ex.profile == "paper") {  // the paper profile, where the definition names other readings
    json others = json::array();
    const json profiles = ex.definition.value("profiles", json::object());
    for (const auto& [p, spec] : profiles.items())
      if (spec.is_object() && spec.contains("reading"))
        others.push_back({{"profile", p}, {"reading", spec["reading"]}});
    if (!others.empty()) table["other_readings"] = others;
  }
}

}  // namespace table_detail

using namespace table_detail;

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
  // Settings that vary together, as pairs: "n = 1000 (500 epochs) / 2000 (250 epochs)".
  std::set<std::string> paired;
  if (budget.contains("combinations")) {
    // A table read from a file is checked before it is phrased: settings, and a value for each.
    const auto& comb = budget["combinations"];
    const auto bad = [] {
      return ExperimentError(
          "budget: \"combinations\" must hold \"settings\" (two or more names) and \"values\" (one value "
          "per setting in each entry)");
    };
    if (!comb.is_object() || !comb.contains("settings") || !comb.contains("values") || !comb["settings"].is_array() ||
        comb["settings"].size() < 2 || !comb["values"].is_array())
      throw bad();
    for (const auto& k : comb["settings"])
      if (!k.is_string()) throw bad();
    for (const auto& c : comb["values"])
      if (!c.is_array() || c.size() != comb["settings"].size()) throw bad();
    const auto& keys = comb["settings"];
    std::string s;
    for (const auto& c : comb["values"]) {
      std::string inner;
      for (std::size_t i = 1; i < keys.size(); ++i) {
        const auto k = keys[i].get<std::string>();
        inner += (inner.empty() ? "" : ", ") +
                 (k == "epochs" ? value(c[i]) + (c[i] == json(1) ? " epoch" : " epochs") : k + " = " + value(c[i]));
      }
      s += (s.empty() ? keys[0].get<std::string>() + " = " : " / ") + value(c[0]) + " (" + inner + ")";
    }
    parts.push_back(s);
    for (const auto& k : keys) paired.insert(k.get<std::string>());
  }
  if (budget.contains("n") && !paired.count("n")) parts.push_back("n = " + value(budget["n"]));
  if (budget.contains("epochs") && !paired.count("epochs")) parts.push_back(count("epochs", "epoch", "epochs"));
  if (budget.contains("seeds")) parts.push_back(count("seeds", "seed", "seeds"));
  for (const auto& [k, v] : budget.items()) {
    if (k == "n" || k == "epochs" || k == "seeds" || k == "combinations" || paired.count(k)) continue;
    const bool differs = reference.is_object() && (!reference.contains(k) || reference[k] != v);
    if (every_setting || differs) parts.push_back(k + " = " + value(v));
  }
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

}  // namespace stiefel::reports
