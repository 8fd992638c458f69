#include <stiefel/training/codebook.h>

#include <stdexcept>
#include <string>

namespace stiefel::training {

torch::Tensor patch_span_frames(const torch::Tensor& patches, std::int64_t r) {
  if (patches.dim() != 3 || patches.size(1) < r)
    throw std::invalid_argument("codebook: need [N, P, d] patches with P >= r = " + std::to_string(r));
  const auto x = patches.to(torch::kFloat64).transpose(1, 2);  // [N, d, P]
  if (x.size(2) == r) return std::get<0>(torch::linalg_qr(x, "reduced"));
  return std::get<0>(torch::linalg_svd(x, /*full_matrices=*/false)).narrow(2, 0, r);
}

torch::Tensor chordal_affinity(const torch::Tensor& points, const torch::Tensor& centroids) {
  std::vector<torch::Tensor> cols;
  for (std::int64_t k = 0; k < centroids.size(0); ++k)
    cols.push_back(torch::matmul(centroids[k].transpose(0, 1), points).pow(2).sum({-2, -1}));
  return torch::stack(cols, 1);
}

torch::Tensor update_centroids(const torch::Tensor& points, const torch::Tensor& assignment,
                               const torch::Tensor& centroids) {
  auto next = centroids.clone();
  const auto d = points.size(1), r = points.size(2);
  for (std::int64_t k = 0; k < centroids.size(0); ++k) {
    const auto members = torch::nonzero(assignment == k).flatten();
    if (members.numel() == 0) continue;
    const auto a = points.index_select(0, members).permute({1, 0, 2}).reshape({d, -1});  // [A_1 … A_m]
    const auto [lambda, v] = torch::linalg_eigh(a.mm(a.t()));                            // ascending
    next[k] = v.narrow(1, d - r, r).flip(1);
  }
  return next;
}

namespace {

// K-means++: the first centroid uniformly, each next one with probability ∝ its squared chordal
// distance to the nearest centroid chosen so far.
torch::Tensor seed_centroids(const torch::Tensor& points, std::int64_t k, at::Generator& gen) {
  const auto n = points.size(0);
  const double r = double(points.size(2));
  std::vector<torch::Tensor> chosen{points[torch::randint(n, {1}, gen, torch::kLong).item<std::int64_t>()]};
  auto nearest = r - chordal_affinity(points, chosen.front().unsqueeze(0)).squeeze(1);
  for (std::int64_t j = 1; j < k; ++j) {
    const auto weights = nearest.clamp_min(0);
    const auto pick = weights.sum().item<double>() > 0 ? torch::multinomial(weights, 1, false, gen)
                                                       : torch::randint(n, {1}, gen, torch::kLong);
    chosen.push_back(points[pick.item<std::int64_t>()]);
    nearest = torch::minimum(nearest, r - chordal_affinity(points, chosen.back().unsqueeze(0)).squeeze(1));
  }
  return torch::stack(chosen);
}

}  // namespace

Codebook build_codebook(const torch::Tensor& points, std::int64_t k, std::uint64_t seed, std::int64_t max_iterations) {
  if (k < 1 || k > points.size(0))
    throw std::invalid_argument("--codebook-k " + std::to_string(k) +
                                ": expected 1 to the number of training images (" + std::to_string(points.size(0)) +
                                ")");
  auto gen = at::detail::createCPUGenerator(seed * 1000003 + 0xC0DEB00C);
  Codebook book;
  book.centroids = seed_centroids(points, k, gen);
  const double n_r = double(points.size(0) * points.size(2));
  auto best = chordal_affinity(points, book.centroids).max(1);
  auto assignment = std::get<1>(best);
  nlohmann::json objective = nlohmann::json::array({(n_r - std::get<0>(best).sum().item<double>()) / n_r});
  std::int64_t it = 0;
  for (; it < max_iterations; ++it) {
    book.centroids = update_centroids(points, assignment, book.centroids);
    best = chordal_affinity(points, book.centroids).max(1);
    objective.push_back((n_r - std::get<0>(best).sum().item<double>()) / n_r);
    const bool settled = torch::equal(std::get<1>(best), assignment);
    assignment = std::get<1>(best);
    if (settled) break;
  }
  book.record = {{"k", k},
                 {"points", points.size(0)},
                 {"d", points.size(1)},
                 {"r", points.size(2)},
                 {"iterations", it + (it < max_iterations ? 1 : 0)},
                 {"converged", it < max_iterations},
                 {"objective_per_point_and_dimension", objective},
                 {"points_are", "the spans of the training images' whitened patches"},
                 {"seeding", "K-means++ by squared chordal distance"}};
  return book;
}

torch::Tensor codebook_prior(const torch::Tensor& w, const torch::Tensor& centroids, double beta) {
  const auto frames = w.dim() == 2 ? w.unsqueeze(0) : w;
  const auto c = centroids.to(frames.dtype());
  const double r = double(frames.size(-1));
  const auto affinity = chordal_affinity(frames, c);  // [H, K]
  return beta * (1 - std::get<0>(affinity.max(1)) / r).mean();
}

}  // namespace stiefel::training
