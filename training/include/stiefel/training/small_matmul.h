// Batched products of small matrices, C[n] = op(A[n]) · op(B[n]) / δ, for the attention of the
// image model (8 heads × 256 images of 16×16 products per call). LibTorch's CPU bmm runs one BLAS
// call per matrix through per-batch tensor views, which costs more than the arithmetic at this
// size; this kernel loops over the batch directly. Differentiable (its backward is two more calls
// of the kernel; second derivatives are not supported). Inputs [N, rows, cols], float or double, on the CPU; anything
// else (CUDA, other dtypes) falls back to torch::matmul. Every element is a sum in a fixed order with no FMA
// contraction, so the result does not depend on which vector width the CPU offers.
#pragma once

#include <torch/torch.h>

namespace stiefel::training {

// op(a) · op(b) / divisor, op(x) = xᵀ (of the last two dimensions) when trans_x. The kernel
// multiplies by 1/divisor (exact when the divisor is a power of two, as √r is at r = 16); the
// fallback divides the product, as the attention did before the kernel existed.
torch::Tensor small_bmm(const torch::Tensor& a, const torch::Tensor& b, bool trans_a, bool trans_b,
                        double divisor = 1.0);

// Process-wide: false sends every small_bmm to torch::matmul (the reference configuration of
// bench/train_speed.sh, `stiefel train --compute environment`). True by default.
void use_small_bmm_kernel(bool on);

}  // namespace stiefel::training
