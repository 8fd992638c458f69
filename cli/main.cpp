// stiefel: certified Stiefel-manifold attention geometry.
#include <cstdlib>
#include <iostream>

#include <stiefel/eigen_blocking.h>

#include "commands.h"

int main(int argc, char** argv) {
  stiefel::pin_eigen_blocking();  // the same products, to the last bit, on every machine
  CLI::App app{"stiefel: certificates for Stiefel-constrained attention and its Riemannian Adam"};
  app.require_subcommand(1);
  app.fallthrough();
  app.add_flag_callback(
      "--verbose", [] { setenv("STIEFEL_VERBOSE", "1", 1); },
      "full error messages (with LibTorch's backtrace); also STIEFEL_VERBOSE=1");
  int exit_code = 0;
  stiefel::cli::add_commands(app, argc, argv, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code;
}
