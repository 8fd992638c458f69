#include <stiefel/reports/experiment.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <stiefel/arms.h>
#include <sstream>
#include <stdexcept>

namespace stiefel::reports {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The options `stiefel train` accepts, with their JSON types; anything else in a definition is a typo.
const std::set<std::string>& train_keys() {
  static const std::set<std::string> keys = {
      "task", "arm", "data", "n", "epochs", "batch", "adam_lr", "weight_decay", "riemann_lr", "eps", "tau",
      "sgd_lr", "elementwise_lr", "soft_lambda", "warmup_epochs", "power_stabilisation", "layers", "pooling",
      "positional", "pca_samples", "eval_every", "init_scale", "test_n", "val_n", "codebook_beta", "codebook_k"};
  return keys;
}

[[noreturn]] void fail(const std::string& source, const std::string& what) { throw ExperimentError(source + ": " + what); }

void check_train_object(const json& t, const std::string& source, const std::string& where) {
  if (!t.is_object()) fail(source, where + " must be an object of `stiefel train` options");
  for (const auto& [k, v] : t.items()) {
    if (!train_keys().count(k)) fail(source, where + "." + k + ": not a `stiefel train` option");
    if (!(v.is_number() || v.is_string() || v.is_boolean()))
      fail(source, where + "." + k + ": expected a number, string or boolean");
    if (k == "arm") {
      if (!v.is_string()) fail(source, where + ".arm: expected an arm's name");
      try {
        arms::find(v.get<std::string>());
      } catch (const std::invalid_argument& e) {
        fail(source, where + ".arm: " + std::string(e.what()).substr(std::string("--arm ").size()));
      }
    }
  }
}

void merge(json& into, const json& from) {
  for (const auto& [k, v] : from.items()) into[k] = v;
}

std::vector<json> id_list(const json& d, const char* key, const std::string& source, bool required) {
  std::vector<json> out;
  if (!d.contains(key)) {
    if (required) fail(source, std::string("missing \"") + key + "\"");
    return out;
  }
  if (!d[key].is_array() || d[key].empty()) fail(source, std::string("\"") + key + "\" must be a non-empty array");
  std::set<std::string> seen;
  for (std::size_t i = 0; i < d[key].size(); ++i) {
    const auto& e = d[key][i];
    const std::string where = std::string(key) + "[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("id") || !e["id"].is_string()) fail(source, where + ": needs a string \"id\"");
    const auto id = e["id"].get<std::string>();
    if (id.empty() || id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") != std::string::npos ||
        id.front() == '.')
      fail(source, where + ".id \"" + id + "\": use lower-case letters, digits, '-' and '.' (not first)");
    if (!seen.insert(id).second) fail(source, where + ".id \"" + id + "\" is repeated");
    if (e.contains("train")) check_train_object(e["train"], source, where + ".train");
    if (e.contains("variant") && !e["variant"].is_boolean()) fail(source, where + ".variant must be true or false");
    if (e.contains("seeds") && (!e["seeds"].is_number_unsigned() || e["seeds"].get<std::uint64_t>() < 1))
      fail(source, where + ".seeds must be a positive integer (this arm's seed count)");
    if (e.contains("label") && !e["label"].is_string()) fail(source, where + ".label must be a string");
    out.push_back(e);
  }
  return out;
}

}  // namespace

bool is_train_option(const std::string& key) { return train_keys().count(key) > 0; }

json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ExperimentError(path + ": cannot be read (missing or not a file)");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {  // a syntax error, or a number beyond double (out_of_range)
    throw ExperimentError(path + ": not valid JSON (" + e.what() + ")");
  }
}

namespace {

void check_definition_keys(const json& d, const std::string& path) {
  static const std::set<std::string> known = {"analysis", "arms", "baseline", "contrasts", "groups", "name",
                                              "not_implemented", "notes", "paper", "plots", "profiles", "section",
                                              "seeds", "select", "std_ddof", "task", "title", "train"};
  for (const auto& [k, _] : d.items())
    if (!known.count(k)) {
      std::string list;
      for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
      fail(path, "unknown key \"" + k + "\" (a definition has " + list + ")");
    }
}

// name, title, task, analysis and seeds: what every definition states.
void check_required_fields(const json& d, const std::string& path) {
  for (const char* key : {"name", "title", "task", "analysis"})
    if (!d.contains(key) || !d[key].is_string()) fail(path, std::string("missing string \"") + key + "\"");
  // The name becomes file names (NAME-PROFILE.md): one path component, no way out of --out.
  const auto name = d["name"].get<std::string>();
  if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_") != std::string::npos)
    fail(path, "\"name\" \"" + name + "\": use lower-case letters, digits, '-' and '_'");
  const auto task = d["task"].get<std::string>();
  if (task != "image" && task != "grok") fail(path, "\"task\" must be image or grok");
  const auto analysis = d["analysis"].get<std::string>();
  if (analysis != "paired" && analysis != "grok") fail(path, "\"analysis\" must be paired or grok");
  if (!d.contains("seeds") || !d["seeds"].is_number_unsigned() || d["seeds"].get<int>() < 1)
    fail(path, "\"seeds\" must be a positive integer");
}

bool names_an_arm(const std::vector<json>& arms, const json& id) {
  bool found = false;
  for (const auto& a : arms) found = found || a["id"] == id;
  return found;
}

// Model selection on the validation split (§3.3): the only metric the trainer records for it is val_acc.
void check_select(const json& d, const std::string& path) {
  if (!d.contains("select")) return;
  const auto& sel = d["select"];
  if (!sel.is_object() || sel.value("metric", json()) != "val_acc")
    fail(path, "\"select\" must be an object with \"metric\": \"val_acc\"");
  if (sel.contains("statement") && !sel["statement"].is_string()) fail(path, "select.statement must be a string");
}

// A profile other than paper and smoke either reduces the paper's budget ("reductions") or runs
// the paper's budget under another reading of an ambiguous protocol ("reading", naming in
// "reading_settings" the settings that reading changes).
void check_reductions_or_reading(const std::string& p, const json& spec, const std::string& path) {
  const bool reading = spec.contains("reading");
  if (reading) {
    if (!spec["reading"].is_string() || spec["reading"].get<std::string>().empty())
      fail(path, "profiles." + p + ".reading must say which reading of the paper the profile runs");
    if (!spec.contains("reading_settings") || !spec["reading_settings"].is_array() || spec["reading_settings"].empty())
      fail(path, "profiles." + p + ": a reading names the settings it changes in \"reading_settings\"");
    for (const auto& k : spec["reading_settings"])
      if (!k.is_string() || !train_keys().count(k.get<std::string>()))
        fail(path, "profiles." + p + ".reading_settings: " + k.dump() + " is not a `stiefel train` option");
    if (spec.contains("reductions")) fail(path, "profiles." + p + ": a reading profile reduces nothing");
  }
  if (p != "paper" && p != "smoke" && !reading && (!spec.contains("reductions") || !spec["reductions"].is_string()))
    fail(path, "profiles." + p + ": say what is reduced in \"reductions\" (or name a \"reading\")");
}

void check_profile(const std::string& p, const json& spec, const std::vector<json>& arms, const std::string& path) {
  if (!spec.is_object()) fail(path, "profiles." + p + " must be an object");
  if (spec.contains("train")) check_train_object(spec["train"], path, "profiles." + p + ".train");
  if (spec.contains("seeds") && (!spec["seeds"].is_number_unsigned() || spec["seeds"].get<int>() < 1))
    fail(path, "profiles." + p + ".seeds must be a positive integer");
  check_reductions_or_reading(p, spec, path);
  if (spec.contains("groups")) id_list(spec, "groups", path + " profiles." + p, true);
  if (spec.contains("arms")) {
    if (!spec["arms"].is_array()) fail(path, "profiles." + p + ".arms must be an array of arm ids");
    for (const auto& a : spec["arms"])
      if (!names_an_arm(arms, a)) fail(path, "profiles." + p + ".arms: " + a.dump() + " names no arm");
  }
}

void check_profiles(const json& d, const std::vector<json>& arms, const std::string& path) {
  if (!d.contains("profiles") || !d["profiles"].is_object()) fail(path, "missing object \"profiles\"");
  for (const char* p : {"paper", "cpu", "smoke"})
    if (!d["profiles"].contains(p)) fail(path, std::string("profiles: missing \"") + p + "\"");
  for (const auto& [p, spec] : d["profiles"].items()) check_profile(p, spec, arms, path);
  // A reduced profile never drops below six paired seeds (single-seed pilots stay single-seed).
  const int paper_seeds = d["profiles"]["paper"].value("seeds", d["seeds"].get<int>());
  const int cpu_seeds = d["profiles"]["cpu"].value("seeds", d["seeds"].get<int>());
  if (paper_seeds > 1 && cpu_seeds < 6)
    fail(path, "profiles.cpu.seeds " + std::to_string(cpu_seeds) + ": a cpu profile keeps at least 6 paired seeds");
}

}  // namespace

json load_definition(const std::string& path) {
  json d = read_json_file(path);
  if (!d.is_object()) fail(path, "a definition is a JSON object");
  check_definition_keys(d, path);
  check_required_fields(d, path);
  if (d.contains("train")) check_train_object(d["train"], path, "train");
  const auto arms = id_list(d, "arms", path, true);
  id_list(d, "groups", path, false);
  if (d.contains("baseline") && !names_an_arm(arms, d["baseline"])) fail(path, "\"baseline\" names no arm");
  check_select(d, path);
  check_profiles(d, arms, path);
  return d;
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
  const int seeds = ps.value("seeds", d["seeds"].get<int>());
  const std::uint64_t first_seed = d.value("first_seed", 0);
  for (int s = 0; s < seeds; ++s) r.seeds.push_back(first_seed + std::uint64_t(s));
  for (const auto& g : groups) r.groups.push_back(g["id"]);
  for (const auto& a : arms) r.arms.push_back(a["id"]);

  // Seed-major order (every arm of seed 0, then of seed 1, …), so that a grid stopped part-way
  // holds complete paired seeds; arms marked "variant" (readings the paper does not state) run
  // after every paper arm of every seed.
  for (const bool variants : {false, true})
    for (const auto& g : groups)
      for (std::size_t si = 0; si < r.seeds.size(); ++si)
        for (const auto& a : arms) {
          if (a.value("variant", false) != variants) continue;
          if (si >= a.value("seeds", r.seeds.size())) continue;
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
