// The training core's frame_step as an update rule under test (stiefel/certificates/update_rule.h):
// frames cross as float64 tensors [H, d, r] on the chosen device, the rule runs batched over them
// exactly as in training, and the next frames come back as Eigen matrices.
#pragma once

#include <torch/torch.h>

#include <stiefel/certificates/update_rule.h>

namespace stiefel::training {

// frame_step on `device` (CPU, or CUDA where present), float64: the dtype the trainer keeps its
// frames, moments and steps in (the model reads a float32 copy). The first rule it makes applies the
// trainer's CPU compute configuration (configure_cpu_compute: one BLAS thread, one intra-op thread).
certificates::RuleImplementation trainer_rule_implementation(torch::Device device = torch::kCPU);

}  // namespace stiefel::training
