// Grassmann K-means with the chordal (projection) mean: the C2 codebook of §3.3 and Table 2.
// A point of Gr(d,r) is the span of a frame A ∈ St(d,r); every formula here depends on A only
// through AAᵀ, so a frame and any rotation AQ (Q ∈ O(r)) are the same point.
//   chordal distance:  d_c(A, B)² = ½‖AAᵀ − BBᵀ‖²_F = r − ‖AᵀB‖²_F
//   chordal mean:      Ĉ = SVD_top-r(Σ_n A_n A_nᵀ), the top-r eigenvectors of S = Σ A_n A_nᵀ.
//                      Σ_n d_c(C, A_n)² = N r − tr(CᵀSC), and by Ky Fan's maximum principle
//                      tr(CᵀSC) ≤ λ_1 + … + λ_r with equality at Ĉ: the Frobenius-optimal centroid
//                      (Edelman, Arias & Smith 1998; Hamm & Lee 2008 for subspace K-means).
//   K-means:           the assignment step puts each point at its chordal-nearest centroid, the
//                      update step replaces each centroid by its cluster's chordal mean (a cluster
//                      left empty keeps its centroid); neither step raises J = Σ_n d_c(A_n, C_{a_n})².
#pragma once

#include <Eigen/Eigenvalues>
#include <stdexcept>
#include <string>
#include <vector>

#include "scalar.h"

namespace stiefel {

// r − ‖AᵀB‖²_F for A, B ∈ St(d,r): the squared chordal distance of their spans.
template <class Scalar>
Scalar chordal_distance_squared(const Matrix<Scalar>& a, const Matrix<Scalar>& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols())
    throw std::invalid_argument("chordal_distance_squared: frames of different shapes");
  return Scalar(a.cols()) - Matrix<Scalar>(a.transpose() * b).squaredNorm();
}

// S = Σ_n A_n A_nᵀ over the listed points (d×d, symmetric positive semidefinite).
template <class Scalar>
Matrix<Scalar> projector_sum(const Frames<Scalar>& points, const std::vector<Index>& members) {
  if (points.empty()) throw std::invalid_argument("projector_sum: no points");
  const Index d = points.front().rows();
  Matrix<Scalar> s = Matrix<Scalar>::Zero(d, d);
  for (const Index n : members) s.noalias() += points[std::size_t(n)] * points[std::size_t(n)].transpose();
  return s;
}

// The eigenvectors of the R largest eigenvalues of symmetric S, largest first (d×R).
// EIGENVALUES, when given, receives all d eigenvalues in decreasing order.
template <class Scalar>
Matrix<Scalar> top_eigenvectors(const Matrix<Scalar>& s, Index r, Vector<Scalar>* eigenvalues = nullptr) {
  if (r < 1 || r > s.rows()) throw std::invalid_argument("top_eigenvectors: need 1 <= r <= d");
  Eigen::SelfAdjointEigenSolver<Matrix<Scalar>> eig(sym(s));
  if (eig.info() != Eigen::Success) throw std::domain_error("top_eigenvectors: no convergence");
  const Index d = s.rows();
  if (eigenvalues) *eigenvalues = eig.eigenvalues().reverse();
  Matrix<Scalar> top(d, r);
  for (Index j = 0; j < r; ++j) top.col(j) = eig.eigenvectors().col(d - 1 - j);  // ascending order
  return top;
}

// The chordal mean SVD_top-r(Σ_{n ∈ members} A_n A_nᵀ) of the members' spans.
template <class Scalar>
Matrix<Scalar> chordal_mean(const Frames<Scalar>& points, const std::vector<Index>& members, Index r) {
  if (members.empty()) throw std::invalid_argument("chordal_mean: no members");
  return top_eigenvectors<Scalar>(projector_sum<Scalar>(points, members), r);
}

// Each point's chordal-nearest centroid (the first of equals).
template <class Scalar>
std::vector<Index> assign_to_centroids(const Frames<Scalar>& points, const Frames<Scalar>& centroids) {
  if (centroids.empty()) throw std::invalid_argument("assign_to_centroids: no centroids");
  std::vector<Index> a(points.size(), 0);
  for (std::size_t n = 0; n < points.size(); ++n) {
    Scalar best = chordal_distance_squared<Scalar>(points[n], centroids[0]);
    for (std::size_t k = 1; k < centroids.size(); ++k) {
      const Scalar dk = chordal_distance_squared<Scalar>(points[n], centroids[k]);
      if (dk < best) {
        best = dk;
        a[n] = Index(k);
      }
    }
  }
  return a;
}

// Each centroid replaced by the chordal mean of its cluster; an empty cluster keeps its centroid.
template <class Scalar>
Frames<Scalar> update_centroids(const Frames<Scalar>& points, const std::vector<Index>& assignment,
                                const Frames<Scalar>& centroids) {
  Frames<Scalar> next = centroids;
  for (std::size_t k = 0; k < centroids.size(); ++k) {
    std::vector<Index> members;
    for (std::size_t n = 0; n < points.size(); ++n)
      if (assignment[n] == Index(k)) members.push_back(Index(n));
    if (!members.empty()) next[k] = chordal_mean<Scalar>(points, members, centroids[k].cols());
  }
  return next;
}

// J = Σ_n d_c(A_n, C_{a_n})².
template <class Scalar>
Scalar kmeans_objective(const Frames<Scalar>& points, const std::vector<Index>& assignment,
                        const Frames<Scalar>& centroids) {
  Scalar j = Scalar(0);
  for (std::size_t n = 0; n < points.size(); ++n)
    j += chordal_distance_squared<Scalar>(points[n], centroids[std::size_t(assignment[n])]);
  return j;
}

}  // namespace stiefel
