// The report's figures: any table (as JSON) either makes figure_script throw ExperimentError or a
// JSON type error, or gives a gnuplot script in which no text of the table can be evaluated: every
// text stands in single quotes (where gnuplot substitutes nothing), the only double-quoted strings are
// the line break "\n" and the quote "'", and outside the quotes there is no backquote, no @macro and
// no system() call.
// Every data file is named as the script names it. gnuplot itself is never started here.
#include <stiefel/reports/experiment.h>
#include <stiefel/reports/plots.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

namespace {

[[noreturn]] void violation(const std::string& what, const std::string& script) {
  std::fprintf(stderr, "figure_script: %s in\n%s\n", what.c_str(), script.c_str());
  std::abort();
}

// Walks SCRIPT as gnuplot's tokenizer sees quotes; aborts at text that gnuplot would evaluate.
void check_inert(const std::string& script) {
  std::string outside;  // the script with every quoted string removed
  for (std::size_t i = 0; i < script.size(); ++i) {
    const char c = script[i];
    if (c == '\'') {
      for (++i;; ++i) {  // a single-quoted string, which ends at the next quote
        if (i >= script.size()) violation("an unterminated single-quoted string", script);
        if (script[i] == '\n') violation("a line break inside a single-quoted string", script);
        if (script[i] == '\'') break;
      }
      outside += ' ';
    } else if (c == '"') {
      if (script.compare(i, 4, "\"\\n\"") == 0)
        i += 3;
      else if (script.compare(i, 3, "\"'\"") == 0)
        i += 2;
      else
        violation("a double-quoted string other than \"\\n\" and \"'\"", script);
      outside += ' ';
    } else {
      outside += c;
    }
  }
  if (outside.find('`') != std::string::npos) violation("a backquote outside quotes", script);
  if (outside.find('@') != std::string::npos) violation("an @macro outside quotes", script);
  if (outside.find("system") != std::string::npos) violation("system outside quotes", script);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto table = nlohmann::json::parse(data, data + size, nullptr, false);
  if (table.is_discarded() || !table.is_object()) return 0;
  for (const char* kind : {"isometry", "grok", "gap_vs_n", "eps", "accuracy", "paired"}) {
    stiefel::reports::FigureScript f;
    try {
      f = stiefel::reports::figure_script(table, kind);
    } catch (const stiefel::reports::ExperimentError&) {
      continue;
    } catch (const nlohmann::json::exception&) {  // a field of another type than a report table's
      continue;
    }
    if (f.script.empty()) continue;
    check_inert(f.script);
    for (const auto& [name, content] : f.files)
      if (f.script.find("'" + name + "'") == std::string::npos)
        violation("a data file the script never reads", f.script);
  }
  return 0;
}
