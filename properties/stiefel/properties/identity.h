// An identity `actual = expected` evaluated in floating point and judged LAPACK style:
//   ratio = ‖actual − expected‖ / (normaliser · u · factor),  u the unit roundoff of Scalar,
// which holds at ratio ≤ kRatioThreshold. As Ceres' manifold_test_utils.h matchers do, it keeps
// expected, actual and their difference, so that a failure prints all three.
#pragma once

#include <ostream>
#include <sstream>
#include <string>
#include <stiefel/properties/residual.h>
#include <stiefel/scalar.h>

namespace stiefel::properties {

template <class Scalar>
struct Identity {
  const char* statement = "";
  Matrix<Scalar> expected, actual;  // 1×1 for an identity between scalars
  Scalar residual = Scalar(0);      // ‖actual − expected‖_F (|actual − expected| between scalars)
  Scalar normaliser = Scalar(1);
  double factor = 1;  // the stated dimension factor

  Matrix<Scalar> difference() const { return actual - expected; }
  double ratio() const { return residual_ratio<Scalar>(residual, normaliser, factor); }
  bool holds(double threshold = kRatioThreshold) const { return ratio() <= threshold; }
};

// expected = actual between matrices, residual ‖actual − expected‖_F.
template <class Scalar>
Identity<Scalar> matrix_identity(const char* statement, Matrix<Scalar> expected, Matrix<Scalar> actual,
                                 const Scalar& normaliser, double factor) {
  Identity<Scalar> id{statement, std::move(expected), std::move(actual), Scalar(0), normaliser, factor};
  id.residual = (id.actual - id.expected).norm();
  return id;
}

// expected = actual between scalars, residual |actual − expected|.
template <class Scalar>
Identity<Scalar> scalar_identity(const char* statement, const Scalar& expected, const Scalar& actual,
                                 const Scalar& normaliser, double factor) {
  using std::abs;
  Identity<Scalar> id{statement,
                      Matrix<Scalar>::Constant(1, 1, expected),
                      Matrix<Scalar>::Constant(1, 1, actual),
                      Scalar(0),
                      normaliser,
                      factor};
  id.residual = abs(Scalar(actual - expected));
  return id;
}

template <class Scalar>
std::ostream& operator<<(std::ostream& os, const Identity<Scalar>& id) {
  return os << id.statement << ": ratio " << id.ratio() << " (residual " << to_double(id.residual) << ", normaliser "
            << to_double(id.normaliser) << ", factor " << id.factor << ")"
            << "\nexpected:\n"
            << id.expected << "\nactual:\n"
            << id.actual << "\ndifference:\n"
            << id.difference();
}

template <class Scalar>
std::string describe(const Identity<Scalar>& id) {
  std::ostringstream os;
  os << id;
  return os.str();
}

}  // namespace stiefel::properties
