// The sgemm roofline of this CPU as the training core sees it: torch::mm in float32 on one thread
// (the pinned configuration of `stiefel train`), on the shapes of the image model's layers at
// batch 256 (4096 token rows, d = 128, FFN 512). Prints one line per shape and the best GFLOP/s,
// and the model's GEMM FLOPs per training example (forward + backward) for the roofline fraction;
// then the same for the grokking model's full-batch step (3 764 pairs × 3 tokens = 11 292 rows,
// d = 128, H·r = 128, FFN 512, read-out 384 → 128 → 97) and its GEMM FLOPs per epoch.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stiefel/training/compute.h>

int main() {
  stiefel::training::configure_cpu_compute(1);
  struct Shape {
    std::int64_t m, k, n;
  };
  const Shape shapes[] = {{4096, 128, 128},  {4096, 128, 384},  {4096, 128, 512},  {4096, 512, 128},
                          {11292, 128, 384}, {11292, 128, 512}, {11292, 512, 128}, {3764, 384, 128}};
  double best = 0;
  for (const auto& s : shapes) {
    const auto a = torch::randn({s.m, s.k}), b = torch::randn({s.k, s.n});
    auto c = torch::empty({s.m, s.n});
    for (int i = 0; i < 5; ++i) torch::mm_out(c, a, b);
    double fastest = 1e9;
    for (int round = 0; round < 5; ++round) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 20; ++i) torch::mm_out(c, a, b);
      fastest = std::min(fastest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 20);
    }
    const double gflops = 2.0 * double(s.m * s.k * s.n) / fastest / 1e9;
    best = std::max(best, gflops);
    std::printf("sgemm %lld x %lld x %lld: %.1f GFLOP/s\n", (long long)s.m, (long long)s.k, (long long)s.n, gflops);
  }
  // GEMM FLOPs of one image (T = 16 tokens, input 128, d = 128, 2 layers, H·r = 128, FFN 512,
  // 10 classes): forward = 2·T·(128·d + L·(4·d·d + 2·d·512) + 2·H·T·r·L) + 2·d·10; backward ≈ 2×.
  const double T = 16, d = 128, L = 2, H = 8, r = 16;
  const double forward = 2 * T * (128 * d + L * (4 * d * d + 2 * d * 512) + L * 2 * H * T * r) + 2 * d * 10;
  std::printf("roofline %.1f GFLOP/s\nflops_per_example %.0f\n", best, 3 * forward);
  // The grokking epoch: per layer [Q|K|V] (d → 3·H·r), the output projection, the FFN; the
  // attention's products (2·H·T²·r per pair, twice); the read-out. Backward ≈ 2× forward.
  const double pairs = 3764, rows = 3 * pairs, hr = 128, ffn = 512, tokens = 3, heads = 4, rr = 32;
  const double grok_forward = 2 * rows * L * (d * 3 * hr + hr * d + d * ffn + ffn * d) +
                              L * 2 * 2 * pairs * heads * tokens * tokens * rr + 2 * pairs * (3 * d * d + d * 97);
  std::printf("grok_flops_per_epoch %.0f\n", 3 * grok_forward);
  return 0;
}
