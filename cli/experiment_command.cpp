// `stiefel experiment NAME --profile P --out DIR`: runs an experiment's grid as child processes of
// `stiefel train`, J at a time. Completed runs (run.json with status "completed") are skipped, an
// interrupted run resumes from its checkpoint (--resume), so a rerun of the same command never loses
// or redoes a completed run. --shard i/N takes every N-th run, for N machines.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stiefel/io/sha256.h>
#include <stiefel/reports/experiment.h>

#include "commands.h"

namespace stiefel::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct Options {
  std::string name, profile = "cpu", data, out, shard, device = "cpu", definitions = STIEFEL_EXPERIMENTS_DIR;
  int jobs = 1;
  bool list = false;
};

std::string definition_path(const Options& o) {
  if (o.name.size() > 5 && o.name.substr(o.name.size() - 5) == ".json") return o.name;
  return (fs::path(o.definitions) / (o.name + ".json")).string();
}

std::string format_seconds(double s) {
  std::ostringstream os;
  const long t = long(s + 0.5);
  if (t >= 3600) os << t / 3600 << "h" << std::setw(2) << std::setfill('0') << (t % 3600) / 60 << "m";
  else if (t >= 60) os << t / 60 << "m" << std::setw(2) << std::setfill('0') << t % 60 << "s";
  else os << t << "s";
  return os.str();
}

// The status of a run folder's record: "completed" and "diverged" are final (results); anything
// else ("running", no record, an unreadable one) is run or resumed. A completed record whose final
// checkpoint is not the one it names (a kill before the checkpoint's commit) is "repair": the
// resume recomputes the final checkpoint.
std::string run_status(const fs::path& run_dir) {
  const auto p = run_dir / "run.json";
  if (!fs::exists(p)) return "";
  try {
    const auto run = reports::read_json_file(p.string());
    const std::string status = run.is_object() && run.contains("status") && run["status"].is_string() ? run["status"] : "";
    if (status != "completed" || !run.contains("checkpoints") || !run["checkpoints"].is_object() ||
        run["checkpoints"].empty())
      return status;
    std::string last;
    for (const auto& [e, h] : run["checkpoints"].items())
      if (last.empty() || std::stoll(e) > std::stoll(last)) last = e;
    const auto ckpt = run_dir / "checkpoint.pt";
    return fs::exists(ckpt) && io::sha256_file(ckpt) == run["checkpoints"][last] ? status : "repair";
  } catch (const std::exception&) {
    return "";
  }
}
bool finished(const fs::path& run_dir) {
  const auto s = run_status(run_dir);
  return s == "completed" || s == "diverged";
}

pid_t spawn(const std::vector<std::string>& args, const fs::path& log) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    // The run dies with the runner (SIGKILL included), so no orphan keeps writing after a kill.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    std::vector<char*> argv;
    static std::string self = "stiefel";
    argv.push_back(self.data());
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  return pid;
}

int run_experiment(const Options& o) {
  const auto path = definition_path(o);
  const auto def = reports::load_definition(path);
  const auto ex = reports::resolve(def, o.profile, path);
  std::size_t shard_i = 1, shard_n = 1;
  if (!o.shard.empty()) {
    const auto slash = o.shard.find('/');
    const auto digits = [](const std::string& s) {
      return !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
    };
    if (slash == std::string::npos || !digits(o.shard.substr(0, slash)) || !digits(o.shard.substr(slash + 1)))
      throw std::invalid_argument("--shard " + o.shard + ": expected i/N with 1 <= i <= N");
    shard_i = std::stoul(o.shard.substr(0, slash));
    shard_n = std::stoul(o.shard.substr(slash + 1));
    if (shard_n < 1 || shard_i < 1 || shard_i > shard_n)
      throw std::invalid_argument("--shard " + o.shard + ": expected i/N with 1 <= i <= N");
  }
  if (def["task"] == "image" && o.data.empty())
    std::cerr << "stiefel experiment: no --data; image runs use Fashion-MNIST (the paper uses CIFAR-10)\n";

  std::vector<reports::RunSpec> runs;
  for (std::size_t k = 0; k < ex.runs.size(); ++k)
    if (k % shard_n == shard_i - 1) {
      auto r = ex.runs[k];
      if (!o.data.empty() && def["task"] == "image") r.train["data"] = o.data;
      r.train["device"] = o.device;
      runs.push_back(r);
    }

  // OUT/experiment.json pins the grid: a rerun with other settings is refused, not mixed in.
  const fs::path out(o.out);
  json grid = json::array();
  for (const auto& r : ex.runs) grid.push_back({{"id", r.id}, {"train", r.train}});
  json meta = {{"experiment", ex.name}, {"profile", ex.profile}, {"source", path}, {"definition", def},
               {"grid", grid}, {"data", o.data}, {"device", o.device}};
  const auto meta_path = out / "experiment.json";
  if (fs::exists(meta_path)) {
    const auto old = reports::read_json_file(meta_path.string());
    if (old.value("grid", json()) != grid || old.value("data", "") != o.data)
      throw std::invalid_argument("--out " + o.out + ": holds a different grid or --data (" +
                                  old.value("experiment", "?") + ", profile " + old.value("profile", "?") +
                                  "); use another folder");
  } else {
    io::write_file_atomically(meta_path.string(), meta.dump(2) + "\n");
  }

  std::vector<const reports::RunSpec*> pending;
  std::size_t skipped = 0;
  for (const auto& r : runs) {
    if (finished(out / "runs" / r.id)) ++skipped;
    else pending.push_back(&r);
  }
  std::cerr << ex.name << " [" << ex.profile << "]: " << ex.runs.size() << " runs in the grid";
  if (shard_n > 1) std::cerr << ", " << runs.size() << " in shard " << shard_i << "/" << shard_n;
  std::cerr << "; " << skipped << " already finished (skipped), " << pending.size() << " to run, " << o.jobs
            << " at a time\n";
  if (ex.profile_spec.contains("reductions"))
    std::cerr << "reductions: " << ex.profile_spec["reductions"].get<std::string>() << "\n";

  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  const auto start = std::chrono::steady_clock::now();
  std::map<pid_t, std::pair<const reports::RunSpec*, std::chrono::steady_clock::time_point>> running;
  std::size_t next = 0, done = 0;
  std::vector<std::string> failed, diverged;
  double busy_seconds = 0;
  while ((next < pending.size() || !running.empty())) {
    while (!g_stop && next < pending.size() && int(running.size()) < o.jobs) {
      const auto* r = pending[next++];
      const auto dir = out / "runs" / r->id;
      fs::create_directories(dir);
      auto args = reports::train_arguments(*r);
      args.insert(args.end(), {"--out", dir.string(), "--resume", "--quiet", "--threads", "1"});
      running[spawn(args, dir / "log.txt")] = {r, std::chrono::steady_clock::now()};
    }
    if (running.empty()) break;
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) {
        if (g_stop)
          for (const auto& [p, _] : running) kill(p, SIGTERM);
        continue;
      }
      break;
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const auto* r = it->second.first;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - it->second.second).count();
    running.erase(it);
    const auto dir = out / "runs" / r->id;
    // Exit 3 with a "diverged" record is a result (the grid goes on, the table counts it).
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const std::string final_status = run_status(dir);
    if (code == 3 && final_status == "diverged") {
      diverged.push_back(r->id);
      std::cerr << "[" << skipped + done + diverged.size() << "/" << runs.size() << "] " << r->id
                << " diverged (see " << (dir / "run.json").string() << ")\n";
      continue;
    }
    const bool ok = code == 0 && final_status == "completed";
    if (!ok) {
      if (!g_stop) failed.push_back(r->id + " (see " + (dir / "log.txt").string() + ")");
      continue;
    }
    ++done;
    busy_seconds += secs;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double left = double(pending.size() - done - failed.size() - diverged.size());
    const double eta = left * (busy_seconds / double(done)) / double(o.jobs);
    std::cerr << "[" << skipped + done + diverged.size() << "/" << runs.size() << "] " << r->id << " done in " << format_seconds(secs)
              << "; elapsed " << format_seconds(elapsed) << ", ETA " << format_seconds(eta) << "\n";
  }
  if (g_stop) {
    std::cerr << "interrupted: " << skipped + done << " of " << runs.size()
              << " runs completed; run the same command again to resume\n";
    return 130;
  }
  if (!failed.empty()) {
    std::cerr << failed.size() << " runs failed:\n";
    for (const auto& f : failed) std::cerr << "  " << f << "\n";
    return 1;
  }
  if (!diverged.empty())
    std::cerr << diverged.size() << " runs diverged (recorded as such; the report counts them): " << diverged.front()
              << (diverged.size() > 1 ? ", ..." : "") << "\n";
  std::cerr << "all " << runs.size() << " runs finished: " << o.out << "\n";
  return 0;
}

}  // namespace

void add_experiment_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("experiment", "Run a paper experiment's grid of training runs (parallel, "
                                               "resumable, shardable); results go to OUT/runs/GROUP/ARM/seed-S");
  auto o = std::make_shared<Options>();
  cmd->add_option("name", o->name, "experiment name (experiments/NAME.json) or a definition file");
  cmd->add_option("--profile", o->profile, "paper | cpu | smoke")->capture_default_str();
  cmd->add_option("--data", o->data, "image data: cifar10:DIR | fashion-mnist[:DIR]");
  cmd->add_option("--jobs", o->jobs, "runs at a time (each one LibTorch thread)")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--shard", o->shard, "i/N: run every N-th run of the grid, starting at the i-th");
  cmd->add_option("--device", o->device, "cpu | cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  cmd->add_option("--out", o->out, "results folder");
  cmd->add_option("--definitions", o->definitions, "folder of experiment definitions")->capture_default_str();
  cmd->add_flag("--list", o->list, "list the experiments and their grid sizes");
  cmd->callback([o, &exit_code] {
    run_command("experiment", exit_code, [&] {
      if (o->list) {
        std::vector<fs::path> files;
        for (const auto& e : fs::directory_iterator(o->definitions))
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
      if (o->name.empty()) throw std::invalid_argument("name: give an experiment (see --list)");
      if (o->out.empty()) throw std::invalid_argument("--out: a results folder is required");
      return run_experiment(*o);
    });
  });
}

}  // namespace stiefel::cli
