#include "stiefel/runner/slurm.h"

#include <ctime>
#include <sstream>
#include <stdexcept>
#include <stiefel/io/atomic_file.h>

#include "process.h"

namespace stiefel::runner {

namespace fs = std::filesystem;
using nlohmann::json;

std::string compress_indices(const std::vector<std::size_t>& k) {
  std::string s;
  for (std::size_t i = 0; i < k.size();) {
    std::size_t j = i;
    while (j + 1 < k.size() && k[j + 1] == k[j] + 1) ++j;
    if (!s.empty()) s.push_back(',');
    s.append(std::to_string(k[i]));
    if (j > i) {
      s.push_back('-');
      s.append(std::to_string(k[j]));
    }
    i = j + 1;
  }
  return s;
}

std::string shell_quote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+=/.,:@%") ==
                          std::string::npos)
    return arg;
  std::string q = "'";
  for (const char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

namespace {

std::string join_quoted(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) {
    if (!s.empty()) s.push_back(' ');
    s.append(shell_quote(a));
  }
  return s;
}

// Slurm's own option formats are Slurm's to check; here only what would break the script.
void check_sbatch_value(const std::string& option, const std::string& value) {
  if (value.find_first_of("\n\r\"'\\ \t") != std::string::npos)
    throw std::invalid_argument(option + " " + value + ": must not contain spaces, quotes or newlines");
}

std::string header(const Grid& g, const SlurmOptions& o, const std::string& what) {
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# " << what << "\n"
    << "# Written by `stiefel experiment " << g.experiment.name << " --profile " << g.experiment.profile
    << " --slurm`; kept with the results it produces.\n";
  if (!o.partition.empty()) s << "#SBATCH --partition=" << o.partition << "\n";
  if (!o.time.empty()) s << "#SBATCH --time=" << o.time << "\n";
  s << "#SBATCH --chdir=" << o.workdir << "\n";
  return s.str();
}

}  // namespace

SlurmPlan plan_slurm(const Grid& g, const SlurmOptions& o) {
  if (o.max_parallel < 0) throw std::invalid_argument("--max-parallel " + std::to_string(o.max_parallel) + ": must be >= 0");
  if (o.array_tasks < 0) throw std::invalid_argument("--array-tasks " + std::to_string(o.array_tasks) + ": must be >= 0");
  if (o.gpus_per_task < 0) throw std::invalid_argument("--gpus-per-task " + std::to_string(o.gpus_per_task) + ": must be >= 0");
  if (o.gpus_per_task > 0 && g.request.device != "cuda")
    throw std::invalid_argument("--gpus-per-task " + std::to_string(o.gpus_per_task) + ": the runs use --device " +
                                g.request.device + "; add --device cuda");
  if (o.executable.empty() || fs::path(o.executable).is_relative() || o.workdir.empty() || fs::path(o.workdir).is_relative())
    throw std::invalid_argument("the Slurm scripts need absolute paths of stiefel and of the working folder");
  check_sbatch_value("--partition", o.partition);
  check_sbatch_value("--time", o.time);
  if (g.runs.empty()) throw std::invalid_argument(g.source + ": the grid has no runs");

  SlurmPlan p;
  const std::size_t n = g.runs.size();
  p.task_count = o.array_tasks > 0 ? std::min<std::size_t>(std::size_t(o.array_tasks), n) : n;
  for (std::size_t t = 0; t < p.task_count; ++t)
    for (const auto k : shard_runs(n, Shard{t + 1, p.task_count}))
      if (!is_finished(run_status(g.run_dir(k)).state)) {
        p.tasks.push_back(t);
        break;
      }
  p.array_spec = compress_indices(p.tasks);
  if (o.max_parallel > 0 && !p.tasks.empty()) {
    p.array_spec.push_back('%');
    p.array_spec.append(std::to_string(o.max_parallel));
  }

  const fs::path out = fs::absolute(g.out);
  const fs::path slurm = out / "slurm";
  p.array_path = slurm / "array.sbatch";
  p.report_path = slurm / "report.sbatch";
  p.log_folder = slurm / "logs";
  const std::string defs = fs::absolute(g.request.definitions).string();

  std::vector<std::string> task = {o.executable, "experiment", fs::absolute(g.source).string(),
                                   "--profile", g.experiment.profile, "--out", out.string(),
                                   "--device", g.request.device, "--definitions", defs,
                                   "--jobs", std::to_string(o.jobs)};
  if (!g.request.data.empty()) task.insert(task.end(), {"--data", g.request.data});

  std::ostringstream a;
  a << header(g, o,
              g.experiment.name + " [" + g.experiment.profile + "]: " + std::to_string(n) + " runs, " +
                  (p.task_count == n ? "one array task per run"
                                     : std::to_string(p.task_count) + " array tasks (task i runs shard i+1/" +
                                           std::to_string(p.task_count) + ")"));
  a << "#SBATCH --job-name=stiefel-" << g.experiment.name << "\n"
    << "#SBATCH --output=" << (p.log_folder / "%A_%a.out").string() << "\n"
    << "#SBATCH --cpus-per-task=" << o.jobs << "\n";
  const int gpus = g.request.device == "cuda" ? std::max(1, o.gpus_per_task) : 0;
  if (gpus > 0) a << "#SBATCH --gpus-per-task=" << gpus << "\n";
  a << "#SBATCH --array=" << (p.array_spec.empty() ? "0" : p.array_spec) << "\n"
    << "# Each task skips finished runs and resumes interrupted ones, as `stiefel experiment` does locally.\n"
    << "set -euo pipefail\n"
    << "exec " << join_quoted(task) << " --shard \"$((SLURM_ARRAY_TASK_ID + 1))/" << p.task_count << "\"\n";
  p.array_script = a.str();

  std::ostringstream r;
  r << header(g, o, g.experiment.name + " [" + g.experiment.profile + "]: the tables, figures and ledger of the grid")
    << "#SBATCH --job-name=stiefel-" << g.experiment.name << "-report\n"
    << "#SBATCH --output=" << (p.log_folder / "report-%j.out").string() << "\n"
    << "#SBATCH --cpus-per-task=1\n"
    << "set -euo pipefail\n"
    << "exec " << join_quoted({o.executable, "report", out.string(), "--out", (out / "report").string(),
                              "--definitions", defs})
    << "\n";
  p.report_script = r.str();
  return p;
}

std::vector<std::string> sbatch_commands(const SlurmPlan& p, const SlurmOptions& o) {
  return {join_quoted({o.sbatch, "--parsable", p.array_path.string()}),
          join_quoted({o.sbatch, "--parsable", "--dependency=afterany:ARRAY_JOB_ID", p.report_path.string()})};
}

namespace {

std::string submit_one(const SlurmOptions& o, const std::vector<std::string>& args, const std::string& what) {
  std::vector<std::string> argv = {o.sbatch, "--parsable"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto c = detail::run_captured(argv);
  std::string id = c.out.substr(0, c.out.find_first_of(";\n"));
  if (c.exit_code != 0 || id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
    std::string err = c.err.empty() ? c.out : c.err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    throw std::runtime_error(o.sbatch + " refused the " + what + " (exit " + std::to_string(c.exit_code) +
                             "): " + (err.empty() ? "no message" : err));
  }
  return id;
}

std::string utc_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

Submission submit_slurm(const Grid& g, const SlurmPlan& p, const SlurmOptions& o) {
  if (p.tasks.empty()) throw std::logic_error("submit_slurm: nothing to submit");
  pin_grid(g);
  fs::create_directories(p.log_folder);
  io::write_file_atomically(p.array_path, p.array_script);
  io::write_file_atomically(p.report_path, p.report_script);

  Submission s;
  s.array_job = submit_one(o, {p.array_path.string()}, "array job");
  json entry = {{"submitted", utc_now()}, {"array_job", s.array_job}, {"array", p.array_spec},
                {"task_count", p.task_count}, {"runs", g.runs.size()}};
  const auto log_path = p.array_path.parent_path() / "submissions.json";
  const auto record = [&] {
    json all = fs::exists(log_path) ? reports::read_json_file(log_path.string()) : json::array();
    if (!all.is_array()) all = json::array();
    all.push_back(entry);
    io::write_file_atomically(log_path, all.dump(2) + "\n");
  };
  try {
    s.report_job = submit_one(o, {"--dependency=afterany:" + s.array_job, p.report_path.string()}, "report job");
  } catch (const std::exception& e) {
    record();
    throw std::runtime_error(std::string(e.what()) + " (the array job " + s.array_job +
                             " was submitted; run `stiefel report` when it ends)");
  }
  entry["report_job"] = s.report_job;
  record();
  return s;
}

}  // namespace stiefel::runner
