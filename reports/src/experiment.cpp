#include <stiefel/reports/experiment.h>

#include <unistd.h>

#include <stiefel/arms.h>
#include <stiefel/io/bounded_read.h>
#include <stiefel/schema.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace stiefel::reports {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The options `stiefel train` accepts: experiment.schema.json's "train" object, the one list of them.
const std::set<std::string>& train_keys() {
  static const std::set<std::string> keys = [] {
    std::set<std::string> k;
    for (const auto& [name, _] : schema::experiment_definition().schema()["$defs"]["train"]["properties"].items())
      k.insert(name);
    return k;
  }();
  return keys;
}

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw ExperimentError(source + ": " + what);
}

// The arm an object of `stiefel train` options names is one of the registry's (the schema has
// checked the keys and their types).
void check_train_arm(const json& t, const std::string& source, const std::string& where) {
  if (!t.contains("arm")) return;
  try {
    arms::find(t["arm"].get<std::string>());
  } catch (const std::invalid_argument& e) {
    fail(source, where + ".arm: " + std::string(e.what()).substr(std::string("--arm ").size()));
  }
}

void merge(json& into, const json& from) {
  for (const auto& [k, v] : from.items()) into[k] = v;
}

// The entries of D[KEY] (the schema has checked their fields): ids unique, arms the registry's.
std::vector<json> id_list(const json& d, const char* key, const std::string& source) {
  std::vector<json> out;
  if (!d.contains(key)) return out;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < d[key].size(); ++i) {
    const auto& e = d[key][i];
    const std::string where = std::string(key) + "[" + std::to_string(i) + "]";
    if (!seen.insert(e["id"].get<std::string>()).second)
      fail(source, where + ".id \"" + e["id"].get<std::string>() + "\" is repeated");
    if (e.contains("train")) check_train_arm(e["train"], source, where + ".train");
    out.push_back(e);
  }
  return out;
}

}  // namespace

bool is_train_option(const std::string& key) { return train_keys().count(key) > 0; }

json read_json_file(const std::string& path) {
  std::string text;
  try {
    text = io::read_regular_file(path, kMaxJsonBytes, "a JSON file");
  } catch (const io::IoError& e) {
    throw ExperimentError(e.what());
  }
  try {
    return schema::parse_bounded(text, path);
  } catch (const std::invalid_argument& e) {
    throw ExperimentError(e.what());
  }
}

namespace {

bool names_an_arm(const std::vector<json>& arms, const json& id) {
  bool found = false;
  for (const auto& a : arms) found = found || a["id"] == id;
  return found;
}

// A profile other than paper and smoke either reduces the paper's budget ("reductions") or runs
// the paper's budget under another reading of an ambiguous protocol ("reading", naming in
// "reading_settings" the settings that reading changes).
// (The schema has checked the fields' types.)
void check_reductions_or_reading(const std::string& p, const json& spec, const std::string& path) {
  const std::string where = "profiles." + p;
  if (spec.contains("reading")) {
    if (!spec.contains("reading_settings"))
      fail(path, where + ": a reading names the settings it changes in \"reading_settings\"");
    for (const auto& k : spec["reading_settings"])
      if (!train_keys().count(k.get<std::string>()))
        fail(path, where + ".reading_settings: " + k.dump() + " is not a `stiefel train` option");
    if (spec.contains("reductions")) fail(path, where + ": a reading profile reduces nothing");
  } else if (p != "paper" && p != "smoke" && !spec.contains("reductions")) {
    fail(path, where + ": say what is reduced in \"reductions\" (or name a \"reading\")");
  }
}

void check_profile(const std::string& p, const json& spec, const std::vector<json>& arms, const std::string& path,
                   bool house_rules) {
  const std::string where = "profiles." + p;
  if (spec.contains("train")) check_train_arm(spec["train"], path, where + ".train");
  if (spec.contains("group_train"))
    for (const auto& [g, t] : spec["group_train"].items()) check_train_arm(t, path, where + ".group_train." + g);
  if (house_rules) check_reductions_or_reading(p, spec, path);
  id_list(spec, "groups", path + " " + where);
  if (spec.contains("arms"))
    for (const auto& a : spec["arms"])
      if (!names_an_arm(arms, a)) fail(path, where + ".arms: " + a.dump() + " names no arm");
}

void check_profiles(const json& d, const std::vector<json>& arms, const std::string& path, bool house_rules) {
  for (const auto& [p, spec] : d["profiles"].items()) check_profile(p, spec, arms, path, house_rules);
  if (!house_rules) return;
  // A reduced profile never drops below six paired seeds (single-seed pilots stay single-seed).
  const int paper_seeds = d["profiles"]["paper"].value("seeds", d["seeds"].get<int>());
  const int cpu_seeds = d["profiles"]["cpu"].value("seeds", d["seeds"].get<int>());
  if (paper_seeds > 1 && cpu_seeds < 6)
    fail(path, "profiles.cpu.seeds " + std::to_string(cpu_seeds) + ": a cpu profile keeps at least 6 paired seeds");
}

}  // namespace

// The definition, checked against experiment.schema.json (every key known, every value of its
// type), then for what a schema cannot say: arms the registry has, ids that refer to arms, unique ids;
// and the house rules a definition is written to (a reduced profile says what it reduces, a cpu
// profile keeps six paired seeds).
void check_definition(const json& d, const std::string& path, bool house_rules) {
  try {
    schema::experiment_definition().check(d, path);
  } catch (const std::invalid_argument& e) {
    throw ExperimentError(e.what());
  }
  if (d.contains("train")) check_train_arm(d["train"], path, "train");
  const auto arms = id_list(d, "arms", path);
  id_list(d, "groups", path);
  if (d.contains("baseline") && !names_an_arm(arms, d["baseline"])) fail(path, "\"baseline\" names no arm");
  check_profiles(d, arms, path, house_rules);
}

json load_definition(const std::string& path) {
  json d = read_json_file(path);
  check_definition(d, path, true);
  return d;
}

// A seed count of a definition (the schema bounds it too; a definition stored with results has not
// necessarily met the schema): an integer in [1, kMaxSeeds], never wrapped or truncated.
int seed_count(const json& v, const std::string& source, const std::string& where) {
  const bool in_range = v.is_number_unsigned()  ? v.get<std::uint64_t>() >= 1 && v.get<std::uint64_t>() <= kMaxSeeds
                        : v.is_number_integer() ? v.get<std::int64_t>() >= 1 && v.get<std::int64_t>() <= kMaxSeeds
                                                : false;
  if (!in_range)
    fail(source,
         where + " " + v.dump() + ": expected an integer number of seeds in [1, " + std::to_string(kMaxSeeds) + "]");
  return v.get<int>();
}

ResolvedExperiment resolve(const json& d, const std::string& profile, const std::string& source) {
  if (!d["profiles"].contains(profile)) {
    std::string known;
    for (const auto& [p, _] : d["profiles"].items()) known += (known.empty() ? "" : ", ") + p;
    throw ExperimentError("--profile " + profile + ": " + d["name"].get<std::string>() + " has profiles " + known);
  }
  ResolvedExperiment r;
  r.name = d["name"];
  r.profile = profile;
  r.source = source;
  r.definition = d;
  r.profile_spec = d["profiles"][profile];
  const auto& ps = r.profile_spec;

  json groups = ps.contains("groups") ? ps["groups"] : d.value("groups", json::array({{{"id", "main"}}}));
  std::vector<json> arms;
  for (const auto& a : d["arms"]) {
    bool keep = !ps.contains("arms");
    if (!keep)
      for (const auto& id : ps["arms"]) keep = keep || id == a["id"];
    if (keep) arms.push_back(a);
  }
  const int seeds = ps.contains("seeds") ? seed_count(ps["seeds"], source, "profiles." + profile + ".seeds")
                                         : seed_count(d["seeds"], source, "seeds");
  for (int s = 0; s < seeds; ++s) r.seeds.push_back(std::uint64_t(s));
  for (const auto& g : groups) r.groups.push_back(g["id"]);
  for (const auto& a : arms) r.arms.push_back(a["id"]);
  // The grid's size bounded before it is laid out (a definition stored with results has not
  // necessarily met the schema's bounds on its lists).
  if (groups.size() * arms.size() * r.seeds.size() > kMaxGridRuns)
    fail(source, std::to_string(groups.size()) + " groups x " + std::to_string(arms.size()) + " arms x " +
                     std::to_string(r.seeds.size()) + " seeds: more than " + std::to_string(kMaxGridRuns) +
                     " runs in one grid");

  // Seed-major order (every arm of seed 0, then of seed 1, …), so that a grid stopped part-way
  // holds complete paired seeds; arms marked "variant" (readings the paper does not state) run
  // after every paper arm of every seed.
  for (const bool variants : {false, true})
    for (const auto& g : groups)
      for (std::size_t si = 0; si < r.seeds.size(); ++si)
        for (const auto& a : arms) {
          if (a.value("variant", false) != variants) continue;
          if (a.contains("seeds") &&
              si >= std::size_t(seed_count(a["seeds"], source, "arms." + a["id"].get<std::string>() + ".seeds")))
            continue;
          const auto seed = r.seeds[si];
          RunSpec run;
          run.group = g["id"];
          run.arm = a["id"];
          run.seed = seed;
          run.id = run.group + "/" + run.arm + "/seed-" + std::to_string(seed);
          // Later layers win: definition, group, arm, then the profile's reductions.
          json t = {{"task", d["task"]}};
          merge(t, d.value("train", json::object()));
          merge(t, g.value("train", json::object()));
          merge(t, a.value("train", json::object()));
          merge(t, ps.value("train", json::object()));
          if (ps.contains("group_train") && ps["group_train"].contains(run.group))
            merge(t, ps["group_train"][run.group]);
          if (!t.contains("arm")) fail(source, "arm " + run.arm + " sets no \"arm\" (the W_Q, W_K rule)");
          t["seed"] = seed;
          run.train = t;
          r.runs.push_back(std::move(run));
        }
  return r;
}

namespace {

// V, where it is a setting's "default" that stands for "the task's default" (−1, or 0 for
// eval_every), resolved to the value the trainer takes for TASK (experiment.schema.json's
// "task_defaults"); elementwise_lr's stands for the AdamW rate ADAM_LR.
json resolved(const std::string& key, const json& v, const std::string& task, const json& adam_lr) {
  const auto& spec = schema::experiment_definition().schema()["$defs"]["train"]["properties"][key];
  if (v != spec.value("default", json())) return v;
  if (key == "elementwise_lr") return adam_lr;
  return spec.contains("task_defaults") && spec["task_defaults"].contains(task) ? spec["task_defaults"][task] : v;
}

// The value of setting KEY that a record from before "options" were recorded ran with, read from
// what its config and dataset state; null where they do not state it.
json legacy_setting(const json& record, const std::string& key) {
  const json config = record.value("config", json::object());
  const json model = config.value("model", json::object());
  const bool image = config.value("task", "") == "image";
  static const std::set<std::string> stated = {"task",         "arm", "n",   "epochs",     "adam_lr",
                                               "weight_decay", "eps", "tau", "init_scale", "val_n"};
  if (stated.count(key)) return config.value(key, key == "val_n" ? json(0) : json());
  if (key == "batch") return image ? config.value("batch", json()) : json();
  if (key == "layers" || key == "pooling" || key == "positional") return image ? model.value(key, json()) : json();
  if (key == "soft_lambda") return config.value("arm", "") == "soft" ? config.value(key, json()) : json();
  if (key == "modulus" && !image && record.contains("dataset") && record["dataset"].is_object())
    return record["dataset"].value("p", json());
  if (key == "power_stabilisation" && !image && config.contains("adam_betas"))
    return config["adam_betas"].size() == 2 && config["adam_betas"][1] == json(0.98);
  if (key == "warmup_epochs" && image) {
    const std::string schedule = config.value("schedule", "");
    const std::string lead = "linear warm-up over ";
    if (schedule.rfind(lead, 0) == 0) return std::stoll(schedule.substr(lead.size()));
  }
  if (key == "eval_every") {  // the first evaluated epoch (the last: evaluated at the end only)
    if (config.contains("eval_every")) return config["eval_every"];
    for (const auto& e : record.value("epochs", json::array()))
      if (e.is_object() && e.contains("test_acc")) return e.value("epoch", json());
    return json();
  }
  return json();
}

}  // namespace

json cell_setting(const RunSpec& cell, const std::string& key) {
  const auto& properties = schema::experiment_definition().schema()["$defs"]["train"]["properties"];
  if (!properties.contains(key)) return json();
  const std::string task = cell.train.value("task", properties["task"]["default"].get<std::string>());
  const auto setting = [&](const std::string& k) {
    return cell.train.contains(k) ? cell.train[k] : properties[k].value("default", json());
  };
  return resolved(key, setting(key), task, resolved("adam_lr", setting("adam_lr"), task, json()));
}

std::string cell_mismatch(const json& record, const RunSpec& cell) {
  if (!record.is_object()) return "not a run record";
  std::string diffs;
  const auto note = [&](const std::string& k, const json& have, const json& want) {
    diffs += (diffs.empty() ? "" : ", ") + k + " " + (have.is_null() ? std::string("unset") : have.dump()) +
             " (the cell's: " + want.dump() + ")";
  };
  const auto& properties = schema::experiment_definition().schema()["$defs"]["train"]["properties"];
  const bool legacy = !record.contains("options") || !record["options"].is_object();
  const json options = legacy ? json::object() : record["options"];
  const json config = record.value("config", json::object());
  const json seed =
      legacy ? (config.is_object() ? config.value("seed", json()) : json()) : options.value("seed", json());
  if (seed != json(cell.seed)) note("seed", seed, json(cell.seed));
  const std::string task = cell.train.value("task", properties["task"]["default"].get<std::string>());
  const auto setting = [&](const json& given, const std::string& k) {
    return given.contains(k) ? given[k] : properties[k].value("default", json());
  };
  const json want_adam = resolved("adam_lr", setting(cell.train, "adam_lr"), task, json());
  for (const auto& [k, spec] : properties.items()) {
    if (k == "data") continue;  // where the data was read; the data set itself is named in every table
    const json want = resolved(k, setting(cell.train, k), task, want_adam);
    if (legacy) {
      // A record from before "options" were recorded is held to every setting its config states,
      // and, for one it does not state, to the default (never assumed to be what the cell asks).
      json have = legacy_setting(record, k);
      if (k == "eval_every" && !have.is_null() && want.is_number() && have == config.value("epochs", json()) &&
          want.get<double>() >= have.get<double>())
        continue;  // evaluated only at the end either way
      if (have.is_null()) {
        if (cell.train.contains(k) && want != resolved(k, spec.value("default", json()), task, want_adam))
          note(k, have, want);
        continue;
      }
      if (have != want) note(k, have, want);
      continue;
    }
    json have = resolved(k, setting(options, k), task, resolved("adam_lr", setting(options, "adam_lr"), task, json()));
    if (have != want) note(k, have, want);
  }
  return diffs;
}

std::vector<std::string> train_arguments(const RunSpec& run) {
  std::vector<std::string> args = {"train"};
  for (const auto& [k, v] : run.train.items()) {
    std::string flag = "--" + k;
    for (auto& ch : flag)
      if (ch == '_') ch = '-';
    if (v.is_boolean()) {
      if (v.get<bool>()) args.push_back(flag);
      continue;
    }
    args.push_back(flag);
    if (v.is_string()) {
      args.push_back(v.get<std::string>());
    } else {
      args.push_back(v.dump());  // the shortest text that reads back to the same double
    }
  }
  return args;
}

}  // namespace stiefel::reports
