// The claims of §3.3 and Table 2: the C2 codebook's chordal mean and its Grassmann K-means.
#include "claim_builder.h"
#include "claim_groups.h"
#include "s33_codebook.h"

namespace stiefel::certificates {
namespace {

// Planted clusters: d in [2,12], r in [1,d-1], K in [1,4] centroids, 1 to 6 points each, noise
// 10^[-6,-1/2], and the K-means start's distance from the planted centroids 10^[-6,-1].
rc::Gen<Case> planted_clusters_case() {
  return rc::gen::exec([] {
    Case k;
    gen::draw_frame_shape(k, {.min_d = 2, .max_d = 12, .r_below_d = true, .scale_lo = -6, .scale_hi = -0.5});
    k.heads = *rc::gen::inRange(1, 5);
    k.tokens = *rc::gen::inRange(1, 7);
    k.log10_c = gen::real(-6, -1, 50);
    return k;
  });
}

const char* kPlanted =
    "planted clusters on Gr(d,r): K = heads in [1,4] random centroids C_k, tokens in [1,6] points each, "
    "a point the span of C_k Q + sigma G (Q a random O(r) gauge, sigma = 10^[-6,-1/2]); d in [2,12], r in [1,d-1]";

Claim s33_chordal_mean_optimal() {
  Claim c = make_claim("s33-chordal-mean-optimal", "§3.3, Table 2 (C2 codebook)", "identity",
                       "The chordal mean C = SVD_top-r(sum_n A_n A_n^T) is the Frobenius-optimal centroid on "
                       "Gr(d,r): sum_n d_c(C, A_n)^2 = N r - (sigma_1^2 + ... + sigma_r^2), the least value "
                       "any frame reaches (Ky Fan).");
  c.generator = std::string(kPlanted) +
                "; rivals: two random frames, the first three points, and C moved "
                "along random tangents by 1e-2 and 1e-4";
  c.residual =
      "|cost(C) - (N r - sum of the r largest squared singular values of [A_1 ... A_N])| / (N r), "
      "the singular values by JacobiSVD (not the eigensolver under test); max(0, cost(C) - cost(Y)) "
      "/ (N r) for each rival Y; ||C^T C - I||_max; factor d";
  c.analysis =
      "d_c(C, A)^2 = r - ||C^T A||_F^2, so the cost is N r - tr(C^T S C) with S = sum A_n A_n^T, "
      "and tr(C^T S C) <= lambda_1 + ... + lambda_r with equality at the top-r eigenvectors.";
  c.generator_fn = planted_clusters_case;
  set_check(c, &check_chordal_mean<double>, &check_chordal_mean<mp50>,
            {{ChordalMeanMutant::kOffByOneEigenvector, "off-by-one-eigenvector",
              "the eigenvectors of eigenvalues 2 ... r+1 (the ascending eigensolver read one column too far)"}});
  return c;
}

Claim s33_kmeans_monotone() {
  Claim c = make_claim("s33-kmeans-monotone", "§3.3, Table 2 (C2 codebook)", "inequality",
                       "Grassmann K-means with the chordal-mean update never raises its objective "
                       "J = sum_n d_c(A_n, C_{a_n})^2, and each update reaches the least cost of its cluster.");
  c.generator = std::string(kPlanted) +
                "; eight iterations from the planted centroids moved by 10^[-6,-1] and "
                "from K random frames; an empty cluster keeps its centroid";
  c.residual =
      "max(0, J after a half-step - J before) / (N r) after every update and assignment step; "
      "|cluster cost - Ky Fan minimum| / (N r) after every centroid update; factor d";
  c.analysis = "The assignment step minimises J over the assignment, the update over each centroid (Ky Fan).";
  c.generator_fn = planted_clusters_case;
  set_check(c, &check_kmeans_monotone<double>, &check_kmeans_monotone<mp50>,
            {{KMeansMutant::kOffByOneEigenvector, "off-by-one-eigenvector",
              "centroid updates from the eigenvectors of eigenvalues 2 ... r+1"}});
  return c;
}

}  // namespace

std::vector<Claim> s33_codebook_claims() { return {s33_chordal_mean_optimal(), s33_kmeans_monotone()}; }

}  // namespace stiefel::certificates
