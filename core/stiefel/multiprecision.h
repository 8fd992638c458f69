// stiefel::mp50 = number<cpp_bin_float<50>, et_off>, registered with Eigen through a NumTraits
// specialisation derived from GenericNumTraits, as Eigen's test/boostmultiprec.cpp does
// (Boost's own eigen.hpp does not compile with Eigen 3.4's SVD and eigensolvers).
#pragma once

#include <Eigen/Core>
#include <boost/multiprecision/cpp_bin_float.hpp>

namespace stiefel {
using mp50 = boost::multiprecision::number<boost::multiprecision::cpp_bin_float<50>, boost::multiprecision::et_off>;
}  // namespace stiefel

namespace Eigen {
template <>
struct NumTraits<stiefel::mp50> : GenericNumTraits<stiefel::mp50> {
  static inline stiefel::mp50 dummy_precision() { return stiefel::mp50(1e-45); }
  static inline int digits10() { return std::numeric_limits<stiefel::mp50>::digits10; }
};
}  // namespace Eigen
