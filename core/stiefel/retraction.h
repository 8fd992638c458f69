// Polar retraction onto St(d,r), two routes, and the frame-level retraction used by the updates.
//   polar(M) = U Vᵀ for the thin SVD M = U Σ Vᵀ (full column rank): the Frobenius-nearest point of
//   St(d,r) to M (§2). Gram route: polar(M) = M (MᵀM)^(−1/2); for tangent η at W,
//   (W+η)ᵀ(W+η) = I + ηᵀη (Prop. 6(i)), so R_W(η) = (W+η)(I+ηᵀη)^(−1/2).
//   polar(cM) = polar(M) for c > 0, polar(QM) = Q polar(M) for Q ∈ O(d) (Prop. 7).
#pragma once

#include <Eigen/Eigenvalues>
#include <Eigen/SVD>
#include <stdexcept>
#include <string>

#include "scalar.h"

namespace stiefel {

// polar(M) via the thin SVD (the paper's route). M: d×r, d ≥ r.
template <class Scalar>
Matrix<Scalar> polar_svd(const Matrix<Scalar>& m) {
  if (m.rows() < m.cols())
    throw std::invalid_argument("polar_svd: need d >= r, got " + std::to_string(m.rows()) + "x" +
                                std::to_string(m.cols()));
  Eigen::JacobiSVD<Matrix<Scalar>> svd(m, Eigen::ComputeThinU | Eigen::ComputeThinV);
  return svd.matrixU() * svd.matrixV().transpose();
}

// (S)^(−1/2) for symmetric positive definite S, by its eigendecomposition.
template <class Scalar>
Matrix<Scalar> inverse_sqrt_spd(const Matrix<Scalar>& s) {
  using std::sqrt;
  Eigen::SelfAdjointEigenSolver<Matrix<Scalar>> eig(sym(s));
  const Vector<Scalar> lambda = eig.eigenvalues();
  if (!(lambda.minCoeff() > Scalar(0))) throw std::domain_error("inverse_sqrt_spd: matrix is not positive definite");
  Vector<Scalar> inv_sqrt(lambda.size());
  for (Index i = 0; i < lambda.size(); ++i) inv_sqrt(i) = Scalar(1) / sqrt(lambda(i));
  return eig.eigenvectors() * inv_sqrt.asDiagonal() * eig.eigenvectors().transpose();
}

// polar(M) = M (MᵀM)^(−1/2): the r×r Gram route, valid for any full-column-rank M.
template <class Scalar>
Matrix<Scalar> polar_gram(const Matrix<Scalar>& m) {
  return m * inverse_sqrt_spd<Scalar>(m.transpose() * m);
}

// R_W(η) = (W+η)(I + ηᵀη)^(−1/2): the Gram route specialised to tangent η (Prop. 6(i)).
template <class Scalar>
Matrix<Scalar> retract_polar_gram(const Matrix<Scalar>& w, const Matrix<Scalar>& eta) {
  const Matrix<Scalar> gram = Matrix<Scalar>::Identity(w.cols(), w.cols()) + eta.transpose() * eta;
  return (w + eta) * inverse_sqrt_spd<Scalar>(gram);
}

enum class Retraction {
  kPolarSvd,   // polar(W + η) by thin SVD (§3.2)
  kPolarGram,  // (W + η)(I + ηᵀη)^(−1/2), exact for tangent η
};

template <class Scalar>
Matrix<Scalar> retract(Retraction kind, const Matrix<Scalar>& w, const Matrix<Scalar>& eta) {
  return kind == Retraction::kPolarGram ? retract_polar_gram(w, eta) : polar_svd<Scalar>(w + eta);
}

}  // namespace stiefel
