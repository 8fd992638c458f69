// The training core's frame update as an update rule under test (stiefel/rules/update_rule.h):
// frames cross as tensors [H, d, r] on the chosen device in the parameter's dtype, the optimizer
// steps them exactly as in training, and the next frames come back as Eigen matrices.
#pragma once

#include <torch/torch.h>

#include <stiefel/rules/update_rule.h>

namespace stiefel::training {

// Frames as one CPU tensor [H, d, r] of `dtype` (built in float64, then converted), and back: any
// tensor [H, d, r] on any device and of any floating dtype, read as float64 frames.
torch::Tensor frames_to_tensor(const Frames<double>& frames, torch::ScalarType dtype = torch::kFloat64);
Frames<double> tensor_to_frames(const torch::Tensor& t);

// FrameOptimizer::step (and through it frame_step) on `device` (CPU, or CUDA where present) for a
// parameter of dtype `dtype`: float32 is the model's (its gradient is float32 too; the optimizer's
// master frames and moments are float64), float64 checks frame_step without that rounding. The
// implementation's unit roundoff is the parameter dtype's. The first rule it makes applies the
// trainer's CPU compute configuration (configure_cpu_compute: one BLAS thread, one intra-op thread).
rules::RuleImplementation trainer_rule_implementation(torch::Device device = torch::kCPU,
                                                      torch::ScalarType dtype = torch::kFloat64);

}  // namespace stiefel::training
