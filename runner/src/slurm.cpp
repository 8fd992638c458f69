#include "stiefel/runner/slurm.h"

#include <sys/stat.h>

#include <ctime>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <stiefel/io/atomic_file.h>
#include <stiefel/io/sha256.h>

#include "process.h"
#include "stiefel/runner/local.h"

namespace stiefel::runner {

namespace fs = std::filesystem;
using nlohmann::json;

std::string SlurmOptions::squeue() const {
  const fs::path s(sbatch);
  return s.has_parent_path() ? (s.parent_path() / "squeue").string() : std::string("squeue");
}

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

namespace {

std::string join_quoted(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) {
    if (!s.empty()) s.push_back(' ');
    s.append(shell_quote(a));
  }
  return s;
}

// A value written into an #SBATCH line: sbatch reads up to the first blank, and a newline would add
// lines to the script. Slurm's own formats (time, partition) are Slurm's to check.
void check_sbatch_value(const std::string& what, const std::string& value) {
  if (value.find_first_of("\n\r\"'\\ \t") != std::string::npos)
    throw std::invalid_argument(what + " " + value +
                                ": must not contain blanks, quotes or newlines (it goes into an #SBATCH line)");
}

// Slurm expands %j, %A, %a, ... in --output: a literal % is %%.
std::string escape_percent(const std::string& s) {
  std::string e;
  for (const char c : s) {
    if (c == '%') e.push_back('%');
    e.push_back(c);
  }
  return e;
}

fs::path submissions_path(const Grid& g) { return fs::absolute(g.out) / "slurm" / "submissions.json"; }

// OUT/slurm/submissions.json: a list of {"array_job": "ID", "task_count": N, "batch_seeds": B, ...};
// [] when absent. An entry without batch_seeds was submitted one run to a unit (B = 1).
json read_submissions(const Grid& g) {
  const auto p = submissions_path(g);
  if (!fs::exists(p)) return json::array();
  const json all = reports::read_json_file(p.string());
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument(p.string() + ": " + why + " (a list of submissions, as --slurm writes it)");
  };
  if (!all.is_array()) throw bad("not a JSON list");
  for (const auto& s : all) {
    if (!s.is_object() || !s.contains("array_job") || !s["array_job"].is_string() || !s.contains("task_count") ||
        !s["task_count"].is_number_unsigned() || s["task_count"].get<std::size_t>() == 0)
      throw bad("an entry without a string array_job and a positive task_count");
    if (s.contains("batch_seeds") &&
        (!s["batch_seeds"].is_number_unsigned() || s["batch_seeds"].get<std::uint64_t>() < 1 ||
         s["batch_seeds"].get<std::uint64_t>() > std::uint64_t(std::numeric_limits<int>::max())))
      throw bad("an entry whose batch_seeds is not a positive integer (at most " +
                std::to_string(std::numeric_limits<int>::max()) + ")");
  }
  return all;
}

std::string utc_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

std::map<std::size_t, std::string> queued_runs(const Grid& g, const SlurmOptions& o) {
  const json subs = read_submissions(g);
  std::map<std::size_t, std::string> queued;
  if (subs.empty()) return queued;
  // Every job of this user, one line per array task (-r): "ARRAY_JOB|TASK|STATE". Asking by job id
  // would fail for ids the controller has already forgotten.
  const auto c = detail::run_captured({o.squeue(), "-h", "-r", "--me", "-o", "%F|%K|%T"});
  if (c.exit_code != 0)
    throw std::runtime_error(o.squeue() + " failed (exit " + std::to_string(c.exit_code) +
                             "): " + c.err.substr(0, c.err.find('\n')));
  // Each submission's cut of the grid: its task count and its seed batching.
  std::map<std::string, std::pair<std::size_t, int>> cuts;
  for (const auto& s : subs)
    cuts[s["array_job"].get<std::string>()] = {s["task_count"].get<std::size_t>(), s.value("batch_seeds", 1)};
  std::istringstream lines(c.out);
  std::string line;
  while (std::getline(lines, line)) {
    const auto a = line.find('|'), b = line.find('|', a == std::string::npos ? a : a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const auto job = line.substr(0, a), task = line.substr(a + 1, b - a - 1), state = line.substr(b + 1);
    const auto it = cuts.find(job);
    if (it == cuts.end() || task.empty() || task.find_first_not_of("0123456789") != std::string::npos) continue;
    if (state != "PENDING" && state != "RUNNING" && state != "CONFIGURING" && state != "REQUEUED") continue;
    const auto [count, batch] = it->second;
    for (const auto k : shard_of_grid(g, Shard{std::stoul(task) + 1, count}, batch)) queued[k] = state;
  }
  return queued;
}

namespace {

void check_slurm_options(const Grid& g, const SlurmOptions& o) {
  if (o.max_parallel < 0)
    throw std::invalid_argument("--max-parallel " + std::to_string(o.max_parallel) + ": must be >= 0");
  if (o.array_tasks < 0)
    throw std::invalid_argument("--array-tasks " + std::to_string(o.array_tasks) + ": must be >= 0");
  if (o.gpus_per_task > 0 && g.request.device != "cuda")
    throw std::invalid_argument("--gpus-per-task " + std::to_string(o.gpus_per_task) + ": the runs use --device " +
                                g.request.device + "; add --device cuda");
  if (o.executable.empty() || fs::path(o.executable).is_relative() || o.workdir.empty() ||
      fs::path(o.workdir).is_relative())
    throw std::invalid_argument("the Slurm scripts need absolute paths of stiefel and of the working folder");
  check_sbatch_value("--partition", o.partition);
  check_sbatch_value("--time", o.time);
  check_sbatch_value("the working folder", o.workdir);
  check_sbatch_value("--out", fs::absolute(g.out).string());
  if (g.runs.empty()) throw std::invalid_argument(g.source + ": the grid has no runs");
  if (o.batch_seeds < 1)
    throw std::invalid_argument("--batch-seeds " + std::to_string(o.batch_seeds) + ": must be >= 1");
}

// The array's tasks: those with an unfinished run are submitted, unless a run of theirs is held
// elsewhere; sbatch's --array from the submitted ones (with %K when --max-parallel is set). A task
// takes whole units (a run, or a seed group with --batch-seeds), one unit per task by default.
void plan_tasks(SlurmPlan& p, const Grid& g, const SlurmOptions& o, const std::map<std::size_t, std::string>& queued) {
  const std::size_t units = shard_units(g, o.batch_seeds).size();
  p.task_count = o.array_tasks > 0 ? std::min<std::size_t>(std::size_t(o.array_tasks), units) : units;
  for (std::size_t t = 0; t < p.task_count; ++t) {
    bool unfinished = false, held = false;
    for (const auto k : shard_of_grid(g, Shard{t + 1, p.task_count}, o.batch_seeds)) {
      const RunState state = run_status(g, k).state;
      if (is_finished(state) || state == RunState::mismatched) continue;  // a mismatched record is never rerun over
      unfinished = true;
      // Queued in an earlier submission, or running now (here or anywhere that holds its lock).
      held = held || queued.count(k) > 0 || state == RunState::running;
    }
    if (held)
      p.held.push_back(t);
    else if (unfinished)
      p.tasks.push_back(t);
  }
  p.array_spec = compress_indices(p.tasks);
  if (o.max_parallel > 0 && !p.tasks.empty()) {
    p.array_spec.push_back('%');
    p.array_spec.append(std::to_string(o.max_parallel));
  }
}

// The lines both scripts open with: where they come from, and the resources every job asks for.
std::string script_head(const Grid& g, const SlurmOptions& o, const SlurmPlan& p) {
  std::ostringstream head;
  head << "#!/bin/bash\n"
       << "# Written by `stiefel experiment " << g.experiment.name << " --profile " << g.experiment.profile
       << " --slurm` (submission " << p.submission << "); kept with the results it produces.\n";
  if (!o.partition.empty()) head << "#SBATCH --partition=" << o.partition << "\n";
  if (!o.time.empty()) head << "#SBATCH --time=" << o.time << "\n";
  head << "#SBATCH --chdir=" << o.workdir << "\n"
       << "#SBATCH --ntasks=1\n";
  return head.str();
}

// The array job: task i runs shard i+1 of the grid with COMMAND (`stiefel experiment`).
std::string array_script(const Grid& g, const SlurmOptions& o, const SlurmPlan& p, const std::string& head,
                         const std::vector<std::string>& command) {
  const std::size_t n = g.runs.size();
  std::ostringstream a;
  a << head << "#SBATCH --job-name=stiefel-" << g.experiment.name << "\n"
    << "#SBATCH --output=" << escape_percent(p.log_folder.string()) << "/%A_%a.out\n"
    << "#SBATCH --cpus-per-task=" << o.jobs << "\n";
  const int gpus = g.request.device == "cuda" ? (o.gpus_per_task < 0 ? 1 : o.gpus_per_task) : 0;
  if (gpus > 0) a << "#SBATCH --gpus-per-task=" << gpus << "\n";
  a << "#SBATCH --array=" << (p.array_spec.empty() ? "0" : p.array_spec) << "\n"
    << "# " << n << " runs in " << p.task_count << " tasks: task i runs shard i+1/" << p.task_count
    << (o.batch_seeds > 1
            ? " (whole seed groups of up to " + std::to_string(o.batch_seeds) + " runs, each trained in one process)"
            : (p.task_count == n ? " (run i of the grid)" : ""))
    << ".\n"
    << "# Each task skips finished runs and resumes interrupted ones, as `stiefel experiment` does locally.\n"
    << "set -euo pipefail\n"
    << "exec " << join_quoted(command) << " --shard \"$((SLURM_ARRAY_TASK_ID + 1))/" << p.task_count << "\"\n";
  return a.str();
}

// The report job: COMMAND (`stiefel report` on the results folder) once the array has ended.
std::string report_script(const Grid& g, const SlurmPlan& p, const std::string& head,
                          const std::vector<std::string>& command) {
  std::ostringstream r;
  r << head << "#SBATCH --job-name=stiefel-" << g.experiment.name << "-report\n"
    << "#SBATCH --output=" << escape_percent(p.log_folder.string()) << "/report-%j.out\n"
    << "#SBATCH --cpus-per-task=1\n"
    << "# The tables, figures and ledger of the grid, once the array has ended (afterany).\n"
    << "set -euo pipefail\n"
    << "exec " << join_quoted(command) << "\n";
  return r.str();
}

}  // namespace

SlurmPlan plan_slurm(const Grid& g, const SlurmOptions& o, const std::map<std::size_t, std::string>& queued) {
  check_slurm_options(g, o);
  check_pinned(g);
  SlurmPlan p;
  p.submission = read_submissions(g).size() + 1;
  plan_tasks(p, g, o, queued);
  const fs::path out = fs::absolute(g.out);
  const fs::path slurm = out / "slurm";
  const std::string s = std::to_string(p.submission);
  p.array_path = slurm / ("array-" + s + ".sbatch");
  p.report_path = slurm / ("report-" + s + ".sbatch");
  p.log_folder = slurm / "logs";
  p.binary = slurm / "bin" / ("stiefel-" + io::sha256_file(o.executable).substr(0, 16));
  const std::string defs = fs::absolute(g.request.definitions).string();
  std::vector<std::string> task = {p.binary.string(),
                                   "experiment",
                                   fs::absolute(g.source).string(),
                                   "--profile",
                                   g.experiment.profile,
                                   "--out",
                                   out.string(),
                                   "--device",
                                   g.request.device,
                                   "--definitions",
                                   defs,
                                   "--jobs",
                                   std::to_string(o.jobs)};
  if (o.batch_seeds > 1) task.insert(task.end(), {"--batch-seeds", std::to_string(o.batch_seeds)});
  if (!g.request.data.empty()) task.insert(task.end(), {"--data", g.request.data});
  if (g.request.deterministic) task.push_back("--deterministic");
  const std::string head = script_head(g, o, p);
  p.array_script = array_script(g, o, p, head, task);
  p.report_script = report_script(
      g, p, head,
      {p.binary.string(), "report", out.string(), "--out", (out / "report").string(), "--definitions", defs});
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

// The binary the scripts run: a copy named by its content, so a rebuild cannot change a queued grid.
void copy_binary(const std::string& from, const fs::path& to) {
  if (fs::exists(to) && io::sha256_file(to) == io::sha256_file(from)) return;
  io::write_file_atomically(to, [&](const fs::path& tmp) {
    fs::copy_file(from, tmp, fs::copy_options::overwrite_existing);
    fs::permissions(tmp, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                             fs::perms::others_exec);
  });
}

}  // namespace

Submission submit_slurm(const Grid& g, const SlurmPlan& p, const SlurmOptions& o) {
  if (p.tasks.empty()) throw std::logic_error("submit_slurm: nothing to submit");
  json all = read_submissions(g);  // checked before anything is submitted
  pin_grid(g);
  fs::create_directories(p.log_folder);
  copy_binary(o.executable, p.binary);
  io::write_file_atomically(p.array_path, p.array_script);
  io::write_file_atomically(p.report_path, p.report_script);

  Submission s;
  s.array_job = submit_one(o, {p.array_path.string()}, "array job");
  json entry = {{"submission", p.submission},
                {"submitted", utc_now()},
                {"array_job", s.array_job},
                {"array", p.array_spec},
                {"task_count", p.task_count},
                {"batch_seeds", o.batch_seeds},
                {"runs", g.runs.size()},
                {"array_script", p.array_path.string()},
                {"report_script", p.report_path.string()},
                {"binary", p.binary.string()}};
  std::string report_error;
  try {
    s.report_job = submit_one(o, {"--dependency=afterany:" + s.array_job, p.report_path.string()}, "report job");
    entry["report_job"] = s.report_job;
  } catch (const std::exception& e) {
    report_error = e.what();
  }
  all.push_back(entry);
  try {
    io::write_file_atomically(submissions_path(g), all.dump(2) + "\n");
  } catch (const std::exception& e) {
    throw std::runtime_error("submitted array job " + s.array_job +
                             (s.report_job.empty() ? "" : " and report job " + s.report_job) + ", but " + e.what());
  }
  if (!report_error.empty())
    throw std::runtime_error(report_error + " (the array job " + s.array_job +
                             " was submitted; run `stiefel report` when it ends)");
  return s;
}

}  // namespace stiefel::runner
