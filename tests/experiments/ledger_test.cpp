// The claims ledger's verdicts: each rule on hand-made tables, budgets that decide nothing, the
// theory rows that follow the certificate, and malformed claims refused.
#include "experiments_support.h"

using namespace stiefel_experiments_test;

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
  // Under a second reading of the value the p half still holds: a difference within both readings
  // that the t-test tells apart is refuted under both, not a disagreement between them.
  auto read_twice = flat;
  read_twice["readings"] = {{{"value", 0.05}, {"where", "the text"}}};
  EXPECT_EQ(verdict(read_twice, with_p(table_with(-0.1, 0.3, 1, 1), 0.48)), "refuted");
  EXPECT_EQ(verdict(read_twice, with_p(table_with(-0.1, 0.3, 1, 1), 0.94)), "confirmed");
}

// A value the paper states two ways ("± 0.50" in a table, "± 0.61" in its text) is judged against
// each; verdicts that differ settle nothing.
TEST(Ledger, AValueThePaperStatesTwoWaysIsJudgedUnderBoth) {
  const json rule = {
      {"type", "within"}, {"value", 0.5}, {"tolerance", 0.3}, {"readings", {{{"value", 0.61}, {"where", "the text"}}}}};
  EXPECT_EQ(verdict(rule, table_with(0, 0, 1, 0.2937), "iso_final_mean"), "not confirmed");
  EXPECT_EQ(verdict(rule, table_with(0, 0, 1, 0.55), "iso_final_mean"), "confirmed");
  EXPECT_EQ(verdict(rule, table_with(0, 0, 1, 1.5), "iso_final_mean"), "refuted");
  // Outside the claimed value, within the other reading: the readings disagree as well.
  EXPECT_EQ(verdict(rule, table_with(0, 0, 1, 0.85), "iso_final_mean"), "not confirmed");
  EXPECT_EQ(ledger_row(rule, {table_with(0, 0, 1, 0.85)}, "iso_final_mean")["evidence"][0]["ours"],
            "0.85; against 0.5 (as claimed): outside; against 0.61 (the text): within");
}

// The paper's several runs at one configuration (A2 ends at 61.1% in Table 4's run and at 97.3% in its
// rerun) are run-to-run spread, not two statements of one value: our run agrees where it is within the
// tolerance of any of them, and contradicts the claim only outside every one. A claim whose paper runs
// include one that never reached the event is confirmed by a run that never does either.
TEST(Ledger, APaperRunsSpreadAgreesWithAnyOfItsRuns) {
  const json rule = {
      {"type", "within"}, {"value", 0.611}, {"tolerance", 0.2}, {"runs", {{{"value", 0.973}, {"where", "rerun"}}}}};
  EXPECT_EQ(verdict(rule, table_with(0, 0, 1, 0.8583), "iso_final_mean"), "confirmed");  // the rerun's only
  EXPECT_EQ(verdict(rule, table_with(0, 0, 1, 0.5), "iso_final_mean"), "confirmed");     // the first's only
  EXPECT_EQ(verdict(rule, table_with(0, 0, 1, 0.8), "iso_final_mean"), "confirmed");     // both
  EXPECT_EQ(verdict(rule, table_with(0, 0, 1, 0.3), "iso_final_mean"), "refuted");       // neither
  EXPECT_EQ(ledger_row(rule, {table_with(0, 0, 1, 0.8583)}, "iso_final_mean")["evidence"][0]["ours"],
            "0.8583; against 0.611 (as claimed): outside; against 0.973 (rerun): within");
  // Readings of one value and runs of one configuration are two different things: one rule holds one.
  auto both = rule;
  both["readings"] = {{{"value", 0.5}, {"where", "text"}}};
  EXPECT_THROW(verdict(both, table_with(0, 0, 1, 0.8583), "iso_final_mean"), ExperimentError);

  auto table = table_with(0, 0, 1, 1);
  table["epochs"] = 20000;
  arm_of(table, "b")["grokked_count"] = 0;
  const json at = {{"type", "within"}, {"value", 12600.0}, {"tolerance", 500.0}};
  EXPECT_EQ(verdict(at, table, "median_grok_epoch"), "refuted");
  auto or_never = at;
  or_never["never_agrees"] = "the first run, which never groks";
  const auto row = ledger_row(or_never, {table}, "median_grok_epoch");
  EXPECT_EQ(row["verdict"], "confirmed");
  EXPECT_EQ(row["evidence"][0]["ours"], "never (0 of 6 runs in 20000 epochs), as the first run, which never groks");
  arm_of(table, "b")["grokked_count"] = 1;
  arm_of(table, "b")["median_grok_epoch"] = 5000;
  EXPECT_EQ(verdict(or_never, table, "median_grok_epoch"), "refuted");
  arm_of(table, "b")["median_grok_epoch"] = 12900;
  EXPECT_EQ(verdict(or_never, table, "median_grok_epoch"), "confirmed");
}

// An epoch of a grokking event that no completed run reached (B2-hi never holds 0.95 for three
// windows in its 20 000 epochs): "never" is a result. It refutes a claim that the event happens at an
// epoch, does not confirm one that it happens only after one, and waits for the arm's other seeds.
TEST(Ledger, AnEventThatNeverHappenedDecidesItsEpochClaims) {
  auto table = table_with(0, 0, 1, 1);
  table["epochs"] = 20000;
  auto& b = arm_of(table, "b");
  b["sustained_count"] = 0;
  const json at = {{"type", "within"}, {"value", 2100.0}, {"tolerance", 500.0}};
  const auto row = ledger_row(at, {table}, "median_sustained_epoch");
  EXPECT_EQ(row["verdict"], "refuted");
  ASSERT_EQ(row["evidence"].size(), 1u);
  EXPECT_EQ(row["evidence"][0]["ours"], "never (0 of 6 runs in 20000 epochs)");
  EXPECT_EQ(verdict({{"type", "below"}, {"value", 3000.0}}, table, "median_sustained_epoch"), "refuted");
  EXPECT_EQ(verdict({{"type", "above"}, {"value", 3000.0}}, table, "median_sustained_epoch"), "not confirmed");
  // One run that did sustain gives the epoch and the usual rule.
  b["sustained_count"] = 1;
  b["median_sustained_epoch"] = 2200;
  EXPECT_EQ(verdict(at, table, "median_sustained_epoch"), "confirmed");
  // An absent epoch without its count (or with a count above 0) is a missing field: nothing decided.
  b.erase("median_sustained_epoch");
  EXPECT_EQ(verdict(at, table, "median_sustained_epoch"), "not run");
  b.erase("sustained_count");
  EXPECT_EQ(verdict(at, table, "median_sustained_epoch"), "not run");
  // The other events have their counts; an arm with seeds still to run is interim, and one whose
  // runs diverged undecided: neither decides.
  b["grokked_count"] = 0;
  EXPECT_EQ(verdict(at, table, "median_grok_epoch"), "refuted");
  b["memorized_count"] = 0;
  auto diverged = table;
  arm_of(diverged, "b")["diverged"] = json::array({{{"seed", 3}}});
  EXPECT_EQ(verdict(at, diverged, "median_memorized_epoch"), "not run");
  EXPECT_EQ(ledger_row(at, {diverged}, "median_memorized_epoch")["evidence"][0]["verdict"],
            "undecided (1 of the runs it reads diverged)");
  b["n"] = 2;
  EXPECT_EQ(verdict(at, table, "median_memorized_epoch"), "not run");
  EXPECT_EQ(ledger_row(at, {table}, "median_memorized_epoch")["evidence"][0]["verdict"], "interim (2 of 6 seeds)");
}

// "Never in E epochs" says nothing of the epochs after E: a bound the runs did not reach is not
// refuted. A median over the runs that reached the event says how many they were; a ratio of such
// epochs is refused.
TEST(Ledger, NeverRefutesOnlyBoundsTheRunsWentPast) {
  auto table = table_with(0, 0, 1, 1);
  table["epochs"] = 2000;
  auto& b = arm_of(table, "b");
  b["sustained_count"] = 0;
  const char* f = "median_sustained_epoch";
  EXPECT_EQ(verdict({{"type", "within"}, {"value", 1500.0}, {"tolerance", 500.0}}, table, f), "refuted");
  EXPECT_EQ(verdict({{"type", "within"}, {"value", 2100.0}, {"tolerance", 500.0}}, table, f), "not confirmed");
  EXPECT_EQ(verdict({{"type", "below"}, {"value", 2000.0}}, table, f), "refuted");
  EXPECT_EQ(verdict({{"type", "below"}, {"value", 3000.0}}, table, f), "not confirmed");
  table.erase("epochs");  // a table that does not say how long its runs were refutes nothing
  EXPECT_EQ(verdict({{"type", "below"}, {"value", 100.0}}, table, f), "not confirmed");
  table["epochs"] = 20000;
  b["sustained_count"] = 2;
  b["median_sustained_epoch"] = 8050;
  const auto row = ledger_row({{"type", "within"}, {"value", 8000.0}, {"tolerance", 500.0}}, {table}, f);
  EXPECT_EQ(row["verdict"], "confirmed");
  EXPECT_EQ(row["evidence"][0]["ours"], "8050 (2 of 6 runs; the others never in 20000 epochs)");
  b["sustained_count"] = 6;
  EXPECT_EQ(ledger_row({{"type", "below"}, {"value", 9000.0}}, {table}, f)["evidence"][0]["ours"], "8050");
  const json ratio = {{"type", "ratio_below"}, {"value", 2.0}, {"denominator", {{"arm", "a"}, {"field", f}}}};
  EXPECT_THROW(ledger_row(ratio, {table}, "iso_final_mean"), stiefel::reports::ExperimentError);
  EXPECT_THROW(ledger_row({{"type", "ratio_below"}, {"value", 2.0}, {"denominator", {{"arm", "a"}, {"field", "n"}}}},
                          {table}, f),
               stiefel::reports::ExperimentError);
}

// The slingshot's depth is read at the evaluated epochs, an upper bound on each run's lowest
// training accuracy: a "below" bound it meets is met, one it misses is not refuted. A claim about
// every seed is not confirmed over fewer runs than completed, nor where none memorised; only "below"
// reads the field.
TEST(Ledger, TheSlingshotsDepthIsAnUpperBound) {
  auto table = table_with(0, 0, 1, 1);
  table["epochs"] = 20000;
  auto& b = arm_of(table, "b");
  b["memorized_count"] = 6;
  b["shallowest_collapse"] = 0.058;
  const char* f = "shallowest_collapse";
  const json chance = {{"type", "below"}, {"value", 0.02}};
  EXPECT_EQ(verdict({{"type", "below"}, {"value", 0.1}}, table, f), "confirmed");
  auto row = ledger_row(chance, {table}, f);
  EXPECT_EQ(row["verdict"], "not confirmed");
  EXPECT_EQ(row["evidence"][0]["ours"], "0.058 (read at the evaluated epochs: the lowest may lie between two of them)");
  b["memorized_count"] = 4;
  row = ledger_row({{"type", "below"}, {"value", 0.1}}, {table}, f);
  EXPECT_EQ(row["verdict"], "not confirmed");
  EXPECT_EQ(row["evidence"][0]["ours"], "0.058 (over 4 of 6 runs; the others never memorised in 20000 epochs)");
  b.erase("shallowest_collapse");
  b["memorized_count"] = 0;
  row = ledger_row(chance, {table}, f);
  EXPECT_EQ(row["verdict"], "not confirmed");
  EXPECT_EQ(row["evidence"][0]["ours"], "no run memorised (0 of 6 runs in 20000 epochs)");
  b["memorized_count"] = 6;  // a missing field with runs that memorised: nothing decided
  EXPECT_EQ(verdict(chance, table, f), "not run");
  EXPECT_THROW(verdict({{"type", "above"}, {"value", 0.5}}, table, f), stiefel::reports::ExperimentError);
}

// A claim names an experiment, a group, an arm or contrast and a ratio's denominator that its
// definition has; any other name would leave the row "not run" for ever, so it is refused by name.
TEST(Ledger, AClaimNamesWhatItsExperimentDefines) {
  const auto dir = fs::temp_directory_path() / ("stiefel-ledger-refs-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto d = grok_definition();
  d["name"] = "t";
  d["contrasts"] = json::array({{{"id", "b-vs-a"}, {"arm", "b"}, {"baseline", "a"}}});
  std::ofstream(dir / "t.json") << d.dump();
  const json pos = {{"type", "positive"}};
  auto refused = [&](const json& claims) {
    try {
      check_claim_references(claims, dir.string(), "c.json");
    } catch (const ExperimentError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused(claims_with(pos, {{"arm", "b"}, {"field", "tail_mean"}})), "accepted");
  EXPECT_EQ(refused(claims_with(pos, {{"contrast", "b-vs-a"}, {"field", "vs_baseline.diff_mean"}})), "accepted");
  EXPECT_EQ(refused(claims_with(pos, {{"arm", "c"}, {"field", "tail_mean"}})),
            "c.json: claim c: experiment t has no arm \"c\" (its arms: a, b)");
  EXPECT_EQ(refused(claims_with(pos, {{"contrast", "c-vs-a"}, {"field", "vs_baseline.diff_mean"}})),
            "c.json: claim c: experiment t has no contrast \"c-vs-a\" (its contrasts: b-vs-a)");
  EXPECT_EQ(refused(claims_with(pos, {{"group", "n1k"}, {"arm", "b"}, {"field", "tail_mean"}})),
            "c.json: claim c: experiment t has no group \"n1k\" (its groups: main)");
  const json ratio = {{"type", "ratio_below"}, {"value", 1.0}, {"denominator", {{"arm", "z"}, {"field", "end_mean"}}}};
  EXPECT_EQ(refused(claims_with(ratio, {{"arm", "b"}, {"field", "end_mean"}})),
            "c.json: claim c: experiment t has no arm \"z\" (its arms: a, b)");
  auto elsewhere = claims_with(pos, {{"arm", "b"}, {"field", "tail_mean"}});
  elsewhere["claims"][0]["experiment"] = "u";
  EXPECT_EQ(refused(elsewhere).rfind("c.json: claim c: experiment \"u\" has no definition (", 0), 0u)
      << refused(elsewhere);
  EXPECT_EQ(refused(theory_row({"k1"})), "accepted");  // a theory claim reads the certificate
  fs::remove_all(dir);
}

// `stiefel report` builds the ledger from the results it is given: a claim naming an arm, contrast or
// group that a paper-profile table of its experiment lacks is refused by name, before any file is
// written, instead of reading "not run" beside results that exist. A reduced profile may run fewer
// arms, contrasts or groups than the paper's, and is not read for this.
TEST(Ledger, AClaimNamingWhatItsResultsLackIsRefused) {
  const json pos = {{"type", "positive"}};
  const json table = table_with(0.1, 0.3, 1, 1);
  auto refused = [](const json& claims, const json& t) {
    try {
      build_ledger(claims, {t}, nullptr, "c.json");
    } catch (const ExperimentError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused(claims_with(pos, {{"arm", "b"}, {"field", "vs_baseline.diff_mean"}}), table), "accepted");
  EXPECT_EQ(refused(claims_with(pos, {{"arm", "bb"}, {"field", "vs_baseline.diff_mean"}}), table),
            "c.json: claim c: the paper-profile results of t have no arm \"bb\" (its arms: a, b)");
  EXPECT_EQ(refused(claims_with(pos, {{"contrast", "b-vs-c"}, {"field", "vs_baseline.diff_mean"}}), table),
            "c.json: claim c: the paper-profile results of t have no contrast \"b-vs-c\" (its contrasts: b-vs-a)");
  EXPECT_EQ(refused(claims_with(pos, {{"group", "n1k"}, {"arm", "b"}, {"field", "vs_baseline.diff_mean"}}), table),
            "c.json: claim c: the paper-profile results of t have no group \"n1k\" (its groups: main)");
  const json ratio = {{"type", "ratio_below"}, {"value", 1.0}, {"denominator", {{"arm", "z"}, {"field", "end_mean"}}}};
  EXPECT_EQ(refused(claims_with(ratio, {{"arm", "b"}, {"field", "end_mean"}}), table),
            "c.json: claim c: the paper-profile results of t have no arm \"z\" (its arms: a, b)");
  auto reading = table;
  reading["profile"] = "paper-adamw-1e-2";
  reading["results"] = "results/t-paper-adamw-1e-2";
  EXPECT_EQ(refused(claims_with(pos, {{"arm", "bb"}, {"field", "vs_baseline.diff_mean"}}), reading),
            "c.json: claim c: the paper-adamw-1e-2-profile results of t (results/t-paper-adamw-1e-2) have no arm "
            "\"bb\" (its arms: a, b)");
  // A reduced profile, a table analysed with the definition stored with its results (which may
  // predate an arm the current definition adds), and another experiment's table decide nothing of
  // the names.
  auto stored = table;
  stored["definition"] = "stored with the results";
  EXPECT_EQ(refused(claims_with(pos, {{"arm", "bb"}, {"field", "vs_baseline.diff_mean"}}), stored), "accepted");
  EXPECT_EQ(refused(claims_with(pos, {{"arm", "bb"}, {"field", "vs_baseline.diff_mean"}}), reduced(table)), "accepted");
  auto other = table;
  other["experiment"] = "u";
  EXPECT_EQ(refused(claims_with(pos, {{"arm", "bb"}, {"field", "vs_baseline.diff_mean"}}), other), "accepted");
}

// The committed claims name only what the committed definitions define.
TEST(Ledger, TheCommittedClaimsNameWhatTheDefinitionsDefine) {
  const std::string experiments = STIEFEL_EXPERIMENTS_DIR;
  EXPECT_NO_THROW(
      check_claim_references(read_json_file(experiments + "/claims.json"), experiments, "experiments/claims.json"));
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

// The sign rules (positive, negative, null), and when a difference is significant.
TEST(Ledger, SignRules) {
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
}

// The value rules (below, above, within, ratio_above), at their bounds and under a stated scale; the
// unit a difference is shown in; a smoke table never decides.
TEST(Ledger, ValueRules) {
  const json pos = {{"type", "positive"}};
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

// The claims file is checked whole at load time (the fuzzer found a theory claim without
// "certificate" read through nlohmann's const operator[], a use after free): every malformed claim
// is refused naming the claim and the field.
// One claim is one row: an id given twice (with contradictory verdicts, perhaps) is refused, and a
// line break in a claim's text stays inside its row of the Markdown table.
TEST(Ledger, AClaimIdTwiceIsRefusedAndALineBreakStaysInItsRow) {
  const json theory = {{"id", "t"},        {"claim", "one\ntwo | three"},         {"where", "w"}, {"paper", "p"},
                       {"kind", "theory"}, {"certificate", {"prop1-joint-gauge"}}};
  json other = theory;
  other["claim"] = "the same id, another claim";
  try {
    build_ledger({{"claims", {theory, other}}}, {}, nullptr, "claims.json");
    ADD_FAILURE() << "a claim id given twice was accepted";
  } catch (const ExperimentError& e) {
    EXPECT_NE(std::string(e.what()).find("claims.json: claim t appears twice"), std::string::npos) << e.what();
  }
  const std::string md = ledger_markdown(build_ledger({{"claims", {theory}}}, {}, nullptr, "claims.json"));
  EXPECT_NE(md.find("| 1 | one two \\| three |"), std::string::npos) << md;
  const std::string table = md.substr(md.find("| # |"));
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 3) << table;  // header, rule, one row
}

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
