#include "stiefel/runner/status.h"

#include <algorithm>
#include <iomanip>
#include <ostream>
#include <sstream>

namespace stiefel::runner {

namespace fs = std::filesystem;
using nlohmann::json;

GridStatus grid_status(const Grid& g, const std::map<std::size_t, std::string>& queued) {
  GridStatus s;
  for (std::size_t k = 0; k < g.runs.size(); ++k) {
    auto r = run_status(g, k);
    const auto q = queued.find(k);
    if (q != queued.end() && !is_finished(r.state) && r.state != RunState::running) {
      r.state = RunState::queued;
      r.detail = "Slurm: " + q->second;
    }
    s.runs.push_back(r);
    ++s.counts[r.state];
  }
  return s;
}

namespace {

// For a grid submitted to Slurm: the output file of the array task that ran run K in the latest
// submission (OUT/slurm/logs/JOB_TASK.out), when it exists.
fs::path slurm_log(const Grid& g, std::size_t k) {
  const auto submissions = g.out / "slurm" / "submissions.json";
  if (!fs::exists(submissions)) return {};
  try {
    const json all = reports::read_json_file(submissions.string());
    if (!all.is_array() || all.empty()) return {};
    const json& last = all.back();
    const auto tasks = last.at("task_count").get<std::size_t>();
    if (tasks == 0) return {};
    const auto p =
        g.out / "slurm" / "logs" / (last.at("array_job").get<std::string>() + "_" + std::to_string(k % tasks) + ".out");
    return fs::exists(p) ? p : fs::path();
  } catch (const std::exception&) {
    return {};
  }
}

// TEXT as a terminal line: a record's or a log's text must not carry escape sequences to it.
std::string printable(std::string text) {
  for (auto& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return text;
}

}  // namespace

void print_status(const Grid& g, const GridStatus& s, std::ostream& out) {
  out << g.experiment.name << " [" << g.experiment.profile << "]: " << g.runs.size() << " runs:";
  bool first = true;
  for (const auto st : {RunState::completed, RunState::diverged, RunState::running, RunState::queued, RunState::failed,
                        RunState::repair, RunState::mismatched, RunState::missing}) {
    const auto it = s.counts.find(st);
    out << (first ? " " : ", ") << (it == s.counts.end() ? 0 : it->second) << " " << to_string(st);
    first = false;
  }
  out << "\n";
  std::size_t width = 0;
  for (const auto& r : g.runs) width = std::max(width, r.id.size());
  for (std::size_t k = 0; k < g.runs.size(); ++k) {
    const auto& r = s.runs[k];
    std::ostringstream line;
    line << std::left << std::setw(int(width) + 2) << g.runs[k].id << std::setw(12) << to_string(r.state);
    if (r.epochs > 0 && r.state != RunState::missing) line << "epoch " << r.epoch << "/" << r.epochs;
    if (r.state == RunState::queued) line << "  " << r.detail;
    if (r.state == RunState::mismatched)
      line << "  " << (g.run_dir(k) / "run.json").string() << ": " << printable(r.detail);
    if (r.state == RunState::failed || r.state == RunState::repair) {
      line << "  log " << (g.run_dir(k) / "log.txt").string();
      if (const auto sl = slurm_log(g, k); !sl.empty()) line << ", Slurm " << sl.string();
      if (!r.detail.empty()) line << ": " << printable(r.detail);
    }
    std::string text = line.str();
    text.erase(text.find_last_not_of(' ') + 1);
    out << text << "\n";
  }
}

}  // namespace stiefel::runner
