// Soft-orthogonality penalty (Bansal et al. 2018; the soft baseline of §4.6):
//   P(W) = λ ‖WᵀW − I‖²_F,   ∇P(W) = 4λ W (WᵀW − I).
#pragma once

#include "scalar.h"

namespace stiefel {

template <class Scalar>
Scalar soft_orthogonality_penalty(const Matrix<Scalar>& w, Scalar lambda) {
  const Matrix<Scalar> e = w.transpose() * w - Matrix<Scalar>::Identity(w.cols(), w.cols());
  return lambda * e.squaredNorm();
}

template <class Scalar>
Matrix<Scalar> soft_orthogonality_gradient(const Matrix<Scalar>& w, Scalar lambda) {
  const Matrix<Scalar> e = w.transpose() * w - Matrix<Scalar>::Identity(w.cols(), w.cols());
  return Scalar(4) * lambda * w * e;
}

}  // namespace stiefel
