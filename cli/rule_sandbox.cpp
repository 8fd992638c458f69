#include "rule_sandbox.h"

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <stiefel/training/script_rule.h>
#include <string>
#include <thread>

namespace stiefel::cli {
namespace {

using training::ForwardWatch;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The calls running in the child, oldest first, one per line.
std::string running_calls(const ForwardWatch& watch) {
  std::string out;
  std::int64_t oldest = 0;
  for (const auto& slot : watch.slots) {
    const std::int64_t started = slot.started_ns.load(std::memory_order_acquire);
    if (started == 0) continue;
    const std::string line = std::string("\n  forward call: ") + slot.what;
    if (oldest == 0 || started < oldest) {
      out = line + out;
      oldest = started;
    } else {
      out += line;
    }
  }
  return out;
}

// The slot of the oldest call that has run for longer than `limit_ns`, or null.
const ForwardWatch::Slot* overdue(const ForwardWatch& watch, std::int64_t limit_ns) {
  const ForwardWatch::Slot* out = nullptr;
  const std::int64_t now = now_ns();
  for (const auto& slot : watch.slots) {
    const std::int64_t started = slot.started_ns.load(std::memory_order_acquire);
    if (started != 0 && now - started > limit_ns && (!out || started < out->started_ns.load(std::memory_order_acquire)))
      out = &slot;
  }
  return out;
}

struct SharedWatch {
  ForwardWatch* watch = nullptr;
  SharedWatch() {
    void* p = mmap(nullptr, sizeof(ForwardWatch), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      throw std::runtime_error(std::string("cannot map memory for the rule's watch: ") + std::strerror(errno));
    watch = new (p) ForwardWatch();
  }
  ~SharedWatch() {
    watch->~ForwardWatch();
    munmap(watch, sizeof(ForwardWatch));
  }
  SharedWatch(const SharedWatch&) = delete;
  SharedWatch& operator=(const SharedWatch&) = delete;
};

}  // namespace

int run_in_rule_sandbox(const std::string& where, double timeout_seconds, const std::function<int()>& body) {
  SharedWatch shared;
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    std::cerr << "stiefel certify: cannot start the process that runs " << where << ": " << std::strerror(errno)
              << "\n";
    return 1;
  }
  if (child == 0) {
    // The child ends with its supervisor, and exits without running the program's static
    // destructors (LibTorch's) twice over: what it wrote is flushed and closed first.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    training::watch_forward_calls(shared.watch);
    int code = 1;
    try {
      code = body();
    } catch (const std::exception& e) {
      std::cerr << "stiefel certify: " << e.what() << "\n";
      code = 1;
    }
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    _exit(code);
  }
  const auto limit_ns = std::int64_t(timeout_seconds * 1e9);
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      const std::string calls = running_calls(*shared.watch);
      std::cerr << "stiefel certify: " << where << ": the process running the rule died of signal " << sig << " ("
                << strsignal(sig) << ")" << (calls.empty() ? std::string(" outside the rule's forward") : " in" + calls)
                << "\n  nothing was written; the rule's forward calls so far: " << shared.watch->calls.load() << "\n";
      return 2;
    }
    if (done < 0 && errno != EINTR) {
      std::cerr << "stiefel certify: lost the process running " << where << ": " << std::strerror(errno) << "\n";
      return 1;
    }
    if (const auto* slot = overdue(*shared.watch, limit_ns)) {
      const std::string what = slot->what;
      kill(child, SIGKILL);
      while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
      std::cerr << "stiefel certify: " << where << ": forward did not return within " << timeout_seconds
                << " s (--rule-timeout), stopped:\n  forward call: " << what << "\n  nothing was written\n";
      return 2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace stiefel::cli
