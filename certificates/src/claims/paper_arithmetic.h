// The numbers the paper derives from its own figures (a ratio, a decibel figure, a t statistic, an
// angle, a fraction), each recomputed from the figures it is derived from, as printed. A printed
// figure stands for every value that rounds to it: an input printed as 0.52 is any value in
// [0.515, 0.525]. A derived number is consistent when some admissible inputs give a value that
// rounds to it, and refuted when none do.
#pragma once

#include <string>
#include <vector>

#include "claim_builder.h"

namespace stiefel::certificates {

// A number as the paper prints it: its value and half a unit of its last printed digit (the
// rounding that the print stands for; 0 for an exact value such as r = 16).
struct Printed {
  double value = 0;
  double half_unit = 0;
};

enum class ArithmeticMutant { kNone, kNearMiss };

// One derived number: where the paper prints it, the figures it comes from, the formula, and the
// near miss its control computes instead (a plausible other formula that must not reproduce it).
struct DerivedNumber {
  std::string id, source, statement, analysis, near_miss;
  std::vector<Printed> inputs;
  Printed printed;
  // Whether the formula is monotone in each input on the inputs' box: then the box's corners
  // bound its range and a refutation is a proof; otherwise only a witness (a consistency) is.
  bool monotone = true;
  Expected expected = Expected::kCertified;
};

// The derived numbers, in the paper's order; a case's x is the index into this list.
const std::vector<DerivedNumber>& derived_numbers();

// The formula of derived number `index` (its near miss when `near_miss`), in precision S.
template <class S>
S derived_formula(std::size_t index, bool near_miss, const std::vector<S>& x);

// ratio = the distance of the printed value from the range its admissible inputs give, in units
// of the printed value's half unit: ≤ 1 iff some admissible input rounds to the printed value.
template <class S>
CheckResult check_paper_arithmetic(const Case& c, ArithmeticMutant mutant);

// The refutation's proof: the formula's range over the inputs' whole rounding box, enclosed in
// interval arithmetic, is disjoint from the printed value's rounding interval. Its control runs the
// same proof against the formula's own value at the printed inputs.
Proof prove_paper_arithmetic(const Case& c);
Proof prove_paper_arithmetic_reached(const Case& c);

}  // namespace stiefel::certificates
