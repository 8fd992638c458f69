#include "interval.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace stiefel::certificates {

namespace {

IntervalReal decimal_bound(const std::string& text, mpfr_rnd_t rnd) {
  IntervalReal out;
  char* end = nullptr;
  mpfr_strtofr(out.backend().data(), text.c_str(), &end, 10, rnd);
  if (text.empty() || end == nullptr || *end != '\0')
    throw std::invalid_argument("decimal_interval: '" + text + "' is not a decimal number");
  return out;
}

// "[lo, hi]" with both bounds to 17 significant digits.
std::string enclosure_text(double lower, double upper) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "[%.17g, %.17g]", lower, upper);
  return buf;
}

}  // namespace

Interval decimal_interval(const std::string& text) {
  return Interval(decimal_bound(text, MPFR_RNDD), decimal_bound(text, MPFR_RNDU));
}

Interval exact_interval(double x) { return Interval(IntervalReal(x)); }

Interval hull_of(const Interval& a, const Interval& b) { return boost::numeric::hull(a, b); }

Interval log10(const Interval& x) {
  if (!(x.lower() > 0)) throw std::domain_error("log10 of an interval that reaches 0");
  IntervalReal lo, hi;
  mpfr_log10(lo.backend().data(), x.lower().backend().data(), MPFR_RNDD);
  mpfr_log10(hi.backend().data(), x.upper().backend().data(), MPFR_RNDU);
  return Interval(lo, hi);
}

Interval pi_interval() {
  IntervalReal lo, hi;
  mpfr_const_pi(lo.backend().data(), MPFR_RNDD);
  mpfr_const_pi(hi.backend().data(), MPFR_RNDU);
  return Interval(lo, hi);
}

double lower_double(const Interval& x) { return mpfr_get_d(x.lower().backend().data(), MPFR_RNDD); }
double upper_double(const Interval& x) { return mpfr_get_d(x.upper().backend().data(), MPFR_RNDU); }

std::string to_string(const Interval& x) { return enclosure_text(lower_double(x), upper_double(x)); }

RationalInterval decimal_rational(const std::string& text) {
  // [sign] digits [. digits] [e|E [sign] digits]
  std::size_t i = 0;
  const auto fail = [&] { return std::invalid_argument("decimal_rational: '" + text + "' is not a decimal number"); };
  bool negative = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  boost::multiprecision::mpz_int mantissa = 0;
  int digits = 0, fraction = 0;
  bool point = false;
  for (; i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'); ++i) {
    if (text[i] == '.') {
      if (point) throw fail();
      point = true;
      continue;
    }
    mantissa = mantissa * 10 + (text[i] - '0');
    ++digits;
    if (point) ++fraction;
  }
  if (digits == 0) throw fail();
  long exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    std::size_t used = 0;
    try {
      exponent = std::stol(text.substr(i + 1), &used);
    } catch (const std::exception&) {
      throw fail();
    }
    if (used != text.size() - i - 1 || exponent < -400 || exponent > 400) throw fail();
    i = text.size();
  }
  if (i != text.size()) throw fail();
  exponent -= fraction;
  Rational value(mantissa);
  const Rational ten_power(
      boost::multiprecision::pow(boost::multiprecision::mpz_int(10), unsigned(std::labs(exponent))));
  if (exponent >= 0) {
    value *= ten_power;
  } else {
    value /= ten_power;
  }
  if (negative) value = -value;
  return RationalInterval(value);
}

namespace {
[[noreturn]] void not_rational(const char* what) {
  throw std::domain_error(std::string(what) + " has no exact rational enclosure");
}
double rational_to_double(const Rational& x, mpfr_rnd_t rnd) {
  mpfr_t out;
  mpfr_init2(out, 53);
  mpfr_set_q(out, x.backend().data(), rnd);  // correctly rounded in the given direction
  const double d = mpfr_get_d(out, rnd);
  mpfr_clear(out);
  return d;
}
}  // namespace

RationalInterval sqrt(const RationalInterval&) { not_rational("a square root"); }
RationalInterval log10(const RationalInterval&) { not_rational("a logarithm"); }
RationalInterval atan(const RationalInterval&) { not_rational("an arctangent"); }
RationalInterval asin(const RationalInterval&) { not_rational("an arcsine"); }

double lower_double(const RationalInterval& x) { return rational_to_double(x.lower(), MPFR_RNDD); }
double upper_double(const RationalInterval& x) { return rational_to_double(x.upper(), MPFR_RNDU); }

std::string to_string(const RationalInterval& x) { return enclosure_text(lower_double(x), upper_double(x)); }

}  // namespace stiefel::certificates
