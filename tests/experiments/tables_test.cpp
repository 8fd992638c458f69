// The tables from results folders: selection by validation accuracy, grokking spreads, unfinished
// runs, the budget at the paper's and its phrasing, labels from the current definition.
#include "experiments_support.h"

using namespace stiefel_experiments_test;

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
  // figure draws them: a panel a seed, each seed's curve its own data file in its arm's colour.
  ASSERT_EQ(arms[1]["seed_curves"].size(), 3u);
  EXPECT_EQ(arms[1]["seed_curves"][2]["epoch"], json::array({2, 3, 4}));
  EXPECT_EQ(arms[0]["seed_curves"][2]["test_acc"], json::array({0.36, 0.35}));
  EXPECT_EQ(arms[0]["seed_curves"][0]["seed"], 0);
  EXPECT_TRUE(arms[0]["seed_curves"][0].contains("sustained"));
  const auto fig = figure_script(t, "grok");
  EXPECT_NE(fig.script.find("'seed 2, held-out; sustained grok: "), std::string::npos) << fig.script;
  const auto seeds_file = std::find_if(fig.files.begin(), fig.files.end(),
                                       [](const auto& file) { return file.second == "2 0.36\n4 0.35\n"; });
  EXPECT_NE(seeds_file, fig.files.end()) << "no data file holds A's seed 2 alone";
  const auto md = table_markdown(t);
  EXPECT_NE(md.find("| A | 3 | 0.043 | 0.070 | 0.080 (epoch 2, seeds 0 and 2) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 0.5 |\n"), std::string::npos) << md;  // A's iso max closes its row
}

// The slingshot: each run's lowest training accuracy after it first memorised (≥ 0.99), and the
// arm's shallowest such collapse, over the runs that memorised.
TEST(Tables, TheShallowestCollapseAfterMemorisingIsTheRunsLargestLow) {
  ResultsFolder f("collapse");
  const auto ex = f.grid(grok_definition(), "paper");
  const std::map<std::string, std::array<double, 3>> low = {{"a", {0.05, 0.2, 0.1}}, {"b", {-1, 0.01, 0.03}}};
  for (const auto& r : ex.runs) {
    auto run = image_run(4, 0.5, 0.5);
    for (auto& e : run["epochs"]) e.erase("val_acc");
    const double l = low.at(r.arm)[r.seed];
    if (l >= 0) {  // memorised at epoch 2, collapsed at 3, recovered at 4; the epoch before does not count
      run["epochs"][0]["train_acc"] = 0.001;
      run["epochs"][1]["train_acc"] = 0.995;
      run["epochs"][2]["train_acc"] = l;
      run["epochs"][3]["train_acc"] = 1.0;
    }
    run["final"] = run["epochs"].back();
    auto rec = run_of_cell(run, r);
    rec["options"]["n"] = 10000;
    f.write(fs::path("runs") / r.id / "run.json", rec);
  }
  const auto t = analyse_results(f.dir.string(), 200);
  const auto& arms = t["groups"][0]["arms"];
  ASSERT_TRUE(arms[0].contains("shallowest_collapse") && arms[1].contains("shallowest_collapse")) << arms.dump();
  EXPECT_DOUBLE_EQ(arms[0]["shallowest_collapse"].get<double>(), 0.2);
  EXPECT_EQ(arms[0]["memorized_count"], 3);
  EXPECT_DOUBLE_EQ(arms[1]["shallowest_collapse"].get<double>(), 0.03);  // seed 0 never memorised
  EXPECT_EQ(arms[1]["memorized_count"], 2);
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
    run["final"] = run["epochs"].back();
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
  // How many completed runs reached each grokking event, beside its median epoch where any did (the
  // ledger reads a count of 0 as "never"): seed 0 crossed 0.95 once, at epoch 2, and never held it
  // or memorised.
  EXPECT_EQ(arms[0]["grokked_count"], 1);
  EXPECT_EQ(arms[0]["median_grok_epoch"], 2);
  EXPECT_EQ(arms[0]["sustained_count"], 0);
  EXPECT_FALSE(arms[0].contains("median_sustained_epoch"));
  EXPECT_EQ(arms[0]["memorized_count"], 0);
  EXPECT_FALSE(arms[0].contains("median_memorized_epoch"));
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
}

// An image table lists its unfinished runs in percent, as its arm table; a run that recorded no epoch
// yet has none of the epochs or accuracies.
TEST(Tables, UnfinishedImageRunsAreListedInPercent) {
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
