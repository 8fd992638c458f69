// `stiefel` where LibTorch is built: a front end without LibTorch. It runs `experiment` (which only
// plans, starts and tabulates runs: each run is a stiefel-torch process) and `report` itself, and
// replaces itself with stiefel-torch, the complete executable beside it, for every other command line
// (train, certify, help), with the same arguments, environment and process id.
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <string_view>
#include <unistd.h>

#include "commands.h"

namespace stiefel::cli {
namespace {

namespace fs = std::filesystem;

fs::path complete_executable() {
  return fs::read_symlink("/proc/self/exe").parent_path() / STIEFEL_COMPLETE_EXECUTABLE;
}

// The command a command line names: its first argument that is not an option (the only options
// before a command are flags: --verbose, --help).
std::string_view command_of(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '-') return argv[i];
  return {};
}

}  // namespace

void add_commands(CLI::App& app, int argc, char** argv, int& exit_code) {
  const std::string_view command = command_of(argc, argv);
  if (command != "experiment" && command != "report") {
    const fs::path full = complete_executable();
    execv(full.c_str(), argv);
    const int e = errno;
    std::cerr << "stiefel: cannot run " << full.string() << " (the complete stiefel, with LibTorch, installed beside "
              << "this front end): " << std::strerror(e) << "\n";
    std::exit(1);
  }
  add_report_command(app, exit_code);
  add_experiment_command(app, exit_code);
}

// stiefel-torch, opened once: runs started later execute this file even where a rebuild replaces it.
std::string training_executable() {
  static const int fd = [] {
    const fs::path full = complete_executable();
    const int f = open(full.c_str(), O_RDONLY | O_CLOEXEC);
    if (f < 0)
      throw std::runtime_error(full.string() + ": cannot open the complete stiefel, which trains (" +
                               std::strerror(errno) + ")");
    return f;
  }();
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace stiefel::cli
