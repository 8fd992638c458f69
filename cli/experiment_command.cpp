// `stiefel experiment NAME --profile P --out DIR`: runs an experiment's grid (stiefel::runner):
// locally as child processes of `stiefel train` (training_executable()), J at a time, or with --slurm as a Slurm array
// job and a dependent report job; --status shows the state of every run. Finished runs are skipped and interrupted ones
// resume from their checkpoints, so a rerun never loses or redoes a finished run.
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <stiefel/runner/grid.h>
#include <stiefel/runner/local.h>
#include <stiefel/runner/reuse.h>
#include <stiefel/runner/slurm.h>
#include <stiefel/runner/status.h>

#include "commands.h"

namespace stiefel::cli {
namespace {

namespace fs = std::filesystem;

struct Options {
  runner::GridRequest grid;
  runner::SlurmOptions slurm;
  std::string shard;
  std::vector<std::string> reuse_from;
  std::vector<std::string> arms;  // --arms: only these arms' runs (local)
  int jobs = 1, batch_seeds = 1;
  bool list = false, status = false, use_slurm = false, dry_run = false;
};

int list_experiments(const std::string& definitions) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(definitions))
    if (e.path().extension() == ".json" && e.path().filename() != "claims.json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const auto d = reports::load_definition(f.string());
    std::cout << std::left << std::setw(22) << d["name"].get<std::string>();
    for (const char* p : {"paper", "cpu", "smoke"})
      std::cout << " " << p << " " << std::setw(5) << reports::resolve(d, p, f.string()).runs.size();
    std::cout << " " << d["title"].get<std::string>() << "\n";
  }
  return 0;
}

int submit(const runner::Grid& g, Options o) {
  if (!o.shard.empty()) throw std::invalid_argument("--shard: not with --slurm (use --array-tasks N)");
  o.slurm.jobs = o.jobs;
  o.slurm.batch_seeds = o.batch_seeds;  // an array task takes whole seed groups
  o.slurm.executable = fs::read_symlink(training_executable()).string();
  o.slurm.workdir = fs::current_path().string();
  const auto queued = runner::queued_runs(g, o.slurm);  // runs an earlier submission still has queued
  const auto plan = runner::plan_slurm(g, o.slurm, queued);
  if (!plan.held.empty())
    std::cerr << g.experiment.name << ": " << plan.held.size() << " tasks left out ("
              << runner::compress_indices(plan.held)
              << "): runs of theirs are running now or queued in an earlier submission (see --status)\n";
  if (plan.tasks.empty()) {
    if (plan.held.empty())
      std::cerr << g.experiment.name << " [" << g.experiment.profile << "]: all " << g.runs.size()
                << " runs finished; nothing to submit (`stiefel report " << g.request.out << "` makes the tables)\n";
    else
      std::cerr << g.experiment.name << " [" << g.experiment.profile << "]: nothing to submit now\n";
    return 0;
  }
  if (o.dry_run) {
    std::cout << "# " << plan.array_path.string() << "\n"
              << plan.array_script << "\n# " << plan.report_path.string() << "\n"
              << plan.report_script << "\n# submitted with:\n";
    for (const auto& c : runner::sbatch_commands(plan, o.slurm)) std::cout << c << "\n";
    return 0;
  }
  const auto s = runner::submit_slurm(g, plan, o.slurm);
  std::cerr << g.experiment.name << " [" << g.experiment.profile << "]: submitted array job " << s.array_job << " ("
            << plan.tasks.size() << " of " << plan.task_count << " tasks: " << plan.array_spec << ") and report job "
            << s.report_job << " (after the array); scripts and logs in " << plan.array_path.parent_path().string()
            << "; `stiefel experiment " << g.request.name << " --profile " << g.experiment.profile << " --out "
            << g.request.out << " --status` follows it\n";
  std::cout << s.array_job << " " << s.report_job << "\n";
  return 0;
}

int run_experiment(const Options& o) {
  const auto g = runner::load_grid(o.grid);
  if (o.status) {
    if (!fs::is_directory(g.out)) throw std::invalid_argument("--out " + o.grid.out + ": no such results folder");
    runner::check_pinned(g, /*any_data=*/true);
    std::map<std::size_t, std::string> queued;
    try {
      queued = runner::queued_runs(g, o.slurm);
    } catch (const std::runtime_error& e) {
      std::cerr << "stiefel experiment: cannot ask Slurm what is queued (" << e.what()
                << "); runs still queued show as missing or failed\n";
    }
    runner::print_status(g, runner::grid_status(g, queued), std::cout);
    return 0;
  }
  if (o.batch_seeds > 1 && g.experiment.definition["task"] != "grok")
    throw std::invalid_argument("--batch-seeds " + std::to_string(o.batch_seeds) +
                                ": seed batching trains the grokking "
                                "model; " +
                                g.experiment.name + " is a " + g.experiment.definition["task"].get<std::string>() +
                                " experiment");
  if (g.experiment.definition["task"] == "image" && o.grid.data.empty())
    std::cerr << "stiefel experiment: no --data; image runs use Fashion-MNIST (the paper uses CIFAR-10)\n";
  if (o.use_slurm) return submit(g, o);
  if (o.dry_run) throw std::invalid_argument("--dry-run: only with --slurm");
  // A shard takes whole seed groups, so that --batch-seeds trains each group in one process.
  const auto shard_indices =
      runner::shard_of_grid(g, o.shard.empty() ? runner::Shard{} : runner::parse_shard(o.shard), o.batch_seeds);
  auto indices = shard_indices;
  if (!o.arms.empty()) {
    for (const auto& a : o.arms)
      if (std::find(g.experiment.arms.begin(), g.experiment.arms.end(), a) == g.experiment.arms.end()) {
        std::string known;
        for (const auto& k : g.experiment.arms) known += (known.empty() ? "" : ", ") + k;
        throw std::invalid_argument("--arms " + a + ": not an arm of " + g.experiment.name + "'s " +
                                    g.experiment.profile + " profile (its arms: " + known + ")");
      }
    // A seed group holds runs of one arm (runner's batch key), so a group is never split.
    std::erase_if(
        indices, [&](std::size_t k) { return std::find(o.arms.begin(), o.arms.end(), g.runs[k].arm) == o.arms.end(); });
    std::string chosen;
    for (const auto& a : o.arms) chosen += (chosen.empty() ? "" : ", ") + a;
    std::cerr << g.experiment.name << ": arms " << chosen << ": " << indices.size() << " of " << shard_indices.size()
              << " runs" << (o.shard.empty() ? "" : " of shard " + o.shard) << "\n";
  }
  runner::pin_grid(g);
  if (const auto kernels = runner::pin_blas_kernels(g); !kernels.empty())
    std::cerr << g.experiment.name << ": OpenBLAS kernels " << kernels << " (pinned with the grid)\n";
  for (const auto& from : o.reuse_from) {
    const auto n = runner::reuse_records(g, from, indices, std::cerr);  // this invocation's cells only
    std::cerr << g.experiment.name << ": " << n << " runs reused from " << from << "\n";
  }
  return runner::run_local(g, indices, runner::LocalOptions{o.jobs, training_executable(), o.shard, o.batch_seeds},
                           std::cerr);
}

}  // namespace

void add_experiment_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("experiment",
                                 "Run a paper experiment's grid of training runs (parallel, "
                                 "resumable, shardable; locally or on Slurm); results go to "
                                 "OUT/runs/GROUP/ARM/seed-S");
  auto o = std::make_shared<Options>();
  o->grid.definitions = STIEFEL_EXPERIMENTS_DIR;
  cmd->add_option("name", o->grid.name, "experiment name (experiments/NAME.json) or a definition file");
  cmd->add_option("--profile", o->grid.profile, "paper | cpu | smoke")->capture_default_str();
  cmd->add_option("--data", o->grid.data, "image data: cifar10:DIR | fashion-mnist[:DIR]");
  cmd->add_option("--jobs", o->jobs, "runs at a time (each one LibTorch thread); with --slurm, per array task")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--batch-seeds", o->batch_seeds,
                  "B: train up to B runs that differ only in their seed in one process, every step through one "
                  "batched forward (grokking grids; each a --jobs slot; records as run alone)")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option(
      "--shard", o->shard,
      "i/N: run every N-th run of the grid (every N-th seed group with --batch-seeds), starting at the i-th");
  cmd->add_option("--arms", o->arms,
                  "A,B,...: run only these arms' runs of the grid (the grid stays the whole definition's; "
                  "with --shard, the arms' runs of that shard)")
      ->delimiter(',');
  cmd->add_flag("--allow-kernel-change", o->grid.allow_kernel_change,
                "run under OPENBLAS_CORETYPE's kernels where the grid pinned others (recorded; each resumed run "
                "continues under them)");
  cmd->add_flag("--deterministic", o->grid.deterministic,
                "every run with train --deterministic (pinned with the grid: a resume must say it again)");
  cmd->add_option("--device", o->grid.device, "cpu | cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--out", o->grid.out, "results folder");
  cmd->add_option("--definitions", o->grid.definitions, "folder of experiment definitions")->capture_default_str();
  cmd->add_option("--reuse-from", o->reuse_from,
                  "results folder whose completed runs fill this grid's missing cells where every setting and the "
                  "seed are the cell's (checked, never assumed; repeatable)");
  cmd->add_flag("--list", o->list, "list the experiments and their grid sizes");
  cmd->add_flag("--status", o->status,
                "the state of every run in --out: completed, diverged, running, failed "
                "(with its log), repair, missing");
  auto* slurm = cmd->add_flag("--slurm", o->use_slurm,
                              "submit the grid to Slurm: an array job (its script kept in "
                              "OUT/slurm/) and a report job after it");
  cmd->add_option("--partition", o->slurm.partition, "Slurm partition")->needs(slurm);
  cmd->add_option("--time", o->slurm.time, "Slurm time limit per array task (e.g. 2:00:00)")->needs(slurm);
  cmd->add_option("--gpus-per-task", o->slurm.gpus_per_task,
                  "GPUs per array task (with --device cuda; default 1, 0: none)")
      ->check(CLI::NonNegativeNumber)
      ->needs(slurm);
  cmd->add_option("--max-parallel", o->slurm.max_parallel, "at most K array tasks at once (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->needs(slurm);
  cmd->add_option("--array-tasks", o->slurm.array_tasks, "N array tasks, task i runs shard i/N (default: one per run)")
      ->check(CLI::NonNegativeNumber)
      ->needs(slurm);
  cmd->add_option("--sbatch", o->slurm.sbatch, "the sbatch program to submit with (squeue is taken from beside it)")
      ->capture_default_str();
  cmd->add_flag("--dry-run", o->dry_run, "with --slurm: print the scripts and the sbatch commands, submit nothing");
  cmd->callback([o, &exit_code] {
    run_command("experiment", exit_code, [&] {
      if (o->list) return list_experiments(o->grid.definitions);
      if (o->grid.name.empty()) throw std::invalid_argument("name: give an experiment (see --list)");
      if (o->grid.out.empty()) throw std::invalid_argument("--out: a results folder is required");
      if (o->status && (o->use_slurm || !o->shard.empty()))
        throw std::invalid_argument("--status: not with --slurm or --shard");
      if (!o->arms.empty() && (o->status || o->use_slurm))
        throw std::invalid_argument("--arms: not with --status or --slurm");
      if (!o->reuse_from.empty() && (o->status || o->use_slurm))
        throw std::invalid_argument("--reuse-from: not with --status or --slurm (run it locally once first)");
      return run_experiment(*o);
    });
  });
}

}  // namespace stiefel::cli
