// Child processes of the runners: a `stiefel` child whose output goes to a log file and which dies
// with its parent, and a command (sbatch) whose output is captured.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace stiefel::runner::detail {

// Starts EXECUTABLE with ARGS (argv[0] is "stiefel"), stdout and stderr appended to LOG; the child
// gets SIGKILL when the parent dies (SIGKILL included), so no orphan keeps writing after a kill.
pid_t spawn_logged(const std::string& executable, const std::vector<std::string>& args,
                   const std::filesystem::path& log);

// Appends TEXT to a run's LOG, opened as spawn_logged opens it: never through a link, never a FIFO
// or a device (a planted one is refused, naming it, without blocking). Throws std::runtime_error.
void append_to_log(const std::filesystem::path& log, const std::string& text);

struct Captured {
  int exit_code = -1;  // -1: killed by a signal
  std::string out, err;
};
// Runs ARGV (looked up in PATH) to completion and returns its exit code and output. Throws
// std::runtime_error naming the program when it cannot be started (not found, not executable).
Captured run_captured(const std::vector<std::string>& argv);

}  // namespace stiefel::runner::detail
