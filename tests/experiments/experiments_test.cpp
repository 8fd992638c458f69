// Experiment grids and definitions, grokking metrics, run records checked against their cell, and
// bounded reads of results folders, on hand-made inputs with known answers.
#include "experiments_support.h"

using namespace stiefel_experiments_test;

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
  EXPECT_TRUE(std::isnan(never.min_train_after_memorized));
  // Memorised at its last record: no record after it, so no depth (not a collapse of 0 to 1).
  const auto last = grok_metrics(record({{100, 0.5, 0.1}, {200, 0.995, 0.2}}, 200));
  EXPECT_EQ(last.memorized, 200);
  EXPECT_TRUE(std::isnan(last.min_train_after_memorized));
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

// A grid's size is bounded before it is laid out: a small stored definition cannot describe millions
// of runs (100 arms x 100 groups x 1 000 seeds took a report to 2.9 GB and bad_alloc).
TEST(ExperimentGrid, AGridOfMoreRunsThanTheBoundIsRefused) {
  auto d = definition();
  d["groups"] = json::array();
  for (int g = 0; g < 100; ++g) d["groups"].push_back({{"id", "g" + std::to_string(g)}});
  d["arms"] = json::array();
  for (int a = 0; a < 100; ++a) d["arms"].push_back({{"id", "a" + std::to_string(a)}, {"train", {{"arm", "a2"}}}});
  d["baseline"] = "a0";
  d["seeds"] = 1000;
  try {
    resolve(d, "paper", "t.json");
    ADD_FAILURE() << "a grid of 10^7 runs was laid out";
  } catch (const ExperimentError& e) {
    EXPECT_NE(std::string(e.what()).find("t.json: 100 groups x 100 arms x 1000 seeds: more than 10000 runs"),
              std::string::npos)
        << e.what();
  }
  d["seeds"] = 1;  // 10 000 runs: within the bound
  EXPECT_EQ(resolve(d, "paper", "t.json").runs.size(), 10000u);
}

// A JSON file over 32 MiB (a run record of 256 MiB took 4.1 GB to parse) is refused by its size,
// before a byte of it is parsed; a sparse file costs no disk.
TEST(Files, AJsonFileOverTheBoundIsRefusedByItsSize) {
  ResultsFolder f("oversized");
  const auto path = f.dir / "run.json";
  std::ofstream(path) << "{}";
  fs::resize_file(path, kMaxJsonBytes + 1);
  try {
    read_json_file(path.string());
    ADD_FAILURE() << "a JSON file over the bound was read";
  } catch (const ExperimentError& e) {
    EXPECT_NE(std::string(e.what()).find("larger than a JSON file can be (at most 32 MiB)"), std::string::npos)
        << e.what();
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
