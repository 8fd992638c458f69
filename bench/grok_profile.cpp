// Where a grokking epoch's time goes: trains one grokking run (`stiefel train --task grok`, the
// pinned compute, one thread) under LibTorch's operator profiler and prints, per ATen operator and
// autograd node, its calls and self time per epoch (time inside it but not inside a nested operator)
// and its share of the epoch, largest first; the time outside every operator (the trainer's own
// code) is the last line, and the GEMM operators' total (mm, addmm, bmm, baddbmm) the first. With
// one LibTorch thread (the pinned compute) every operator nests on the training thread; an operator
// of another thread counts in its own row but not in the time inside operators.
// Usage: stiefel_grok_profile ARM [EPOCHS] (default 20; the run's folder is a temporary one)
#include <ATen/record_function.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <stiefel/training/trainer.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

// Self time per operator from RecordFunction's callbacks (start and end of every ATen operator and
// autograd node, nested on one thread): a stack of open operators and the time of their children.
struct Total {
  double self_us = 0;
  std::int64_t calls = 0;
};
struct Open {
  std::string name;
  std::chrono::steady_clock::time_point start;
  double child_us = 0;
};
std::mutex totals_mutex;
std::map<std::string, Total> totals;
double inside_us = 0;                     // time inside some outermost operator of the training thread
thread_local std::vector<Open> open_ops;  // each thread's own nesting
thread_local bool training_thread = false;

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  open_ops.push_back({fn.name(), std::chrono::steady_clock::now(), 0.0});
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (open_ops.empty() || open_ops.back().name != fn.name()) return;  // begun before the callback was added
  const auto open = std::move(open_ops.back());
  open_ops.pop_back();
  const double total = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - open.start).count();
  const std::lock_guard<std::mutex> lock(totals_mutex);
  auto& t = totals[open.name];
  t.self_us += total - open.child_us;
  t.calls += 1;
  if (!open_ops.empty())
    open_ops.back().child_us += total;
  else if (training_thread)  // another thread's operators overlap the training thread's: not added
    inside_us += total;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s ARM [EPOCHS]\n", argv[0]);
    return 2;
  }
  stiefel::training::TrainConfig c;
  c.task = "grok";
  c.arm = argv[1];
  c.epochs = 20;
  if (argc == 3) {
    char* end = nullptr;
    c.epochs = std::strtoll(argv[2], &end, 10);
    if (end == argv[2] || *end != '\0' || c.epochs < 1 || c.epochs > 100000) {
      std::fprintf(stderr, "%s: EPOCHS %s: expected a whole number from 1 to 100000\n", argv[0], argv[2]);
      return 2;
    }
  }
  c.eval_every = c.epochs;  // one evaluation, at the last epoch (train() always evaluates it)
  c.quiet = true;
  const auto dir = std::filesystem::temp_directory_path() / ("stiefel-grok-profile-" + std::to_string(::getpid()));
  c.out = dir.string();

  training_thread = true;
  const auto handle = at::addGlobalCallback(
      at::RecordFunctionCallback(on_start, on_end)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE}));
  const auto t0 = std::chrono::steady_clock::now();
  std::ostringstream progress;
  try {
    stiefel::training::train(c, progress);
  } catch (const std::exception& e) {
    at::removeCallback(handle);
    std::filesystem::remove_all(dir);
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  const double wall_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  at::removeCallback(handle);
  std::filesystem::remove_all(dir);

  std::vector<std::pair<std::string, Total>> rows(totals.begin(), totals.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.self_us > b.second.self_us; });
  const double epochs = double(c.epochs);
  std::printf("grokking run, arm %s, %lld epochs: %.3f s per epoch (set-up, evaluation and profiling included)\n",
              c.arm.c_str(), static_cast<long long>(c.epochs), wall_us / 1e6 / epochs);
  double gemm_us = 0;
  for (const auto& [name, t] : rows)
    if (name == "aten::mm" || name == "aten::addmm" || name == "aten::bmm" || name == "aten::baddbmm")
      gemm_us += t.self_us;
  std::printf("gemm_ms_per_epoch %.2f\n", gemm_us / 1e3 / epochs);
  std::printf("%-64s %9s %9s %7s\n", "operator", "calls/ep", "ms/epoch", "share");
  const auto row = [&](const std::string& name, const std::string& calls, double us) {
    std::printf("%-64s %9s %9.2f %6.1f%%\n", name.substr(0, 64).c_str(), calls.c_str(), us / 1e3 / epochs,
                100 * us / wall_us);
  };
  for (const auto& [name, t] : rows) {
    if (t.self_us / wall_us < 0.001) continue;
    char calls[32];
    std::snprintf(calls, sizeof calls, "%.1f", double(t.calls) / epochs);
    std::string shown = name;  // the small-attention kernel's autograd node, by its function's name
    if (shown.rfind("torch::autograd::CppNode<", 0) == 0 && shown.find("SmallAttention") != std::string::npos)
      shown = "stiefel::small_attention (backward)";
    row(shown, calls, t.self_us);
  }
  row("(outside every operator)", "", wall_us - inside_us);
  return 0;
}
