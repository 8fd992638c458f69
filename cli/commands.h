// Sub-commands of the stiefel executable; each registers its options and its callback.
#pragma once

#include <CLI/CLI.hpp>

namespace stiefel::cli {

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
