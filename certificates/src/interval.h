// Interval arithmetic over MPFR (Boost.Interval with an MPFR rounding policy): every bound is
// computed by MPFR in the direction that keeps the true value inside (MPFR rounds each operation,
// square root, logarithm and arctangent included, correctly in every direction). A quantity whose
// enclosure lies strictly on one side of zero has that sign, with no rounding argument left.
// The refutation proofs (claims/refutation_proofs.cpp) use it to re-check counterexamples.
#pragma once

#include <boost/multiprecision/gmp.hpp>
#include <boost/multiprecision/mpfr.hpp>
#include <boost/numeric/interval.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace stiefel::certificates {

// 120 significant digits (400 bits) per bound.
using IntervalReal =
    boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<120>, boost::multiprecision::et_off>;

// Boost.Interval's rounding policy: each bound from one MPFR call rounded down (lower bounds) or up.
struct MpfrOutwardRounding {
  using T = IntervalReal;
  void init() {}

  using Binary = int (*)(mpfr_ptr, mpfr_srcptr, mpfr_srcptr, mpfr_rnd_t);
  using Unary = int (*)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);
  static T apply(Binary f, const T& a, const T& b, mpfr_rnd_t rnd) {
    T out;
    f(out.backend().data(), a.backend().data(), b.backend().data(), rnd);
    return out;
  }
  static T apply(Unary f, const T& a, mpfr_rnd_t rnd) {
    T out;
    f(out.backend().data(), a.backend().data(), rnd);
    return out;
  }

  T add_down(const T& a, const T& b) { return apply(mpfr_add, a, b, MPFR_RNDD); }
  T add_up(const T& a, const T& b) { return apply(mpfr_add, a, b, MPFR_RNDU); }
  T sub_down(const T& a, const T& b) { return apply(mpfr_sub, a, b, MPFR_RNDD); }
  T sub_up(const T& a, const T& b) { return apply(mpfr_sub, a, b, MPFR_RNDU); }
  T mul_down(const T& a, const T& b) { return apply(mpfr_mul, a, b, MPFR_RNDD); }
  T mul_up(const T& a, const T& b) { return apply(mpfr_mul, a, b, MPFR_RNDU); }
  T div_down(const T& a, const T& b) { return apply(mpfr_div, a, b, MPFR_RNDD); }
  T div_up(const T& a, const T& b) { return apply(mpfr_div, a, b, MPFR_RNDU); }
  T sqrt_down(const T& a) { return apply(mpfr_sqrt, a, MPFR_RNDD); }
  T sqrt_up(const T& a) { return apply(mpfr_sqrt, a, MPFR_RNDU); }
  T exp_down(const T& a) { return apply(mpfr_exp, a, MPFR_RNDD); }
  T exp_up(const T& a) { return apply(mpfr_exp, a, MPFR_RNDU); }
  T log_down(const T& a) { return apply(mpfr_log, a, MPFR_RNDD); }
  T log_up(const T& a) { return apply(mpfr_log, a, MPFR_RNDU); }
  T atan_down(const T& a) { return apply(mpfr_atan, a, MPFR_RNDD); }
  T atan_up(const T& a) { return apply(mpfr_atan, a, MPFR_RNDU); }
  T asin_down(const T& a) { return apply(mpfr_asin, a, MPFR_RNDD); }
  T asin_up(const T& a) { return apply(mpfr_asin, a, MPFR_RNDU); }
  T int_down(const T& a) { return apply(mpfr_floor_wrapper, a, MPFR_RNDD); }
  T int_up(const T& a) { return apply(mpfr_ceil_wrapper, a, MPFR_RNDU); }
  T median(const T& a, const T& b) { return (a + b) / T(2); }
  // Conversions from the types the proofs use (integers, double) are exact at 400 bits.
  template <class U>
  T conv_down(const U& v) {
    static_assert(std::is_integral_v<U> || std::is_same_v<U, double> || std::is_same_v<U, float>);
    return T(v);
  }
  template <class U>
  T conv_up(const U& v) {
    static_assert(std::is_integral_v<U> || std::is_same_v<U, double> || std::is_same_v<U, float>);
    return T(v);
  }

 private:
  static int mpfr_floor_wrapper(mpfr_ptr out, mpfr_srcptr a, mpfr_rnd_t) { return mpfr_floor(out, a); }
  static int mpfr_ceil_wrapper(mpfr_ptr out, mpfr_srcptr a, mpfr_rnd_t) { return mpfr_ceil(out, a); }
};

using Interval = boost::numeric::interval<
    IntervalReal, boost::numeric::interval_lib::policies<MpfrOutwardRounding,
                                                         boost::numeric::interval_lib::checking_base<IntervalReal>>>;

// Exact interval arithmetic over the rationals: no operation rounds, so an enclosure computed with it
// is exact. The functions no rational can hold (square root, logarithm, arctangent, π) throw
// std::domain_error, so that a computation that needs them falls back to the MPFR intervals above.
using Rational = boost::multiprecision::mpq_rational;
// Boost's exact rounding, named in this namespace so that the functions below are found by ADL.
struct ExactRationalRounding : boost::numeric::interval_lib::rounded_arith_exact<Rational> {};
// The rationals have no infinity and no NaN, so Boost's default checking would stand for an empty or
// unbounded result with ordinary numbers ([1, 0], [0, 0]); these throw instead, and the computation
// falls back to the MPFR intervals.
struct RationalChecking {
  [[noreturn]] static Rational pos_inf() { throw std::domain_error("an unbounded rational interval"); }
  [[noreturn]] static Rational neg_inf() { throw std::domain_error("an unbounded rational interval"); }
  [[noreturn]] static Rational nan() { throw std::domain_error("an undefined rational interval"); }
  static bool is_nan(const Rational&) { return false; }
  [[noreturn]] static Rational empty_lower() { throw std::domain_error("an empty rational interval"); }
  [[noreturn]] static Rational empty_upper() { throw std::domain_error("an empty rational interval"); }
  static bool is_empty(const Rational& l, const Rational& u) { return !(l <= u); }
};
using RationalInterval =
    boost::numeric::interval<Rational, boost::numeric::interval_lib::policies<ExactRationalRounding, RationalChecking>>;
RationalInterval decimal_rational(const std::string& text);  // the decimal's exact value
RationalInterval sqrt(const RationalInterval& x);
RationalInterval log10(const RationalInterval& x);
RationalInterval atan(const RationalInterval& x);
RationalInterval asin(const RationalInterval& x);
double lower_double(const RationalInterval& x);
double upper_double(const RationalInterval& x);
std::string to_string(const RationalInterval& x);

// The enclosure of a decimal number written in `text` (e.g. "1.1e-5"): its two neighbours at 400 bits.
Interval decimal_interval(const std::string& text);
// The enclosure of the exact value of x (a float64 is exact at 400 bits).
Interval exact_interval(double x);
// [a.lower(), b.upper()]: the hull of two enclosures.
Interval hull_of(const Interval& a, const Interval& b);
// Enclosures of log10, π (for the formulas of paper_arithmetic.cpp).
Interval log10(const Interval& x);
Interval pi_interval();
// The bounds rounded outward to float64, and a short text of the enclosure.
double lower_double(const Interval& x);
double upper_double(const Interval& x);
std::string to_string(const Interval& x);

}  // namespace stiefel::certificates
