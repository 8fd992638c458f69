// stiefel::mp50: 50 significant decimal digits (168 bits), MPFR through Boost.Multiprecision, with
// the limbs on the stack and expression templates off, registered with Eigen through a NumTraits
// specialisation derived from GenericNumTraits, as Eigen's test/boostmultiprec.cpp does (Boost's own
// eigen.hpp does not compile with Eigen 3.4's SVD and eigensolvers). MPFR rounds every operation
// correctly; its square root and division are about ten times faster than cpp_bin_float<50>'s,
// which is what makes the 50-digit certificate fit its time budget. Link with stiefel::mp50.
#pragma once

#include <Eigen/Core>
#include <limits>
#include <boost/multiprecision/mpfr.hpp>

namespace stiefel {
using mp50 =
    boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<50, boost::multiprecision::allocate_stack>,
                                  boost::multiprecision::et_off>;
}  // namespace stiefel

namespace stiefel {
// Boost fills numeric_limits<mp50>'s min, max, epsilon, round_error, infinity and quiet_NaN on first
// use behind an unsynchronised flag (its start-up initialiser covers only the expression-template
// variant). Code that uses mp50 on several threads calls this once before starting them.
inline void prepare_mp50_for_threads() {
  using limits = std::numeric_limits<mp50>;
  (void)(limits::min)();
  (void)(limits::max)();
  (void)limits::lowest();
  (void)limits::epsilon();
  (void)limits::round_error();
  (void)limits::infinity();
  (void)limits::quiet_NaN();
  (void)limits::denorm_min();
}
}  // namespace stiefel

namespace Eigen {
template <>
struct NumTraits<stiefel::mp50> : GenericNumTraits<stiefel::mp50> {
  static inline stiefel::mp50 dummy_precision() { return stiefel::mp50(1e-45); }
  static inline int digits10() { return std::numeric_limits<stiefel::mp50>::digits10; }
};
}  // namespace Eigen
