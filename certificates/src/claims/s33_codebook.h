// §3.3 and Table 2: the C2 codebook. Its Grassmann K-means centroid update, the chordal mean
// SVD_top-r(Σ A_n A_nᵀ), is the Frobenius-optimal centroid on Gr(d,r) (Ky Fan's maximum
// principle), and K-means with it never raises its objective J = Σ_n d_c(A_n, C_{a_n})².
#pragma once

#include <map>

#include "check_support.h"

namespace stiefel::certificates {

// The eigenvectors of eigenvalues 2 … r+1 instead of 1 … r: an off-by-one in the top-r selection
// (ascending eigenvalues read one column too far left).
enum class ChordalMeanMutant { kNone, kOffByOneEigenvector };
enum class KMeansMutant { kNone, kOffByOneEigenvector };

// Planted clusters on Gr(d,r): K = heads centroids, `tokens` points each, every point the span of
// C_k Q + σ G (Q ∈ O(r) a random gauge, σ = 10^log10_scale) as a frame of St(d,r).
template <class S>
struct PlantedClusters {
  Frames<S> centroids, points;
};

template <class S>
PlantedClusters<S> planted_clusters(const Case& c, Rng& rng) {
  PlantedClusters<S> p;
  for (int k = 0; k < c.heads; ++k) {
    p.centroids.push_back(random_stiefel<S>(rng, c.d, c.r));
    for (int n = 0; n < c.tokens; ++n) {
      const Matrix<S> noisy = p.centroids.back() * random_orthogonal<S>(rng, c.r) +
                              gaussian_matrix<S>(rng, c.d, c.r) * S(pow10(c.log10_scale));
      p.points.push_back(orthonormal_factor<S>(noisy, c.r));
    }
  }
  return p;
}

// Σ_n d_c(A_n, C)² over the members.
template <class S>
S chordal_cost(const Frames<S>& points, const std::vector<Index>& members, const Matrix<S>& centre) {
  S j = S(0);
  for (const Index n : members) j += chordal_distance_squared<S>(points[std::size_t(n)], centre);
  return j;
}

// N r − (σ_1² + … + σ_r²) for the singular values of [A_1 … A_N] (d × N·r): Ky Fan's minimum of
// the chordal cost, by a route (JacobiSVD of the stacked frames) other than the code under test.
template <class S>
S ky_fan_minimum(const Frames<S>& points, const std::vector<Index>& members, Index r) {
  const Index d = points.front().rows();
  Matrix<S> stacked(d, Index(members.size()) * r);
  for (std::size_t i = 0; i < members.size(); ++i)
    stacked.middleCols(Index(i) * r, r) = points[std::size_t(members[i])];
  Eigen::JacobiSVD<Matrix<S>> svd(stacked);
  S top = S(0);
  for (Index i = 0; i < std::min(r, svd.singularValues().size()); ++i)
    top += svd.singularValues()(i) * svd.singularValues()(i);
  return S(Index(members.size()) * r) - top;
}

// A centroid update as the check runs it: core's chordal mean, or the mutant's off-by-one.
template <class S>
Matrix<S> centroid_of(const Frames<S>& points, const std::vector<Index>& members, Index r, bool off_by_one) {
  if (!off_by_one) return chordal_mean<S>(points, members, r);
  const Matrix<S> top = top_eigenvectors<S>(projector_sum<S>(points, members), r + 1);
  return top.rightCols(r);
}

template <class S>
CheckResult check_chordal_mean(const Case& c, ChordalMeanMutant mutant) {
  Rng rng(c.seed);
  const auto planted = planted_clusters<S>(c, rng);
  const auto& a = planted.points;
  std::vector<Index> all(a.size());
  for (std::size_t n = 0; n < a.size(); ++n) all[n] = Index(n);
  const Matrix<S> centre = centroid_of<S>(a, all, c.r, mutant == ChordalMeanMutant::kOffByOneEigenvector);
  const S n_r = S(Index(a.size()) * c.r);
  const S cost = chordal_cost<S>(a, all, centre);
  CheckResult r = identity_result(scalar_identity<S>("chordal cost = N r - (sigma_1^2 + ... + sigma_r^2)",
                                                     ky_fan_minimum<S>(a, all, c.r), cost, n_r, double(c.d)));
  keep_worst(r, identity_result(properties::on_stiefel<S>(centre, double(c.d))));
  // No other point of Gr(d,r) does better: random frames, the points themselves, and the centre
  // moved along random tangents by 1e-2 and 1e-4.
  Frames<S> rivals = {random_stiefel<S>(rng, c.d, c.r), random_stiefel<S>(rng, c.d, c.r)};
  for (std::size_t n = 0; n < std::min<std::size_t>(3, a.size()); ++n) rivals.push_back(a[n]);
  for (double s : {1e-2, 1e-4}) {
    const Matrix<S> z = random_tangent<S>(rng, centre);
    if (z.norm() > S(0)) rivals.push_back(polar_svd<S>(Matrix<S>(centre + S(s) * z / z.norm())));
  }
  for (const auto& y : rivals) {
    const S gain = cost - chordal_cost<S>(a, all, y);
    keep_worst(r, roundoff_result<S>(positive_part<S>(gain), n_r, double(c.d)));
  }
  return r;
}

// Eight K-means iterations from two starts: the planted centroids moved by δ = 10^log10_c, and K
// random frames. After each half-step J must not rise (residual max(0, J_new − J_old) over N r),
// and each updated centroid must reach Ky Fan's minimum over its cluster.
template <class S>
CheckResult check_kmeans_monotone(const Case& c, KMeansMutant mutant) {
  Rng rng(c.seed);
  const auto planted = planted_clusters<S>(c, rng);
  const auto& a = planted.points;
  const S n_r = S(Index(a.size()) * c.r);
  Frames<S> near, random;
  for (const auto& ck : planted.centroids) {
    near.push_back(orthonormal_factor<S>(Matrix<S>(ck + gaussian_matrix<S>(rng, c.d, c.r) * S(pow10(c.log10_c))), c.r));
    random.push_back(random_stiefel<S>(rng, c.d, c.r));
  }
  CheckResult r;
  // Ky Fan's minimum depends on the members only: computed once per member set (K-means settles
  // within a few iterations, and the reference SVD is the costly part of the check).
  std::map<std::vector<Index>, S> ky_fan;
  const auto minimum_of = [&](const std::vector<Index>& members) {
    auto it = ky_fan.find(members);
    if (it == ky_fan.end()) it = ky_fan.emplace(members, ky_fan_minimum<S>(a, members, c.r)).first;
    return it->second;
  };
  for (Frames<S> centroids : {near, random}) {
    std::vector<Index> assignment = assign_to_centroids<S>(a, centroids);
    S j = kmeans_objective<S>(a, assignment, centroids);
    for (int t = 0; t < 8; ++t) {
      for (std::size_t k = 0; k < centroids.size(); ++k) {  // the update step, one cluster at a time
        std::vector<Index> members;
        for (std::size_t n = 0; n < a.size(); ++n)
          if (assignment[n] == Index(k)) members.push_back(Index(n));
        if (members.empty()) continue;
        centroids[k] = centroid_of<S>(a, members, c.r, mutant == KMeansMutant::kOffByOneEigenvector);
        keep_worst(r, identity_result(scalar_identity<S>("cluster cost = Ky Fan minimum", minimum_of(members),
                                                         chordal_cost<S>(a, members, centroids[k]), n_r, double(c.d))));
      }
      for (const bool assign : {false, true}) {
        if (assign) assignment = assign_to_centroids<S>(a, centroids);
        const S next = kmeans_objective<S>(a, assignment, centroids);
        keep_worst(r, roundoff_result<S>(positive_part<S>(S(next - j)), n_r, double(c.d)));
        j = next;
      }
    }
  }
  return r;
}

#define STIEFEL_S33_CODEBOOK_CHECKS(X) X(chordal_mean, ChordalMeanMutant) X(kmeans_monotone, KMeansMutant)
STIEFEL_S33_CODEBOOK_CHECKS(STIEFEL_EXTERN_CHECK)

}  // namespace stiefel::certificates
