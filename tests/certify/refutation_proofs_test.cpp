// Refutations as proofs: the interval and rational arithmetic they rest on, and each proof on the
// counterexample its claim shrinks to, against the near miss where the claim holds.
#include <gtest/gtest.h>

#include <cmath>

#include <stiefel/certificates/claim.h>

#include "claims/paper_arithmetic.h"
#include "claims/prop7_equivariance.h"
#include "claims/refutation_proofs.h"
#include "interval.h"

namespace stiefel::certificates {
namespace {

// A bound's exact value (every MPFR number is a dyadic rational), so the checks below round nothing.
Rational exact_of(const IntervalReal& x) {
  Rational q;
  mpfr_get_q(q.backend().data(), x.backend().data());
  return q;
}

TEST(Interval, DecimalEnclosuresHoldTheDecimal) {
  const Interval tenth = decimal_interval("0.1");
  EXPECT_LT(tenth.lower(), tenth.upper());  // 1/10 is not a binary fraction: the two neighbours
  EXPECT_LT(exact_of(tenth.lower()) * 10, Rational(1));
  EXPECT_GT(exact_of(tenth.upper()) * 10, Rational(1));
  const Interval half = decimal_interval("5e-1");
  EXPECT_EQ(half.lower(), half.upper());  // 1/2 is exact
  EXPECT_THROW(decimal_interval("0.1x"), std::invalid_argument);
  EXPECT_THROW(decimal_interval(""), std::invalid_argument);
}

TEST(Interval, OperationsRoundOutward) {
  const Interval two(2);
  const Interval root = sqrt(two);
  EXPECT_LT(exact_of(root.lower()) * exact_of(root.lower()), Rational(2));
  EXPECT_GT(exact_of(root.upper()) * exact_of(root.upper()), Rational(2));
  const Interval third = Interval(1) / Interval(3);
  EXPECT_LT(exact_of(third.lower()) * 3, Rational(1));
  EXPECT_GT(exact_of(third.upper()) * 3, Rational(1));
  const Interval decade = log10(Interval(1000));
  EXPECT_LE(decade.lower(), IntervalReal(3));
  EXPECT_GE(decade.upper(), IntervalReal(3));
  EXPECT_LT(decade.upper() - decade.lower(), IntervalReal(1e-100));
  const Interval pi = pi_interval();
  EXPECT_EQ(lower_double(pi), 3.141592653589793);  // the float64 just below pi, and the one above
  EXPECT_EQ(upper_double(pi), std::nextafter(3.141592653589793, 4.0));
}

TEST(Interval, RationalsAreExactAndRefuseRoots) {
  const RationalInterval x = decimal_rational("1.1e-5");
  EXPECT_EQ(x.lower(), Rational(11, 1000000));
  EXPECT_EQ(x.lower(), x.upper());
  EXPECT_EQ(decimal_rational("-2.50").lower(), Rational(-5, 2));
  EXPECT_EQ(decimal_rational("3E2").lower(), Rational(300));
  const RationalInterval sum = decimal_rational("6.79") - decimal_rational("4.9");
  EXPECT_EQ(sum.lower(), Rational(189, 100));
  EXPECT_THROW(sqrt(x), std::domain_error);
  EXPECT_THROW(log10(x), std::domain_error);
  // No empty or unbounded rational interval stands for a number: dividing by a box that holds 0
  // throws, and the arithmetic proofs fall back to MPFR intervals.
  EXPECT_THROW(RationalInterval(1) / RationalInterval(Rational(-1), Rational(1)), std::domain_error);
  EXPECT_THROW(RationalInterval(Rational(2), Rational(1)), std::domain_error);
  EXPECT_THROW(decimal_rational("1.2.3"), std::invalid_argument);
  EXPECT_THROW(decimal_rational("e5"), std::invalid_argument);
  EXPECT_THROW(decimal_rational("1e"), std::invalid_argument);
}

// Every claim the suite expects to refute carries a proof and its control.
TEST(RefutationProofs, EveryExpectedRefutationHasOne) {
  int refuted = 0;
  for (const Claim& c : registry()) {
    if (c.expected != Expected::kRefuted) continue;
    ++refuted;
    EXPECT_NE(c.proof.prove, nullptr) << c.id;
    EXPECT_NE(c.proof.control, nullptr) << c.id;
    EXPECT_FALSE(c.proof.control_description.empty()) << c.id;
  }
  EXPECT_GE(refuted, 7);
}

void expect_proved(const Proof& p, const std::string& how = "interval") {
  EXPECT_EQ(p.established, how) << p.quantity;
  EXPECT_GT(p.lower, 0) << p.quantity;
  EXPECT_LE(p.lower, p.upper) << p.quantity;
}

// A control: the computation runs to the end and its enclosure reaches the values the claim allows.
void expect_not_proved(const Proof& p) {
  EXPECT_TRUE(p.decided) << p.quantity;
  EXPECT_EQ(p.established, "numeric") << p.quantity;
  EXPECT_LE(p.lower, 0) << p.quantity;
}

// The counterexamples the claims shrink to (reports/certificate.json).
Case sequence_case(std::uint64_t seed, double corr, double log10_eps, bool eps_zero) {
  Case c;
  c.d = 2;
  c.r = 1;
  c.steps = 2;
  c.corr = corr;
  c.log10_lr = -3;
  c.log10_scale = -30;
  c.log10_eps = log10_eps;
  c.eps_zero = eps_zero;
  c.seed = seed;
  return c;
}

TEST(RefutationProofs, JensenMomentBound) {
  const Case c = sequence_case(173, 0.99, -12, false);
  expect_proved(prove_jensen_moment_bound(c));
  expect_not_proved(prove_jensen_moment_bound_corrected(c));
}

// A proof the enclosures cannot carry to the end says so: not decided, nothing established. Here
// the frames are r = 3, where the proofs have no closed-form polar factor.
TEST(RefutationProofs, AnUndecidedComputationEstablishesNothing) {
  Case c = sequence_case(173, 0.99, -12, false);
  c.d = 4;
  c.r = 3;
  const Proof p = prove_jensen_moment_bound(c);
  EXPECT_FALSE(p.decided);
  EXPECT_EQ(p.established, "numeric");
}

TEST(RefutationProofs, DisplacementBound) {
  const Case c = sequence_case(25, 1.0, -8, true);
  expect_proved(prove_displacement_bound(c));
  expect_not_proved(prove_displacement_bound_corrected(c));
}

TEST(RefutationProofs, DecayAbsorbedLargeStep) {
  Case c;
  c.log10_scale = -3;
  c.x = 0.001;  // eta lambda = 1.0023
  const Proof p = prove_decay_absorbed_large_step(c);
  expect_proved(p);
  EXPECT_NEAR(p.lower, 2.0, 1e-12);  // the two polar factors are opposite unit vectors
  expect_not_proved(prove_decay_absorbed_below_one(c));
}

TEST(RefutationProofs, NormalDirectionsRescaleLogits) {
  Case c;
  c.r = 2;
  c.tokens = 2;
  c.log10_scale = -1;
  expect_proved(prove_normal_directions_rescale(c));
  expect_not_proved(prove_normal_directions_rescale_scalar(c));
}

// The arithmetic refutations: exact where the formula is rational, by intervals otherwise; each
// control, the formula's own value printed, is reached.
TEST(RefutationProofs, PaperArithmetic) {
  const auto& numbers = derived_numbers();
  int proved = 0;
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    Case c;
    c.x = double(i);
    const Proof p = prove_paper_arithmetic(c);
    if (numbers[i].expected == Expected::kRefuted) {
      ++proved;
      expect_proved(p, numbers[i].id == "arith-soft-penalty-gain" ? "exact" : "interval");
    } else {
      expect_not_proved(p);  // a consistent number: no gap to establish
    }
    expect_not_proved(prove_paper_arithmetic_reached(c));
  }
  EXPECT_EQ(proved, 3);
}

}  // namespace
}  // namespace stiefel::certificates
