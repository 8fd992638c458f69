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

// mp50 matrix products. Eigen's blocked kernel (gebp) packs both operands into buffers and
// broadcasts coefficients, which for MPFR numbers are copies of whole numbers (mpfr_set and a
// memmove of the limbs each): in the 50-digit certificate these copies cost more than the
// arithmetic. This specialisation of the column-major kernel, the same hook Eigen's BLAS and MKL
// back ends use, forms each coefficient as a running sum of products (MPFR's same-precision fast
// paths, rounded as the scalar loop would be) and adds alpha times it to the destination. Row-major destinations reach
// it through Eigen's own transposing specialisation.
namespace Eigen::internal {
template <typename Index, int LhsStorageOrder, bool ConjugateLhs, int RhsStorageOrder, bool ConjugateRhs,
          int ResInnerStride>
struct general_matrix_matrix_product<Index, stiefel::mp50, LhsStorageOrder, ConjugateLhs, stiefel::mp50,
                                     RhsStorageOrder, ConjugateRhs, ColMajor, ResInnerStride> {
  using Scalar = stiefel::mp50;
  using Traits = gebp_traits<Scalar, Scalar>;
  using ResScalar = Scalar;
  static void run(Index rows, Index cols, Index depth, const Scalar* lhs, Index lhs_stride, const Scalar* rhs,
                  Index rhs_stride, Scalar* res, Index res_incr, Index res_stride, const Scalar& alpha,
                  level3_blocking<Scalar, Scalar>& /*blocking*/, GemmParallelInfo<Index>* /*info*/ = nullptr) {
    const auto lhs_at = [&](Index i, Index k) -> const Scalar& {
      return LhsStorageOrder == ColMajor ? lhs[i + k * lhs_stride] : lhs[i * lhs_stride + k];
    };
    const auto rhs_at = [&](Index k, Index j) -> const Scalar& {
      return RhsStorageOrder == ColMajor ? rhs[k + j * rhs_stride] : rhs[k * rhs_stride + j];
    };
    Scalar sum, term;
    for (Index j = 0; j < cols; ++j) {
      for (Index i = 0; i < rows; ++i) {
        mpfr_set_zero(sum.backend().data(), 1);
        for (Index k = 0; k < depth; ++k) {
          mpfr_mul(term.backend().data(), lhs_at(i, k).backend().data(), rhs_at(k, j).backend().data(), MPFR_RNDN);
          mpfr_add(sum.backend().data(), sum.backend().data(), term.backend().data(), MPFR_RNDN);
        }
        Scalar& out = res[i * res_incr + j * res_stride];
        mpfr_mul(term.backend().data(), alpha.backend().data(), sum.backend().data(), MPFR_RNDN);
        mpfr_add(out.backend().data(), out.backend().data(), term.backend().data(), MPFR_RNDN);
      }
    }
  }
};
}  // namespace Eigen::internal
