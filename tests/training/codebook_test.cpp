// The batched codebook of C2 (training/src/codebook.cpp) against core/'s Grassmann K-means
// (stiefel/grassmann_kmeans.h): affinities, one centroid update (as subspaces: eigenvectors carry a
// sign), the prior and its gradient, and a whole K-means run on planted clusters.
#include <gtest/gtest.h>

#include <stiefel/stiefel.h>
#include <stiefel/training/codebook.h>

#include "core_tensors.h"

namespace stiefel::training {
namespace {

using core_tensors::max_abs;
using core_tensors::to_torch;

torch::Tensor projector(const torch::Tensor& c) { return c.matmul(c.transpose(-2, -1)); }

// Planted clusters: K centroids, M points each, every point the span of C_k Q + σG.
Frames<double> planted(Rng& rng, Index d, Index r, int k, int m, double sigma, Frames<double>* centres = nullptr) {
  Frames<double> points;
  for (int j = 0; j < k; ++j) {
    const Matrix<double> c = random_stiefel<double>(rng, d, r);
    if (centres) centres->push_back(c);
    for (int n = 0; n < m; ++n)
      points.push_back(orthonormal_factor<double>(
          Matrix<double>(c * random_orthogonal<double>(rng, r) + gaussian_matrix<double>(rng, d, r) * sigma), r));
  }
  return points;
}

TEST(Codebook, AffinityAndUpdateAgreeWithCore) {
  Rng rng(3);
  const Index d = 10, r = 3;
  const Frames<double> points = planted(rng, d, r, 3, 5, 0.3);
  Frames<double> centroids;
  for (int k = 0; k < 4; ++k) centroids.push_back(random_stiefel<double>(rng, d, r));  // one stays empty
  const auto pt = to_torch(points), ct = to_torch(centroids);
  const auto affinity = chordal_affinity(pt, ct);
  for (std::size_t n = 0; n < points.size(); ++n)
    for (std::size_t k = 0; k < centroids.size(); ++k)
      EXPECT_NEAR(double(r) - affinity[n][k].item<double>(), chordal_distance_squared<double>(points[n], centroids[k]),
                  1e-13);
  const auto assignment = assign_to_centroids<double>(points, centroids);
  std::vector<std::int64_t> a(assignment.begin(), assignment.end());
  EXPECT_TRUE(torch::equal(std::get<1>(affinity.max(1)), torch::tensor(a)));
  const auto next = update_centroids(pt, torch::tensor(a), ct);
  const auto reference = to_torch(stiefel::update_centroids<double>(points, assignment, centroids));
  EXPECT_LE(max_abs(projector(next) - projector(reference)), 1e-12);
  EXPECT_LE(max_abs(next.transpose(1, 2).bmm(next) - torch::eye(r, torch::kFloat64)), 1e-13);
}

// β · mean_h (1 − max_k ‖C_kᵀW_h‖²/r), and its gradient −2β/(H r) · C_k C_kᵀ W_h at the nearest C_k.
TEST(Codebook, PriorAndItsGradientAgreeWithCore) {
  Rng rng(4);
  const Index d = 9, r = 2, heads = 3;
  Frames<double> w, c;
  for (Index h = 0; h < heads; ++h) w.push_back(random_stiefel<double>(rng, d, r));
  for (int k = 0; k < 5; ++k) c.push_back(random_stiefel<double>(rng, d, r));
  const double beta = 0.7;
  const auto leaf = to_torch(w).set_requires_grad(true);
  const auto prior = codebook_prior(leaf, to_torch(c), beta);
  prior.backward();
  double expected = 0;
  Frames<double> grad;
  for (const auto& wh : w) {
    std::size_t best = 0;
    for (std::size_t k = 1; k < c.size(); ++k)
      if (chordal_distance_squared<double>(wh, c[k]) < chordal_distance_squared<double>(wh, c[best])) best = k;
    expected += beta * chordal_distance_squared<double>(wh, c[best]) / double(r) / double(heads);
    grad.push_back(-2.0 * beta / double(heads * r) * c[best] * c[best].transpose() * wh);
  }
  EXPECT_NEAR(prior.item<double>(), expected, 1e-14);
  EXPECT_LE(max_abs(leaf.grad() - to_torch(grad)), 1e-14);
  // β = 0 is no prior at all (C2-nb).
  EXPECT_EQ(codebook_prior(to_torch(w), to_torch(c), 0.0).item<double>(), 0.0);
}

// On planted clusters K-means++ and Lloyd's iterations find the planted subspaces, and the
// recorded objective never rises.
TEST(Codebook, KMeansFindsPlantedClustersAndNeverRaisesItsObjective) {
  Rng rng(5);
  const Index d = 16, r = 4;
  Frames<double> centres;
  const Frames<double> points = planted(rng, d, r, 4, 30, 0.05, &centres);
  const Codebook book = build_codebook(to_torch(points), 4, 11, 50);
  const auto& objective = book.record["objective_per_point_and_dimension"];
  ASSERT_GE(objective.size(), 2u);
  for (std::size_t t = 1; t < objective.size(); ++t)
    EXPECT_LE(objective[t].get<double>(), objective[t - 1].get<double>() + 1e-15) << "iteration " << t;
  EXPECT_TRUE(book.record["converged"].get<bool>());
  const auto found = chordal_affinity(book.centroids, to_torch(centres));        // [K found, K planted]
  EXPECT_GT(std::get<0>(found.max(1)).min().item<double>(), double(r) - 0.05);   // each found one near a planted one
  EXPECT_EQ(std::get<0>(torch::_unique(std::get<1>(found.max(1)))).numel(), 4);  // and all four planted ones found
  EXPECT_THROW(build_codebook(to_torch(points), 121, 0, 5), std::invalid_argument);
}

TEST(Codebook, PatchSpansAreFramesOfTheImagesPatchSpace) {
  torch::manual_seed(6);
  const auto patches = torch::randn({5, 4, 12});  // 5 images, P = 4 patches of R^12
  for (const std::int64_t r : {4, 2}) {
    const auto a = patch_span_frames(patches, r);
    ASSERT_EQ(a.sizes(), (std::vector<std::int64_t>{5, 12, r}));
    EXPECT_LE(max_abs(a.transpose(1, 2).bmm(a) - torch::eye(r, torch::kFloat64)), 1e-13);
    // Every column lies in the span of the image's patches.
    const auto x = patches.to(torch::kFloat64).transpose(1, 2);
    const auto q = std::get<0>(torch::linalg_qr(x, "reduced"));
    EXPECT_LE(max_abs(a - q.bmm(q.transpose(1, 2)).bmm(a)), 1e-12);
  }
  EXPECT_THROW(patch_span_frames(patches, 5), std::invalid_argument);
}

}  // namespace
}  // namespace stiefel::training
