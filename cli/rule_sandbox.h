// `certify --rule` runs a user's code: a forward that never returns, or one that crashes the
// process, must end in a message that names the call, not in a hang or a bare "Segmentation fault".
#pragma once

#include <functional>
#include <string>

namespace stiefel::cli {

// Runs `body` (the whole certification of the rule in `where`, "--rule FILE") in a child process
// that announces each of the module's forward calls (training::watch_forward_calls), and returns the
// exit code to give: the child's own where it exits; 2 where a forward call runs longer than
// `timeout_seconds` (the child is killed) or the child dies of a signal, with a message naming the
// call. The child writes its files atomically, so a stopped run leaves nothing half written.
int run_in_rule_sandbox(const std::string& where, double timeout_seconds, const std::function<int()>& body);

}  // namespace stiefel::cli
