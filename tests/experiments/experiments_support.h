// What the experiment tests share: hand-made definitions, run records and ledger rows with known
// answers, and a results folder written as `stiefel experiment` writes one.
#pragma once

#include <gtest/gtest.h>
#include <stiefel/arms.h>
#include <stiefel/io/sha256.h>

#include <stiefel/reports/experiment.h>
#include <stiefel/reports/ledger.h>
#include <stiefel/reports/plots.h>
#include <stiefel/reports/tables.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>

namespace stiefel_experiments_test {

using nlohmann::json;
using namespace stiefel::reports;
namespace fs = std::filesystem;

inline json definition() {
  return json::parse(R"({
    "name": "t", "title": "T", "task": "image", "analysis": "paired", "seeds": 3, "baseline": "a",
    "train": {"n": 100, "epochs": 4},
    "groups": [{"id": "g1", "train": {"n": 200}}, {"id": "g2"}],
    "arms": [{"id": "a", "train": {"arm": "a2"}}, {"id": "b", "seeds": 2, "train": {"arm": "b2", "epochs": 9}}],
    "profiles": {"paper": {}, "cpu": {"seeds": 6, "reductions": "r", "train": {"epochs": 2}},
                 "smoke": {"seeds": 1, "arms": ["b"]}}
  })");
}

inline json record(const std::vector<std::array<double, 3>>& rows, int epochs) {
  json r = {{"config", {{"epochs", epochs}}}, {"epochs", json::array()}};
  for (const auto& [e, train, test] : rows)
    r["epochs"].push_back({{"epoch", e}, {"train_acc", train}, {"test_acc", test}});
  return r;
}

// A hand-made table at the paper's budget in which every arm has completed every seed: arm b against
// the baseline a, and the contrast "b-vs-a" reading the same comparison.
inline json table_with(double lo, double hi, double iso_a, double iso_b) {
  const json c = {{"diff_mean", (lo + hi) / 2}, {"ci_low", lo}, {"ci_high", hi}, {"wins", 5}, {"pairs", 6}};
  const json budget = {{"n", 100}, {"epochs", 4}, {"seeds", 6}};
  return {{"experiment", "t"},
          {"profile", "paper"},
          {"datasets", {"D"}},
          {"baseline", "a"},
          {"budget", budget},
          {"paper_budget", budget},
          {"differs_from_paper", json::array()},
          {"at_paper_budget", true},
          {"groups",
           {{{"id", "main"},
             {"contrasts", {{{"id", "b-vs-a"}, {"arm", "b"}, {"baseline", "a"}, {"n", 6}, {"vs_baseline", c}}}},
             {"arms",
              {{{"id", "a"}, {"n", 6}, {"planned", 6}, {"iso_final_mean", iso_a}},
               {{"id", "b"}, {"n", 6}, {"planned", 6}, {"iso_final_mean", iso_b}, {"vs_baseline", c}}}}}}}};
}

// The same table run at a reduced budget (n 50, 2 epochs, 3 of the paper's 6 seeds).
inline json reduced(json table) {
  table["profile"] = "cpu";
  table["budget"] = {{"n", 50}, {"epochs", 2}, {"seeds", 3}};
  table["differs_from_paper"] = json::array({"epochs", "n", "seeds"});
  table["at_paper_budget"] = false;
  for (auto& a : table["groups"][0]["arms"]) a["n"] = a["planned"] = 3;
  return table;
}

inline json& arm_of(json& table, const char* id) {
  for (auto& a : table["groups"][0]["arms"])
    if (a["id"] == id) return a;
  throw std::logic_error(std::string("no arm ") + id);
}

inline json claims_with(const json& rule, const json& ref, const json& budget = nullptr) {
  json c = {{"id", "c"},           {"claim", "x"},      {"where", "§"}, {"paper", "p"},
            {"kind", "empirical"}, {"experiment", "t"}, {"ref", ref},   {"rule", rule}};
  if (!budget.is_null()) c["budget"] = budget;
  return {{"claims", {c}}};
}

inline json ledger_row(const json& rule, const std::vector<json>& tables, const char* field = "vs_baseline.diff_mean",
                       const json& budget = nullptr) {
  return build_ledger(claims_with(rule, {{"arm", "b"}, {"field", field}}, budget), tables, nullptr)["claims"][0];
}

inline std::string verdict(const json& rule, const json& table, const char* field = "vs_baseline.diff_mean") {
  return ledger_row(rule, {table}, field)["verdict"];
}

// A results folder written the way `stiefel experiment` writes one, for analyse_results.
struct ResultsFolder {
  fs::path dir;
  explicit ResultsFolder(const std::string& name)
      : dir(fs::temp_directory_path() / ("stiefel-experiments-test-" + std::to_string(::getpid()) + "-" + name)) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~ResultsFolder() { fs::remove_all(dir); }
  void write(const fs::path& rel, const json& j) const {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel) << j.dump(2);
  }
  ResolvedExperiment grid(const json& definition, const std::string& profile) const {
    const auto ex = resolve(definition, profile, "t.json");
    json grid = json::array();
    for (const auto& r : ex.runs) grid.push_back({{"id", r.id}, {"train", r.train}});
    write("experiment.json", {{"definition", definition}, {"profile", profile}, {"grid", grid}, {"source", "t.json"}});
    return ex;
  }
};

// One epoch's record as `stiefel train` writes it (the diagnostics at fixed values).
inline json epoch_record(int e, double train_acc) {
  return {{"epoch", e},
          {"train_loss", 1.0},
          {"train_acc", train_acc},
          {"isometry_error", {1e-8, 2e-8}},
          {"isometry_error_max", 2e-8},
          {"tangent_grad_norm", 0.1},
          {"step_norm", 0.01},
          {"step_per_gradient", 0.1},
          {"cap_active_fraction", 0.0},
          {"gauge_fraction", 0.0},
          {"seconds", 1.0}};
}

// A completed image run evaluated every second epoch and at the last: test and validation accuracy
// rise to their final values. Complete as run.schema.json requires.
inline json image_run(int epochs, double test, double val) {
  const json model = {{"layers", 2},
                      {"d", 128},
                      {"heads", 8},
                      {"r", 16},
                      {"ffn", 512},
                      {"pooling", "mean"},
                      {"positional", "learned"},
                      {"input_dim", 128},
                      {"tokens", 16},
                      {"classes", 10}};
  json r = {{"status", "completed"},
            {"config",
             {{"task", "image"},
              {"arm", "b2"},
              {"seed", 0},
              {"n", 100},
              {"epochs", epochs},
              {"batch", 256},
              {"device", "cpu"},
              {"adam_lr", 1e-3},
              {"weight_decay", 0.05},
              {"adam_betas", {0.9, 0.999}},
              {"riemann_lr", 1e-3},
              {"eps", 1e-8},
              {"tau", 0.1},
              {"cap", true},
              {"soft_lambda", 0.0},
              {"schedule", "cosine"},
              {"model", model},
              {"init_scale", 1.0},
              {"threads", 1}}},
            {"dataset", {{"name", "D"}, {"train", 100}, {"test", 50}}},
            {"environment", {{"torch", "1.13"}, {"cuda_available", false}, {"threads", 1}}},
            {"epochs", json::array()}};
  for (int e = 1; e <= epochs; ++e) {
    json m = epoch_record(e, 0.5);
    if (e % 2 == 0 || e == epochs) {
      m["test_acc"] = test - 0.01 * (epochs - e);
      m["val_acc"] = val - 0.01 * (epochs - e);
    }
    r["epochs"].push_back(m);
  }
  r["final"] = r["epochs"].back();
  return r;
}

// RECORD as `stiefel train` writes it for CELL: its options are the cell's settings, its config
// names the cell's arm and seed (a report counts a record only in its own cell).
inline json run_of_cell(json record, const RunSpec& cell) {
  record["options"] = cell.train;
  record["config"]["seed"] = cell.seed;
  record["config"]["arm"] = cell.train["arm"];
  // What `stiefel train` states in both places, its config as its options say (check_run_record).
  for (const char* k : {"task", "epochs", "device", "init_scale", "threads", "val_n"})
    if (cell.train.contains(k)) record["config"][k] = cell.train[k];
  return record;
}

inline json selection_definition() {
  return json::parse(R"json({
    "name": "sel", "title": "Selection (n = 100, 5 epochs)", "task": "image", "analysis": "paired", "seeds": 2,
    "baseline": "a", "train": {"n": 100, "epochs": 5, "val_n": 50},
    "arms": [{"id": "a", "label": "A", "train": {"arm": "a2"}}, {"id": "b", "label": "B", "train": {"arm": "b2"}},
             {"id": "c", "label": "C", "variant": true, "train": {"arm": "b2-sgd"}}],
    "select": {"metric": "val_acc", "statement": "the paper selects on the validation split"},
    "plots": ["accuracy", "paired"],
    "profiles": {"paper": {}, "cpu": {"reductions": "batch", "train": {"batch": 128}},
                 "where": {"reductions": "none", "train": {"data": "cifar10:/elsewhere"}},
                 "eval": {"reductions": "evaluation", "train": {"eval_every": 2}},
                 "fewer": {"reductions": "seeds", "seeds": 1},
                 "rate": {"reading": "AdamW at 1e-2", "reading_settings": ["adam_lr"], "train": {"adam_lr": 0.01}},
                 "smoke": {"seeds": 1, "train": {"n": 10, "epochs": 1}}}
  })json");
}

// A grokking grid: arms A (a2, the baseline) and B (b2), 3 seeds, 4 epochs.
inline json grok_definition() {
  return json::parse(R"json({
    "name": "gk", "title": "Grokking", "task": "grok", "analysis": "grok", "seeds": 3, "baseline": "a",
    "train": {"epochs": 4},
    "arms": [{"id": "a", "label": "A", "train": {"arm": "a2"}}, {"id": "b", "label": "B", "train": {"arm": "b2"}}],
    "profiles": {"paper": {}, "cpu": {"reductions": "r", "seeds": 6}, "smoke": {"seeds": 1}}
  })json");
}

// A theory row listing CERTIFICATE (and REFUTED_BY, where given), and a certificate whose
// claims k1, k2, … have the observations OBSERVED.
inline json theory_row(const json& certificate, const json& refuted_by = nullptr) {
  json row = {{"id", "c"}, {"claim", "x"}, {"where", "§"}, {"paper", "p"}, {"kind", "theory"}};
  if (!certificate.is_null()) row["certificate"] = certificate;
  if (!refuted_by.is_null()) row["refuted_by"] = refuted_by;
  return {{"claims", {row}}};
}

inline json certificate_with(const std::vector<std::string>& observed) {
  json cert = {{"claims", json::array()}};
  for (std::size_t i = 0; i < observed.size(); ++i)
    cert["claims"].push_back({{"id", "k" + std::to_string(i + 1)}, {"observed", observed[i]}});
  return cert;
}

}  // namespace stiefel_experiments_test
