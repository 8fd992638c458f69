#include "stiefel/runner/grid.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <sstream>
#include <stiefel/io/atomic_file.h>
#include <stiefel/io/bounded_read.h>
#include <stiefel/io/sha256.h>
#include <stiefel/reports/tables.h>
#include <stiefel/runner/slurm.h>

namespace stiefel::runner {

namespace fs = std::filesystem;
using nlohmann::json;

std::string definition_path(const std::string& name, const std::string& definitions) {
  if (name.size() > 5 && name.substr(name.size() - 5) == ".json") return name;
  return (fs::path(definitions) / (name + ".json")).string();
}

Grid load_grid(const GridRequest& request) {
  Grid g;
  g.request = request;
  g.source = definition_path(request.name, request.definitions);
  const auto definition = reports::load_definition(g.source);
  g.experiment = reports::resolve(definition, request.profile, g.source);
  g.out = request.out;
  const bool image = definition["task"] == "image";
  for (auto r : g.experiment.runs) {
    if (!request.data.empty() && image) r.train["data"] = request.data;
    r.train["device"] = request.device;
    if (request.deterministic) r.train["deterministic"] = true;
    g.runs.push_back(std::move(r));
  }
  return g;
}

namespace {

// The grid as the definition gives it (before --data and --device), with --data and --device beside
// it: the layout of experiment.json since the first grids, so existing folders still match.
json pinned_grid(const Grid& g) {
  json grid = json::array();
  for (const auto& r : g.experiment.runs) grid.push_back({{"id", r.id}, {"train", r.train}});
  return grid;
}

// A grid grows when its definition gains runs (another rate, another arm, more seeds): the new grid
// extends the old one when every old run is in it with the same settings.
bool extends(const json& old_grid, const json& grid) {
  if (!old_grid.is_array()) return false;
  std::map<std::string, json> now;
  for (const auto& r : grid) now[r["id"].get<std::string>()] = r["train"];
  for (const auto& r : old_grid) {
    if (!r.is_object() || !r.contains("id") || !r["id"].is_string()) return false;
    const auto it = now.find(r["id"].get<std::string>());
    if (it == now.end() || !r.contains("train") || it->second != r["train"]) return false;
  }
  return true;
}

}  // namespace

void check_pinned(const Grid& g, bool any_data) {
  const auto meta_path = g.out / "experiment.json";
  if (!fs::exists(meta_path)) return;
  const auto old = reports::read_json_file(meta_path.string());
  const auto text = [&](const char* key) {
    return old.is_object() && old.contains(key) && old[key].is_string() ? old[key].get<std::string>()
                                                                        : std::string("?");
  };
  const json grid = pinned_grid(g);
  const json old_grid = old.is_object() && old.contains("grid") ? old["grid"] : json();
  if (!extends(old_grid, grid) || text("experiment") != g.experiment.name || text("profile") != g.experiment.profile ||
      (!any_data && (old.is_object() && old.contains("data") ? old["data"] : json("")) != json(g.request.data)))
    throw std::invalid_argument("--out " + g.request.out + ": holds a different grid or --data (" + text("experiment") +
                                ", profile " + text("profile") + "); use another folder");
  // Deterministic algorithms are a setting of every run: a grid keeps what it was pinned with.
  const bool pinned_deterministic = old.is_object() && old.value("deterministic", false) == true;
  if (pinned_deterministic != g.request.deterministic)
    throw std::invalid_argument("--out " + g.request.out + ": the grid was pinned " +
                                (pinned_deterministic ? "with" : "without") + " --deterministic; run it " +
                                (pinned_deterministic ? "with" : "without") + " it, or use another folder");
  // Slurm array tasks find their runs by position in the grid: a grid submitted there cannot grow.
  if (old_grid != grid && fs::exists(g.out / "slurm"))
    throw std::invalid_argument("--out " + g.request.out + ": the definition has gained runs, but this grid was " +
                                "submitted to Slurm (its tasks find runs by position); use another folder");
}

void pin_grid(const Grid& g) {
  check_pinned(g);
  const auto meta_path = g.out / "experiment.json";
  // The same grid stays as it was pinned; a grown one is pinned afresh (its runs so far unchanged).
  if (fs::exists(meta_path) && reports::read_json_file(meta_path.string()).value("grid", json()) == pinned_grid(g))
    return;
  json meta = {{"experiment", g.experiment.name},
               {"profile", g.experiment.profile},
               {"source", g.source},
               {"definition", g.experiment.definition},
               {"grid", pinned_grid(g)},
               {"data", g.request.data},
               {"device", g.request.device}};
  if (g.request.deterministic) meta["deterministic"] = true;  // absent: as every grid before the option
  io::write_file_atomically(meta_path, meta.dump(2) + "\n");
}

namespace {

std::string lower(std::string s) {
  for (auto& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// This process's choice: OPENBLAS_CORETYPE where set, else OpenBLAS's own for the CPU.
std::string machine_blas_kernels() {
  if (const char* e = std::getenv("OPENBLAS_CORETYPE"); e && *e) return e;
  // The BLAS LibTorch computes with (Debian's libblas.so.3 alternative), asked in this process as a
  // training process would find it: OpenBLAS names its core.
  using CoreName = char* (*)();
  for (const char* lib : {"libblas.so.3", "libopenblas.so.0"})
    if (void* handle = dlopen(lib, RTLD_LAZY | RTLD_LOCAL)) {
      const auto f = reinterpret_cast<CoreName>(dlsym(handle, "openblas_get_corename"));
      const char* name = f ? f() : nullptr;
      const std::string core = name ? name : "";
      dlclose(handle);
      if (!core.empty()) return core;
    }
  return "";
}

// The kernels the grid's first record (in grid order) names, or "".
std::string recorded_blas_kernels(const Grid& g) {
  for (std::size_t k = 0; k < g.runs.size(); ++k) {
    const auto path = g.run_dir(k) / "run.json";
    if (!fs::is_regular_file(path)) continue;
    try {
      const auto r = reports::read_json_file(path.string());
      if (r.contains("compute") && r["compute"].is_object() && r["compute"].contains("blas") &&
          r["compute"]["blas"].is_object() && r["compute"]["blas"].contains("kernels") &&
          r["compute"]["blas"]["kernels"].is_string())
        return r["compute"]["blas"]["kernels"].get<std::string>();
    } catch (const std::exception&) {  // a record that cannot be read pins nothing; its run says why
    }
  }
  return "";
}

}  // namespace

std::string pin_blas_kernels(const Grid& g) {
  const auto meta_path = g.out / "experiment.json";
  json meta = fs::exists(meta_path) ? reports::read_json_file(meta_path.string()) : json::object();
  std::string pinned = meta.is_object() ? meta.value("blas_kernel", std::string()) : std::string();
  if (pinned.empty()) pinned = recorded_blas_kernels(g);
  if (pinned.empty()) pinned = machine_blas_kernels();
  if (pinned.empty()) return "";
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  if (env && *env && lower(env) != lower(pinned)) {
    if (!g.request.allow_kernel_change)
      throw std::invalid_argument("--out " + g.request.out + ": its runs are computed with OpenBLAS's " + pinned +
                                  " kernels, and OPENBLAS_CORETYPE=" + env +
                                  " would give other bits: unset it or set it to " + pinned +
                                  ", or add --allow-kernel-change (recorded in experiment.json and each run)");
    auto earlier = meta.value("earlier_blas_kernels", json::array());
    earlier.push_back(pinned);
    meta["earlier_blas_kernels"] = earlier;
    pinned = env;
  }
  ::setenv("OPENBLAS_CORETYPE", pinned.c_str(), 1);  // every child computes with them
  if (meta.is_object() && !meta.empty() && meta.value("blas_kernel", std::string()) != pinned) {
    meta["blas_kernel"] = pinned;
    io::write_file_atomically(meta_path, meta.dump(2) + "\n");
  }
  return pinned;
}

Shard parse_shard(const std::string& text) {
  const auto bad = [&] { return std::invalid_argument("--shard " + text + ": expected i/N with 1 <= i <= N"); };
  const auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  const auto slash = text.find('/');
  if (slash == std::string::npos || !digits(text.substr(0, slash)) || !digits(text.substr(slash + 1))) throw bad();
  Shard s{std::stoul(text.substr(0, slash)), std::stoul(text.substr(slash + 1))};
  if (s.count < 1 || s.index < 1 || s.index > s.count) throw bad();
  return s;
}

std::vector<std::size_t> shard_runs(std::size_t n, Shard s) {
  std::vector<std::size_t> k;
  for (std::size_t i = s.index - 1; i < n; i += s.count) k.push_back(i);
  return k;
}

const char* to_string(RunState s) {
  switch (s) {
    case RunState::missing:
      return "missing";
    case RunState::queued:
      return "queued";
    case RunState::running:
      return "running";
    case RunState::failed:
      return "failed";
    case RunState::repair:
      return "repair";
    case RunState::completed:
      return "completed";
    case RunState::diverged:
      return "diverged";
    case RunState::mismatched:
      return "mismatched";
  }
  return "?";
}

bool is_finished(RunState s) { return s == RunState::completed || s == RunState::diverged; }

namespace {

// The last non-blank line of a run's log (its last 4 KiB: a log can be long), or why there is none.
// The log is opened once, never through a link and without blocking, and read only if regular.
std::string last_line(const fs::path& log) {
  const int fd = ::open(log.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? "" : log.string() + ": cannot be read as a log (" + std::strerror(errno) + ")";
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return log.string() + ": not a regular file, not a log";
  }
  const off_t start = st.st_size > 4096 ? st.st_size - 4096 : 0;
  text.resize(std::size_t(st.st_size - start));
  const ssize_t n = ::pread(fd, text.data(), text.size(), start);
  ::close(fd);
  text.resize(n > 0 ? std::size_t(n) : 0);
  std::istringstream lines(text);
  std::string line, last;
  while (std::getline(lines, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  if (last.size() > 200) last = last.substr(0, 200) + "...";
  for (auto& c : last)  // a terminal shows the line as text: no escape sequences
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return last;
}

}  // namespace

namespace {

// A completed record is the run's result. A checkpoint beside it (results folders do not keep
// them) must be the final one the record names: an earlier one it names (a kill between the final
// record and the checkpoint's commit) is recomputed from by a rerun; one it does not name is damaged
// or another run's, and a rerun cannot resume from it.
void check_final_checkpoint(const json& run, const fs::path& dir, RunStatus& s) {
  const auto ckpt = dir / "checkpoint.pt";
  if (!run.contains("checkpoints") || !run["checkpoints"].is_object() || run["checkpoints"].empty() ||
      !fs::exists(fs::symlink_status(ckpt)))
    return;
  long long last = -1, matched = -1;
  // No checkpoint of these models comes near 1 GiB (the paper's are 6 MB): a larger file (a sparse
  // 50 GB one takes minutes to hash) is no checkpoint of the record's, and is not read.
  constexpr std::uintmax_t kLargestCheckpoint = std::uintmax_t(1) << 30;
  std::error_code size_error;
  const bool regular = fs::is_regular_file(fs::symlink_status(ckpt));
  const std::uintmax_t size = regular ? fs::file_size(ckpt, size_error) : 0;
  const bool oversized = regular && !size_error && size > kLargestCheckpoint;
  const std::string sha = regular && !oversized ? io::sha256_file(ckpt) : std::string();
  for (const auto& [e, h] : run["checkpoints"].items()) {
    const long long epoch = std::stoll(e);
    last = std::max(last, epoch);
    if (h == sha) matched = epoch;
  }
  if (matched == last) return;
  s.state = RunState::repair;
  s.detail = matched >= 0
                 ? "its checkpoint is epoch " + std::to_string(matched) + "'s, not the final one (epoch " +
                       std::to_string(last) + ") the record names; a rerun recomputes the last epochs from it"
                 : "its checkpoint " +
                       (oversized ? "is " + std::to_string(size) + " bytes, more than any checkpoint (1 GiB): it "
                                  : std::string()) +
                       "matches none the record names (damaged, or another run's); the record " +
                       std::string("is complete: `rm ") + shell_quote(ckpt.string()) +
                       "` keeps it as the result, and a rerun then skips it";
}

}  // namespace

void check_inside_results(const Grid& g, std::size_t k) {
  fs::path p = g.out / "runs";
  const auto check = [](const fs::path& q) {
    if (fs::is_symlink(fs::symlink_status(q)))
      throw std::runtime_error(q.string() + ": a symbolic link; a run is written only inside its results folder");
  };
  check(p);
  for (const auto& part : fs::path(g.runs[k].id)) check(p /= part);
}

RunStatus run_status(const Grid& g, std::size_t k) {
  RunStatus s = run_status(g.run_dir(k));
  if (!is_finished(s.state) && s.state != RunState::repair) return s;
  try {
    const auto why = reports::cell_mismatch(reports::read_json_file((g.run_dir(k) / "run.json").string()), g.runs[k]);
    if (!why.empty()) {
      s.state = RunState::mismatched;
      s.detail = "its record is not this cell's run: " + why;
    }
  } catch (const std::exception& e) {
    s.state = RunState::failed;
    s.detail = e.what();
  }
  return s;
}

namespace {

// Why a finished record is no record of `stiefel train` that a report would read, or "": checkpoints
// not keyed by epoch (the run schema's ^[0-9]{1,9}$, named as such rather than as a parse error), or
// what `stiefel report` refuses (the run schema, its final not its last epoch's, its options against
// its config). Such a record is named, never skipped as finished, never overwritten.
std::string refused_finished_record(const nlohmann::json& run, const fs::path& record) {
  if (run.contains("checkpoints") && run["checkpoints"].is_object())
    for (const auto& [key, hash] : run["checkpoints"].items())
      if (key.empty() || key.size() > 9 || key.find_first_not_of("0123456789") != std::string::npos)
        return "its record names a checkpoint by \"" + key.substr(0, 40) +
               "\", not an epoch number (run.schema.json): not a record of `stiefel train`; move the run folder "
               "away to rerun the cell";
  try {
    reports::check_run_record(run, record.string());
  } catch (const std::exception& e) {
    return std::string(e.what()).substr(0, 300) +
           "; not a record `stiefel report` reads: move the run folder away to rerun the cell";
  }
  return "";
}

}  // namespace

RunStatus run_status(const fs::path& dir) {
  RunStatus s;
  const auto record = dir / "run.json", log = dir / "log.txt";
  // A folder that cannot be looked into (no permission, a name longer than the file system takes) is
  // this run's problem, named, and never the whole grid's: the other runs are listed and run.
  std::error_code record_error, log_error;
  const bool has_record = fs::exists(record, record_error), has_log = fs::exists(log, log_error);
  if (record_error || log_error) {
    s.state = RunState::failed;
    s.detail = "its folder cannot be read (" + (record_error ? record_error : log_error).message() + ")";
    return s;
  }
  if (!has_record && !has_log) {
    s.state = io::folder_lock_held(dir) ? RunState::running : RunState::missing;
    return s;
  }
  std::string status;
  try {
    if (has_record) {
      const auto run = reports::read_json_file(record.string());
      if (!run.is_object()) throw reports::ExperimentError(record.string() + ": not a JSON object");
      status = run.contains("status") && run["status"].is_string() ? run["status"].get<std::string>() : "";
      if (run.contains("config") && run["config"].is_object() && run["config"].contains("epochs") &&
          run["config"]["epochs"].is_number_integer())
        s.epochs = run["config"]["epochs"].get<long long>();
      if (run.contains("epochs") && run["epochs"].is_array() && !run["epochs"].empty() &&
          run["epochs"].back().is_object() && run["epochs"].back().contains("epoch") &&
          run["epochs"].back()["epoch"].is_number_integer())
        s.epoch = run["epochs"].back()["epoch"].get<long long>();
      if (status == "diverged" || status == "completed") {
        if (auto why = refused_finished_record(run, record); !why.empty()) {
          s.state = RunState::mismatched;
          s.detail = std::move(why);
          return s;
        }
      }
      if (status == "diverged") {
        s.state = RunState::diverged;
        return s;
      }
      if (status == "failed" && run.contains("failure") && run["failure"].is_object() &&
          run["failure"].contains("error") && run["failure"]["error"].is_string())
        s.detail = ("epoch " + run["failure"].value("epoch", nlohmann::json(0)).dump() + ": " +
                    run["failure"]["error"].get<std::string>())
                       .substr(0, 200);
      if (status == "completed") {
        s.state = RunState::completed;
        check_final_checkpoint(run, dir, s);
        return s;
      }
    }
  } catch (const std::exception& e) {
    s.detail = e.what();  // an unreadable record: the run is resumed or redone
  }
  if (io::folder_lock_held(dir)) {
    s.state = RunState::running;
    s.detail.clear();
    return s;
  }
  s.state = RunState::failed;
  if (s.detail.empty()) s.detail = last_line(log);
  return s;
}

}  // namespace stiefel::runner
