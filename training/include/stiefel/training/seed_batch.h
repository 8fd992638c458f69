// The forward pass of S models of one shape at once (seed batching): each GEMM of the S models is
// one batched product (bmm / baddbmm over the stacked weights), the element-wise stages (residual
// sums, GELU, ReLU) run over the stacked activations, and the stages whose parameters enter a
// fused kernel (token embedding, layer norms, the small-attention kernel) run per model on its
// slice. The weights are stacked from each model's own parameters at every call, so autograd hands
// every model's gradient back to its own tensors: optimisers, checkpoints and records stay per model.
//
// On the CPU under the pinned compute configuration (one intra-op thread, one BLAS thread) every
// model's logits and gradients are the bits its own forward gives: a batched product is the same
// BLAS call per slice as the model's own product, and the element-wise kernels compute each entry
// alone (tests/training/seed_batch_test.cpp checks both, forward and backward, every arm's model).
// Supported: the grokking model on the packed attention route (models.h). Anything else throws
// std::invalid_argument naming what differs.
#pragma once

#include <stiefel/training/models.h>

#include <vector>

namespace stiefel::training {

// Throws std::invalid_argument unless MODELS (at least one) can be batched: one spec, the grokking
// task, the packed attention route.
void check_batchable(const std::vector<Classifier>& models);

// The logits of every model on its own input: models[s]->forward(inputs[s]) for each s.
std::vector<torch::Tensor> batched_forward(std::vector<Classifier> models, const std::vector<torch::Tensor>& inputs);

}  // namespace stiefel::training
