// The complete executable's commands: stiefel-torch where LibTorch is built (its front end, `stiefel`,
// hands it every command but `experiment` and `report`), `stiefel` itself where it is not.
#include "commands.h"

namespace stiefel::cli {

void add_commands(CLI::App& app, int /*argc*/, char** /*argv*/, int& exit_code) {
#ifdef STIEFEL_WITH_CERTIFICATES
  add_certify_command(app, exit_code);
#endif
  add_report_command(app, exit_code);
#ifdef STIEFEL_WITH_TORCH
  add_train_command(app, exit_code);
  add_replicate_command(app, exit_code);
  add_experiment_command(app, exit_code);
#endif
}

// The running executable's own file, whatever becomes of its path.
std::string training_executable() { return "/proc/self/exe"; }

}  // namespace stiefel::cli
