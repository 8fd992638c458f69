// stiefel::runner: shards, the state of a run folder, the Slurm scripts and their submission (with a
// stand-in sbatch that records its arguments). The real Slurm is tests/slurm/slurm_grid.sh's.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>
#include <stiefel/io/atomic_file.h>
#include <stiefel/io/sha256.h>
#include <stiefel/runner/grid.h>
#include <stiefel/runner/local.h>
#include <stiefel/runner/slurm.h>
#include <stiefel/runner/status.h>
#include <set>
#include <string>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using stiefel::runner::RunState;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void write(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << s;
}

struct Runner : ::testing::Test {
  fs::path dir;
  stiefel::runner::Grid grid;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("stiefel-runner-test-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    stiefel::runner::GridRequest r;
    r.name = STIEFEL_TEST_SLURM_GRID;
    r.profile = "paper";
    r.out = (dir / "out").string();
    r.definitions = STIEFEL_EXPERIMENTS_DIR;
    grid = stiefel::runner::load_grid(r);
  }
  void TearDown() override { fs::remove_all(dir); }

  // A run record of run K with STATUS at EPOCH of the grid's 20, in `stiefel train`'s form
  // (run.schema.json, the options its config ran, every epoch evaluated; a completed one with its final
  // metrics, a diverged one with its divergence); with_checkpoint: it names its checkpoint.
  void record(std::size_t k, const std::string& status, int epoch, bool with_checkpoint = true) {
    const auto d = grid.run_dir(k);
    json options = grid.runs[k].train;  // the cell's own settings (checked by run_status(grid, k))
    options.erase("data");
    options.erase("device");
    if (!options.contains("n")) options["n"] = 10000;  // what `stiefel train` states, its default
    if (!options.contains("seed")) options["seed"] = grid.runs[k].seed;
    json run = {{"status", status},
                {"config", config_of(options, grid.runs[k].seed)},
                {"options", options},
                {"dataset", {{"name", "modular addition (a + b) mod 97"}, {"train", 3763}, {"test", 5646}}},
                {"environment", {{"torch", "1.13"}, {"cuda_available", false}, {"threads", 1}}},
                {"epochs", json::array()}};
    for (int e = 1; e <= epoch; ++e)
      run["epochs"].push_back({{"epoch", e},
                               {"train_loss", 1.0},
                               {"train_acc", 0.5},
                               {"test_acc", 0.25},
                               {"isometry_error", {1e-8}},
                               {"isometry_error_max", 1e-8},
                               {"tangent_grad_norm", 0.1},
                               {"step_norm", 0.01},
                               {"step_per_gradient", 0.1},
                               {"cap_active_fraction", 0.0},
                               {"gauge_fraction", 0.0},
                               {"seconds", 1.0}});
    if (status == "completed") run["final"] = run["epochs"].back();
    if (status == "diverged") run["divergence"] = {{"epoch", epoch + 1}, {"step", 1}, {"tensor", "loss"}};
    if (with_checkpoint) {
      write(d / "checkpoint.pt", "state of epoch " + std::to_string(epoch));
      run["checkpoints"] = {{std::to_string(epoch), stiefel::io::sha256_file(d / "checkpoint.pt")}};
    }
    write(d / "run.json", run.dump());
  }
  static json config_of(const json& options, std::uint64_t seed) {
    const json model = {{"layers", 1},
                        {"d", 128},
                        {"heads", 4},
                        {"r", 32},
                        {"ffn", 512},
                        {"pooling", "concat readout"},
                        {"positional", "learned"},
                        {"input_dim", 98},
                        {"tokens", 3},
                        {"classes", 97}};
    return {{"task", options.value("task", "grok")},
            {"arm", options.value("arm", "a2")},
            {"seed", seed},
            {"n", 3763},
            {"epochs", options.value("epochs", 20)},
            {"batch", 3763},
            {"device", "cpu"},
            {"adam_lr", 1e-3},
            {"weight_decay", 1.0},
            {"adam_betas", {0.9, 0.999}},
            {"riemann_lr", 1.0},
            {"eps", 1e-3},
            {"tau", 0.1},
            {"cap", true},
            {"soft_lambda", 0.0},
            {"schedule", "constant"},
            {"model", model},
            {"init_scale", 1.0},
            {"threads", 1}};
  }
  stiefel::runner::SlurmOptions slurm_options() const {
    stiefel::runner::SlurmOptions o;
    o.executable = (dir / "bin" / "stiefel").string();
    if (!fs::exists(o.executable)) write(o.executable, "a stiefel binary");
    o.workdir = dir.string();
    return o;
  }
};

TEST(Shards, ParseStrictlyAndPartitionTheGrid) {
  using stiefel::runner::parse_shard;
  EXPECT_EQ(parse_shard("2/3").index, 2u);
  EXPECT_EQ(parse_shard("2/3").count, 3u);
  for (const char* bad : {"", "1", "0/2", "3/2", "1/2x", "-1/2", "1/0", " 1/2", "1/1234567890"})
    EXPECT_THROW(parse_shard(bad), std::invalid_argument) << bad;
  // Every run in exactly one shard.
  std::vector<int> seen(10, 0);
  for (std::size_t i = 1; i <= 3; ++i)
    for (const auto k : stiefel::runner::shard_runs(10, {i, 3})) ++seen[k];
  EXPECT_EQ(seen, std::vector<int>(10, 1));
  EXPECT_EQ(stiefel::runner::shard_runs(10, {2, 3}), (std::vector<std::size_t>{1, 4, 7}));
}

TEST(Slurm, ArrayIndicesAndShellQuoting) {
  using stiefel::runner::compress_indices;
  EXPECT_EQ(compress_indices({}), "");
  EXPECT_EQ(compress_indices({4}), "4");
  EXPECT_EQ(compress_indices({0, 1, 2, 3, 7, 9, 10, 11}), "0-3,7,9-11");
  EXPECT_EQ(stiefel::runner::shell_quote("/a/b-c_1.json"), "/a/b-c_1.json");
  EXPECT_EQ(stiefel::runner::shell_quote("cifar10:/my data"), "'cifar10:/my data'");
  EXPECT_EQ(stiefel::runner::shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(stiefel::runner::shell_quote(""), "''");
  EXPECT_EQ(stiefel::runner::shell_quote("$(rm -rf /)"), "'$(rm -rf /)'");
}

TEST_F(Runner, TheStateOfEachRunFolder) {
  using stiefel::runner::run_status;
  EXPECT_EQ(run_status(grid.run_dir(0)).state, RunState::missing);
  record(0, "completed", 20);
  EXPECT_EQ(run_status(grid.run_dir(0)).state, RunState::completed) << run_status(grid.run_dir(0)).detail;
  write(grid.run_dir(0) / "checkpoint.pt", "another state");  // not the one the record names
  EXPECT_EQ(run_status(grid.run_dir(0)).state, RunState::repair);
  record(1, "diverged", 7, false);
  EXPECT_EQ(run_status(grid.run_dir(1)).state, RunState::diverged);
  // A record "running" that nobody holds: a kill, a cancel or an error. The log's last line says why.
  record(2, "running", 12);
  write(grid.run_dir(2) / "log.txt", "epoch 12\nstiefel train: data: no such file\n\n");
  auto s = run_status(grid.run_dir(2));
  EXPECT_EQ(s.state, RunState::failed);
  EXPECT_EQ(s.epoch, 12);
  EXPECT_EQ(s.epochs, 20);
  EXPECT_EQ(s.detail, "stiefel train: data: no such file");
  {
    stiefel::io::FolderLock held(grid.run_dir(2));
    EXPECT_EQ(run_status(grid.run_dir(2)).state, RunState::running);
  }
  // A log and no record (stopped before its first epoch), and an unreadable record.
  write(grid.run_dir(3) / "log.txt", "stiefel train: --n: too large\n");
  EXPECT_EQ(run_status(grid.run_dir(3)).state, RunState::failed);
  write(grid.run_dir(3) / "run.json", "{\"status\": ");
  EXPECT_EQ(run_status(grid.run_dir(3)).state, RunState::failed);
  // A folder that cannot be looked into (here a name over NAME_MAX: ENAMETOOLONG, as EACCES would)
  // is that run's failure, named; it throws nothing at the grid.
  const auto beyond = run_status(grid.run_dir(3) / std::string(300, 'n'));
  EXPECT_EQ(beyond.state, RunState::failed);
  EXPECT_NE(beyond.detail.find("its folder cannot be read (File name too long)"), std::string::npos) << beyond.detail;
  EXPECT_TRUE(stiefel::runner::is_finished(RunState::completed));
  EXPECT_TRUE(stiefel::runner::is_finished(RunState::diverged));
  EXPECT_FALSE(stiefel::runner::is_finished(RunState::repair));
  EXPECT_FALSE(stiefel::runner::is_finished(RunState::failed));

  std::ostringstream out;
  stiefel::runner::print_status(grid, stiefel::runner::grid_status(grid), out);
  EXPECT_NE(out.str().find("4 runs: 0 completed, 1 diverged, 0 running, 0 queued, 2 failed, 1 repair, 0 mismatched, "
                           "0 missing"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("log " + (grid.run_dir(2) / "log.txt").string() + ": stiefel train: data: no such file"),
            std::string::npos)
      << out.str();
  // A record "failed" (an error inside an epoch) names its epoch and error, whatever the log says.
  write(grid.run_dir(2) / "run.json",
        json({{"status", "failed"},
              {"config", {{"epochs", 40}}},
              {"epochs", json::array({{{"epoch", 12}}})},
              {"failure", {{"epoch", 13}, {"step", 500}, {"error", "linalg.eigh: failed to converge"}}}})
            .dump());
  s = run_status(grid.run_dir(2));
  EXPECT_EQ(s.state, RunState::failed);
  EXPECT_EQ(s.detail, "epoch 13: linalg.eigh: failed to converge");
}

TEST_F(Runner, PinningRefusesAnotherGridInTheSameFolder) {
  stiefel::runner::pin_grid(grid);
  EXPECT_NO_THROW(stiefel::runner::pin_grid(grid));  // the same grid again
  auto other = grid;
  other.request.data = "cifar10:/elsewhere";
  EXPECT_THROW(stiefel::runner::pin_grid(other), std::invalid_argument);
  EXPECT_NO_THROW(stiefel::runner::check_pinned(other, /*any_data=*/true));  // --status reads it
  other = grid;
  other.experiment.runs.pop_back();  // a run dropped
  EXPECT_THROW(stiefel::runner::pin_grid(other), std::invalid_argument);
  other = grid;
  other.experiment.runs.back().train["epochs"] = 99;  // a run's settings changed
  EXPECT_THROW(stiefel::runner::pin_grid(other), std::invalid_argument);
  other = grid;
  other.experiment.name = "another";
  EXPECT_THROW(stiefel::runner::pin_grid(other), std::invalid_argument);
}

// A definition that gains runs (a seventh rate, more seeds) grows the pinned grid: the folder's
// runs stay, the new ones join, and experiment.json records the grown grid.
TEST_F(Runner, PinningAcceptsAGridThatGrows) {
  auto smaller = grid;
  smaller.experiment.runs.pop_back();
  stiefel::runner::pin_grid(smaller);
  EXPECT_NO_THROW(stiefel::runner::pin_grid(grid));
  const auto meta = json::parse(read(grid.out / "experiment.json"));
  EXPECT_EQ(meta["grid"].size(), grid.experiment.runs.size());
  EXPECT_THROW(stiefel::runner::pin_grid(smaller), std::invalid_argument);  // and never shrinks back
}

TEST_F(Runner, SlurmScriptsRunTheUnfinishedRunsOnly) {
  record(0, "completed", 20);
  record(2, "running", 8);
  auto o = slurm_options();
  o.max_parallel = 2;
  o.time = "1:00:00";
  auto plan = stiefel::runner::plan_slurm(grid, o);
  EXPECT_EQ(plan.task_count, 4u);
  EXPECT_EQ(plan.tasks, (std::vector<std::size_t>{1, 2, 3}));
  EXPECT_EQ(plan.array_spec, "1-3%2");
  const auto& a = plan.array_script;
  EXPECT_NE(a.find("#SBATCH --array=1-3%2\n"), std::string::npos) << a;
  EXPECT_NE(a.find("#SBATCH --time=1:00:00\n"), std::string::npos) << a;
  EXPECT_NE(a.find("#SBATCH --chdir=" + dir.string() + "\n"), std::string::npos) << a;
  // The scripts run a copy of the binary named by its content, in OUT/slurm/bin.
  EXPECT_EQ(plan.binary.parent_path(), fs::absolute(grid.out) / "slurm" / "bin");
  EXPECT_EQ(plan.binary.filename().string(), "stiefel-" + stiefel::io::sha256_file(o.executable).substr(0, 16));
  EXPECT_EQ(plan.array_path.filename(), "array-1.sbatch");
  EXPECT_NE(a.find("exec " + plan.binary.string() + " experiment " + std::string(STIEFEL_TEST_SLURM_GRID)),
            std::string::npos)
      << a;
  EXPECT_NE(a.find("#SBATCH --ntasks=1\n"), std::string::npos) << a;
  EXPECT_NE(a.find("--shard \"$((SLURM_ARRAY_TASK_ID + 1))/4\""), std::string::npos) << a;
  EXPECT_EQ(a.find("--gpus"), std::string::npos) << a;
  EXPECT_NE(plan.report_script.find("exec " + plan.binary.string() + " report " + fs::absolute(grid.out).string()),
            std::string::npos)
      << plan.report_script;

  // Runs that an earlier submission still has queued hold their task back, as does a run that a
  // process is running now.
  auto held = stiefel::runner::plan_slurm(grid, o, {{3, "PENDING"}});
  EXPECT_EQ(held.tasks, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(held.held, (std::vector<std::size_t>{3}));
  {
    stiefel::io::FolderLock running(grid.run_dir(2));
    held = stiefel::runner::plan_slurm(grid, o, {{3, "PENDING"}});
    EXPECT_EQ(held.tasks, (std::vector<std::size_t>{1}));
    EXPECT_EQ(held.held, (std::vector<std::size_t>{2, 3}));
  }

  // Two tasks of two runs each: task 0 holds run 0 (finished) and run 2 (not), so both are submitted.
  o.array_tasks = 2;
  plan = stiefel::runner::plan_slurm(grid, o);
  EXPECT_EQ(plan.task_count, 2u);
  EXPECT_EQ(plan.tasks, (std::vector<std::size_t>{0, 1}));
  EXPECT_NE(plan.array_script.find("/2\"\n"), std::string::npos) << plan.array_script;
  record(2, "completed", 20);
  plan = stiefel::runner::plan_slurm(grid, o);
  EXPECT_EQ(plan.tasks, (std::vector<std::size_t>{1}));
}

TEST_F(Runner, SlurmOptionsAreChecked) {
  auto o = slurm_options();
  o.gpus_per_task = 1;  // with --device cpu
  EXPECT_THROW(stiefel::runner::plan_slurm(grid, o), std::invalid_argument);
  o = slurm_options();
  o.partition = "gpu\n#SBATCH --mem=1";
  EXPECT_THROW(stiefel::runner::plan_slurm(grid, o), std::invalid_argument);
  o = slurm_options();
  o.executable = "stiefel";
  EXPECT_THROW(stiefel::runner::plan_slurm(grid, o), std::invalid_argument);
  // Blanks would cut an #SBATCH line short; % is Slurm's file-name pattern and is escaped.
  o = slurm_options();
  auto odd = grid;
  odd.out = dir / "with blank";
  EXPECT_THROW(stiefel::runner::plan_slurm(odd, o), std::invalid_argument);
  odd.out = dir / "100%";
  EXPECT_NE(stiefel::runner::plan_slurm(odd, o).array_script.find("--output=" + (dir / "100%%").string() +
                                                                  "/slurm/logs/%A_%a.out"),
            std::string::npos);
  // The folder's pinned grid is checked before anything is planned (dry runs included).
  stiefel::runner::pin_grid(grid);
  auto other = grid;
  other.request.data = "cifar10:/elsewhere";
  EXPECT_THROW(stiefel::runner::plan_slurm(other, o), std::invalid_argument);
  // CUDA runs ask for one GPU per task unless told otherwise.
  auto cuda = grid;
  cuda.request.device = "cuda";
  o = slurm_options();
  EXPECT_NE(stiefel::runner::plan_slurm(cuda, o).array_script.find("#SBATCH --gpus-per-task=1\n"), std::string::npos);
  o.gpus_per_task = 0;  // asked for none
  EXPECT_EQ(stiefel::runner::plan_slurm(cuda, o).array_script.find("--gpus"), std::string::npos);
  o.gpus_per_task = 2;
  const auto plan = stiefel::runner::plan_slurm(cuda, o);
  EXPECT_NE(plan.array_script.find("#SBATCH --gpus-per-task=2\n"), std::string::npos);
  EXPECT_NE(plan.array_script.find("--device cuda"), std::string::npos);
}

// A stand-in sbatch: logs its arguments, answers "ID;cluster" from a counter, or refuses when the
// argument list contains REFUSE. Beside it a stand-in squeue that prints DIR/queue.txt.
fs::path fake_sbatch(const fs::path& dir, const std::string& refuse) {
  const auto p = dir / "fake" / "sbatch";
  write(p, "#!/bin/sh\necho \"$@\" >> " + (dir / "sbatch.log").string() + "\n" + "case \"$*\" in *" + refuse +
               "*) echo 'sbatch: error: invalid partition' >&2; exit 1;; esac\n" + "n=$(wc -l < " +
               (dir / "sbatch.log").string() + ")\necho \"$((100 + n));testcluster\"\n");
  fs::permissions(p, fs::perms::owner_all);
  write(dir / "fake" / "squeue", "#!/bin/sh\ncat " + (dir / "queue.txt").string() + " 2>/dev/null\nexit 0\n");
  fs::permissions(dir / "fake" / "squeue", fs::perms::owner_all);
  return p;
}

TEST_F(Runner, SubmissionWritesTheScriptsAndRecordsTheJobIds) {
  auto o = slurm_options();
  o.sbatch = fake_sbatch(dir, "NEVER").string();
  const auto plan = stiefel::runner::plan_slurm(grid, o);
  const auto s = stiefel::runner::submit_slurm(grid, plan, o);
  EXPECT_EQ(s.array_job, "101");
  EXPECT_EQ(s.report_job, "102");
  EXPECT_EQ(read(plan.array_path), plan.array_script);
  EXPECT_EQ(read(plan.report_path), plan.report_script);
  EXPECT_TRUE(fs::is_directory(plan.log_folder));  // Slurm does not create the output's folder
  EXPECT_TRUE(fs::exists(grid.out / "experiment.json"));
  const auto log = read(dir / "sbatch.log");
  EXPECT_NE(log.find("--parsable --dependency=afterany:101 " + plan.report_path.string()), std::string::npos) << log;
  const auto subs = json::parse(read(grid.out / "slurm" / "submissions.json"));
  ASSERT_EQ(subs.size(), 1u);
  EXPECT_EQ(subs[0]["array_job"], "101");
  EXPECT_EQ(subs[0]["report_job"], "102");
  EXPECT_EQ(read(plan.binary), "a stiefel binary");
  EXPECT_TRUE(fs::status(plan.binary).permissions() != fs::perms::none);

  // squeue lists tasks 1 (pending) and 3 (running) of job 101, and a job of another folder: runs 1
  // and 3 are queued, and a second plan leaves their tasks out and numbers its scripts 2.
  write(dir / "queue.txt", "101|1|PENDING\n101|3|RUNNING\n999|0|RUNNING\n101|2|COMPLETING\n");
  const auto queued = stiefel::runner::queued_runs(grid, o);
  EXPECT_EQ(queued, (std::map<std::size_t, std::string>{{1, "PENDING"}, {3, "RUNNING"}}));
  const auto second = stiefel::runner::plan_slurm(grid, o, queued);
  EXPECT_EQ(second.submission, 2u);
  EXPECT_EQ(second.array_path.filename(), "array-2.sbatch");
  EXPECT_EQ(second.tasks, (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(second.held, (std::vector<std::size_t>{1, 3}));
  std::ostringstream out;
  stiefel::runner::print_status(grid, stiefel::runner::grid_status(grid, queued), out);
  EXPECT_NE(out.str().find("0 running, 2 queued, 0 failed"), std::string::npos) << out.str();

  // A submissions file that is not one is refused before anything is submitted.
  write(grid.out / "slurm" / "submissions.json", "{\"array_job\": 5}");
  EXPECT_THROW(stiefel::runner::plan_slurm(grid, o), std::invalid_argument);
}

// Table 4 holds rerun arms that train with their original arm's options: a seed group is one arm's
// (a batch trains each seed once), so --batch-seeds never puts a run and its rerun in one process.
TEST_F(Runner, ASeedGroupHoldsOneArmEvenWhereTwoArmsTrainAlike) {
  auto request = grid.request;
  request.name = "table4";
  const auto t4 = stiefel::runner::load_grid(request);
  bool twins = false;  // the control: two arms of Table 4 whose runs train with the same options
  for (std::size_t i = 0; i < t4.runs.size(); ++i)
    for (std::size_t j = i + 1; j < t4.runs.size(); ++j)
      twins = twins || (t4.runs[i].arm != t4.runs[j].arm && t4.runs[i].train == t4.runs[j].train);
  ASSERT_TRUE(twins);
  for (const auto& unit : stiefel::runner::shard_units(t4, 4)) {
    std::set<std::uint64_t> seeds;
    for (const auto k : unit) {
      EXPECT_EQ(t4.runs[k].arm, t4.runs[unit[0]].arm);
      EXPECT_TRUE(seeds.insert(t4.runs[k].seed).second) << t4.runs[k].id;
    }
  }
}

// With --batch-seeds B the grid is cut into its seed groups, from every run whatever its state: a
// shard and a Slurm array task take whole groups, so a group is never split between processes.
TEST_F(Runner, WithBatchSeedsShardsAndSlurmTasksTakeWholeSeedGroups) {
  using stiefel::runner::Shard;
  const auto units = stiefel::runner::shard_units(grid, 2);
  ASSERT_EQ(units.size(), 2u);  // two arms, two seeds each
  for (const auto& u : units) {
    ASSERT_EQ(u.size(), 2u);
    EXPECT_EQ(grid.runs[u[0]].arm, grid.runs[u[1]].arm);
    EXPECT_NE(grid.runs[u[0]].seed, grid.runs[u[1]].seed);
  }
  auto sorted = [](std::vector<std::size_t> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(stiefel::runner::shard_of_grid(grid, Shard{1, 2}, 2), sorted(units[0]));
  EXPECT_EQ(stiefel::runner::shard_of_grid(grid, Shard{2, 2}, 2), sorted(units[1]));
  EXPECT_TRUE(stiefel::runner::shard_of_grid(grid, Shard{3, 3}, 2).empty());  // more shards than groups
  for (std::size_t n = 1; n <= 4; ++n)                                        // B = 1: every N-th run, as before
    for (std::size_t i = 1; i <= n; ++i)
      EXPECT_EQ(stiefel::runner::shard_of_grid(grid, Shard{i, n}, 1), stiefel::runner::shard_runs(4, Shard{i, n}));
  // Six seeds in groups of four: each arm's seeds make a group of four and one of two, and the four
  // shards together take every run once.
  auto request = grid.request;
  request.profile = "cpu";
  const auto six = stiefel::runner::load_grid(request);
  const auto six_units = stiefel::runner::shard_units(six, 4);
  ASSERT_EQ(six_units.size(), 4u);
  std::vector<std::size_t> seen;
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(six_units[i].size(), i % 2 == 0 ? 4u : 2u);
    for (const auto k : six_units[i]) EXPECT_EQ(six.runs[k].arm, six.runs[six_units[i][0]].arm);
    const auto shard = stiefel::runner::shard_of_grid(six, Shard{i + 1, 4}, 4);
    EXPECT_EQ(shard, sorted(six_units[i]));
    seen.insert(seen.end(), shard.begin(), shard.end());
  }
  EXPECT_EQ(sorted(seen), stiefel::runner::shard_runs(six.runs.size(), Shard{1, 1}));

  auto o = slurm_options();
  o.batch_seeds = 2;
  auto plan = stiefel::runner::plan_slurm(grid, o);
  EXPECT_EQ(plan.task_count, 2u);  // one task per group
  EXPECT_EQ(plan.tasks, (std::vector<std::size_t>{0, 1}));
  EXPECT_NE(plan.array_script.find(" --batch-seeds 2 --shard \"$((SLURM_ARRAY_TASK_ID + 1))/2\""), std::string::npos)
      << plan.array_script;
  o.array_tasks = 5;  // never more tasks than groups
  EXPECT_EQ(stiefel::runner::plan_slurm(grid, o).task_count, 2u);
  o.array_tasks = 0;
  // A run of a group queued elsewhere holds the group's task back.
  plan = stiefel::runner::plan_slurm(grid, o, {{units[1][1], "PENDING"}});
  EXPECT_EQ(plan.tasks, (std::vector<std::size_t>{0}));
  EXPECT_EQ(plan.held, (std::vector<std::size_t>{1}));
  // A group whose runs are all finished is not submitted; one with a run left is.
  record(units[0][0], "completed", 20);
  EXPECT_EQ(stiefel::runner::plan_slurm(grid, o).tasks, (std::vector<std::size_t>{0, 1}));
  record(units[0][1], "completed", 20);
  EXPECT_EQ(stiefel::runner::plan_slurm(grid, o).tasks, (std::vector<std::size_t>{1}));
  // Without batching the script passes no --batch-seeds.
  EXPECT_EQ(stiefel::runner::plan_slurm(grid, slurm_options()).array_script.find("--batch-seeds"), std::string::npos);
  o.batch_seeds = 0;
  EXPECT_THROW(stiefel::runner::plan_slurm(grid, o), std::invalid_argument);
}

// submissions.json records each submission's batching, so that a queued task of a batched
// submission holds every run of its group; an entry without it was submitted one run to a task.
TEST_F(Runner, AQueuedTaskOfABatchedSubmissionHoldsItsWholeGroup) {
  auto o = slurm_options();
  o.sbatch = fake_sbatch(dir, "NEVER").string();
  o.batch_seeds = 2;
  const auto plan = stiefel::runner::plan_slurm(grid, o);
  stiefel::runner::submit_slurm(grid, plan, o);
  const auto subs = json::parse(read(grid.out / "slurm" / "submissions.json"));
  ASSERT_EQ(subs.size(), 1u);
  EXPECT_EQ(subs[0]["batch_seeds"], 2);
  EXPECT_EQ(subs[0]["task_count"], 2);
  write(dir / "queue.txt", "101|1|PENDING\n");
  const auto units = stiefel::runner::shard_units(grid, 2);
  EXPECT_EQ(stiefel::runner::queued_runs(grid, o),
            (std::map<std::size_t, std::string>{{units[1][0], "PENDING"}, {units[1][1], "PENDING"}}));
  // An older entry without batch_seeds: task i runs shard i+1/N of the runs.
  write(grid.out / "slurm" / "submissions.json", R"([{"array_job": "7", "task_count": 4}])");
  write(dir / "queue.txt", "7|2|PENDING\n");
  EXPECT_EQ(stiefel::runner::queued_runs(grid, o), (std::map<std::size_t, std::string>{{2, "PENDING"}}));
  // A batch_seeds that is not a positive integer is refused, naming the file.
  write(grid.out / "slurm" / "submissions.json", R"([{"array_job": "7", "task_count": 4, "batch_seeds": 0}])");
  EXPECT_THROW(stiefel::runner::queued_runs(grid, o), std::invalid_argument);
  // 2^32 + 2 would read as 2 through an int.
  write(grid.out / "slurm" / "submissions.json", R"([{"array_job": "7", "task_count": 4, "batch_seeds": 4294967298}])");
  EXPECT_THROW(stiefel::runner::queued_runs(grid, o), std::invalid_argument);
}

TEST_F(Runner, ARefusedReportJobNamesTheSubmittedArray) {
  auto o = slurm_options();
  o.sbatch = fake_sbatch(dir, "afterany").string();
  const auto plan = stiefel::runner::plan_slurm(grid, o);
  try {
    stiefel::runner::submit_slurm(grid, plan, o);
    ADD_FAILURE() << "a refused report job was not reported";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("refused the report job (exit 1): sbatch: error: invalid partition"), std::string::npos)
        << what;
    EXPECT_NE(what.find("the array job 101 was submitted"), std::string::npos) << what;
  }
  const auto subs = json::parse(read(grid.out / "slurm" / "submissions.json"));
  ASSERT_EQ(subs.size(), 1u);
  EXPECT_EQ(subs[0]["array_job"], "101");
  EXPECT_FALSE(subs[0].contains("report_job"));

  o.sbatch = (dir / "no-such-sbatch").string();
  try {
    stiefel::runner::submit_slurm(grid, plan, o);
    ADD_FAILURE() << "a missing sbatch was not reported";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-sbatch: cannot run it (No such file or directory)"),
              std::string::npos)
        << e.what();
  }
}

// A completed record is the result: without a checkpoint (results folders keep none) it is final; a
// checkpoint it names as an earlier epoch is recomputed from; one it does not name is damaged, and the
// advice is a command that works (removing it).
TEST_F(Runner, ACompletedRecordWithoutOrWithAForeignCheckpoint) {
  using stiefel::runner::run_status;
  record(0, "completed", 20);
  fs::remove(grid.run_dir(0) / "checkpoint.pt");
  EXPECT_EQ(run_status(grid, 0).state, RunState::completed);
  write(grid.run_dir(0) / "checkpoint.pt", "damaged");
  auto s = run_status(grid, 0);
  EXPECT_EQ(s.state, RunState::repair);
  EXPECT_NE(s.detail.find("`rm " + (grid.run_dir(0) / "checkpoint.pt").string() + "`"), std::string::npos) << s.detail;
  // An earlier checkpoint the record names (a kill before the final one's commit).
  auto run = json::parse(read(grid.run_dir(0) / "run.json"));
  run["checkpoints"]["19"] = stiefel::io::sha256_file(grid.run_dir(0) / "checkpoint.pt");
  write(grid.run_dir(0) / "run.json", run.dump());
  s = run_status(grid, 0);
  EXPECT_EQ(s.state, RunState::repair);
  EXPECT_NE(s.detail.find("a rerun recomputes the last epochs"), std::string::npos) << s.detail;
}

// A finished record in a cell it does not belong to (another arm's or seed's, another budget's) is
// mismatched: never counted as the cell's run, never run over.
TEST_F(Runner, ARecordOfAnotherCellIsMismatched) {
  using stiefel::runner::run_status;
  record(0, "completed", 20, false);
  EXPECT_EQ(run_status(grid, 0).state, RunState::completed);
  fs::create_directories(grid.run_dir(1));
  fs::copy_file(grid.run_dir(0) / "run.json", grid.run_dir(1) / "run.json");
  auto s = run_status(grid, 1);
  EXPECT_EQ(s.state, RunState::mismatched);
  EXPECT_NE(s.detail.find("arm \"a2\" (the cell's: \"b2\")"), std::string::npos) << s.detail;
  auto run = json::parse(read(grid.run_dir(0) / "run.json"));
  const int cell_epochs = grid.runs[0].train["epochs"].get<int>();
  run["options"]["epochs"] = cell_epochs - 1;  // another budget: a whole record of one epoch fewer
  run["config"]["epochs"] = cell_epochs - 1;
  run["epochs"].erase(run["epochs"].size() - 1);
  run["final"] = run["epochs"].back();
  write(grid.run_dir(0) / "run.json", run.dump());
  s = run_status(grid, 0);
  EXPECT_EQ(s.state, RunState::mismatched);
  const std::string expected =
      "epochs " + std::to_string(cell_epochs - 1) + " (the cell's: " + std::to_string(cell_epochs) + ")";
  EXPECT_NE(s.detail.find(expected), std::string::npos) << s.detail;
  // The local runner leaves both as they are and says so.
  std::ostringstream progress;
  EXPECT_EQ(stiefel::runner::run_local(grid, {0, 1}, {1, "/bin/true", ""}, progress), 1);
  EXPECT_NE(progress.str().find("2 runs hold a record that is not their cell's"), std::string::npos) << progress.str();
  EXPECT_EQ(json::parse(read(grid.run_dir(0) / "run.json"))["options"]["epochs"], cell_epochs - 1);
}

// A run whose folder another process holds is left to it, not started twice and not called failed.
TEST_F(Runner, ARunAnotherProcessHoldsIsLeftToIt) {
  fs::create_directories(grid.run_dir(2));
  stiefel::io::FolderLock held(grid.run_dir(2));
  std::ostringstream progress;
  EXPECT_EQ(stiefel::runner::run_local(grid, {2}, {1, "/bin/true", ""}, progress), 0);
  EXPECT_NE(progress.str().find("1 running in another process (left to it)"), std::string::npos) << progress.str();
  EXPECT_EQ(progress.str().find("failed"), std::string::npos) << progress.str();
}

// A log planted as a link out of the results folder is never opened; the run is not started.
TEST_F(Runner, APlantedLogLinkIsRefused) {
  write(dir / "outside.txt", "outside");
  fs::create_directories(grid.run_dir(3));
  fs::create_symlink(dir / "outside.txt", grid.run_dir(3) / "log.txt");
  std::ostringstream progress;  // /bin/echo writes its arguments to the log, were it ever opened
  EXPECT_EQ(stiefel::runner::run_local(grid, {3}, {1, "/bin/echo", ""}, progress), 1);
  EXPECT_EQ(read(dir / "outside.txt"), "outside");
  EXPECT_NE(progress.str().find("log.txt: cannot be opened as the run's log (a symbolic link)"), std::string::npos)
      << progress.str();
  // A run folder reached through a link is refused too.
  fs::remove_all(grid.run_dir(3));
  fs::create_directories(dir / "elsewhere");
  fs::create_directory_symlink(dir / "elsewhere", grid.run_dir(3));
  std::ostringstream again;
  EXPECT_EQ(stiefel::runner::run_local(grid, {3}, {1, "/bin/true", ""}, again), 1);
  EXPECT_NE(again.str().find("a symbolic link; a run is written only inside its results folder"), std::string::npos)
      << again.str();
  EXPECT_TRUE(fs::is_empty(dir / "elsewhere"));
}

}  // namespace
