// Softmax attention over few tokens in one pass, for the grokking model (T = 3 tokens, H = 4 heads
// of r = 32): out[b, i, h, :] = Σ_j P[b, h, i, j] · (V[b, j, h, :] + bias_v[h, :]), with
// P[b, h, i, :] = softmax_j(Q[b, i, h, :] · K[b, j, h, :] · scale). Q, K and V come packed as the
// output of the one GEMM that projects every token onto all three, qkv [B, T, 3·H·r] (Q's H·r
// columns, then K's, then V's), and the result is [B, T, H·r], the layout the output projection
// reads. ATen's route for the same attention (per-head products through views, softmax over rows of
// 3, the head layout copied back and forth) spends more time than the projections' GEMMs at this
// size; this kernel reads and writes each tensor once. Differentiable in qkv and bias_v (its backward is
// one more pass; second derivatives are not supported). Every sum runs in a fixed order (dot
// products in eight interleaved running sums) with no FMA contraction, so the result does not
// depend on the CPU's vector width or on the thread count.
// Float or double on the CPU, T ≤ 64 and r ≤ 256; other inputs fall back to the same arithmetic in ATen ops.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace stiefel::training {

torch::Tensor small_attention(const torch::Tensor& qkv, const torch::Tensor& bias_v, std::int64_t heads, double scale);

// The kernel is compiled once per vector width and runs the widest this CPU has. For tests: the
// widths this CPU runs (widest first: avx512f, avx2, default), and the one to run from now on in
// this process ("" restores the widest; a width the CPU lacks throws std::invalid_argument).
std::vector<std::string> small_attention_widths();
void set_small_attention_width(const std::string& name);
// The width of the instance that ran last in this process ("" before the first).
std::string small_attention_last_width();

}  // namespace stiefel::training
