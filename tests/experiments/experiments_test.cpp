// Experiment grids, grokking metrics, tables, budgets and ledger verdicts on hand-made records with known
// answers.
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

namespace {

using nlohmann::json;
using namespace stiefel::reports;

json definition() {
  return json::parse(R"({
    "name": "t", "title": "T", "task": "image", "analysis": "paired", "seeds": 3, "baseline": "a",
    "train": {"n": 100, "epochs": 4},
    "groups": [{"id": "g1", "train": {"n": 200}}, {"id": "g2"}],
    "arms": [{"id": "a", "train": {"arm": "a2"}}, {"id": "b", "seeds": 2, "train": {"arm": "b2", "epochs": 9}}],
    "profiles": {"paper": {}, "cpu": {"seeds": 6, "reductions": "r", "train": {"epochs": 2}},
                 "smoke": {"seeds": 1, "arms": ["b"]}}
  })");
}

TEST(ExperimentGrid, GroupsArmsSeedsWithLaterLayersWinning) {
  const auto ex = resolve(definition(), "paper", "t.json");
  ASSERT_EQ(ex.runs.size(), 2u * (3 + 2));
  EXPECT_EQ(ex.runs[0].id, "g1/a/seed-0");
  EXPECT_EQ(ex.runs[0].train["n"], 200);  // group over definition
  // Seed-major: every arm of seed 0, then of seed 1, … (b has two seeds).
  EXPECT_EQ(ex.runs[1].id, "g1/b/seed-0");
  EXPECT_EQ(ex.runs[2].id, "g1/a/seed-1");
  EXPECT_EQ(ex.runs[4].id, "g1/a/seed-2");
  EXPECT_EQ(ex.runs[1].train["epochs"], 9);  // arm over definition
  EXPECT_EQ(ex.runs[5].id, "g2/a/seed-0");
  EXPECT_EQ(ex.runs[5].train["n"], 100);
  const auto cpu = resolve(definition(), "cpu", "t.json");
  EXPECT_EQ(cpu.runs[1].train["epochs"], 2);  // profile over arm
  EXPECT_EQ(cpu.runs.size(), 2u * (6 + 2));
  const auto smoke = resolve(definition(), "smoke", "t.json");
  ASSERT_EQ(smoke.runs.size(), 2u);
  EXPECT_EQ(smoke.runs[0].arm, "b");
  EXPECT_THROW(resolve(definition(), "gpu", "t.json"), ExperimentError);
}

TEST(ExperimentGrid, TrainArgumentsSpellTheOptions) {
  RunSpec r;
  r.train = {{"arm", "b2"}, {"eps", 1e-8}, {"n", 10}, {"power_stabilisation", true}, {"quiet_flag_off", false}};
  const auto a = train_arguments(r);
  const std::vector<std::string> expected = {"train", "--arm", "b2", "--eps",
                                             "1e-08", "--n",   "10", "--power-stabilisation"};
  EXPECT_EQ(a, expected);
}

json record(const std::vector<std::array<double, 3>>& rows, int epochs) {
  json r = {{"config", {{"epochs", epochs}}}, {"epochs", json::array()}};
  for (const auto& [e, train, test] : rows)
    r["epochs"].push_back({{"epoch", e}, {"train_acc", train}, {"test_acc", test}});
  return r;
}

TEST(GrokMetrics, FirstCrossingSustainedAndTail) {
  // evaluations every 100 epochs over 800 epochs; the tail is epochs > 600
  const auto r = record({{100, 0.5, 0.1},
                         {200, 0.995, 0.96},
                         {300, 0.2, 0.5},
                         {400, 1.0, 0.97},
                         {500, 1.0, 0.98},
                         {600, 1.0, 0.99},
                         {700, 0.01, 0.3},
                         {800, 1.0, 0.9}},
                        800);
  const auto g = grok_metrics(r);
  EXPECT_EQ(g.memorized, 200);
  EXPECT_EQ(g.grokked, 200);
  EXPECT_EQ(g.sustained, 400);
  EXPECT_DOUBLE_EQ(g.end_acc, 0.9);
  EXPECT_DOUBLE_EQ(g.tail_mean, (0.3 + 0.9) / 2);
  EXPECT_DOUBLE_EQ(g.min_train_after_memorized, 0.01);
  const auto never = grok_metrics(record({{100, 0.5, 0.1}, {200, 0.6, 0.2}}, 200));
  EXPECT_FALSE(never.memorized.has_value());
  EXPECT_FALSE(never.grokked.has_value());
  EXPECT_FALSE(never.sustained.has_value());
}

// A hand-made table at the paper's budget in which every arm has completed every seed: arm b against
// the baseline a, and the contrast "b-vs-a" reading the same comparison.
json table_with(double lo, double hi, double iso_a, double iso_b) {
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
json reduced(json table) {
  table["profile"] = "cpu";
  table["budget"] = {{"n", 50}, {"epochs", 2}, {"seeds", 3}};
  table["differs_from_paper"] = json::array({"epochs", "n", "seeds"});
  table["at_paper_budget"] = false;
  for (auto& a : table["groups"][0]["arms"]) a["n"] = a["planned"] = 3;
  return table;
}

json& arm_of(json& table, const char* id) {
  for (auto& a : table["groups"][0]["arms"])
    if (a["id"] == id) return a;
  throw std::logic_error(std::string("no arm ") + id);
}

json claims_with(const json& rule, const json& ref, const json& budget = nullptr) {
  json c = {{"id", "c"},           {"claim", "x"},      {"where", "§"}, {"paper", "p"},
            {"kind", "empirical"}, {"experiment", "t"}, {"ref", ref},   {"rule", rule}};
  if (!budget.is_null()) c["budget"] = budget;
  return {{"claims", {c}}};
}

json ledger_row(const json& rule, const std::vector<json>& tables, const char* field = "vs_baseline.diff_mean",
                const json& budget = nullptr) {
  return build_ledger(claims_with(rule, {{"arm", "b"}, {"field", field}}, budget), tables, nullptr)["claims"][0];
}

std::string verdict(const json& rule, const json& table, const char* field = "vs_baseline.diff_mean") {
  return ledger_row(rule, {table}, field)["verdict"];
}

// §4.7's flatness criterion has two halves, |Δ| < 0.2 pp and p > 0.5: a small difference the paired
// t-test tells apart (p ≤ 0.5) is not flat, and one of the same size with p > 0.5 is.
TEST(Ledger, AFlatnessCriterionJudgesBothHalves) {
  const json flat = {{"type", "within"}, {"value", 0.0}, {"tolerance", 0.2}, {"p_above", 0.5}};
  auto with_p = [](json table, double p) {
    table["groups"][0]["arms"][1]["vs_baseline"]["p"] = p;
    return table;
  };
  EXPECT_EQ(verdict(flat, with_p(table_with(-0.1, 0.3, 1, 1), 0.94)), "confirmed");
  EXPECT_EQ(verdict(flat, with_p(table_with(-0.1, 0.3, 1, 1), 0.48)), "refuted");
  EXPECT_EQ(verdict(flat, with_p(table_with(0.2, 0.8, 1, 1), 0.94)), "refuted");
  // Without a t statistic: the same difference on every seed, flat only where it is 0.
  EXPECT_EQ(verdict(flat, table_with(0, 0, 1, 1)), "confirmed");
  EXPECT_EQ(verdict(flat, table_with(0.1, 0.1, 1, 1)), "refuted");
}

// A value the paper states two ways ("± 0.50" in a table, "± 0.61" in its text) is judged against
// each; verdicts that differ settle nothing.
TEST(Ledger, AValueThePaperStatesTwoWaysIsJudgedUnderBoth) {
  const json rule = {
      {"type", "within"}, {"value", 0.5}, {"tolerance", 0.3}, {"readings", {{{"value", 0.61}, {"where", "the text"}}}}};
  EXPECT_EQ(verdict(rule, table_with(0, 0, 1, 0.2937), "iso_final_mean"), "not confirmed");
  EXPECT_EQ(verdict(rule, table_with(0, 0, 1, 0.55), "iso_final_mean"), "confirmed");
  EXPECT_EQ(verdict(rule, table_with(0, 0, 1, 1.5), "iso_final_mean"), "refuted");
}

// A scaled value that overflows to infinity confirms no rule ("below 1e308", "within 0 ± 0").
TEST(Ledger, AValueThatOverflowsDecidesNothing) {
  const json huge = table_with(0, 0, 1, 1e300);
  const auto scaled = [&](const json& rule) {
    return build_ledger(claims_with(rule, {{"arm", "b"}, {"field", "iso_final_mean"}, {"scale", 1e10}}), {huge},
                        nullptr)["claims"][0]["verdict"]
        .get<std::string>();
  };
  EXPECT_EQ(scaled({{"type", "below"}, {"value", 1e308}}), "not run");
  EXPECT_EQ(scaled({{"type", "above"}, {"value", 0.0}}), "not run");
  EXPECT_EQ(scaled({{"type", "within"}, {"value", 0.0}, {"tolerance", 0.0}}), "not run");
}

TEST(Ledger, VerdictRules) {
  const json pos = {{"type", "positive"}}, neg = {{"type", "negative"}}, nul = {{"type", "null"}};
  EXPECT_EQ(verdict(pos, table_with(1, 3, 1, 1)), "confirmed");
  EXPECT_EQ(verdict(pos, table_with(-1, 3, 1, 1)), "not confirmed");
  EXPECT_EQ(verdict(pos, table_with(-3, -1, 1, 1)), "refuted");
  EXPECT_EQ(verdict(neg, table_with(-3, -1, 1, 1)), "confirmed");
  EXPECT_EQ(verdict(nul, table_with(-1, 3, 1, 1)), "confirmed");
  EXPECT_EQ(verdict(nul, table_with(1, 3, 1, 1)), "refuted");
  // A difference is significant only when the paired t-test agrees with the interval: three pairs
  // of one sign clear 0 in the percentile bootstrap at p = 0.22 (Table 3 at n = 1k), which decides
  // neither a gain nor a refutation of "no difference".
  auto with_p = [](json table, double p) {
    for (auto* c : {&table["groups"][0]["arms"][1]["vs_baseline"], &table["groups"][0]["contrasts"][0]["vs_baseline"]})
      (*c)["p"] = p;
    return table;
  };
  EXPECT_EQ(verdict(pos, with_p(table_with(1, 3, 1, 1), 0.22)), "not confirmed");
  EXPECT_EQ(verdict(pos, with_p(table_with(-3, -1, 1, 1), 0.22)), "not confirmed");
  EXPECT_EQ(verdict(neg, with_p(table_with(-3, -1, 1, 1), 0.22)), "not confirmed");
  EXPECT_EQ(verdict(nul, with_p(table_with(1, 3, 1, 1), 0.22)), "confirmed");
  EXPECT_EQ(verdict(pos, with_p(table_with(1, 3, 1, 1), 0.01)), "confirmed");
  EXPECT_EQ(verdict(neg, with_p(table_with(1, 3, 1, 1), 0.01)), "refuted");
  EXPECT_EQ(verdict(nul, with_p(table_with(1, 3, 1, 1), 0.01)), "refuted");
  // A t-test that rejects does not make an interval that contains 0 significant.
  EXPECT_EQ(verdict(pos, with_p(table_with(-1, 3, 1, 1), 0.01)), "not confirmed");
  EXPECT_EQ(verdict(nul, with_p(table_with(-1, 3, 1, 1), 0.01)), "confirmed");
  // The test is at the 5% level (p < 0.05 rejects, p = 0.05 does not), and a contrast is judged as an arm is.
  EXPECT_EQ(verdict(pos, with_p(table_with(1, 3, 1, 1), 0.05)), "not confirmed");
  auto contrast_verdict = [](const json& rule, const json& table) {
    return build_ledger(claims_with(rule, {{"contrast", "b-vs-a"}, {"field", "vs_baseline.diff_mean"}}), {table},
                        nullptr)["claims"][0]["verdict"];
  };
  EXPECT_EQ(contrast_verdict(pos, with_p(table_with(1, 3, 1, 1), 0.22)), "not confirmed");
  EXPECT_EQ(contrast_verdict(pos, with_p(table_with(1, 3, 1, 1), 0.01)), "confirmed");
  EXPECT_EQ(verdict({{"type", "below"}, {"value", 2.0}}, table_with(0, 0, 1, 1.5), "iso_final_mean"), "confirmed");
  EXPECT_EQ(verdict({{"type", "below"}, {"value", 1.0}}, table_with(0, 0, 1, 1.5), "iso_final_mean"), "refuted");
  EXPECT_EQ(
      verdict({{"type", "within"}, {"value", 1.4}, {"tolerance", 0.2}}, table_with(0, 0, 1, 1.5), "iso_final_mean"),
      "confirmed");
  // Outside "value ± tolerance" the claim is contradicted, not merely unconfirmed.
  EXPECT_EQ(
      verdict({{"type", "within"}, {"value", 1.4}, {"tolerance", 0.05}}, table_with(0, 0, 1, 1.5), "iso_final_mean"),
      "refuted");
  // A value on a rule's bound meets it, though the decimals round: 3 of 5 seeds is within 0.2 of 0.8
  // (|0.6 - 0.8| is 0.2 + 7e-17 in binary), 0.1 + 0.2 is at most 0.3; a hair beyond a bound does not.
  const json rate = {{"type", "within"}, {"value", 0.8}, {"tolerance", 0.2}};
  ASSERT_GT(std::fabs(3.0 / 5.0 - 0.8), 0.2);  // the rounding the rule must absorb
  EXPECT_EQ(verdict(rate, table_with(0, 0, 1, 3.0 / 5.0), "iso_final_mean"), "confirmed");
  EXPECT_EQ(verdict(rate, table_with(0, 0, 1, 1.0), "iso_final_mean"), "confirmed");
  EXPECT_EQ(verdict(rate, table_with(0, 0, 1, 0.6 - 1e-9), "iso_final_mean"), "refuted");
  EXPECT_EQ(verdict(rate, table_with(0, 0, 1, 2.0 / 5.0), "iso_final_mean"), "refuted");
  EXPECT_EQ(verdict({{"type", "below"}, {"value", 0.3}}, table_with(0, 0, 1, 0.1 + 0.2), "iso_final_mean"),
            "confirmed");
  EXPECT_EQ(verdict({{"type", "below"}, {"value", 0.3}}, table_with(0, 0, 1, 0.3 + 1e-9), "iso_final_mean"), "refuted");
  EXPECT_EQ(verdict({{"type", "above"}, {"value", 0.3}}, table_with(0, 0, 1, 0.3 - 1e-9), "iso_final_mean"), "refuted");
  const json ratio = {
      {"type", "ratio_above"}, {"value", 3.0}, {"denominator", {{"arm", "a"}, {"field", "iso_final_mean"}}}};
  EXPECT_EQ(verdict(ratio, table_with(0, 0, 0.5, 1.5), "iso_final_mean"), "confirmed");
  EXPECT_EQ(verdict(ratio, table_with(0, 0, 1.0, 1.5), "iso_final_mean"), "refuted");
  // A stated normalisation: the field times "scale" is judged, in the rule and in the ratio.
  const json within = {{"type", "within"}, {"value", 3.0}, {"tolerance", 0.1}};
  auto scaled = [&](const json& rule, double scale) {
    return build_ledger(claims_with(rule, {{"arm", "b"}, {"field", "iso_final_mean"}, {"scale", scale}}),
                        {table_with(0, 0, 0.5, 1.5)}, nullptr)["claims"][0];
  };
  EXPECT_EQ(scaled(within, 2.0)["verdict"], "confirmed");
  EXPECT_EQ(scaled(within, 1.0)["verdict"], "refuted");
  const auto ours = scaled(within, 2.0)["evidence"][0]["ours"].get<std::string>();
  EXPECT_NE(ours.find("3 (2 × 1.5)"), std::string::npos) << ours;
  EXPECT_EQ(
      scaled({{"type", "ratio_above"}, {"value", 5.0}, {"denominator", {{"arm", "a"}, {"field", "iso_final_mean"}}}},
             2.0)["verdict"],
      "confirmed");  // (2 × 1.5) / 0.5 = 6; unscaled 3 would refute
  // A difference is in percentage points where the table's accuracies are percentages, and a bare
  // number where they are fractions (the grokking tables' tail means).
  auto in_unit = [&](const char* metric) {
    auto t = table_with(1, 3, 1, 1);
    t["metric"] = metric;
    return ledger_row(pos, {t})["evidence"][0]["ours"].get<std::string>();
  };
  EXPECT_EQ(in_unit("final test accuracy (%)").rfind("2 pp, CI [1, 3]", 0), 0u) << in_unit("final test accuracy (%)");
  EXPECT_EQ(in_unit("held-out accuracy, tail mean (fraction)").rfind("2, CI [1, 3]", 0), 0u)
      << in_unit("held-out accuracy, tail mean (fraction)");
  // No result: not run; a smoke table never decides.
  auto smoke = table_with(1, 3, 1, 1);
  smoke["profile"] = "smoke";
  EXPECT_EQ(verdict(pos, smoke), "not run");
}

TEST(Ledger, RunsShorterThanTheClaimDecideNothing) {
  auto table = table_with(1, 3, 1, 1);
  table["epochs"] = 100;
  json claims = {{"claims",
                  {{{"id", "c"},
                    {"claim", "x"},
                    {"where", "§"},
                    {"paper", "p"},
                    {"kind", "empirical"},
                    {"experiment", "t"},
                    {"min_epochs", 20000},
                    {"ref", {{"arm", "b"}, {"field", "vs_baseline.diff_mean"}}},
                    {"rule", {{"type", "positive"}}}}}}};
  const auto row = build_ledger(claims, {table}, nullptr)["claims"][0];
  EXPECT_EQ(row["verdict"], "not run");
  ASSERT_EQ(row["evidence"].size(), 1u);
  EXPECT_EQ(row["evidence"][0]["verdict"], "untestable");
  table["epochs"] = 20000;
  EXPECT_EQ(build_ledger(claims, {table}, nullptr)["claims"][0]["verdict"], "confirmed");
}

TEST(Ledger, AReducedBudgetNeverDecidesAVerdict) {
  const json pos = {{"type", "positive"}};
  auto row = ledger_row(pos, {reduced(table_with(1, 3, 1, 1))});
  EXPECT_EQ(row["verdict"], "not run");
  EXPECT_TRUE(row["evidence"].empty());
  ASSERT_EQ(row["reduced_evidence"].size(), 1u);
  EXPECT_EQ(row["reduced_evidence"][0]["verdict"], "confirmed");
  EXPECT_EQ(row["reduced_verdict"], "cpu (n = 50, 2 epochs, 3 seeds): confirmed");
  // Beside a complete paper-budget table, the reduced one keeps its own verdict and the paper's decides.
  row = ledger_row(pos, {reduced(table_with(-3, -1, 1, 1)), table_with(1, 3, 1, 1)});
  EXPECT_EQ(row["verdict"], "confirmed");
  EXPECT_EQ(row["reduced_verdict"], "cpu (n = 50, 2 epochs, 3 seeds): refuted");
  ASSERT_EQ(row["evidence"].size(), 1u);
  EXPECT_EQ(row["evidence"][0]["profile"], "paper");
  // A table that records no budget (not written by analyse_results) is not taken to be at the paper's.
  auto unknown = table_with(1, 3, 1, 1);
  unknown.erase("at_paper_budget");
  EXPECT_EQ(verdict(pos, unknown), "not run");
  const auto ledger = build_ledger(claims_with(pos, {{"arm", "b"}, {"field", "vs_baseline.diff_mean"}}),
                                   {reduced(table_with(1, 3, 1, 1))}, nullptr);
  EXPECT_EQ(ledger["summary"]["not_run"], 1);
  EXPECT_EQ(ledger["summary"]["confirmed"], 0);
  EXPECT_EQ(ledger["summary"]["with_reduced_evidence"], 1);
  const auto md = ledger_markdown(ledger);
  EXPECT_NE(md.find("| # | claim | where | paper | ours at the paper's budget | verdict | reduced-budget evidence | "
                    "reduced-budget verdict |"),
            std::string::npos);
  EXPECT_NE(md.find("| **not run** | cpu (n = 50, 2 epochs, 3 seeds): "), std::string::npos) << md;
  EXPECT_NE(md.find(" | cpu (n = 50, 2 epochs, 3 seeds): confirmed |"), std::string::npos) << md;
}

// The paper states some protocols two ways (AdamW at 1e-3 in Table 1, 1e-2 in §3.3): a table under
// either reading is at the paper's budget and decides; two complete readings that disagree settle
// nothing.
TEST(Ledger, EitherReadingAtThePapersBudgetDecidesAndDisagreementSettlesNothing) {
  const json pos = {{"type", "positive"}};
  auto other = table_with(-3, -1, 1, 1);
  other["profile"] = "paper-adamw-1e-2";
  other["reading"] = "AdamW at 1e-2";
  auto row = ledger_row(pos, {other});
  EXPECT_EQ(row["verdict"], "refuted");
  ASSERT_EQ(row["evidence"].size(), 1u);
  EXPECT_EQ(row["evidence"][0]["verdict"], "reading: refuted");
  // Beside a paper-profile table that disagrees: not confirmed, both shown.
  row = ledger_row(pos, {other, table_with(1, 3, 1, 1)});
  EXPECT_EQ(row["verdict"], "not confirmed");
  EXPECT_EQ(row["note"], "results at the paper's budget disagree");
  ASSERT_EQ(row["evidence"].size(), 2u);
  // Two readings that agree: their verdict.
  auto agreeing = table_with(1, 3, 1, 1);
  agreeing["profile"] = "paper-adamw-1e-2";
  agreeing["reading"] = "AdamW at 1e-2";
  EXPECT_EQ(ledger_row(pos, {agreeing, table_with(1, 3, 1, 1)})["verdict"], "confirmed");
  const auto md = ledger_markdown(build_ledger(claims_with(pos, {{"arm", "b"}, {"field", "vs_baseline.diff_mean"}}),
                                               {other, table_with(1, 3, 1, 1)}, nullptr));
  EXPECT_NE(md.find("reading: AdamW at 1e-2 — *reading: refuted*"), std::string::npos) << md;
}

TEST(Ledger, APaperBudgetTableWithMissingSeedsIsInterim) {
  const json pos = {{"type", "positive"}};
  auto t = table_with(1, 3, 1, 1);
  arm_of(t, "b")["n"] = 5;
  auto row = ledger_row(pos, {t});
  EXPECT_EQ(row["verdict"], "not run");
  ASSERT_EQ(row["evidence"].size(), 1u);
  EXPECT_EQ(row["evidence"][0]["verdict"], "interim (5 of 6 seeds)");
  // A difference against the baseline reads the baseline's seeds too; a field of the arm alone does not.
  t = table_with(1, 3, 1, 1.5);
  arm_of(t, "a")["n"] = 4;
  EXPECT_EQ(ledger_row(pos, {t})["evidence"][0]["verdict"], "interim (4 of 6 seeds)");
  EXPECT_EQ(verdict({{"type", "below"}, {"value", 2.0}}, t, "iso_final_mean"), "confirmed");
  // A contrast reads its arm and its baseline; a ratio reads its denominator's arm.
  const auto contrast = build_ledger(claims_with(pos, {{"contrast", "b-vs-a"}, {"field", "vs_baseline.diff_mean"}}),
                                     {t}, nullptr)["claims"][0];
  EXPECT_EQ(contrast["verdict"], "not run");
  EXPECT_EQ(contrast["evidence"][0]["verdict"], "interim (4 of 6 seeds)");
  const json ratio = {
      {"type", "ratio_above"}, {"value", 1.0}, {"denominator", {{"arm", "a"}, {"field", "iso_final_mean"}}}};
  EXPECT_EQ(verdict(ratio, t, "iso_final_mean"), "not run");
  arm_of(t, "a")["n"] = 6;
  EXPECT_EQ(verdict(ratio, t, "iso_final_mean"), "confirmed");
  // The interim table decides nothing even beside a reduced one that is complete.
  t = table_with(1, 3, 1, 1);
  arm_of(t, "b")["n"] = 2;
  row = ledger_row(pos, {t, reduced(table_with(-3, -1, 1, 1))});
  EXPECT_EQ(row["verdict"], "not run");
  EXPECT_EQ(row["reduced_verdict"], "cpu (n = 50, 2 epochs, 3 seeds): refuted");
  EXPECT_EQ(build_ledger(claims_with(pos, {{"arm", "b"}, {"field", "vs_baseline.diff_mean"}}), {t},
                         nullptr)["summary"]["interim"],
            1);
}

TEST(Ledger, AClaimsBudgetListLetsAnUnlistedSettingDiffer) {
  const json pos = {{"type", "positive"}};
  auto t = table_with(1, 3, 1, 1);
  t["profile"] = "long";
  t["at_paper_budget"] = false;
  t["differs_from_paper"] = json::array({"n"});
  EXPECT_EQ(ledger_row(pos, {t})["verdict"], "not run");
  EXPECT_EQ(ledger_row(pos, {t}, "vs_baseline.diff_mean", json::array({"epochs"}))["verdict"], "confirmed");
  EXPECT_EQ(ledger_row(pos, {t}, "vs_baseline.diff_mean", json::array({"epochs", "n"}))["verdict"], "not run");
  // The seed list always counts, listed or not.
  t["differs_from_paper"] = json::array({"seeds"});
  EXPECT_EQ(ledger_row(pos, {t}, "vs_baseline.diff_mean", json::array({"epochs"}))["verdict"], "not run");
  t["differs_from_paper"] = json::array({"n", "runs"});
  EXPECT_EQ(ledger_row(pos, {t}, "vs_baseline.diff_mean", json::array({"epochs"}))["verdict"], "not run");
  // Malformed lists name the file and the claim.
  t["differs_from_paper"] = json::array({"n"});
  const std::vector<json> malformed = {json("epochs"), json::array(), json::array({"epoch"}), json::array({3}),
                                       json::array({"device"})};
  for (const json& bad : malformed) {
    try {
      build_ledger(claims_with(pos, {{"arm", "b"}, {"field", "vs_baseline.diff_mean"}}, bad), {t}, nullptr,
                   "experiments/claims.json");
      ADD_FAILURE() << "accepted \"budget\": " << bad.dump();
    } catch (const ExperimentError& e) {
      // The schema refuses the list's shape (/claims/0/budget...); the loader, a setting that is not one.
      const std::string what = e.what();
      EXPECT_TRUE(what.rfind("experiments/claims.json: claim c: /claims/0/budget", 0) == 0 ||
                  what.rfind("experiments/claims.json: claim c: \"budget\"", 0) == 0)
          << what;
    }
  }
}

namespace fs = std::filesystem;

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
json epoch_record(int e, double train_acc) {
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
json image_run(int epochs, double test, double val) {
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
json run_of_cell(json record, const RunSpec& cell) {
  record["options"] = cell.train;
  record["config"]["seed"] = cell.seed;
  record["config"]["arm"] = cell.train["arm"];
  return record;
}

json selection_definition() {
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

TEST(Tables, SelectionPicksTheHighestMeanValidationAccuracy) {
  ResultsFolder f("selection");
  const auto ex = f.grid(selection_definition(), "paper");
  using PerSeed = std::map<std::string, std::array<double, 2>>;
  const PerSeed val = {{"a", {0.40, 0.42}}, {"b", {0.50, 0.52}}, {"c", {0.45, 0.47}}};
  const PerSeed test = {{"a", {0.30, 0.31}}, {"b", {0.35, 0.37}}, {"c", {0.60, 0.61}}};
  for (const auto& r : ex.runs)
    f.write(fs::path("runs") / r.id / "run.json",
            run_of_cell(image_run(5, test.at(r.arm)[r.seed], val.at(r.arm)[r.seed]), r));
  const auto t = analyse_results(f.dir.string(), 200);
  EXPECT_TRUE(t["at_paper_budget"].get<bool>());
  // The grid's machine time: 6 runs of 5 epochs at 1 s each, from the records.
  EXPECT_NEAR(t["run_hours"].get<double>(), 30.0 / 3600, 1e-12);
  ASSERT_TRUE(t.contains("selection"));
  const auto& s = t["selection"];
  EXPECT_EQ(s["arm"], "b");  // the highest validation accuracy, though c has the highest test accuracy
  EXPECT_NEAR(s["val_acc"].get<double>(), 51.0, 1e-9);
  EXPECT_EQ(s["runner_up"]["arm"], "c");
  EXPECT_NEAR(s["runner_up"]["val_acc"].get<double>(), 46.0, 1e-9);
  const auto& arms = t["groups"][0]["arms"];
  EXPECT_NEAR(arms[0]["val_acc_mean"].get<double>(), 41.0, 1e-9);
  EXPECT_NEAR(arms[0]["val_acc_sd"].get<double>(), std::sqrt(2.0), 1e-9);
  // Paired differences per seed (pp), for the "paired" figure.
  const auto& d = arms[1]["vs_baseline"]["differences"];
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NEAR(d[1]["diff"].get<double>(), 6.0, 1e-9);
  // The accuracy curve holds the evaluated epochs' test accuracy, with its band over seeds.
  const auto& c = arms[0]["curve"];
  EXPECT_TRUE(c["test_acc"][0].is_null());  // epoch 1 was not evaluated
  EXPECT_NEAR(c["test_acc_min"][1].get<double>(), 0.27, 1e-9);
  EXPECT_NEAR(c["test_acc_max"][1].get<double>(), 0.28, 1e-9);
  const auto md = table_markdown(t);
  EXPECT_NE(md.find("Selected on the validation split: B (val acc 51.00%, 2/2 seeds; runner-up C, 46.00%)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| val acc % |"), std::string::npos);
  EXPECT_NE(md.find("- Budget run: n = 100, 5 epochs, 2 seeds, val_n = 50 (the paper's)"), std::string::npos) << md;
  // Both new figures are drawn, when gnuplot is here to draw them.
  if (std::system("gnuplot --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no gnuplot";
  const auto files = draw_plots(t, (f.dir / "report").string(), "sel-paper");
  ASSERT_EQ(files.size(), 2u);
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::string head(8, '\0');
    in.read(head.data(), 8);
    EXPECT_EQ(head, std::string("\x89PNG\r\n\x1a\n", 8)) << file;
  }
}

// A grokking grid: arms A (a2, the baseline) and B (b2), 3 seeds, 4 epochs.
json grok_definition() {
  return json::parse(R"json({
    "name": "gk", "title": "Grokking", "task": "grok", "analysis": "grok", "seeds": 3, "baseline": "a",
    "train": {"epochs": 4},
    "arms": [{"id": "a", "label": "A", "train": {"arm": "a2"}}, {"id": "b", "label": "B", "train": {"arm": "b2"}}],
    "profiles": {"paper": {}, "cpu": {"reductions": "r", "seeds": 6}, "smoke": {"seeds": 1}}
  })json");
}

// A grokking table's run-to-run spread: per arm, over the pairs of seeds, the held-out accuracy gap
// at the epochs both evaluated (its mean per pair, averaged; the median of the pairs' largest gaps;
// the widest pair with its epoch), and the isometry error's maximum over evaluated epochs.
TEST(Tables, GrokSpreadBetweenSeedsAndTheWorstIsometryError) {
  ResultsFolder f("spread");
  const auto ex = f.grid(grok_definition(), "paper");
  // Held-out accuracy at the evaluated epochs 2 and 4 per arm and seed; B's seed 2 also evaluated
  // epoch 3, which no other seed did (a gap there would be 0.4: it must not count).
  const std::map<std::string, std::array<std::array<double, 2>, 3>> test = {
      {"a", {{{0.28, 0.30}, {0.29, 0.31}, {0.36, 0.35}}}}, {"b", {{{0.5, 0.5}, {0.5, 0.5}, {0.5, 0.5}}}}};
  for (const auto& r : ex.runs) {
    auto run = image_run(4, 0.0, 0.0);
    for (auto& e : run["epochs"]) e.erase("val_acc");
    run["epochs"][1]["test_acc"] = test.at(r.arm)[r.seed][0];
    run["epochs"][3]["test_acc"] = test.at(r.arm)[r.seed][1];
    if (r.arm == "b" && r.seed == 2) run["epochs"][2]["test_acc"] = 0.9;
    run["epochs"][2]["isometry_error_max"] = r.arm == "a" ? 0.5 : 3e-8;
    run["final"] = run["epochs"].back();
    auto rec = run_of_cell(run, r);
    rec["options"]["n"] = 10000;  // `stiefel train` records every option, the grok task's unused n too
    f.write(fs::path("runs") / r.id / "run.json", rec);
  }
  const auto t = analyse_results(f.dir.string(), 200);
  const auto& arms = t["groups"][0]["arms"];
  ASSERT_TRUE(arms[0].contains("seed_spread")) << arms[0].dump();
  const auto& a = arms[0]["seed_spread"];
  // Pairs (0, 1): gaps 0.01, 0.01; (0, 2): 0.08, 0.05; (1, 2): 0.07, 0.04.
  EXPECT_EQ(a["pairs"], 3);
  EXPECT_NEAR(a["mean_gap"].get<double>(), (0.01 + 0.065 + 0.055) / 3, 1e-12);
  EXPECT_NEAR(a["median_max_gap"].get<double>(), 0.07, 1e-12);
  EXPECT_NEAR(a["widest"]["gap"].get<double>(), 0.08, 1e-12);
  EXPECT_EQ(a["widest"]["epoch"], 2);
  EXPECT_EQ(a["widest"]["seeds"], json::array({0, 2}));
  // B's curves agree at the epochs every seed evaluated; seed 2's lone epoch 3 does not count.
  EXPECT_NEAR(arms[1]["seed_spread"]["widest"]["gap"].get<double>(), 0.0, 1e-12);
  EXPECT_NEAR(arms[0]["iso_max_run"].get<double>(), 0.5, 1e-12);
  // Each seed's held-out curve (its evaluated epochs only) and sustained-grok epoch, and the grok
  // figure draws them: one thin line per seed in its arm's colour, beside the mean.
  ASSERT_EQ(arms[1]["seed_curves"].size(), 3u);
  EXPECT_EQ(arms[1]["seed_curves"][2]["epoch"], json::array({2, 3, 4}));
  EXPECT_EQ(arms[0]["seed_curves"][2]["test_acc"], json::array({0.36, 0.35}));
  EXPECT_EQ(arms[0]["seed_curves"][0]["seed"], 0);
  EXPECT_TRUE(arms[0]["seed_curves"][0].contains("sustained"));
  const auto fig = figure_script(t, "grok");
  EXPECT_NE(fig.script.find("held-out, each seed"), std::string::npos) << fig.script;
  const auto seeds_file = std::find_if(fig.files.begin(), fig.files.end(), [](const auto& file) {
    return file.second.find("2 0.36\n4 0.35\n\n") != std::string::npos;
  });
  EXPECT_NE(seeds_file, fig.files.end()) << "no data file holds A's seed 2 as its own line";
  const auto md = table_markdown(t);
  EXPECT_NE(md.find("| A | 3 | 0.043 | 0.070 | 0.080 (epoch 2, seeds 0 and 2) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 0.5 |\n"), std::string::npos) << md;  // A's iso max closes its row
}

// A run that has not ended (a record with status "running" or "failed") is in none of the
// statistics; the report lists where it stands: the last epoch recorded, the checkpoint beside the
// record (its epoch where the record names the file's hash, as a resume requires), the last
// evaluated test and the last training accuracy, a grokking run's first memorised and grokked
// epochs, and a failed run's error.
TEST(Tables, UnfinishedRunsAreListedWhereTheyStandAndNeverAveraged) {
  ResultsFolder f("unfinished");
  const auto ex = f.grid(grok_definition(), "paper");
  const std::string kept = "the checkpoint kept", other = "another checkpoint";
  for (const auto& r : ex.runs) {
    if (r.arm == "b" && r.seed == 2) continue;  // never started
    auto run = image_run(4, 0.0, 0.0);
    for (auto& e : run["epochs"]) e.erase("val_acc");
    run["epochs"][1]["test_acc"] = 0.96;
    run["epochs"][3]["test_acc"] = 0.40;
    const auto folder = fs::path("runs") / r.id;
    if (r.seed > 0) {
      run.erase("final");
      run["status"] = "running";
      run["epochs"].erase(3);
      run["epochs"][0]["test_acc"] = 0.20;
      run["epochs"][2]["test_acc"] = 0.90;
      run["epochs"][2]["train_acc"] = 0.995;
      // The record names epochs 9 and 10 (9 < 10 as numbers, not as text); the file beside it is 10's,
      // or (A seed 2) one it does not name.
      run["checkpoints"] = {{"9", stiefel::io::sha256(other)}, {"10", stiefel::io::sha256(kept)}};
      fs::create_directories(f.dir / folder);
      std::ofstream(f.dir / folder / "checkpoint.pt") << (r.seed == 2 ? "unnamed" : kept);
    }
    if (r.arm == "b" && r.seed == 1) {  // evaluated every second epoch, failed in the fourth
      run["status"] = "failed";
      run["epochs"] = json::array({run["epochs"][1]});
      run.erase("checkpoints");
      fs::remove(f.dir / folder / "checkpoint.pt");
      run["failure"] = {{"epoch", 4}, {"step", 1}, {"error", "out of memory | line\nbreak"}};
    }
    auto rec = run_of_cell(run, r);
    rec["options"]["n"] = 10000;
    f.write(folder / "run.json", rec);
  }
  const auto t = analyse_results(f.dir.string(), 200);
  EXPECT_EQ(t["runs_completed"], 2);
  EXPECT_EQ(t["runs_unfinished"], 3);
  const auto& arms = t["groups"][0]["arms"];
  EXPECT_EQ(arms[0]["n"], 1);
  EXPECT_NEAR(arms[0]["end_mean"].get<double>(), 0.40, 1e-12);  // seed 0 alone
  ASSERT_EQ(arms[0]["unfinished"].size(), 2u) << arms[0].dump();
  const auto& a = arms[0]["unfinished"][0];
  EXPECT_EQ(a["seed"], 1);
  EXPECT_EQ(a["status"], "running");
  EXPECT_EQ(a["epoch"], 3);
  EXPECT_EQ(a["epochs_planned"], 4);
  EXPECT_EQ(a["checkpoint"], "resumable");
  EXPECT_EQ(a["checkpoint_epoch"], 10);
  EXPECT_NEAR(a["test_acc"].get<double>(), 0.90, 1e-12);  // the last evaluated, not the first or the best
  EXPECT_EQ(a["test_epoch"], 3);
  EXPECT_EQ(a["memorized"], 3);
  EXPECT_EQ(a["grokked"], 2);
  const auto& unnamed = arms[0]["unfinished"][1];
  EXPECT_EQ(unnamed["checkpoint"], "not named by the record");
  EXPECT_TRUE(unnamed["checkpoint_epoch"].is_null());
  ASSERT_EQ(arms[1]["unfinished"].size(), 1u);
  const auto& b = arms[1]["unfinished"][0];
  EXPECT_EQ(b["status"], "failed");
  EXPECT_EQ(b["epoch"], 2);  // the last recorded epoch, not the count of records
  EXPECT_EQ(b["checkpoint"], "none");
  EXPECT_EQ(b["failure"]["epoch"], 4);
  const auto md = table_markdown(t);
  EXPECT_NE(md.find("- Runs completed: 2 of 6; unfinished: 3 (listed below)\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| arm | seed | status | epoch reached (of) | checkpoint | held-out acc (epoch) | train acc | "
                    "first memorized | first grokked |\n|---|---|---|---|---|---|---|---|---|\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| A | 1 | running | 3 (4) | 10 | 0.900 (3) | 0.995 | 3 | 2 |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| A | 2 | running | 3 (4) | not named by the record | 0.900 (3) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| B | 1 | failed at epoch 4: out of memory \\| line break | 2 (4) | none | 0.960 (2) | 0.500 | "
                    "– | 2 |\n"),
            std::string::npos)
      << md;

  // An image table lists its unfinished runs in percent, as its arm table; a run that recorded no
  // epoch yet has none of the epochs or accuracies.
  ResultsFolder image("unfinished-image");
  const auto grid = image.grid(selection_definition(), "paper");
  for (const auto& r : grid.runs) {
    if (r.arm != "a") continue;
    auto run = image_run(5, 0.30, 0.40);
    if (r.seed == 1) {
      run.erase("final");
      run["status"] = "running";
      run["epochs"] = json::array();
    }
    image.write(fs::path("runs") / r.id / "run.json", run_of_cell(run, r));
  }
  const auto it = table_markdown(analyse_results(image.dir.string(), 200));
  EXPECT_NE(it.find("| arm | seed | status | epoch reached (of) | checkpoint | test acc % (epoch) | train acc % |\n"
                    "|---|---|---|---|---|---|---|\n| A | 1 | running | – (5) | none | – | – |\n"),
            std::string::npos)
      << it;
}

TEST(Tables, AtPaperBudgetOnlyWhenEveryTrainSettingButDataAndDeviceMatches) {
  ResultsFolder f("budget");
  auto analyse = [&](const std::string& profile) {
    f.grid(selection_definition(), profile);
    return analyse_results(f.dir.string(), 200);
  };
  const auto paper = analyse("paper");
  EXPECT_TRUE(paper["at_paper_budget"].get<bool>());
  EXPECT_EQ(paper["budget"], json({{"n", 100}, {"epochs", 5}, {"val_n", 50}, {"seeds", 2}}));
  EXPECT_TRUE(analyse("where")["at_paper_budget"].get<bool>());
  const auto cpu = analyse("cpu");
  EXPECT_FALSE(cpu["at_paper_budget"].get<bool>());
  EXPECT_EQ(cpu["differs_from_paper"], json::array({"batch"}));
  EXPECT_EQ(cpu["budget"]["batch"], 128);
  EXPECT_EQ(cpu["paper_budget"], paper["budget"]);
  const auto eval = analyse("eval");
  EXPECT_FALSE(eval["at_paper_budget"].get<bool>());
  EXPECT_EQ(eval["differs_from_paper"], json::array({"eval_every"}));
  const auto fewer = analyse("fewer");
  EXPECT_FALSE(fewer["at_paper_budget"].get<bool>());
  EXPECT_EQ(fewer["differs_from_paper"], json::array({"seeds"}));
  // A reading profile runs the paper's budget: the settings its reading changes are not reductions.
  const auto rate = analyse("rate");
  EXPECT_TRUE(rate["at_paper_budget"].get<bool>());
  EXPECT_EQ(rate["reading"], "AdamW at 1e-2");
  EXPECT_NE(table_markdown(rate).find("- Reading: AdamW at 1e-2"), std::string::npos);
  const auto smoke = analyse("smoke");
  EXPECT_EQ(smoke["differs_from_paper"], json::array({"epochs", "n", "seeds"}));
  const auto md = table_markdown(smoke);
  EXPECT_EQ(md.rfind("# Selection (n = 100, 5 epochs) — run at n = 10, 1 epoch, 1 seed (reduced budget)\n", 0), 0u)
      << md;
  EXPECT_NE(md.find("- Budget run: n = 10, 1 epoch, 1 seed, val_n = 50 (reduced: the paper's claims at n = 100, 5 "
                    "epochs, 2 seeds, val_n = 50 are not decided by this table)"),
            std::string::npos)
      << md;
  // A setting outside n, epochs and seeds that differs appears in the heading.
  EXPECT_EQ(table_heading(cpu),
            "Selection (n = 100, 5 epochs) — run at n = 100, 5 epochs, 2 seeds, batch = 128 (reduced budget)");
  EXPECT_EQ(table_heading(paper), "Selection (n = 100, 5 epochs)");
}

// Settings that vary together (Table 3: each n with its own epochs) read as pairs, never as two sorted
// lists that pair the wrong values; a setting that varies alone still lists its values.
TEST(Tables, ABudgetWhoseSettingsVaryTogetherIsPhrasedAsPairs) {
  const json together = {
      {"n", {1000, 2000, 50000}},
      {"epochs", {10, 250, 500}},
      {"combinations", {{"settings", {"n", "epochs"}}, {"values", {{1000, 500}, {2000, 250}, {50000, 10}}}}},
      {"seeds", 3}};
  EXPECT_EQ(budget_phrase(together), "n = 1000 (500 epochs) / 2000 (250 epochs) / 50000 (10 epochs), 3 seeds");
  const json alone = {{"n", {1000, 2000}}, {"epochs", 40}, {"seeds", 1}};
  EXPECT_EQ(budget_phrase(alone), "n = 1000/2000, 40 epochs, 1 seed");
  const json with_batch = {{"n", {1000, 2000}},
                           {"batch", {64, 128}},
                           {"combinations", {{"settings", {"n", "batch"}}, {"values", {{1000, 64}, {2000, 128}}}}},
                           {"epochs", 1},
                           {"seeds", 2}};
  EXPECT_EQ(budget_phrase(with_batch), "n = 1000 (batch = 64) / 2000 (batch = 128), 1 epoch, 2 seeds");
  // A table from a file whose combinations are malformed is refused, not read past its end.
  for (const json& bad : {json({{"settings", {"n", "epochs"}}}), json({{"settings", {"n"}}, {"values", json::array()}}),
                          json({{"settings", {"n", "epochs"}}, {"values", {{1000}}}}), json(3)}) {
    json b = together;
    b["combinations"] = bad;
    EXPECT_THROW(budget_phrase(b), ExperimentError) << bad;
  }
}

TEST(Tables, TheCurrentDefinitionLabelsResultsOfTheSameGridInAnyOrder) {
  ResultsFolder f("current");
  f.grid(selection_definition(), "paper");
  // Stored in another order (results written before the grid became seed-major).
  auto meta = read_json_file((f.dir / "experiment.json").string());
  std::reverse(meta["grid"].begin(), meta["grid"].end());
  f.write("experiment.json", meta);
  auto current = selection_definition();
  current["profiles"]["cpu"]["seeds"] = 6;
  current["arms"][0]["label"] = "A, relabelled";
  f.write("definitions/sel.json", current);
  auto t = analyse_results(f.dir.string(), 200, 0, (f.dir / "definitions").string());
  EXPECT_EQ(t["definition"], "experiments/sel.json");
  EXPECT_EQ(t["groups"][0]["arms"][0]["label"], "A, relabelled");
  // A different grid keeps the stored definition.
  current["train"]["epochs"] = 6;
  f.write("definitions/sel.json", current);
  t = analyse_results(f.dir.string(), 200, 0, (f.dir / "definitions").string());
  EXPECT_EQ(t["definition"], "stored with the results");
  EXPECT_EQ(t["groups"][0]["arms"][0]["label"], "A");
}

TEST(ExperimentDefinition, SelectVariantAndValidationSplit) {
  ResultsFolder f("definitions");
  auto load = [&](const json& d) {
    f.write("d.json", d);
    return load_definition((f.dir / "d.json").string());
  };
  auto good = selection_definition();
  good["profiles"]["cpu"]["seeds"] = 6;  // a cpu profile keeps six paired seeds
  EXPECT_NO_THROW(load(good));
  auto bad = good;
  bad["select"] = {{"metric", "test_acc"}};
  EXPECT_THROW(load(bad), ExperimentError);
  bad = good;
  bad["arms"][2]["variant"] = "yes";
  EXPECT_THROW(load(bad), ExperimentError);
  bad = good;
  bad["train"]["val_split"] = 50;
  EXPECT_THROW(load(bad), ExperimentError);
  // A reading profile names the settings its reading changes, and reduces nothing.
  for (const json& reading : {json{{"reading", "r"}}, json{{"reading", "r"}, {"reading_settings", json::array()}},
                              json{{"reading", "r"}, {"reading_settings", {"adam_rate"}}},
                              json{{"reading", ""}, {"reading_settings", {"adam_lr"}}},
                              json{{"reading", "r"}, {"reading_settings", {"adam_lr"}}, {"reductions", "n"}}}) {
    bad = good;
    bad["profiles"]["rate"] = reading;
    EXPECT_THROW(load(bad), ExperimentError) << reading.dump();
  }
}

// A theory row listing CERTIFICATE (and REFUTED_BY, where given), and a certificate whose
// claims k1, k2, … have the observations OBSERVED.
json theory_row(const json& certificate, const json& refuted_by = nullptr) {
  json row = {{"id", "c"}, {"claim", "x"}, {"where", "§"}, {"paper", "p"}, {"kind", "theory"}};
  if (!certificate.is_null()) row["certificate"] = certificate;
  if (!refuted_by.is_null()) row["refuted_by"] = refuted_by;
  return {{"claims", {row}}};
}
json certificate_with(const std::vector<std::string>& observed) {
  json cert = {{"claims", json::array()}};
  for (std::size_t i = 0; i < observed.size(); ++i)
    cert["claims"].push_back({{"id", "k" + std::to_string(i + 1)}, {"observed", observed[i]}});
  return cert;
}

TEST(Ledger, TheoryClaimsFollowTheCertificate) {
  const json claims = theory_row({"k1", "k2"});
  json cert = certificate_with({"certified", "certified"});
  const auto row = build_ledger(claims, {}, cert)["claims"][0];
  EXPECT_EQ(row["verdict"], "confirmed");
  EXPECT_EQ(row["evidence"][0]["source"], "reports/certificate.json");
  cert["claims"][1]["observed"] = "refuted";
  EXPECT_EQ(build_ledger(claims, {}, cert)["claims"][0]["verdict"], "refuted");
  EXPECT_EQ(build_ledger(claims, {}, nullptr)["claims"][0]["verdict"], "not run");
  // Entries from two certificates (`stiefel report --certificate A --certificate B`): the row names both.
  cert["claims"][0]["certificate_file"] = "a.json";
  cert["claims"][1]["certificate_file"] = "b.json";
  EXPECT_EQ(build_ledger(claims, {}, cert)["claims"][0]["evidence"][0]["source"], "a.json, b.json");
}

// A corrected form the paper's statement contradicts refutes it when certified; where the
// correction itself fails, the paper's statement is not confirmed either.
TEST(Ledger, CertifiedCorrectionsRefuteTheirClaim) {
  json claims = theory_row({"k1"}, {"k2"});
  json cert = certificate_with({"certified", "certified"});
  const auto row = build_ledger(claims, {}, cert)["claims"][0];
  EXPECT_EQ(row["verdict"], "refuted");
  EXPECT_NE(row["evidence"][0]["ours"].get<std::string>().find("k2 (corrected form): certified"), std::string::npos);
  cert["claims"][1]["observed"] = "refuted";
  EXPECT_EQ(build_ledger(claims, {}, cert)["claims"][0]["verdict"], "not confirmed");
  claims = theory_row(nullptr, {"k2"});  // a correction alone decides
  cert["claims"][1]["observed"] = "certified";
  EXPECT_EQ(build_ledger(claims, {}, cert)["claims"][0]["verdict"], "refuted");
  EXPECT_EQ(build_ledger(claims, {}, nullptr)["claims"][0]["verdict"], "not run");
}

}  // namespace

// A malformed run record is refused at load time naming the file and the field, never read as a
// default (a misspelt or non-finite metric used to be undefined behaviour in the tables).
TEST(RunRecord, MalformedRecordsAreRefusedNamingTheField) {
  EXPECT_NO_THROW(check_run_record(image_run(4, 0.6, 0.55), "r.json"));
  struct Case {
    std::function<void(json&)> damage;
    std::string field;
  };
  const std::vector<Case> cases = {
      {[](json& r) { r["final"].erase("test_acc"); }, "/final/test_acc"},
      {[](json& r) { r["final"]["test_acc"] = "0.6"; }, "/final/test_acc"},
      {[](json& r) { r["epochs"][1]["isometry_error_max"] = nullptr; }, "/epochs/1/isometry_error_max"},
      {[](json& r) { r["epochs"][2]["train_acc"] = std::nan(""); }, "/epochs/2/train_acc"},
      {[](json& r) { r["epochs"][2]["train_acc"] = 1.5; }, "/epochs/2/train_acc"},
      {[](json& r) { r["epochs"][2]["epoch"] = 1; }, "/epochs/2/epoch"},
      {[](json& r) { r["epochs"][0].erase("train_acc"); }, "/epochs/0"},
      {[](json& r) { r["epochs"][0]["train_accuracy"] = 0.5; }, "/epochs/0/train_accuracy"},
      {[](json& r) { r["final"]["tangent_norm"] = 0.5; }, "/final/tangent_norm"},
      {[](json& r) { r["config"]["epochs"] = -4; }, "/config/epochs"},
      {[](json& r) { r["config"]["model"]["head"] = 8; }, "/config/model/head"},
      {[](json& r) { r.erase("status"); }, "(document)"},
      {[](json& r) { r["status"] = "done"; }, "/status"},
      {[](json& r) { r["status"] = "diverged"; }, "(document)"},
      {[](json& r) { r["epochs"] = json::object(); }, "/epochs"},
      {[](json& r) { r["dataset"] = 3; }, "/dataset"},
      {[](json& r) {
         r["checkpoints"] = {{"3", "abc"}};
       },
       "/checkpoints/3"},
      {[](json& r) { r = json::array(); }, "(document)"},
  };
  for (const auto& c : cases) {
    json r = image_run(4, 0.6, 0.55);
    c.damage(r);
    try {
      check_run_record(r, "r.json");
      ADD_FAILURE() << "accepted a record with a bad " << c.field << ": " << r.dump();
    } catch (const ExperimentError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("r.json: " + c.field + ":", 0), 0u) << e.what();
    }
  }
}

// The claims file is checked whole at load time (the fuzzer found a theory claim without
// "certificate" read through nlohmann's const operator[], a use after free): every malformed claim
// is refused naming the claim and the field.
TEST(Ledger, MalformedClaimsAreRefusedNamingTheClaimAndTheField) {
  const json theory = {{"id", "t"},    {"claim", "c"},     {"where", "w"},
                       {"paper", "p"}, {"kind", "theory"}, {"certificate", {"prop1-joint-gauge"}}};
  const json empirical = {{"id", "e"},
                          {"claim", "c"},
                          {"where", "w"},
                          {"paper", "p"},
                          {"kind", "empirical"},
                          {"experiment", "table6"},
                          {"ref", {{"arm", "b2"}, {"field", "acc_mean"}}},
                          {"rule", {{"type", "above"}, {"value", 1.0}}}};
  EXPECT_NO_THROW(build_ledger({{"claims", {theory, empirical}}}, {}, nullptr, "claims.json"));
  struct Case {
    json claim;
    std::string message;
  };
  auto without = [](json c, const char* k) {
    c.erase(k);
    return c;
  };
  auto with = [](json c, const char* k, const json& v) {
    c[k] = v;
    return c;
  };
  const std::vector<Case> cases = {
      {without(theory, "certificate"), "claim t: /claims/0: "},
      {with(theory, "certificate", json::array()), "claim t: /claims/0"},
      {with(theory, "refuted_by", json::array()), "claim t: /claims/0"},
      {with(empirical, "refuted_by", {"prop1-joint-gauge"}), "claim e: /claims/0"},
      {with(theory, "rule", {{"type", "above"}}), "claim t: /claims/0"},
      {with(theory, "kind", "folklore"), "claim t: /claims/0/kind: \"folklore\" is not one of"},
      {with(theory, "certficate", json::array()), "claim t: /claims/0/certficate: unknown field \"certficate\""},
      {without(theory, "paper"), "claim t: /claims/0: missing \"paper\""},
      {with(empirical, "ref", {{"arm", "b2"}}), "claim e: /claims/0/ref: missing \"field\""},
      {with(empirical, "ref", {{"field", "acc_mean"}}), "claim e: /claims/0/ref: matches none"},
      {with(empirical, "ref", {{"field", "acc_mean"}, {"arm", 3}}), "claim e: /claims/0/ref/arm: expected string"},
      {with(empirical, "ref", {{"field", "test_acc.mean"}, {"arm", "b2"}}),
       "claim e: /claims/0/ref/field: \"test_acc.mean\" is not one of"},
      {with(empirical, "rule", {{"type", "above"}}), "claim e: /claims/0/rule: matches none"},
      {with(empirical, "rule", {{"type", "within"}, {"value", 1}}), "claim e: /claims/0/rule: matches none"},
      {with(empirical, "rule", {{"type", "ratio_above"}, {"value", 1}}), "claim e: /claims/0/rule: matches none"},
      {with(empirical, "rule", {{"type", "greater"}, {"value", 1}}), "claim e: /claims/0/rule/type: \"greater\""},
      {with(empirical, "rule", {{"type", "above"}, {"value", 1}, {"margin", 1}}),
       "claim e: /claims/0/rule/margin: unknown field"},
      {without(empirical, "experiment"), "claim e: /claims/0: "},
      {with(empirical, "min_epochs", "many"), "claim e: /claims/0/min_epochs: expected number"},
      {with(empirical, "certificate", {"x"}), "claim e: /claims/0"},
      {json::array(), "/claims/0: expected object"},
  };
  for (const auto& c : cases) {
    try {
      build_ledger({{"claims", {c.claim}}}, {}, nullptr, "claims.json");
      ADD_FAILURE() << "accepted " << c.claim.dump();
    } catch (const ExperimentError& e) {
      EXPECT_NE(std::string(e.what()).find("claims.json: " + c.message), std::string::npos) << e.what();
    }
  }
}

// ---- Text from definitions and results never reaches a shell or gnuplot's evaluation ----

// Texts that a shell, or gnuplot inside a double-quoted string, would evaluate: each would make a
// file MARKER-k if it ran.
std::vector<std::string> hostile_texts(const fs::path& marker) {
  const std::string m = marker.string();
  return {"`touch " + m + "-1`",
          "x\" . system(\"touch " + m + "-2\") . \"",
          "'; system('touch " + m + "-3'); print '",
          "$(touch " + m + "-4) ; touch " + m + "-5",
          "@macro and @@ and \\`touch " + m + "-6\\`",
          "two\nlines `touch " + m + "-7`",
          "back\\slash \\n \"quotes\" 'single' \\",
          std::string("tab\tcr\rnul") + std::string(1, '\0') + "end"};
}

// What gnuplot shows for TEXT: control characters other than tab and line break as U+FFFD.
std::string shown(const std::string& text) {
  std::string s;
  for (const char c : text)
    s += (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') ? std::string("\xEF\xBF\xBD")
                                                                          : std::string(1, c);
  return s;
}

bool have_gnuplot() { return std::system("gnuplot --version > /dev/null 2>&1") == 0; }

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir)) names.push_back(e.path().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Plots, GnuplotShowsEveryHostileTextAsItIsAndRunsNothing) {
  if (!have_gnuplot()) GTEST_SKIP() << "no gnuplot";
  ResultsFolder t("print");
  const auto texts = hostile_texts(t.dir / "ran");
  std::string script = "macro = 'EXPANDED'\nset print " + gnuplot_string((t.dir / "printed.txt").string()) + "\n";
  std::string expected;
  for (const auto& s : texts) {
    script += "print " + gnuplot_string(s) + "\n";
    expected += shown(s) + "\n";
  }
  std::ofstream(t.dir / "print.gp") << script;
  ASSERT_EQ(std::system(("gnuplot '" + (t.dir / "print.gp").string() + "' 2>/dev/null").c_str()), 0) << script;
  std::ifstream in(t.dir / "printed.txt", std::ios::binary);
  const std::string printed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(printed, expected);
  EXPECT_EQ(entries(t.dir), (std::vector<std::string>{(t.dir / "print.gp").string(), (t.dir / "printed.txt").string()}))
      << "gnuplot ran a command";
}

// A table whose title, labels and group labels are the hostile texts, with completed runs, so that
// every kind of figure has series to draw.
json hostile_table(const fs::path& marker, const fs::path& dir) {
  const auto texts = hostile_texts(marker);
  json d = selection_definition();
  d["title"] = texts[0] + texts[5];
  d["plots"] = {"accuracy", "paired", "isometry", "eps"};
  for (std::size_t i = 0; i < d["arms"].size(); ++i) {
    d["arms"][i]["label"] = texts[1 + i];
    d["arms"][i]["x"] = 1e-8 * std::pow(100.0, double(i));
  }
  d["groups"] = {{{"id", "main"}, {"label", texts[6] + texts[7]}}};
  const auto ex = resolve(d, "paper", "t.json");
  json grid = json::array();
  for (const auto& r : ex.runs) grid.push_back({{"id", r.id}, {"train", r.train}});
  fs::create_directories(dir);
  std::ofstream(dir / "experiment.json")
      << json({{"definition", d}, {"profile", "paper"}, {"grid", grid}, {"source", texts[3]}}).dump(2);
  for (const auto& r : ex.runs) {
    fs::create_directories(dir / "runs" / r.id);
    std::ofstream(dir / "runs" / r.id / "run.json")
        << run_of_cell(image_run(5, 0.3 + 0.01 * double(r.seed), 0.4), r).dump(2);
  }
  return analyse_results(dir.string(), 200, 0, "");
}

// TMPDIR set to DIR for one scope.
struct ScopedEnv {
  std::string name, old;
  bool had;
  ScopedEnv(const std::string& n, const std::string& value) : name(n), had(std::getenv(n.c_str()) != nullptr) {
    if (had) old = std::getenv(n.c_str());
    ::setenv(n.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() { had ? (void)::setenv(name.c_str(), old.c_str(), 1) : (void)::unsetenv(name.c_str()); }
};

TEST(Plots, HostileTitlesLabelsAndOutputFolderRunNothingAndWriteOnlyTheFigures) {
  if (!have_gnuplot()) GTEST_SKIP() << "no gnuplot";
  ResultsFolder t("hostile");
  const fs::path marker = t.dir / "ran";
  const auto table = hostile_table(marker, t.dir / "results");
  // The scratch folder's old predictable name, planted as a link to a folder it must never write.
  fs::create_directories(t.dir / "tmp");
  fs::create_directories(t.dir / "victim");
  fs::create_directory_symlink(t.dir / "victim", t.dir / "tmp" / ("stiefel-plot-" + std::to_string(::getpid())));
  const ScopedEnv tmpdir("TMPDIR", (t.dir / "tmp").string());
  const fs::path out =
      t.dir / ("report `touch " + marker.string() + "-out` $(touch " + marker.string() + "-out2) \" '");
  const auto files = draw_plots(table, out.string(), "hostile-paper");
  EXPECT_EQ(files.size(), 4u);
  for (const auto& f : files) EXPECT_EQ(fs::path(f).parent_path(), out) << f;
  for (int k = 1; k <= 7; ++k) EXPECT_FALSE(fs::exists(marker.string() + "-" + std::to_string(k))) << k;
  EXPECT_FALSE(fs::exists(marker.string() + "-out"));
  EXPECT_FALSE(fs::exists(marker.string() + "-out2"));
  EXPECT_TRUE(fs::is_empty(t.dir / "victim")) << "written through the planted link";
  // Nothing left in TMPDIR but the planted link: the scratch folder is gone.
  EXPECT_EQ(entries(t.dir / "tmp"),
            (std::vector<std::string>{(t.dir / "tmp" / ("stiefel-plot-" + std::to_string(::getpid()))).string()}));
  // The figures and nothing else were written under the output folder.
  std::vector<std::string> expected = files;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(entries(out), expected);
}

TEST(Plots, AFailingGnuplotLeavesNoScratchFolderAndNoFigure) {
  ResultsFolder t("failing");
  fs::create_directories(t.dir / "bin");
  fs::create_directories(t.dir / "tmp");
  std::ofstream(t.dir / "bin" / "gnuplot") << "#!/bin/sh\necho 'cannot draw this' >&2\nexit 1\n";
  fs::permissions(t.dir / "bin" / "gnuplot", fs::perms::owner_all);
  const auto table = hostile_table(t.dir / "ran", t.dir / "results");
  const ScopedEnv path("PATH", (t.dir / "bin").string());
  const ScopedEnv tmpdir("TMPDIR", (t.dir / "tmp").string());
  try {
    draw_plots(table, (t.dir / "out").string(), "hostile-paper");
    ADD_FAILURE() << "a failing gnuplot was not reported";
  } catch (const ExperimentError& e) {
    EXPECT_NE(std::string(e.what()).find("gnuplot failed (exit 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot draw this"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(t.dir / "tmp"));
  EXPECT_TRUE(!fs::exists(t.dir / "out") || fs::is_empty(t.dir / "out"));
}

// A table that lacks a field, or whose curve columns differ in length, is an error (out_of_range)
// for every kind of figure: nothing reads past a column or behind a missing key (which, with const
// operator[], reads freed or foreign memory and fails, if at all, with some other error).
TEST(Plots, ATableWithAMissingFieldOrAShortColumnIsAnError) {
  const json curve = {{"epoch", {1, 2, 3}},
                      {"train_acc", {0.1, 0.2, 0.3}},
                      {"test_acc", {0.1, 0.2, 0.3}},
                      {"test_acc_min", {0.1, 0.2, 0.3}},
                      {"test_acc_max", {0.1, 0.2, 0.3}},
                      {"isometry_error_max", {1e-3, 1e-3, 1e-3}}};
  const json arm = {{"id", "b2"}, {"curve", curve}, {"n", 2}};
  const json table = {{"title", "t"},
                      {"profile", "p"},
                      {"groups", {{{"id", "g"}, {"label", "g"}, {"arms", {arm}}, {"contrasts", json::array()}}}}};
  for (const std::string kind : {"isometry", "grok", "accuracy"})
    EXPECT_FALSE(figure_script(table, kind).script.empty()) << kind;  // the well-formed table draws

  std::vector<std::pair<std::string, json>> broken;
  for (const char* column : {"train_acc", "test_acc", "test_acc_min", "test_acc_max", "isometry_error_max"}) {
    auto t = table;
    t["groups"][0]["arms"][0]["curve"][column] = {0.1};
    broken.emplace_back(std::string("short ") + column, t);
  }
  auto t = table;
  t["groups"][0]["arms"][0].erase("id");
  broken.emplace_back("arm without id", t);
  t = table;
  t.erase("profile");
  broken.emplace_back("table without profile", t);
  for (const auto& [what, bad] : broken) {
    int refused = 0;
    for (const std::string kind : {"isometry", "accuracy"}) {
      try {
        figure_script(bad, kind);
      } catch (const json::out_of_range&) {
        ++refused;
      }
    }
    EXPECT_GE(refused, 1) << what;
  }
  t = table;
  t["groups"][0]["arms"][0]["curve"].erase("isometry_error_max");
  EXPECT_THROW(figure_script(t, "isometry"), json::out_of_range);
  t = table;
  t["groups"][0]["arms"][0]["vs_baseline"] = {{"differences", {{{"diff", 1.0}}}}, {"diff_mean", 1.0}};
  EXPECT_FALSE(figure_script(t, "paired").script.empty());
  t["groups"][0]["arms"][0]["vs_baseline"].erase("diff_mean");
  EXPECT_THROW(figure_script(t, "paired"), json::out_of_range);
  // A sweep's x on its logarithmic axis must be > 0: refused by name, not as a gnuplot failure (N11).
  t = table;
  t["groups"][0]["x"] = 1000;
  t["groups"][0]["arms"][0]["vs_baseline"] = {{"diff_mean", 1.0}, {"ci_low", 0.5}, {"ci_high", 1.5}};
  EXPECT_FALSE(figure_script(t, "gap_vs_n").script.empty());
  t["groups"][0]["x"] = 0;
  try {
    figure_script(t, "gap_vs_n");
    ADD_FAILURE() << "gap_vs_n drew x = 0 on a logarithmic axis";
  } catch (const ExperimentError& e) {
    EXPECT_NE(std::string(e.what()).find("group g has x = 0 on a logarithmic axis"), std::string::npos) << e.what();
  }
  t = table;
  t["groups"][0]["arms"][0]["x"] = -1e-8;
  EXPECT_THROW(figure_script(t, "eps"), ExperimentError);
}

// Each arm has one colour and one label in every figure, from the arm registry; the legend sits
// below the plot on a canvas that grows with it; every title states the AdamW rate.
TEST(Plots, AnArmKeepsItsRegistryColourAndLabelAndTheLegendNeverSqueezesThePlot) {
  std::set<std::string> colours;
  for (const auto& arm : stiefel::arms::all()) {
    EXPECT_TRUE(std::regex_match(arm.colour, std::regex("#[0-9a-f]{6}"))) << arm.name << " " << arm.colour;
    EXPECT_TRUE(colours.insert(arm.colour).second) << arm.name << ": colour shared with another arm";
  }
  const json curve = {{"epoch", {1, 2}},
                      {"train_acc", {0.1, 0.2}},
                      {"test_acc", {0.1, 0.2}},
                      {"test_acc_min", {0.1, 0.2}},
                      {"test_acc_max", {0.1, 0.2}},
                      {"isometry_error_max", {1e-3, 1e-3}}};
  auto entry = [&](const std::string& id, const std::string& train_arm, const std::string& label) {
    return json{{"id", id}, {"train_arm", train_arm}, {"label", label}, {"curve", curve}, {"n", 3}};
  };
  json table = {{"title", "t"},
                {"profile", "p"},
                {"adam_lr", 0.01},
                {"groups",
                 {{{"id", "g"},
                   {"label", "g"},
                   {"arms",
                    {entry("base", "a2", "A2 (AdamW + Xavier)"), entry("eps-small", "b2", "B2 at eps = 1e-8"),
                     entry("eps-large", "b2", "B2 at eps = 1e-1 (B2)")}},
                   {"contrasts", json::array()}}}}};
  const auto b2 = stiefel::arms::find("b2"), a2 = stiefel::arms::find("a2");
  for (const std::string kind : {"isometry", "accuracy", "grok"}) {
    const auto script = figure_script(table, kind).script;
    SCOPED_TRACE(kind);
    EXPECT_NE(script.find("AdamW rate 0.01"), std::string::npos);
    EXPECT_NE(script.find("set key outside below"), std::string::npos);
    // A2 appears once: its registry label alone, in its colour. B2 twice: the registry label with
    // each entry's own (its closing "(B2)" dropped), the registry colour and then a shade of it.
    EXPECT_NE(script.find("lc rgb '" + a2.colour + "' title 'A2"), std::string::npos) << script;
    EXPECT_EQ(script.find("A2 (AdamW"), std::string::npos);
    EXPECT_NE(script.find("lc rgb '" + b2.colour + "' title 'B2 — B2 at eps = 1e-8"), std::string::npos);
    std::smatch second;
    ASSERT_TRUE(std::regex_search(script, second, std::regex("lc rgb '(#[0-9a-f]{6})' title 'B2 — B2 at eps = 1e-1")))
        << script;
    EXPECT_NE(second[1].str(), b2.colour);
    EXPECT_EQ(script.find("1e-1 (B2)"), std::string::npos);
  }
  // The canvas grows by a row of the legend for every two more series.
  auto height = [](const std::string& script) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(script, m, std::regex("size 1000,([0-9]+)")));
    return std::stoi(m[1]);
  };
  const int three = height(figure_script(table, "isometry").script);
  auto five = table;
  five["groups"][0]["arms"].push_back(entry("pa16", "b2-sgd", "PA16"));
  five["groups"][0]["arms"].push_back(entry("frozen", "frozen", "Frozen"));
  EXPECT_EQ(height(figure_script(five, "isometry").script), three + 18);
}

// ---- Records are checked against their grid cell; counts and files are bounded ----

TEST(CellCheck, ARecordMatchesOnlyItsOwnCell) {
  const auto ex = resolve(definition(), "paper", "t.json");
  const auto& cell = ex.runs[1];  // g1/b/seed-0: arm b2, n 200, epochs 9
  json record = {{"options", {{"task", "image"}, {"arm", "b2"}, {"seed", 0}, {"n", 200}, {"epochs", 9}}},
                 {"config", {{"eps", 1e-8}}}};
  EXPECT_EQ(cell_mismatch(record, cell), "");
  EXPECT_NE(cell_mismatch(record, ex.runs[0]), "");  // g1/a/seed-0: another arm, another budget
  auto other = record;
  other["options"]["seed"] = 1;
  EXPECT_EQ(cell_mismatch(other, cell), "seed 1 (the cell's: 0)");
  other = record;
  other["options"]["batch"] = 128;  // a setting the cell leaves at its default (256)
  EXPECT_EQ(cell_mismatch(other, cell), "batch 128 (the cell's: 256)");
  other = record;
  other["options"]["eps"] = -1;  // the task's default, resolved in the config
  auto with_eps = cell;
  with_eps.train["eps"] = 1e-8;
  EXPECT_EQ(cell_mismatch(other, with_eps), "");
  with_eps.train["eps"] = 1e-6;
  EXPECT_EQ(cell_mismatch(other, with_eps), "eps 1e-08 (the cell's: 1e-06)");
  EXPECT_EQ(cell_mismatch(json::object(), cell).substr(0, 4), "seed");  // no options, no config
  // The modulus is in the options only where it is not 97: a record without it ran at 97.
  auto modulus = cell;
  modulus.train["modulus"] = 23;
  EXPECT_EQ(cell_mismatch(record, modulus), "modulus 97 (the cell's: 23)");
  other = record;
  other["options"]["modulus"] = 23;
  EXPECT_EQ(cell_mismatch(other, modulus), "");
  EXPECT_EQ(cell_mismatch(other, cell), "modulus 23 (the cell's: 97)");
}

// A record from before "options" were recorded is held to what its config states, and a setting it
// cannot state must be the default in the cell (never assumed to be what the cell asks).
TEST(CellCheck, ARecordWithoutOptionsIsHeldToItsConfig) {
  const json grok_cell_train = {{"task", "grok"}, {"arm", "b2"}, {"epochs", 100}, {"eval_every", 10}, {"seed", 0}};
  RunSpec cell;
  cell.seed = 0;
  cell.train = grok_cell_train;
  json record = {{"config",
                  {{"task", "grok"},
                   {"arm", "b2"},
                   {"seed", 0},
                   {"n", 10000},
                   {"epochs", 100},
                   {"adam_lr", 0.001},
                   {"weight_decay", 1.0},
                   {"eps", 0.001},
                   {"tau", 0.1},
                   {"init_scale", 1.0},
                   {"adam_betas", {0.9, 0.999}}}},
                 {"epochs", json::array()}};
  for (int e = 10; e <= 100; e += 10) record["epochs"].push_back({{"epoch", e}, {"test_acc", 0.5}});
  EXPECT_EQ(cell_mismatch(record, cell), "");
  auto other = record;
  other["config"]["adam_betas"] = {0.9, 0.98};  // the power stabilisation ran
  EXPECT_EQ(cell_mismatch(other, cell), "power_stabilisation true (the cell's: false)");
  other = record;
  other["epochs"] = json::array();
  for (int e = 20; e <= 100; e += 20) other["epochs"].push_back({{"epoch", e}, {"test_acc", 0.5}});
  EXPECT_EQ(cell_mismatch(other, cell), "eval_every 20 (the cell's: 10)");
  auto rate = cell;
  rate.train["riemann_lr"] = 0.3;  // a setting the config cannot state, set away from its default
  EXPECT_EQ(cell_mismatch(record, rate), "riemann_lr unset (the cell's: 0.3)");
  auto decay = cell;
  decay.train["weight_decay"] = 0.3;
  EXPECT_EQ(cell_mismatch(record, decay), "weight_decay 1.0 (the cell's: 0.3)");
  // The modulus: what the dataset states, and unset where it states none.
  auto modulus = cell;
  modulus.train["modulus"] = 23;
  EXPECT_EQ(cell_mismatch(record, modulus), "modulus unset (the cell's: 23)");
  other = record;
  other["dataset"] = {{"p", 97}};
  EXPECT_EQ(cell_mismatch(other, cell), "");
  EXPECT_EQ(cell_mismatch(other, modulus), "modulus 97 (the cell's: 23)");
}

TEST(ExperimentGrid, SeedCountsThatWouldWrapAreRefused) {
  for (const json& seeds : {json(4294967297ULL), json(2147483648LL), json(1e20), json(0), json(-1), json(1001)}) {
    auto d = definition();
    d["seeds"] = seeds;
    EXPECT_THROW(resolve(d, "paper", "t.json"), ExperimentError) << seeds;
    d = definition();
    d["arms"][1]["seeds"] = seeds;
    EXPECT_THROW(resolve(d, "paper", "t.json"), ExperimentError) << seeds;
  }
}

TEST(RunRecord, EpochsMissingRepeatedOrRenumberedAreRefused) {
  const auto good = image_run(4, 0.6, 0.55);
  EXPECT_NO_THROW(check_run_record(good, "r.json"));
  for (const json& epochs :
       {json::array({1, 3, 4}), json::array({1, 1, 2, 3, 4}), json::array({1, 2, 3, 1e30}), json::array({1, 2, 3})}) {
    auto r = good;
    r["epochs"] = json::array();
    for (const auto& e : epochs) {
      auto m = good["epochs"][0];
      m["epoch"] = e;
      r["epochs"].push_back(m);
    }
    EXPECT_THROW(check_run_record(r, "r.json"), ExperimentError) << epochs;
  }
}

TEST(Files, FifosDevicesFoldersAndDeepNestingAreRefusedAtOnce) {
  ResultsFolder t("files");
  ASSERT_EQ(::mkfifo((t.dir / "fifo.json").c_str(), 0600), 0);
  const auto refused = [](const std::string& path, const std::string& what) {
    try {
      read_json_file(path);
      ADD_FAILURE() << path << " was read";
    } catch (const ExperimentError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused((t.dir / "fifo.json").string(), "fifo.json: a FIFO, not a JSON file");
  refused("/dev/zero", "/dev/zero: a character device, not a JSON file");
  refused(t.dir.string(), ": a folder, not a JSON file");
  std::ofstream(t.dir / "deep.json") << std::string(100000, '[') << std::string(100000, ']');
  refused((t.dir / "deep.json").string(), "deep.json: nested more than 64 levels deep");
  std::ofstream(t.dir / "ok.json") << std::string(64, '[') << std::string(64, ']');
  EXPECT_NO_THROW(read_json_file((t.dir / "ok.json").string()));
}
