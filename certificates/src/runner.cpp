#include <stiefel/certificates/runner.h>
#include <stiefel/eigen_blocking.h>

#include "claim_run.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <boost/version.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <stiefel/certificates/claim.h>
#include <stiefel/certificates/update_rule.h>
#include <stiefel/io/shell.h>
#include <stiefel/multiprecision.h>
#include <stiefel/scalar.h>
#include <thread>

namespace stiefel::certificates {
namespace {

using run_detail::ClaimRun;
using run_detail::run_claim;

constexpr const char* kSchemaVersion = "1.4";

std::string run_command(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

nlohmann::json generator_json() {
  const std::string git = "git -C '" STIEFEL_SOURCE_DIR "' ";
  std::string sha = run_command(git + "rev-parse HEAD 2>/dev/null");
  nlohmann::json dirty = nullptr;
  // The tree the certificate was made from is its sources: results/ (records a grid trains in the
  // checkout moves on) and reports/ (made from them, the certificate among them) are not sources.
  if (!sha.empty())
    dirty =
        !run_command(git + "status --porcelain --untracked-files=no -- . ':!results' ':!reports' 2>/dev/null").empty();
  return {{"name", "stiefel certify"},
          {"version", STIEFEL_VERSION},
          {"git_sha", sha.empty() ? nlohmann::json(nullptr) : nlohmann::json(sha)},
          {"git_dirty", dirty}};
}

nlohmann::json build_json() {
  return {{"compiler", std::string("g++ ") + __VERSION__},
          {"flags", STIEFEL_CXX_FLAGS},
          {"build_type", STIEFEL_BUILD_TYPE},
          {"libraries",
           {{"eigen", std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
                          std::to_string(EIGEN_MINOR_VERSION)},
            {"boost", BOOST_LIB_VERSION},
            {"nlohmann_json", std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
                                  std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
                                  std::to_string(NLOHMANN_JSON_VERSION_PATCH)},
            {"rapidcheck", STIEFEL_RAPIDCHECK_VERSION},
            {"mpfr", mpfr_get_version()},
            {"gmp", gmp_version}}}};
}

nlohmann::json platform_json() {
  struct utsname u {};
  uname(&u);
  return {{"os", std::string(u.sysname) + " " + u.release},
          {"arch", u.machine},
          {"hardware_threads", std::thread::hardware_concurrency()}};
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// The claims the options select, in registry order; throws std::invalid_argument for a bad regex, a
// regex matching no claim, or an unknown --swap-control target.
std::vector<const Claim*> select_claims(const RunOptions& opt) {
  std::regex pattern;
  try {
    pattern = std::regex(opt.claims, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw std::invalid_argument("--claims: '" + opt.claims + "' is not a valid regular expression (" + e.what() + ")");
  }
  bool group_known = opt.group == "all";
  for (const auto& c : registry()) group_known = group_known || c.group == opt.group;
  if (!group_known) throw std::invalid_argument("--group: no registered claim is in group '" + opt.group + "'");
  std::vector<const Claim*> selected;
  for (const auto& c : registry())
    if ((opt.group == "all" || c.group == opt.group) && std::regex_search(c.id, pattern)) selected.push_back(&c);
  if (selected.empty())
    throw std::invalid_argument("--claims: '" + opt.claims + "' matches no registered claim of group '" + opt.group +
                                "'");
  std::set<std::string> swapped_claims;
  for (const auto& pair : opt.swap_controls) {
    const auto colon = pair.find(':');
    bool found = false;
    for (const auto& c : registry())
      if (colon != std::string::npos && c.id == pair.substr(0, colon))
        for (const auto& ctl : c.controls) found = found || ctl.id == pair.substr(colon + 1);
    if (!found) throw std::invalid_argument("--swap-control: '" + pair + "' names no registered CLAIM:CONTROL pair");
    if (!swapped_claims.insert(pair.substr(0, colon)).second)
      throw std::invalid_argument("--swap-control: '" + pair + "': claim " + pair.substr(0, colon) +
                                  " already has a control swapped in (one per claim)");
  }
  return selected;
}

// Runs the selected claims on `jobs` threads, the costly ones first, logging one line per claim as
// it finishes; the runs come back in the order of `selected`.
std::vector<ClaimRun> run_claims(const std::vector<const Claim*>& selected, const RunOptions& opt, unsigned jobs,
                                 std::ostream& log) {
  std::vector<ClaimRun> runs(selected.size());
  std::atomic<std::size_t> next{0};
  std::mutex log_mutex;
  std::vector<std::size_t> order(selected.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return selected[a]->cost > selected[b]->cost; });
  // The id column is as wide as the longest selected id, so that no id runs into the verdict.
  std::size_t id_width = 0;
  for (const auto* c : selected) id_width = std::max(id_width, c->id.size());
  // The first RuleError raised on any worker: the others start no further claim, and it is
  // rethrown once all have joined.
  std::exception_ptr rule_error;
  std::atomic<bool> stop{false};
  auto worker = [&] {
    // MPFR keeps its constant caches per thread; a worker frees its own before it ends.
    struct FreeMpfrCache {
      ~FreeMpfrCache() { mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE); }
    } free_cache;
    for (std::size_t k; !stop && (k = next++) < selected.size();) {
      const std::size_t i = order[k];
      try {
        runs[i] = run_claim(*selected[i], opt, opt.seed);
      } catch (const RuleError&) {
        std::lock_guard<std::mutex> lock(log_mutex);
        if (!rule_error) rule_error = std::current_exception();
        stop = true;
        return;
      }
      std::lock_guard<std::mutex> lock(log_mutex);
      const auto& e = runs[i].entry;
      log << std::left << std::setw(int(id_width + 2)) << selected[i]->id << std::setw(10)
          << e["expected"].get<std::string>() << std::setw(13) << runs[i].observed << std::setw(5)
          << e["cases"].get<int>() << " controls " << runs[i].controls_killed << "/" << runs[i].controls << std::right
          << std::fixed << std::setprecision(1) << std::setw(7) << runs[i].seconds << "s  "
          << (runs[i].met ? "ok" : "FAILED") << "\n";
      log.unsetf(std::ios::fixed);
      log.flush();
    }
  };
  stiefel::prepare_mp50_for_threads();
  std::vector<std::thread> pool;
  for (unsigned j = 0; j < std::min<std::size_t>(jobs, selected.size()); ++j) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  if (rule_error) std::rethrow_exception(rule_error);
  return runs;
}

// The certificate's summary of the runs; counts the runs that met and failed their expectation.
nlohmann::json summary_json(const std::vector<ClaimRun>& runs, RunResult& result) {
  std::map<std::string, int> by_status;
  int controls = 0, controls_killed = 0;
  for (const auto& r : runs) {
    ++by_status[r.observed];
    controls += r.controls;
    controls_killed += r.controls_killed;
    (r.met ? result.passed : result.failed)++;
  }
  return {{"claims", int(runs.size())},
          {"controls", controls},
          {"claims_and_controls", int(runs.size()) + controls},
          {"certified", by_status["certified"]},
          {"refuted", by_status["refuted"]},
          {"vacuous", by_status["vacuous"]},
          {"inconclusive", by_status["inconclusive"]},
          {"controls_killed", controls_killed},
          {"controls_survived", controls - controls_killed},
          {"met_expectation", result.passed},
          {"failed_expectation", result.failed},
          {"passed", result.failed == 0}};
}

}  // namespace

const std::string& claim_in_progress() { return rules::call_context(); }

RunResult run_certificate(const RunOptions& opt, std::ostream& log) {
  pin_eigen_blocking();  // a certificate is the same on every machine (before the claims' threads start)
  const std::vector<const Claim*> selected = select_claims(opt);
  const auto start = std::chrono::steady_clock::now();
  const std::string started = utc_now();
  const unsigned jobs = opt.jobs > 0 ? unsigned(opt.jobs) : std::max(1u, std::thread::hardware_concurrency());
  const std::vector<ClaimRun> runs = run_claims(selected, opt, jobs, log);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  RunResult result;
  nlohmann::json claims = nlohmann::json::array();
  for (const auto& r : runs) claims.push_back(r.entry);
  nlohmann::json summary = summary_json(runs, result);
  const char* precision_name = opt.precision == Precision::kDouble ? "double"
                               : opt.precision == Precision::kMp50 ? "mp50"
                                                                   : "both";
  std::string reproduce = "stiefel certify --seed " + std::to_string(opt.seed) + " --cases " +
                          std::to_string(opt.cases) + " --claims " + io::shell_quote(opt.claims) + " --precision " +
                          precision_name;
  if (opt.group != "default") reproduce += " --group " + opt.group;
  for (const auto& pair : opt.swap_controls) reproduce += " --swap-control " + pair;
  reproduce += opt.reproduce_options;
  // An implementation not run here is named where the selection would have run its claims (an
  // absent claim is never read as a passed one), and only there: `--rule` alone selects none of them.
  nlohmann::json not_run = nlohmann::json::array();
  const std::regex pattern(opt.claims, std::regex::ECMAScript);
  for (const auto& skipped : skipped_implementations()) {
    bool selected = false;
    for (const auto& stem : rule_claim_stems())
      selected = selected || std::regex_search(stem.stem + "-" + skipped.name, pattern);
    if (!selected) continue;
    not_run.push_back({{"name", skipped.name}, {"reason", skipped.reason}});
    log << "not run: the update claims' implementation '" << skipped.name << "': " << skipped.reason << "\n";
  }
  result.certificate = {
      {"schema_version", kSchemaVersion},
      {"generator", generator_json()},
      {"build", build_json()},
      {"platform", platform_json()},
      {"run",
       {{"seed", opt.seed},
        {"cases", opt.cases},
        {"claims", opt.claims},
        {"group", opt.group},
        {"precision", precision_name},
        {"jobs", jobs},
        {"started_utc", started},
        {"wall_seconds", wall},
        {"command_line", opt.command_line},
        {"reproduce", reproduce},
        {"swap_control", opt.swap_controls.empty() ? nlohmann::json(nullptr) : nlohmann::json(opt.swap_controls)},
        {"implementations_not_run", not_run}}},
      {"precision",
       {{"working_type", "double (IEEE 754 binary64)"},
        {"unit_roundoff", to_double(unit_roundoff<double>())},
        {"reference_type", "boost::multiprecision::number<mpfr_float_backend<50, allocate_stack>, et_off> (MPFR " +
                               std::string(mpfr_get_version()) + ", GMP " + gmp_version + ")"},
        {"reference_unit_roundoff", to_double(unit_roundoff<mp50>())}}},
      {"claims", claims},
      {"summary", summary}};
  log << "wall " << std::fixed << std::setprecision(1) << wall << " s\n";
  log.unsetf(std::ios::fixed);
  return result;
}

}  // namespace stiefel::certificates
