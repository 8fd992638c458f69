#include "stiefel/runner/local.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>

#include "process.h"

namespace stiefel::runner {

namespace fs = std::filesystem;

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

std::string format_seconds(double s) {
  std::ostringstream os;
  const long t = long(s + 0.5);
  if (t >= 3600)
    os << t / 3600 << "h" << std::setw(2) << std::setfill('0') << (t % 3600) / 60 << "m";
  else if (t >= 60)
    os << t / 60 << "m" << std::setw(2) << std::setfill('0') << t % 60 << "s";
  else
    os << t << "s";
  return os.str();
}

using Clock = std::chrono::steady_clock;

// The bookkeeping of one invocation: what finished, failed or diverged, and the ETA.
struct Tally {
  std::size_t grid = 0, selected = 0, skipped = 0, pending = 0, done = 0;
  std::vector<std::string> failed, diverged, mismatched, elsewhere;
  double busy_seconds = 0;
  Clock::time_point start = Clock::now();
  int jobs = 1;

  std::size_t finished() const { return skipped + done + diverged.size(); }
  std::string eta_line(const std::string& id, double secs) const {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    const double left =
        std::max(0.0, double(pending) - double(done + failed.size() + diverged.size() + elsewhere.size()));
    const double eta = left * (busy_seconds / double(done)) / double(jobs);
    std::ostringstream line;
    line << "[" << finished() << "/" << selected << "] " << id << " done in " << format_seconds(secs) << "; elapsed "
         << format_seconds(elapsed) << ", ETA " << format_seconds(eta);
    return line.str();
  }
};

// Records how one child ended: exit 3 with a "diverged" record is a result (the grid goes on, the
// table counts it); a run another process holds is left to it; a completed record is the result
// (another process on the same folder may have written it); anything else is a failure.
void account(Tally& t, const Grid& g, std::size_t k, int wait_status, double secs, std::ostream& progress) {
  const auto& id = g.runs[k].id;
  const auto dir = g.run_dir(k);
  const int code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  const RunState state = run_status(g, k).state;
  if (state == RunState::diverged) {  // a result, whatever else its process (a seed batch's) met
    t.diverged.push_back(id);
    progress << "[" << t.finished() << "/" << t.selected << "] " << id << " diverged (see "
             << (dir / "run.json").string() << ")\n";
    return;
  }
  if (state == RunState::running) {  // another process took the run's lock first: it is that one's
    t.elsewhere.push_back(id);
    return;
  }
  if (state != RunState::completed) {  // a completed record is the result, whichever process wrote it
    if (!g_stop)
      t.failed.push_back(id + " (exit " + std::to_string(code) + "; see " + (dir / "log.txt").string() + ")");
    return;
  }
  ++t.done;
  t.busy_seconds += secs;
  progress << t.eta_line(id, secs) << "\n";
}

int summarise(const Tally& t, const Grid& g, std::ostream& progress) {
  if (g_stop) {
    progress << "interrupted: " << t.skipped + t.done << " of " << t.selected
             << " runs completed; run the same command again to resume\n";
    return 130;
  }
  if (!t.elsewhere.empty())
    progress << t.elsewhere.size() << " runs were running in another process and were left to it ("
             << t.elsewhere.front() << (t.elsewhere.size() > 1 ? ", ..." : "")
             << "); `stiefel experiment ... --status` follows them\n";
  if (!t.mismatched.empty()) {
    progress << t.mismatched.size() << " runs hold a record that is not their cell's (not run over; move each away "
             << "to run the cell):\n";
    for (const auto& m : t.mismatched) progress << "  " << m << "\n";
  }
  if (!t.failed.empty()) {
    progress << t.failed.size() << " runs failed:\n";
    for (const auto& f : t.failed) progress << "  " << f << "\n";
  }
  if (!t.failed.empty() || !t.mismatched.empty()) return 1;
  if (!t.diverged.empty())
    progress << t.diverged.size() << " runs diverged (recorded as such; the report counts them): " << t.diverged.front()
             << (t.diverged.size() > 1 ? ", ..." : "") << "\n";
  if (t.elsewhere.empty())
    progress << "all " << t.selected << " runs finished: " << g.request.out << "\n";
  else
    progress << t.finished() << " of " << t.selected << " runs finished here, " << t.elsewhere.size()
             << " left to another process: " << g.request.out << "\n";
  return 0;
}

}  // namespace

std::vector<std::string> run_arguments(const Grid& g, std::size_t k) {
  auto args = reports::train_arguments(g.runs[k]);
  args.insert(args.end(), {"--out", g.run_dir(k).string(), "--resume", "--quiet", "--threads", "1"});
  if (g.request.allow_kernel_change) args.push_back("--allow-kernel-change");
  return args;
}

std::vector<std::string> group_arguments(const Grid& g, const std::vector<std::size_t>& group) {
  auto args = run_arguments(g, group.front());
  for (std::size_t i = 1; i < group.size(); ++i)
    args.insert(args.end(),
                {"--batch-seed", std::to_string(g.runs[group[i]].seed) + "=" + g.run_dir(group[i]).string()});
  return args;
}

namespace {
// The `stiefel train` arguments of run K but its seed, and its cell's group and arm: runs with the
// same key batch together. Two arms may train with the same options (a rerun arm, as in Table 4):
// their runs of one seed must not share a batch, which trains each seed once.
std::vector<std::string> batch_key(const Grid& g, std::size_t k) {
  auto args = reports::train_arguments(g.runs[k]);
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--seed") {
      args.erase(args.begin() + std::ptrdiff_t(i), args.begin() + std::ptrdiff_t(i) + 2);
      break;
    }
  args.push_back(g.runs[k].group + "/" + g.runs[k].arm);
  return args;
}
}  // namespace

std::vector<std::vector<std::size_t>> seed_batches(const Grid& g, const std::vector<std::size_t>& pending, int b) {
  // Runs of one key in the order they come, the keys in the order of their first run.
  std::vector<std::pair<std::vector<std::string>, std::vector<std::size_t>>> by_key;
  for (const auto k : pending) {
    auto key = batch_key(g, k);
    auto it = std::find_if(by_key.begin(), by_key.end(), [&](const auto& e) { return e.first == key; });
    if (it == by_key.end()) it = by_key.insert(by_key.end(), {std::move(key), {}});
    it->second.push_back(k);
  }
  std::vector<std::vector<std::size_t>> groups;
  for (const auto& [key, runs] : by_key)
    for (std::size_t i = 0; i < runs.size(); i += std::size_t(b))
      groups.emplace_back(runs.begin() + std::ptrdiff_t(i),
                          runs.begin() + std::ptrdiff_t(std::min(runs.size(), i + std::size_t(b))));
  return groups;
}

std::vector<std::vector<std::size_t>> shard_units(const Grid& g, int b) {
  std::vector<std::size_t> all(g.runs.size());
  for (std::size_t k = 0; k < all.size(); ++k) all[k] = k;
  return seed_batches(g, all, std::max(1, b));
}

std::vector<std::size_t> shard_of_grid(const Grid& g, Shard s, int b) {
  if (b <= 1) return shard_runs(g.runs.size(), s);
  const auto units = shard_units(g, b);
  std::vector<std::size_t> k;
  for (const auto u : shard_runs(units.size(), s)) k.insert(k.end(), units[u].begin(), units[u].end());
  std::sort(k.begin(), k.end());
  return k;
}

namespace {

// The runs of INDICES still to run, the others sorted into T (finished, mismatched, held by another
// process), with the invocation's opening lines.
std::vector<std::size_t> plan(Tally& t, const Grid& g, const std::vector<std::size_t>& indices, const LocalOptions& o,
                              std::ostream& progress) {
  t.grid = g.runs.size();
  t.selected = indices.size();
  t.jobs = o.jobs;
  std::vector<std::size_t> pending;
  for (const auto k : indices) {
    const auto st = run_status(g, k);
    if (is_finished(st.state))
      ++t.skipped;
    else if (st.state == RunState::mismatched)  // another cell's or budget's record: never run over
      t.mismatched.push_back(g.runs[k].id + " (" + (g.run_dir(k) / "run.json").string() + "): " + st.detail);
    else if (st.state == RunState::running)  // another process holds its lock: left to it
      t.elsewhere.push_back(g.runs[k].id);
    else
      pending.push_back(k);
  }
  t.pending = pending.size();
  progress << g.experiment.name << " [" << g.experiment.profile << "]: " << t.grid << " runs in the grid";
  if (!o.shard.empty()) progress << ", " << t.selected << " in shard " << o.shard;
  progress << "; " << t.skipped << " already finished (skipped), ";
  if (!t.mismatched.empty()) progress << t.mismatched.size() << " mismatched (left as they are), ";
  if (!t.elsewhere.empty()) progress << t.elsewhere.size() << " running in another process (left to it), ";
  progress << pending.size() << " to run, " << o.jobs << " at a time\n";
  if (g.experiment.profile_spec.contains("reductions"))
    progress << "reductions: " << g.experiment.profile_spec["reductions"].get<std::string>() << "\n";
  return pending;
}

// Starts one group's child (its runs' folders made inside the results folder, the other runs' logs
// pointing at the first's); its pid, or -1 with the group's runs counted as failed.
pid_t start_group(Tally& t, const Grid& g, const std::vector<std::size_t>& group, const LocalOptions& o) {
  try {
    for (const auto k : group) {
      check_inside_results(g, k);
      fs::create_directories(g.run_dir(k));
    }
    // A group's child writes its output to its first run's log; the others' logs say where.
    for (std::size_t i = 1; i < group.size(); ++i)  // appended, as a child's output is, never through a link
      detail::append_to_log(g.run_dir(group[i]) / "log.txt",
                            "trained in one process with " + g.runs[group.front()].id + " (--batch-seed): see " +
                                (g.run_dir(group.front()) / "log.txt").string() + "\n");
    return detail::spawn_logged(o.executable, group_arguments(g, group), g.run_dir(group.front()) / "log.txt");
  } catch (const std::exception& e) {  // this group cannot start; the others go on
    for (const auto k : group) t.failed.push_back(g.runs[k].id + ": " + e.what());
    return -1;
  }
}

}  // namespace

int run_local(const Grid& g, const std::vector<std::size_t>& indices, const LocalOptions& o, std::ostream& progress) {
  Tally t;
  const auto pending = plan(t, g, indices, o, progress);

  g_stop = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  const auto groups = seed_batches(g, pending, std::max(1, o.batch_seeds));
  std::map<pid_t, std::pair<std::vector<std::size_t>, Clock::time_point>> running;
  std::size_t next = 0;
  bool forwarded = false;
  // The children are polled (5 times a second) rather than waited for, so that a signal is
  // forwarded whenever it lands, not only when it interrupts a wait.
  const auto forward_stop = [&] {
    if (!g_stop || forwarded) return;
    for (const auto& [p, _] : running) kill(p, SIGTERM);
    forwarded = true;
  };
  while (next < groups.size() || !running.empty()) {
    forward_stop();
    while (!g_stop && next < groups.size() && int(running.size()) < o.jobs) {
      std::vector<std::size_t> group;
      for (const auto k : groups[next])
        if (run_status(g, k).state == RunState::running)  // taken by another process since the plan
          t.elsewhere.push_back(g.runs[k].id);
        else
          group.push_back(k);
      ++next;
      if (group.empty()) continue;
      if (const pid_t pid = start_group(t, g, group, o); pid > 0) running[pid] = {group, Clock::now()};
    }
    if (running.empty()) break;
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid == 0 || (pid < 0 && errno == EINTR)) {
      ::usleep(200000);
      continue;
    }
    if (pid < 0) break;
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const auto [group, started] = it->second;
    running.erase(it);
    const double secs = std::chrono::duration<double>(Clock::now() - started).count();
    for (const auto k : group) account(t, g, k, status, secs / double(group.size()), progress);
  }
  return summarise(t, g, progress);
}

}  // namespace stiefel::runner
