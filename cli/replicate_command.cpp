// `stiefel replicate RESULTS_DIR [--sample K] [--epochs E]`: a reviewer's audit in one command. It
// reruns K of a results folder's completed run records (all by default, else K drawn by --seed)
// with the settings each records and under the OpenBLAS kernels it names, each in a scratch folder,
// for its whole run or its first E epochs (the schedule still the whole run's:
// train --stop-after-epoch), and compares every recorded epoch field by field but wall-clock time.
// It prints, per record, "identical" or the first differing field with its epoch and both values;
// exit 1 where any differs, 2 where a record cannot be rerun.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>
#include <stiefel/reports/experiment.h>
#include <stiefel/training/trainer.h>

#include "commands.h"

namespace stiefel::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct ReplicateOptions {
  std::string results, data, work;
  int sample = 0;  // 0: every completed record
  std::int64_t epochs = 0;
  std::uint64_t seed = 1;
};

// The completed run records under DIR/runs, in path order.
std::vector<fs::path> completed_records(const fs::path& dir) {
  const fs::path runs = dir / "runs";
  if (!fs::is_directory(runs))
    throw std::invalid_argument(dir.string() + ": no runs/ folder (a results folder of stiefel experiment)");
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(runs, fs::directory_options::skip_permission_denied)) {
    if (e.is_symlink() || !e.is_regular_file() || e.path().filename() != "run.json") continue;
    try {
      const auto r = reports::read_json_file(e.path().string());
      if (r.is_object() && r.value("status", "") == "completed" && r.contains("options")) out.push_back(e.path());
    } catch (const std::exception&) {  // not a record this command reruns
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The `stiefel train` arguments that rerun a record: every option it records that differs from the
// trainer's default (a default's -1 stands for the task default, which the trainer resolves again).
std::vector<std::string> rerun_arguments(const json& options, const std::string& data) {
  const json defaults = training::run_options(training::TrainConfig{});
  std::vector<std::string> args = {"train"};
  for (const auto& [k, v] : options.items()) {
    if (k == "data" && !data.empty()) continue;
    if (k != "task" && k != "arm" && k != "seed" && k != "epochs" && defaults.contains(k) && defaults[k] == v) continue;
    std::string flag = "--" + k;
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (v.is_boolean()) {
      if (v.get<bool>()) args.push_back(flag);
      continue;
    }
    if (v.is_string() && v.get<std::string>().empty()) continue;
    args.push_back(flag);
    args.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  }
  if (!data.empty()) args.insert(args.end(), {"--data", data});
  return args;
}

// Runs `stiefel train ARGS` with OPENBLAS_CORETYPE=KERNELS (where named), its output to LOG.
int run_train(const std::vector<std::string>& args, const std::string& kernels, const fs::path& log) {
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    if (FILE* f = std::fopen(log.c_str(), "w")) {
      dup2(fileno(f), STDOUT_FILENO);
      dup2(fileno(f), STDERR_FILENO);
    }
    if (!kernels.empty()) ::setenv("OPENBLAS_CORETYPE", kernels.c_str(), 1);
    std::vector<char*> argv;
    static std::string self = "stiefel";
    argv.push_back(self.data());
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(training_executable().c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The first difference between the original's epochs (up to E, 0: all) and the rerun's, or "".
std::string first_difference(const json& original, const json& rerun, std::int64_t last_epoch, int& compared) {
  const auto epochs_of = [](const json& record) {
    return record.is_object() && record.contains("epochs") && record["epochs"].is_array() ? record["epochs"]
                                                                                          : json::array();
  };
  const auto epoch_of = [](const json& e) {
    return e.is_object() && e.contains("epoch") && e["epoch"].is_number_integer() ? e["epoch"].get<std::int64_t>()
                                                                                  : std::int64_t(-1);
  };
  std::map<std::int64_t, json> again;
  for (const auto& e : epochs_of(rerun)) again[epoch_of(e)] = e;
  compared = 0;
  for (const auto& e : epochs_of(original)) {
    const auto epoch = epoch_of(e);
    if (last_epoch > 0 && epoch > last_epoch) break;
    const auto it = again.find(epoch);
    if (it == again.end() || !e.is_object()) return "epoch " + std::to_string(epoch) + ": not in the rerun's record";
    for (const auto& [k, v] : e.items()) {
      if (k == "seconds" || k == "stage_seconds") continue;  // wall-clock time, not a result
      const json w = it->second.contains(k) ? it->second[k] : json();
      if (v != w)
        return "epoch " + std::to_string(epoch) + ", " + k + ": " + v.dump() + " (record) vs " + w.dump() + " (rerun)";
    }
    ++compared;
  }
  if (compared == 0) return "no epoch of the record to compare";
  return "";
}

int replicate(const ReplicateOptions& o) {
  if (o.sample < 0) throw std::invalid_argument("--sample must be >= 0");
  auto records = completed_records(o.results);
  if (records.empty()) throw std::invalid_argument(o.results + ": no completed run records under runs/");
  if (o.sample > 0 && std::size_t(o.sample) < records.size()) {
    std::mt19937_64 rng(o.seed);
    std::shuffle(records.begin(), records.end(), rng);
    records.resize(std::size_t(o.sample));
    std::sort(records.begin(), records.end());
  }
  const fs::path work =
      o.work.empty() ? fs::temp_directory_path() / ("stiefel-replicate-" + std::to_string(getpid())) : fs::path(o.work);
  if (fs::exists(work) && !fs::is_empty(work)) throw std::invalid_argument("--work " + work.string() + ": not empty");
  fs::create_directories(work);
  int differing = 0, failed = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& path = records[i];
    const json original = reports::read_json_file(path.string());
    const json& options = original["options"];
    std::string kernels;
    if (original.contains("compute") && original["compute"].is_object() && original["compute"].contains("blas") &&
        original["compute"]["blas"].is_object())
      kernels = original["compute"]["blas"].value("kernels", "");
    const fs::path out = work / ("run-" + std::to_string(i));
    auto args = rerun_arguments(options, o.data);
    args.insert(args.end(), {"--out", out.string(), "--quiet"});
    if (o.epochs > 0) args.insert(args.end(), {"--stop-after-epoch", std::to_string(o.epochs)});
    const fs::path shown = fs::relative(path, o.results);
    std::cout << shown.string() << ": " << std::flush;
    const int rc = run_train(args, kernels, work / ("run-" + std::to_string(i) + ".log"));
    if (rc != 0 || !fs::exists(out / "run.json")) {
      std::cout << "NOT RERUN (stiefel train exited " << rc << "; see "
                << (work / ("run-" + std::to_string(i) + ".log")).string() << ")\n";
      ++failed;
      continue;
    }
    int compared = 0;
    const std::string diff =
        first_difference(original, reports::read_json_file((out / "run.json").string()), o.epochs, compared);
    if (diff.empty()) {
      std::cout << "identical (" << compared << " recorded epochs" << (kernels.empty() ? "" : ", OpenBLAS " + kernels)
                << ")\n";
    } else {
      std::cout << "DIFFERS at " << diff << (kernels.empty() ? "" : " (OpenBLAS " + kernels + ")") << "\n";
      ++differing;
    }
  }
  std::cout << records.size() - std::size_t(differing + failed) << " of " << records.size() << " records identical";
  if (differing) std::cout << ", " << differing << " differ";
  if (failed) std::cout << ", " << failed << " not rerun";
  std::cout << " (reruns in " << work.string() << ")\n";
  if (failed) return 2;
  return differing ? 1 : 0;
}

}  // namespace

void add_replicate_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ReplicateOptions>();
  auto* cmd = app.add_subcommand(
      "replicate",
      "rerun a results folder's completed run records (or a sample) from their recorded settings and OpenBLAS "
      "kernels and report, per record, identical or the first differing field (exit 1 on any difference)");
  cmd->add_option("results", o->results, "results folder (stiefel experiment --out)")->required();
  cmd->add_option("--sample", o->sample, "rerun K records drawn by --seed (default: every completed record)");
  cmd->add_option("--epochs", o->epochs,
                  "rerun and compare only the first E epochs (the schedule still the whole run's)")
      ->check(kPositive);
  cmd->add_option("--seed", o->seed, "the draw of --sample")->capture_default_str();
  cmd->add_option("--data", o->data,
                  "image data for the reruns (cifar10:DIR | fashion-mnist[:DIR]) in place of "
                  "the recorded path, where the records' folder is elsewhere");
  cmd->add_option("--work", o->work, "the folder for the reruns (empty or new; default a new one in /tmp)");
  cmd->callback([o, &exit_code] { run_command("replicate", exit_code, [&] { return replicate(*o); }); });
}

}  // namespace stiefel::cli
