// Sub-commands of the stiefel executable; each registers its options and its callback.
#pragma once

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <stiefel/reports/experiment.h>

namespace stiefel::cli {

// Runs a command body and maps its errors to exit codes: bad arguments or definitions
// (std::invalid_argument, reports::ExperimentError) give 2, anything else 1; the message is
// printed as "stiefel NAME: what".
template <class Body>
void run_command(const char* name, int& exit_code, Body&& body) {
  auto fail = [&](const std::exception& e, int code) {
    std::cerr << "stiefel " << name << ": " << e.what() << "\n";
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

// `stiefel certify`: runs the certificate suite and writes the JSON certificate.
void add_certify_command(CLI::App& app, int& exit_code);

// `stiefel certify --checkpoint FILE`: frame checks of a trained model (LibTorch builds only).
int certify_checkpoint(const std::string& path, const std::string& out);

// `stiefel train`: one training run (built with LibTorch only).
void add_train_command(CLI::App& app, int& exit_code);

// `stiefel experiment`: a paper experiment's grid of runs (built with LibTorch only).
void add_experiment_command(CLI::App& app, int& exit_code);

// `stiefel report`: tables, figures and the claims ledger from experiment results.
void add_report_command(CLI::App& app, int& exit_code);

}  // namespace stiefel::cli
