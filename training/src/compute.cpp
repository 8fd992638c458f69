#include <stiefel/training/compute.h>

#include <dlfcn.h>
#include <malloc.h>
#include <torch/torch.h>

#include <cctype>
#include <cstdlib>
#include <string>

namespace stiefel::training {
namespace {

// OpenBLAS's extension API, looked up at run time: LibTorch reaches OpenBLAS through libblas.so.3,
// which may be another BLAS (then there is nothing to configure and the record says so).
template <class F>
F blas_symbol(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

// The vector width of ATen's CPU kernels (softmax, GELU, LayerNorm, reductions): the best the CPU
// offers, unless ATEN_CPU_CAPABILITY asks for less. It changes results, so the record states it.
std::string aten_cpu_capability() {
  std::string best = "default";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = "avx2";
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    best = "avx512";
  const char* env = std::getenv("ATEN_CPU_CAPABILITY");
  if (!env || !*env) return best;
  std::string asked(env);
  for (auto& ch : asked) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  const auto rank = [](const std::string& c) { return c == "avx512" ? 2 : c == "avx2" ? 1 : 0; };
  return rank(asked) < rank(best) ? asked : best;
}

void keep_freed_memory() {
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum: larger blocks are still mmapped
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_TOP_PAD, 64 << 20);
    return true;
  }();
  (void)done;
}

}  // namespace

nlohmann::json configure_cpu_compute(int intra_op_threads) {
  keep_freed_memory();
  nlohmann::json blas = {{"library", "unknown (not OpenBLAS)"}};
  if (const auto set = blas_symbol<void (*)(int)>("openblas_set_num_threads")) {
    set(1);
    blas["library"] = "OpenBLAS";
    if (const auto get = blas_symbol<int (*)()>("openblas_get_num_threads")) blas["threads"] = get();
    if (const auto config = blas_symbol<char* (*)()>("openblas_get_config")) blas["config"] = std::string(config());
    if (const auto core = blas_symbol<char* (*)()>("openblas_get_corename")) blas["kernels"] = std::string(core());
  }
  torch::set_num_threads(intra_op_threads);
  static const bool interop = [] {
    try {
      at::set_num_interop_threads(1);  // allowed once, before any inter-op work
    } catch (const std::exception&) {}
    return true;
  }();
  (void)interop;
  return {{"blas", blas},
          {"intra_op_threads", torch::get_num_threads()},
          {"inter_op_threads", at::get_num_interop_threads()},
          {"aten_cpu_capability", aten_cpu_capability()},
          {"malloc", "glibc keeps freed memory (mmap threshold 32 MiB, trim threshold 1 GiB)"}};
}

std::string keep_every_freed_block() {
  keep_freed_memory();
  mallopt(M_MMAP_MAX, 0);
  return "glibc keeps freed memory (no mmap: every block from the heap, trim threshold 1 GiB)";
}

}  // namespace stiefel::training
