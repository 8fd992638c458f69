// The patch pipeline of §3.3: each image is cut into non-overlapping p×p patches (16 of them),
// each patch is contrast-normalised ((x − mean)/sqrt(var + 10/255²), Coates et al. 2011), then
// PCA-whitened to `dim` dimensions by V Λ^(−1/2), Λ regularised by ε = 0.1, the PCA fit on a
// random subsample of training patches only.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "datasets.h"

namespace stiefel::training {

// [count, patches, channels·p·p] float32 in [0, 1], patches in row-major grid order.
torch::Tensor extract_patches(const ImageSet& images, std::int64_t first, std::int64_t count, std::int64_t patch);

// Per patch (last dimension): (x − mean)/sqrt(var + 10/255²).
torch::Tensor contrast_normalise(const torch::Tensor& patches);

struct Whitener {
  torch::Tensor mean;        // [raw] float64
  torch::Tensor projection;  // [raw, dim] float64: V Λ^(−1/2) with Λ + ε
  double eps = 0.1;

  // Fits on rows of `sample` ([N, raw]); throws std::invalid_argument if dim > raw.
  static Whitener fit(const torch::Tensor& sample, std::int64_t dim, double eps);
  torch::Tensor apply(const torch::Tensor& patches) const;  // [..., raw] → [..., dim] float32
};

struct PatchData {
  std::string dataset;                             // e.g. "CIFAR-10 (JPEG copy)"
  torch::Tensor train_x, train_y, test_x, test_y;  // x: [n, tokens, dim] float32, y: int64
  torch::Tensor val_x, val_y;                      // training images [n, n + val_n) (undefined if none)
  std::int64_t classes = 10;
  std::int64_t raw_dim = 0, dim = 0, pca_samples = 0;
};

// The first n training images, all test images; the PCA fit on min(pca_samples, n·tokens) patches
// drawn (seeded) from those n training images. With val_n > 0, also the validation split of §3.3:
// the training images [n, n + val_n), never trained on and never seen by the PCA, whitened by the
// same fit.
PatchData prepare_patch_data(const ImageSet& train, const ImageSet& test, std::int64_t n, std::int64_t patch,
                             std::int64_t dim, std::int64_t pca_samples, std::uint64_t seed, std::string dataset,
                             std::int64_t val_n = 0);

}  // namespace stiefel::training
