// `stiefel report RESULTS... --out DIR`: per results folder, the table as Markdown and JSON with the
// paper's values and the figures; then the claims ledger DIR/CLAIMS.md and DIR/claims.json from every
// table given and the certificate.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <stiefel/reports/experiment.h>
#include <stiefel/reports/ledger.h>
#include <stiefel/reports/plots.h>
#include <stiefel/reports/tables.h>

#include "commands.h"

namespace stiefel::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Options {
  std::vector<std::string> results;
  std::string out, claims = std::string(STIEFEL_EXPERIMENTS_DIR) + "/claims.json";
  std::vector<std::string> certificates;
  std::string definitions = STIEFEL_EXPERIMENTS_DIR;
  int resamples = 20000;
  std::uint64_t seed = 0;
  bool no_plots = false;
};

// The certificates (`stiefel certify`'s default and paper-size groups write one each), their claims
// merged, each claim tagged with the file it came from; an id in two files is refused.
json merged_certificate(const Options& o) {
  json certificate = nullptr;
  std::map<std::string, std::string> claim_file;
  for (const auto& file : o.certificates) {
    json one = reports::read_json_file(file);
    const bool is_certificate = one.is_object() && one.contains("claims") && one["claims"].is_array() &&
                                !one["claims"].empty() && one.contains("summary") && one["summary"].is_object() &&
                                std::all_of(one["claims"].begin(), one["claims"].end(), [](const json& c) {
                                  return c.is_object() && c.contains("id") && c["id"].is_string() &&
                                         c.contains("observed") && c["observed"].is_string();
                                });
    if (!is_certificate)
      throw reports::ExperimentError("--certificate " + file +
                                     ": not a certificate of `stiefel certify` (expected \"claims\": [{\"id\", "
                                     "\"observed\", ...}] and \"summary\")");
    if (certificate.is_null()) certificate = {{"claims", json::array()}, {"summary", one["summary"]}};
    for (auto& c : one["claims"]) {
      const std::string id = c["id"];
      if (const auto [it, fresh] = claim_file.emplace(id, file); !fresh)
        throw reports::ExperimentError("--certificate " + file + ": claim " + id + " is also in " + it->second +
                                       "; give each certificate once");
      c["certificate_file"] = file;
      certificate["claims"].push_back(std::move(c));
    }
  }
  return certificate;
}

// Every results folder analysed (a refusal before any file is written); STEMS maps each table's
// NAME-PROFILE to its folder.
std::vector<json> analysed_tables(const Options& o, std::map<std::string, std::string>& stems) {
  std::vector<json> tables;
  for (const auto& dir : o.results) {
    if (!fs::is_directory(dir)) throw reports::ExperimentError(dir + ": not a results folder");
    auto t = reports::analyse_results(dir, o.resamples, o.seed, o.definitions);
    const std::string stem = t["experiment"].get<std::string>() + "-" + t["profile"].get<std::string>();
    if (const auto [it, fresh] = stems.emplace(stem, dir); !fresh)
      throw reports::ExperimentError(it->second + " and " + dir + ": both hold " + t["experiment"].get<std::string>() +
                                     " [" + t["profile"].get<std::string>() +
                                     "], whose tables would overwrite each other in " + o.out +
                                     "; report them into separate --out folders");
    t["results"] = dir;
    t["stem"] = stem;
    tables.push_back(std::move(t));
  }
  return tables;
}

int run_report(const Options& o) {
  const json claims = reports::read_json_file(o.claims);
  const json certificate = merged_certificate(o);
  // Every table is analysed, the ledger built (which checks the claims file) and every output path
  // checked before the first file is written: a refusal leaves --out as it was.
  std::map<std::string, std::string> stems;  // NAME-PROFILE -> the results folder it came from
  std::vector<json> tables = analysed_tables(o, stems);
  const auto ledger = reports::build_ledger(claims, tables, certificate, o.claims);
  // Every figure's script is made (an unknown plot kind, an x no axis can show) before any file is
  // written; gnuplot then draws them.
  for (const auto& name : {std::string("CLAIMS.md"), std::string("claims.json")})
    io::check_output_path(fs::path(o.out) / name);
  for (const auto& t : tables) {
    const std::string stem = t["stem"].get<std::string>();
    for (const char* ext : {".md", ".json"}) io::check_output_path(fs::path(o.out) / (stem + ext));
    if (!o.no_plots)
      for (const auto& figure : reports::figure_names(t, stem)) io::check_output_path(fs::path(o.out) / figure);
  }
  // Two reports into one --out would leave a mix of both (one's tables, the other's figures): one at a
  // time, by a lock on the folder itself (nothing is added to it), held until this one is written.
  fs::create_directories(o.out);
  const int lock = open(o.out.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock < 0) throw reports::ExperimentError("--out " + o.out + ": cannot be opened (" + std::strerror(errno) + ")");
  const std::unique_ptr<const int, void (*)(const int*)> unlock(&lock, [](const int* fd) { close(*fd); });
  if (flock(lock, LOCK_EX | LOCK_NB) != 0)
    throw std::invalid_argument("--out " + o.out +
                                ": another stiefel report is writing into it (it holds the folder's lock); run one "
                                "at a time");
  // gnuplot draws every figure before the first file is written: a figure it cannot draw leaves
  // --out as it was.
  std::vector<std::vector<reports::RenderedFigure>> figures(tables.size());
  if (!o.no_plots)
    for (std::size_t i = 0; i < tables.size(); ++i)
      figures[i] = reports::render_plots(tables[i], tables[i]["stem"].get<std::string>());
  for (std::size_t i = 0; i < tables.size(); ++i) {
    auto& t = tables[i];
    const std::string stem = t["stem"].get<std::string>();
    t.erase("stem");
    if (!o.no_plots) {
      reports::write_figures(figures[i], o.out);
      json files = json::array();
      for (const auto& f : figures[i]) files.push_back(f.name);
      t["figures"] = files;
    }
    std::string md = reports::table_markdown(t);
    for (const auto& f : t.value("figures", json::array()))
      md += "\n![" + f.get<std::string>() + "](" + f.get<std::string>() + ")\n";
    io::write_file_atomically((fs::path(o.out) / (stem + ".md")).string(), md);
    io::write_file_atomically((fs::path(o.out) / (stem + ".json")).string(), t.dump(2) + "\n");
    std::cerr << "report: " << (fs::path(o.out) / (stem + ".md")).string() << " (" << t["runs_completed"].get<int>()
              << "/" << t["runs_planned"].get<int>() << " runs)\n";
  }
  io::write_file_atomically((fs::path(o.out) / "CLAIMS.md").string(), reports::ledger_markdown(ledger));
  io::write_file_atomically((fs::path(o.out) / "claims.json").string(), ledger.dump(2) + "\n");
  const auto& s = ledger["summary"];
  std::cerr << "ledger: " << (fs::path(o.out) / "CLAIMS.md").string() << " — " << s["claims"].get<int>()
            << " claims: " << s["confirmed"].get<int>() << " confirmed, " << s["not_confirmed"].get<int>()
            << " not confirmed, " << s["refuted"].get<int>() << " refuted, " << s["not_run"].get<int>()
            << " not run at the paper's budget; reduced-budget evidence (deciding nothing) for "
            << s["with_reduced_evidence"].get<int>() << " claims\n";
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("report",
                                 "Tables (Markdown + JSON, the paper's values beside ours), figures and "
                                 "the claims ledger from experiment results");
  auto o = std::make_shared<Options>();
  cmd->add_option("results", o->results, "results folders written by `stiefel experiment`");
  cmd->add_option("--out", o->out, "report folder")->required();
  cmd->add_option("--claims", o->claims, "the claims file")->capture_default_str();
  cmd->add_option("--definitions", o->definitions, "folder of the current experiment definitions")
      ->capture_default_str();
  cmd->add_option("--certificate", o->certificates,
                  "a JSON certificate of `stiefel certify`, for theory claims (repeatable: the default and the "
                  "paper-size group's)");
  cmd->add_option("--resamples", o->resamples, "bootstrap resamples")
      ->check(CLI::Range(100, 10000000))
      ->capture_default_str();
  cmd->add_option("--bootstrap-seed", o->seed, "bootstrap seed")->check(kNonNegative)->capture_default_str();
  cmd->add_flag("--no-plots", o->no_plots, "skip the gnuplot figures");
  cmd->callback([o, &exit_code] { run_command("report", exit_code, [&] { return run_report(*o); }); });
}

}  // namespace stiefel::cli
