// Experiment grids, grokking metrics and ledger verdicts on hand-made records with known answers.
#include <gtest/gtest.h>

#include <stiefel/reports/experiment.h>
#include <stiefel/reports/ledger.h>
#include <stiefel/reports/tables.h>

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
  EXPECT_EQ(ex.runs[0].train["n"], 200);   // group over definition
  EXPECT_EQ(ex.runs[3].id, "g1/b/seed-0");
  EXPECT_EQ(ex.runs[3].train["epochs"], 9);  // arm over definition
  EXPECT_EQ(ex.runs[5].train["n"], 100);
  const auto cpu = resolve(definition(), "cpu", "t.json");
  EXPECT_EQ(cpu.runs[3].train["epochs"], 2);  // profile over arm
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
  const std::vector<std::string> expected = {"train", "--arm", "b2", "--eps", "1e-08", "--n", "10", "--power-stabilisation"};
  EXPECT_EQ(a, expected);
}

json record(const std::vector<std::array<double, 3>>& rows, int epochs) {
  json r = {{"config", {{"epochs", epochs}}}, {"epochs", json::array()}};
  for (const auto& [e, train, test] : rows) r["epochs"].push_back({{"epoch", e}, {"train_acc", train}, {"test_acc", test}});
  return r;
}

TEST(GrokMetrics, FirstCrossingSustainedAndTail) {
  // evaluations every 100 epochs over 800 epochs; the tail is epochs > 600
  const auto r = record({{100, 0.5, 0.1}, {200, 0.995, 0.96}, {300, 0.2, 0.5}, {400, 1.0, 0.97},
                         {500, 1.0, 0.98}, {600, 1.0, 0.99}, {700, 0.01, 0.3}, {800, 1.0, 0.9}}, 800);
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

json table_with(double lo, double hi, double iso_a, double iso_b) {
  return {{"experiment", "t"}, {"profile", "cpu"}, {"datasets", {"D"}},
          {"groups", {{{"id", "main"}, {"contrasts", json::array()},
                       {"arms", {{{"id", "a"}, {"n", 6}, {"iso", iso_a}},
                                 {{"id", "b"}, {"n", 6}, {"iso", iso_b},
                                  {"vs_baseline", {{"diff_mean", (lo + hi) / 2}, {"ci_low", lo}, {"ci_high", hi},
                                                   {"wins", 5}, {"pairs", 6}}}}}}}}}};
}

std::string verdict(const json& rule, const json& table, const char* field = "vs_baseline.diff_mean") {
  json claims = {{"claims", {{{"id", "c"}, {"claim", "x"}, {"where", "§"}, {"paper", "p"}, {"kind", "empirical"},
                              {"experiment", "t"}, {"ref", {{"arm", "b"}, {"field", field}}}, {"rule", rule}}}}};
  return build_ledger(claims, {table}, nullptr)["claims"][0]["verdict"];
}

TEST(Ledger, VerdictRules) {
  const json pos = {{"type", "positive"}}, neg = {{"type", "negative"}}, nul = {{"type", "null"}};
  EXPECT_EQ(verdict(pos, table_with(1, 3, 1, 1)), "confirmed");
  EXPECT_EQ(verdict(pos, table_with(-1, 3, 1, 1)), "not confirmed");
  EXPECT_EQ(verdict(pos, table_with(-3, -1, 1, 1)), "refuted");
  EXPECT_EQ(verdict(neg, table_with(-3, -1, 1, 1)), "confirmed");
  EXPECT_EQ(verdict(nul, table_with(-1, 3, 1, 1)), "confirmed");
  EXPECT_EQ(verdict(nul, table_with(1, 3, 1, 1)), "refuted");
  EXPECT_EQ(verdict({{"type", "below"}, {"value", 2.0}}, table_with(0, 0, 1, 1.5), "iso"), "confirmed");
  EXPECT_EQ(verdict({{"type", "below"}, {"value", 1.0}}, table_with(0, 0, 1, 1.5), "iso"), "refuted");
  EXPECT_EQ(verdict({{"type", "within"}, {"value", 1.4}, {"tolerance", 0.2}}, table_with(0, 0, 1, 1.5), "iso"),
            "confirmed");
  const json ratio = {{"type", "ratio_above"}, {"value", 3.0}, {"denominator", {{"arm", "a"}, {"field", "iso"}}}};
  EXPECT_EQ(verdict(ratio, table_with(0, 0, 0.5, 1.5), "iso"), "confirmed");
  EXPECT_EQ(verdict(ratio, table_with(0, 0, 1.0, 1.5), "iso"), "refuted");
  // No result: not run; a smoke table never decides.
  auto smoke = table_with(1, 3, 1, 1);
  smoke["profile"] = "smoke";
  EXPECT_EQ(verdict(pos, smoke), "not run");
}

TEST(Ledger, RunsShorterThanTheClaimDecideNothing) {
  auto table = table_with(1, 3, 1, 1);
  table["epochs"] = 100;
  json claims = {{"claims", {{{"id", "c"}, {"claim", "x"}, {"where", "§"}, {"paper", "p"}, {"kind", "empirical"},
                              {"experiment", "t"}, {"min_epochs", 20000},
                              {"ref", {{"arm", "b"}, {"field", "vs_baseline.diff_mean"}}},
                              {"rule", {{"type", "positive"}}}}}}};
  const auto row = build_ledger(claims, {table}, nullptr)["claims"][0];
  EXPECT_EQ(row["verdict"], "not run");
  ASSERT_EQ(row["evidence"].size(), 1u);
  EXPECT_EQ(row["evidence"][0]["verdict"], "untestable");
  table["epochs"] = 20000;
  EXPECT_EQ(build_ledger(claims, {table}, nullptr)["claims"][0]["verdict"], "confirmed");
}

TEST(Ledger, TheoryClaimsFollowTheCertificate) {
  json claims = {{"claims", {{{"id", "c"}, {"claim", "x"}, {"where", "§"}, {"paper", "p"}, {"kind", "theory"},
                              {"certificate", {"k1", "k2"}}}}}};
  json cert = {{"claims", {{{"id", "k1"}, {"observed", "certified"}}, {{"id", "k2"}, {"observed", "certified"}}}}};
  EXPECT_EQ(build_ledger(claims, {}, cert)["claims"][0]["verdict"], "confirmed");
  cert["claims"][1]["observed"] = "refuted";
  EXPECT_EQ(build_ledger(claims, {}, cert)["claims"][0]["verdict"], "refuted");
  EXPECT_EQ(build_ledger(claims, {}, nullptr)["claims"][0]["verdict"], "not run");
}

}  // namespace
