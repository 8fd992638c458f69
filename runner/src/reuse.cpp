#include "stiefel/runner/reuse.h"

#include <ostream>
#include <stdexcept>
#include <stiefel/io/atomic_file.h>
#include <stiefel/io/bounded_read.h>
#include <stiefel/reports/tables.h>
#include <vector>

namespace stiefel::runner {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Candidate {
  fs::path dir;
  json record;
};

// FROM's completed records, each checked as a report checks it.
std::vector<Candidate> completed_records(const fs::path& from) {
  std::vector<Candidate> out;
  for (const auto& e : fs::recursive_directory_iterator(from / "runs")) {
    if (e.is_symlink() || !e.is_regular_file() || e.path().filename() != "run.json") continue;
    try {
      auto r = reports::read_json_file(e.path().string());
      reports::check_run_record(r, e.path().string());
      if (r.value("status", "") == "completed") out.push_back({e.path().parent_path(), std::move(r)});
    } catch (const std::exception&) {  // not a finished run: nothing to reuse
    }
  }
  return out;
}

}  // namespace

std::size_t reuse_records(const Grid& g, const fs::path& from, const std::vector<std::size_t>& cells,
                          std::ostream& progress) {
  const auto meta_path = from / "experiment.json";
  if (!fs::is_regular_file(meta_path) || !fs::is_directory(from / "runs"))
    throw std::invalid_argument("--reuse-from " + from.string() + ": not a results folder of `stiefel experiment`");
  const json meta = reports::read_json_file(meta_path.string());
  const json data = meta.is_object() ? meta.value("data", json("")) : json("");
  if (data != json(g.request.data))
    throw std::invalid_argument("--reuse-from " + from.string() + ": ran on --data " + data.dump() + ", this grid on " +
                                json(g.request.data).dump());
  const auto candidates = completed_records(from);
  std::size_t reused = 0;
  for (const auto k : cells) {
    if (k >= g.runs.size() || run_status(g, k).state != RunState::missing) continue;
    for (const auto& c : candidates) {
      if (!reports::cell_mismatch(c.record, g.runs[k]).empty()) continue;
      check_inside_results(g, k);
      const auto dir = g.run_dir(k);
      std::string log;
      if (fs::is_regular_file(fs::symlink_status(c.dir / "log.txt")))
        log = io::read_regular_file(c.dir / "log.txt", std::uintmax_t(64) << 20, "a log");
      log += "stiefel experiment: this run's record was reused from " + (c.dir / "run.json").string() +
             " (every setting and the seed are this cell's)\n";
      io::write_file_atomically(dir / "log.txt", log);
      io::write_file_atomically(dir / "run.json", c.record.dump(2) + "\n");
      progress << g.runs[k].id << ": reused " << (c.dir / "run.json").string() << "\n";
      ++reused;
      break;
    }
  }
  return reused;
}

}  // namespace stiefel::runner
