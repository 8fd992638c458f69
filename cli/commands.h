// Sub-commands of the stiefel executable; each registers its options and its callback.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <string>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <stiefel/io/atomic_file.h>
#include <stiefel/reports/experiment.h>

namespace stiefel::cli {

// Option validators with a message a user can act on ("expected a finite number >= 0, got -1"):
// the value must parse as a whole, be finite, and be ≥ 0 (or > 0 when `strict`).
inline CLI::Validator number_at_least_zero(bool strict) {
  return CLI::Validator(
      [strict](std::string& text) -> std::string {
        const std::string expected = strict ? "a finite number > 0" : "a finite number >= 0";
        std::size_t used = 0;
        double v = 0;
        try {
          v = std::stod(text, &used);
        } catch (const std::exception&) {
          return "expected " + expected + ", got \"" + text + "\"";
        }
        if (used != text.size() || !std::isfinite(v) || v < 0 || (strict && v == 0))
          return "expected " + expected + ", got \"" + text + "\"";
        return "";
      },
      strict ? "NUMBER>0" : "NUMBER>=0");
}
inline const CLI::Validator kNonNegative = number_at_least_zero(false);
inline const CLI::Validator kPositive = number_at_least_zero(true);

// Runs a command body and maps its errors to exit codes: bad arguments or definitions
// (std::invalid_argument, reports::ExperimentError) give 2, anything else 1; the message is
// printed as "stiefel NAME: what".
// An error message as the user sees it: its first line (LibTorch appends a backtrace after it), the
// whole of it with --verbose (STIEFEL_VERBOSE).
inline std::string brief_message(std::string what) {
  if (!std::getenv("STIEFEL_VERBOSE") && what.find('\n') != std::string::npos)
    what = what.substr(0, what.find('\n')) + " (--verbose for details)";
  return what;
}

template <class Body>
void run_command(const char* name, int& exit_code, Body&& body) {
  // One line (LibTorch appends its backtrace after the first); the whole message with --verbose.
  auto fail = [&](const std::exception& e, int code) {
    std::cerr << "stiefel " << name << ": " << brief_message(e.what()) << "\n";
    exit_code = code;
  };
  try {
    exit_code = body();
  } catch (const std::invalid_argument& e) {
    fail(e, 2);
  } catch (const reports::ExperimentError& e) {
    fail(e, 2);
  } catch (const std::exception& e) {
    fail(e, 1);
  }
}

// Registers this executable's commands. Where LibTorch is built, `stiefel` is a front end without it
// (commands_front.cpp): it runs `experiment` and `report` itself and hands every other command line to
// the complete executable beside it, stiefel-torch (commands_all.cpp), so that only the commands
// that run training code pay LibTorch's start-up (about 0.4 s of loading its 288 shared libraries).
// The front end may replace this process with stiefel-torch (it does not return then).
void add_commands(CLI::App& app, int argc, char** argv, int& exit_code);

// The executable that trains: a path execv accepts that stays this build's stiefel-torch (or this
// executable where it is the complete one) for the whole process, even where the file is replaced by
// a rebuild meanwhile.
std::string training_executable();

// `stiefel certify`: runs the certificate suite and writes the JSON certificate.
void add_certify_command(CLI::App& app, int& exit_code);

// `stiefel certify --checkpoint FILE`: frame checks of a trained model (LibTorch builds only).
int certify_checkpoint(const std::string& path, const std::string& out);

// `stiefel train`: one training run (built with LibTorch only).
void add_train_command(CLI::App& app, int& exit_code);
void add_replicate_command(CLI::App& app, int& exit_code);

// `stiefel experiment`: a paper experiment's grid of runs (built with LibTorch only).
void add_experiment_command(CLI::App& app, int& exit_code);

// `stiefel report`: tables, figures and the claims ledger from experiment results.
void add_report_command(CLI::App& app, int& exit_code);

}  // namespace stiefel::cli
