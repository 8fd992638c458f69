// Core's Eigen frames as LibTorch tensors, for the tests that pin the batched code to core/.
#pragma once

#include <torch/torch.h>

#include <stiefel/stiefel.h>
#include <vector>

namespace stiefel::training::core_tensors {

// [H, d, r] float64 from H frames d×r (Eigen is column-major: copied entry by entry).
inline torch::Tensor to_torch(const Frames<double>& f) {
  std::vector<torch::Tensor> out;
  for (const auto& m : f) {
    auto t = torch::empty({m.rows(), m.cols()}, torch::kFloat64);
    for (Index i = 0; i < m.rows(); ++i)
      for (Index j = 0; j < m.cols(); ++j) t[i][j] = m(i, j);
    out.push_back(t);
  }
  return torch::stack(out);
}

inline double max_abs(const torch::Tensor& a) { return a.abs().max().item<double>(); }

}  // namespace stiefel::training::core_tensors
