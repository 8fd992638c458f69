// Matrix aliases and type-derived tolerances shared by every core header.
// Everything in core/ is generic over Scalar: double, long double and stiefel::mp50 are tested.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <vector>

namespace stiefel {

template <class Scalar>
using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
template <class Scalar>
using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;
using Index = Eigen::Index;

// One d×r frame per head: a point of the product St(d,r)^H.
template <class Scalar>
using Frames = std::vector<Matrix<Scalar>>;

// u = ε/2, the unit roundoff of round-to-nearest arithmetic in Scalar.
template <class Scalar>
Scalar unit_roundoff() {
  return Eigen::NumTraits<Scalar>::epsilon() / Scalar(2);
}

// Converts any scalar (Boost.Multiprecision included) to double for reporting.
template <class Scalar>
double to_double(const Scalar& x) {
  return static_cast<double>(x);
}

// sym(A) = (A + Aᵀ)/2 and skew(A) = (A − Aᵀ)/2 for square A.
template <class Derived>
Matrix<typename Derived::Scalar> sym(const Eigen::MatrixBase<Derived>& a) {
  using S = typename Derived::Scalar;
  return (a + a.transpose()) / S(2);
}
template <class Derived>
Matrix<typename Derived::Scalar> skew(const Eigen::MatrixBase<Derived>& a) {
  using S = typename Derived::Scalar;
  return (a - a.transpose()) / S(2);
}

// ‖WᵀW − I‖_max, the isometry error the paper reports (§4.1).
template <class Scalar>
Scalar isometry_error(const Matrix<Scalar>& w) {
  const Matrix<Scalar> gram = w.transpose() * w - Matrix<Scalar>::Identity(w.cols(), w.cols());
  return gram.cwiseAbs().maxCoeff();
}

}  // namespace stiefel
