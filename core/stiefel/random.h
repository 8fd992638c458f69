// Reproducible randomness: Gaussians from std::mt19937_64 bits through our own transform
// (std::normal_distribution differs between standard libraries), and the random objects the
// tests and certificates draw: Stiefel points, tangent vectors, O(d), symmetric matrices.
// Every draw is made in double and then converted, so all scalar types see the same inputs.
#pragma once

#include <Eigen/QR>
#include <cmath>
#include <cstdint>
#include <random>

#include "scalar.h"

namespace stiefel {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}

  std::uint64_t bits() { return engine_(); }

  // Uniform on the open interval (0, 1), 53 random bits.
  double uniform() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53; }

  // Standard normal by Marsaglia's polar method.
  double gaussian() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u, v, s;
    do {
      u = 2.0 * uniform() - 1.0;
      v = 2.0 * uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double f = std::sqrt(-2.0 * std::log(s) / s);
    spare_ = v * f;
    has_spare_ = true;
    return u * f;
  }

 private:
  std::mt19937_64 engine_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

template <class Scalar>
Matrix<Scalar> gaussian_matrix(Rng& rng, Index rows, Index cols) {
  Matrix<Scalar> g(rows, cols);
  for (Index j = 0; j < cols; ++j)
    for (Index i = 0; i < rows; ++i) g(i, j) = Scalar(rng.gaussian());
  return g;
}

// Q factor of a Householder QR with the signs fixed so that diag(R) > 0: Haar-distributed.
template <class Scalar>
Matrix<Scalar> orthonormal_factor(const Matrix<Scalar>& a, Index cols) {
  Eigen::HouseholderQR<Matrix<Scalar>> qr(a);
  Matrix<Scalar> q = qr.householderQ() * Matrix<Scalar>::Identity(a.rows(), cols);
  const Index k = std::min<Index>(cols, a.cols());
  for (Index j = 0; j < k; ++j)
    if (qr.matrixQR()(j, j) < Scalar(0)) q.col(j) = -q.col(j);
  return q;
}

// A uniformly distributed point of St(d,r).
template <class Scalar>
Matrix<Scalar> random_stiefel(Rng& rng, Index d, Index r) {
  return orthonormal_factor<Scalar>(gaussian_matrix<Scalar>(rng, d, r), r);
}

// A Haar-distributed Q ∈ O(d).
template <class Scalar>
Matrix<Scalar> random_orthogonal(Rng& rng, Index d) {
  return orthonormal_factor<Scalar>(gaussian_matrix<Scalar>(rng, d, d), d);
}

// A = (G + Gᵀ)/2 with G standard Gaussian.
template <class Scalar>
Matrix<Scalar> random_symmetric(Rng& rng, Index d) {
  return sym(gaussian_matrix<Scalar>(rng, d, d));
}

// W⊥: d×(d−r) orthonormal with W⊥ᵀW = 0, from the full Householder QR of W.
template <class Scalar>
Matrix<Scalar> orthogonal_complement(const Matrix<Scalar>& w) {
  const Index d = w.rows(), r = w.cols();
  Eigen::HouseholderQR<Matrix<Scalar>> qr(w);
  Matrix<Scalar> full = qr.householderQ();
  return full.rightCols(d - r);
}

// A random skew-symmetric r×r matrix, ω_ij ~ N(0, ½) for i < j: standard Gaussian coordinates in
// the orthonormal basis (E_ij − E_ji)/√2 of the skew matrices under the Frobenius inner product.
template <class Scalar>
Matrix<Scalar> random_skew(Rng& rng, Index r) {
  using std::sqrt;
  Matrix<Scalar> omega = Matrix<Scalar>::Zero(r, r);
  for (Index j = 0; j < r; ++j)
    for (Index i = 0; i < j; ++i) {
      omega(i, j) = Scalar(rng.gaussian()) / sqrt(Scalar(2));
      omega(j, i) = -omega(i, j);
    }
  return omega;
}

// A tangent vector at W built without the projector: ξ = WΩ + W⊥K, Ω skew (Absil et al. (3.18)).
// It is an isotropic standard Gaussian on T_W St(d,r) in the embedded (Frobenius) metric.
template <class Scalar>
Matrix<Scalar> random_tangent(Rng& rng, const Matrix<Scalar>& w) {
  const Matrix<Scalar> w_perp = orthogonal_complement(w);
  const Matrix<Scalar> omega = random_skew<Scalar>(rng, w.cols());
  const Matrix<Scalar> k = gaussian_matrix<Scalar>(rng, w_perp.cols(), w.cols());
  return w * omega + w_perp * k;
}

}  // namespace stiefel
