// The C2 codebook (§3.3, Table 2): Grassmann K-means over the training images, each image the span
// of its whitened patches (P = 16 vectors of R^d, a point of Gr(d, r) for r = P), with the chordal
// mean SVD_top-r(Σ A_n A_nᵀ) as the centroid update; and the codebook prior that pulls every head
// of W_Q and W_K toward its nearest centroid. The formulas are core/'s (grassmann_kmeans.h), batched
// in float64; the differential test pins them to core/.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <nlohmann/json.hpp>

namespace stiefel::training {

// Frames [N, d, r] of the spans of each image's patches ([N, P, d], P ≥ r): the orthonormal factor
// of the d×P patch matrix (P = r), or its top-r left singular vectors (P > r). Float64.
torch::Tensor patch_span_frames(const torch::Tensor& patches, std::int64_t r);

// ‖C_kᵀA_n‖²_F for every point and centroid: [N, K]. The squared chordal distance is r minus it.
torch::Tensor chordal_affinity(const torch::Tensor& points, const torch::Tensor& centroids);

// One K-means update: each centroid the chordal mean of its cluster; an empty cluster keeps its centroid.
torch::Tensor update_centroids(const torch::Tensor& points, const torch::Tensor& assignment,
                               const torch::Tensor& centroids);

struct Codebook {
  torch::Tensor centroids;  // [K, d, r], float64
  nlohmann::json record;    // K, points, iterations, the objective at each iteration, the seed
};

// K-means++ seeding by squared chordal distance (its own generator, seeded from SEED, so that the
// run's other random draws are those of the arm without a codebook), then Lloyd iterations until
// no assignment changes or MAX_ITERATIONS.
Codebook build_codebook(const torch::Tensor& points, std::int64_t k, std::uint64_t seed, std::int64_t max_iterations);

// β · mean over the heads of W ([H, d, r] or [d, r], any dtype, differentiable) of
// min_k d_c(W_h, C_k)² / r = 1 − max_k ‖C_kᵀW_h‖²_F / r: the codebook prior (C2; β = 0 is C2-nb).
torch::Tensor codebook_prior(const torch::Tensor& w, const torch::Tensor& centroids, double beta);

}  // namespace stiefel::training
