// Riemannian exponential of St(d,r) in the embedded metric (Edelman, Arias & Smith 1998, (2.45)):
//   Exp_W(ξ) = [W  ξ] exp([[A, −S], [I, A]]) [I; 0] exp(−A),  A = Wᵀξ (skew), S = ξᵀξ.
// Used to check that the polar retraction is second order: ‖R_W(tξ) − Exp_W(tξ)‖ = O(t³).
#pragma once

#include "scalar.h"

namespace stiefel {

// exp(M) by scaling and squaring with a Taylor series summed to the working precision; generic
// over Scalar (Eigen's MatrixFunctions module is limited to 113-bit types).
template <class Scalar>
Matrix<Scalar> matrix_exponential(const Matrix<Scalar>& m) {
  using std::abs;
  const Index n = m.rows();
  Scalar norm = m.cwiseAbs().rowwise().sum().maxCoeff();  // ‖M‖_∞
  int squarings = 0;
  while (norm > Scalar(0.5)) {
    norm /= Scalar(2);
    ++squarings;
  }
  const Matrix<Scalar> a = m / Scalar(std::ldexp(1.0, squarings));
  Matrix<Scalar> term = Matrix<Scalar>::Identity(n, n);
  Matrix<Scalar> sum = term;
  const Scalar eps = Eigen::NumTraits<Scalar>::epsilon();
  for (int k = 1; k < 200; ++k) {
    term = term * a / Scalar(k);
    sum += term;
    if (term.cwiseAbs().maxCoeff() <= eps * sum.cwiseAbs().maxCoeff() / Scalar(16)) break;
  }
  for (int i = 0; i < squarings; ++i) sum = sum * sum;
  return sum;
}

template <class Scalar>
Matrix<Scalar> stiefel_exponential(const Matrix<Scalar>& w, const Matrix<Scalar>& xi) {
  const Index r = w.cols();
  const Matrix<Scalar> a = w.transpose() * xi;
  const Matrix<Scalar> s = xi.transpose() * xi;
  Matrix<Scalar> block(2 * r, 2 * r);
  block << a, -s, Matrix<Scalar>::Identity(r, r), a;
  Matrix<Scalar> basis(w.rows(), 2 * r);
  basis << w, xi;
  const Matrix<Scalar> e = matrix_exponential<Scalar>(block);
  return basis * e.leftCols(r) * matrix_exponential<Scalar>(-a);
}

}  // namespace stiefel
