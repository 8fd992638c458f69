// The paper's derived numbers (paper_arithmetic.h): each recomputed from the figures it is derived
// from, with every printed input anywhere in its rounding interval, in float64 and in 50 digits.
#include "paper_arithmetic.h"

#include <array>
#include <boost/math/constants/constants.hpp>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "../interval.h"
#include "check_support.h"
#include "claim_groups.h"

namespace stiefel::certificates {
namespace {

enum Number : std::size_t {
  kCapRadius,
  kAngleBound,
  kB2SgdT,
  kAmplification,
  kDecibels,
  kSoftGain,
  kEpsOrders,
  kDisplacement,
  kRandomFraction,
  kProjectorCost,
  kGrokDefaultP,
  kGrokPowerP,
  kTable2B2Gap,
  kEpsDrop,
  kSixOrders,
  kFiveOrders,
  kCount
};

std::vector<DerivedNumber> build() {
  std::vector<DerivedNumber> n(kCount);
  n[kCapRadius] = {.id = "arith-cap-radius",
                   .source = "§3.2",
                   .statement =
                       "\"With tau sqrt(r) = 0.4 at r = 16 the cap binds on almost every step\": tau sqrt(r) = 0.4 "
                       "for tau = 0.1, r = 16.",
                   .analysis = "0.1 * sqrt(16) = 0.4 exactly.",
                   .near_miss = "tau r (the cap without the square root): 1.6",
                   .inputs = {{0.1, 0}, {16, 0}},
                   .printed = {0.4, 0.05}};
  n[kAngleBound] = {.id = "arith-angle-bound",
                    .source = "Limitations (grokking, r = 32)",
                    .statement = "\"at r = 32 and tau = 0.1 its bound is arctan(tau sqrt(r)) = 29.5 degrees\".",
                    .analysis = "arctan(0.1 sqrt(32)) = arctan(0.5657) = 29.50 degrees.",
                    .near_miss =
                        "arcsin(tau sqrt(r)) = 34.4 degrees (the angle of a chord of length tau sqrt(r), not of the "
                        "polar retraction's step)",
                    .inputs = {{0.1, 0}, {32, 0}},
                    .printed = {29.5, 0.05}};
  n[kB2SgdT] = {.id = "arith-table2-b2sgd-t",
                .source = "§4.1 (n = 50k, B2-SGD vs A2)",
                .statement =
                    "\"per-seed differences are +5.71, +4.82 and +5.78 pp (mean +5.44, standard error 0.31, "
                    "t = 17.6)\": the paired t of the three printed differences.",
                .analysis = "mean 5.437, sd (ddof 1) 0.5352, SE 0.3090, t = 17.59: the paper's t uses the sample sd.",
                .near_miss = "the population sd (ddof 0): t = 21.5",
                .inputs = {{5.71, 0.005}, {4.82, 0.005}, {5.78, 0.005}},
                .printed = {17.6, 0.05},
                .monotone = false};
  n[kAmplification] = {
      .id = "arith-amplification-86x",
      .source = "§4.7 (trajectory logging)",
      .statement =
          "\"B2's effective step-per-gradient ratio is 0.52, against 0.006 for Riemannian SGD (PA16), "
          "an 86x amplification\".",
      .analysis =
          "0.52/0.006 = 86.7 at the printed inputs, which rounds to 87; inputs anywhere in [0.515, 0.525] "
          "and [0.0055, 0.0065] give 79-95, so 86 is consistent with them. The next sentence puts PA16's "
          "ratio at its rate, '0.02 throughout', which would make it 26x.",
      .near_miss = "PA16's ratio taken as its rate 0.02, as the paper's next sentence states it: 26x",
      .inputs = {{0.52, 0.005}, {0.006, 0.0005}, {0.02, 0}},
      .printed = {86, 0.5}};
  n[kDecibels] = {
      .id = "arith-isometry-contrast-db",
      .source = "§4.4 (interpretation)",
      .statement =
          "\"The 1.6 x 10^6-factor iso contrast at epoch 12 000 (A2-nwf: 18; B2-hi: 1.1 x 10^-5; "
          "approximately 130 dB)\": 20 log10 of the two printed isometry errors' ratio.",
      .analysis =
          "20 log10(18 / 1.1e-5) = 124.3 dB: 124 dB, not 130. Over the printed inputs' rounding (17.5-18.5 "
          "and 1.05e-5-1.15e-5) it is 123.6-124.9 dB; 130 dB needs a ratio of 3.2e6. Read as loosely as "
          "the nearest 10 dB (125-135 dB) it misses by 0.08 dB only, so the refutation rests on 130 being "
          "printed to the unit. A proof relative to that rounding: 20 log10(a/b) is monotone in each input, "
          "so the corners bound the range.",
      .near_miss = "10 log10 (a power ratio): 62 dB",
      .inputs = {{18, 0.5}, {1.1e-5, 0.05e-5}},
      .printed = {130, 0.5},
      .expected = Expected::kRefuted};
  n[kSoftGain] = {.id = "arith-soft-penalty-gain",
                  .source = "§4.6 (the soft baseline)",
                  .statement =
                      "The soft penalty \"falling 4.9 pp short of the corrected method\" (whose gain over A2 is "
                      "+6.79 pp, §1) is \"worth about +4 pp\" over A2, \"whereas the manifold yields the remaining "
                      "+5 pp\".",
                  .analysis =
                      "soft - A2 = (B2 - A2) - (B2 - soft) = 6.79 - 4.9 = 1.89 pp; the printed inputs allow "
                      "1.835-1.945 pp, so 'about +4 pp' (3.5-4.5) is out of reach, and 4 + 5 = 9 is not 6.79. The "
                      "difference is monotone in each input: the refutation is a proof.",
                  .near_miss = "the difference with its sign reversed, (B2 - soft) - (B2 - A2): -1.89 pp",
                  .inputs = {{6.79, 0.005}, {4.9, 0.05}},
                  .printed = {4, 0.5},
                  .expected = Expected::kRefuted};
  n[kEpsOrders] = {
      .id = "arith-eps-orders",
      .source = "§5.3 (scale-freeness; the eps probe of §4.7)",
      .statement =
          "\"varying eps across five orders of magnitude on the image task\", for eps in {1e-8, 1e-6, "
          "1e-4, 1e-2, 1e-1}.",
      .analysis = "log10(1e-1 / 1e-8) = 7 orders; five is the number of eps values, not the orders they span.",
      .near_miss = "log10(eps_min / eps_max) (the span with its sign reversed): -7",
      .inputs = {{1e-1, 0}, {1e-8, 0}},
      .printed = {5, 0.5},
      .expected = Expected::kRefuted};
  n[kDisplacement] = {
      .id = "arith-per-step-displacement",
      .source = "§5.3",
      .statement =
          "\"relative displacement = eta |Pi_W g_t|_F / sqrt(H r). With the values measured here (eta = "
          "0.02, |Pi_W g|_F = 0.06, H = 8, r = 16) this is 1.1 x 10^-4 per step\".",
      .analysis =
          "0.02 * 0.06 / sqrt(128) = 1.06e-4 (9.7e-5 to 1.15e-4 for |Pi_W g| in [0.055, 0.065]): the "
          "arithmetic holds for the formula as written. A frame's own norm is sqrt(r), so the relative "
          "displacement of one frame divides by sqrt(r) = 4, not sqrt(H r): 3e-4, the near miss.",
      .near_miss = "divided by sqrt(r), a frame's own norm: 3.0e-4",
      .inputs = {{0.02, 0}, {0.06, 0.005}, {8, 0}, {16, 0}},
      .printed = {1.1e-4, 0.05e-4}};
  n[kRandomFraction] = {
      .id = "arith-random-tangent-fraction",
      .source = "Table 8 caption",
      .statement =
          "\"close to the 25% that a random tangent vector would carry at d = 128, r = 16 by dimension "
          "count\": the norm fraction sqrt(dim so(r) / dim T St(d, r)).",
      .analysis =
          "sqrt((r(r-1)/2) / (d r - r(r+1)/2)) = sqrt(120/1912) = 25.05%; table8-random-tangent-fraction "
          "certifies the same figure by sampling.",
      .near_miss = "the squared-norm fraction 120/1912 = 6.3%",
      .inputs = {{128, 0}, {16, 0}},
      .printed = {25, 0.5}};
  n[kProjectorCost] = {
      .id = "arith-projector-cost",
      .source = "§5.3 after eq. (12), §4.6",
      .statement =
          "\"Measured on this architecture rho = 0.24 (Table 8), so (12) costs about 3% of the per-step "
          "decrease\".",
      .analysis =
          "With rho the gauge share of the tangent gradient's norm, a step of fixed norm along the "
          "horizontal part decreases the loss by sqrt(1 - rho^2) of the full step's: 1 - sqrt(1 - "
          "0.24^2) = 2.92% (2.8-3.05% for rho in [0.235, 0.245]). A step of fixed rate loses rho^2 = 5.8%, "
          "the near miss: the paper's 3% is the fixed-norm reading.",
      .near_miss = "rho^2, the loss of a step of fixed rate: 5.8%",
      .inputs = {{0.24, 0.005}},
      .printed = {3, 0.5}};
  // Five paired seeds: the paired t has 4 degrees of freedom, whose two-sided p has a closed form.
  const char* t4_analysis =
      "With 4 degrees of freedom the two-sided p of a t statistic is 1 - (3/2) sqrt(s) + (1/2) s sqrt(s), "
      "s = t^2 / (t^2 + 4) (the t distribution's CDF in closed form for even degrees of freedom). ";
  const char* t4_near_miss = "the one-sided p (half the two-sided one)";
  n[kGrokDefaultP] = {
      .id = "arith-grok-default-p",
      .source = "§4.3 and Limitations (grokking, default settings, five seeds)",
      .statement =
          "\"the paired difference is not significant (t = -1.6, p = 0.18)\": the two-sided p of the paired t "
          "over five seeds.",
      .analysis =
          std::string(t4_analysis) + "p(1.6) = 0.185 (0.174-0.196 for |t| in [1.55, 1.65]): 0.18 is consistent.",
      .near_miss = std::string(t4_near_miss) + ": 0.092 (0.087-0.098)",
      .inputs = {{-1.6, 0.05}, {4, 0}},
      .printed = {0.18, 0.005}};
  n[kGrokPowerP] = {
      .id = "arith-grok-power-p",
      .source = "§4.3 and Limitations (grokking, the Power et al. stabilisation, five seeds)",
      .statement =
          "\"Paired B2 - A2 difference -0.13 (t = -3.8, p = 0.019): significant, but in A2's favor\": the "
          "two-sided p of the paired t over five seeds.",
      .analysis =
          std::string(t4_analysis) + "p(3.8) = 0.0191 (0.0183-0.0199 for |t| in [3.75, 3.85]): 0.019 is consistent.",
      .near_miss = std::string(t4_near_miss) + ": 0.0096 (0.0092-0.0100)",
      .inputs = {{-3.8, 0.05}, {4, 0}},
      .printed = {0.019, 0.0005}};
  n[kTable2B2Gap] = {
      .id = "arith-table2-b2-gap",
      .source = "§4.1 (n = 50k, B2 vs A2; Table 2's bottom row)",
      .statement =
          "\"61.73 +- 0.06% against 50.86 +- 0.50% for A2, a gap of +10.88pp. The per-seed differences are "
          "+11.28, +10.22 and +11.13pp\": the gap is the mean of the three printed per-seed differences.",
      .analysis =
          "(11.28 + 10.22 + 11.13) / 3 = 10.877 (10.872-10.882 over the inputs' rounding): 10.88 is "
          "consistent. The difference of the printed means, 61.73 - 50.86 = 10.87, is consistent with it too "
          "(10.86-10.88 over their rounding).",
      .near_miss = "the median of the per-seed differences: 11.13",
      .inputs = {{11.28, 0.005}, {10.22, 0.005}, {11.13, 0.005}},
      .printed = {10.88, 0.005}};
  n[kEpsDrop] = {
      .id = "arith-eps-drop",
      .source = "§4.7 (the eps probe)",
      .statement =
          "\"Accuracy is flat across the four smallest values: 42.74%, 42.80%, 42.90%, 42.83% [...] At eps = "
          "0.1 accuracy falls to 40.14%, a drop of -2.60pp\": the drop from eps = 1e-8 (Table 6's B2).",
      .analysis = "40.14 - 42.74 = -2.60 (-2.61 to -2.59 over the inputs' rounding): consistent.",
      .near_miss = "the drop from the mean of the four flat values (42.8175): -2.68",
      .inputs = {{40.14, 0.005}, {42.74, 0.005}, {42.80, 0.005}, {42.90, 0.005}, {42.83, 0.005}},
      .printed = {-2.60, 0.005}};
  n[kSixOrders] = {
      .id = "arith-isometry-six-orders",
      .source = "§4.4 (interpretation)",
      .statement =
          "\"by epoch 12 000 its isometry error reaches 18, six orders of magnitude above the ~1e-5 that B2-hi "
          "maintains\": log10 of the two errors' ratio, to the nearest order.",
      .analysis =
          "log10(18 / 1e-5) = 6.26 (6.22-6.29 over the inputs' rounding): six orders. The section's own "
          "1.1e-5 gives 6.21.",
      .near_miss = "log10 of the squared ratio (a power ratio): 12.5 orders",
      .inputs = {{18, 0.5}, {1e-5, 0.05e-5}},
      .printed = {6, 0.5}};
  n[kFiveOrders] = {
      .id = "arith-isometry-five-orders",
      .source = "§4.1 (isometry gap, n = 50k)",
      .statement =
          "\"A2 ends at ||W_Q^T W_Q - I||_max = 0.64 [...] the constrained arms never exceed 1.7 x 10^-5, so the "
          "separation is five orders of magnitude\": log10 of A2's final error over the constrained arms' "
          "largest, to the nearest order.",
      .analysis =
          "log10(0.64 / 1.7e-5) = 4.58 (4.56-4.59 over the inputs' rounding): five orders to the nearest, "
          "just above the 4.5 at which it would round to four. "
          "A2's smallest error over the run is not printed, so 'at every epoch' is not recomputed here; the "
          "ledger's isometry rows read it from our runs.",
      .near_miss = "log10 of the squared ratio (a power ratio): 9.2 orders",
      .inputs = {{0.64, 0.005}, {1.7e-5, 0.05e-5}},
      .printed = {5, 0.5}};
  return n;
}

template <std::size_t I>
rc::Gen<Case> number_case() {
  Case k;
  k.x = double(I);
  return rc::gen::just(k);
}

template <std::size_t... I>
constexpr std::array<rc::Gen<Case> (*)(), sizeof...(I)> number_cases(std::index_sequence<I...>) {
  return {&number_case<I>...};
}

}  // namespace

const std::vector<DerivedNumber>& derived_numbers() {
  static const std::vector<DerivedNumber> numbers = build();
  return numbers;
}

template <class S>
S pi_of() {
  if constexpr (std::is_same_v<S, Interval>) {
    return pi_interval();
  } else if constexpr (std::is_same_v<S, RationalInterval>) {
    throw std::domain_error("pi has no exact rational enclosure");
  } else {
    return boost::math::constants::pi<S>();
  }
}

template <class S>
S derived_formula(std::size_t index, bool near_miss, const std::vector<S>& x) {
  using std::asin;
  using std::atan;
  using std::log10;
  switch (index) {
    case kCapRadius:
      return near_miss ? x[0] * x[1] : x[0] * sqrt(x[1]);
    case kAngleBound: {
      const S t = x[0] * sqrt(x[1]);
      return (near_miss ? asin(t) : atan(t)) * S(180) / pi_of<S>();
    }
    case kB2SgdT: {
      const S mean = (x[0] + x[1] + x[2]) / S(3);
      S ss = S(0);
      for (int i = 0; i < 3; ++i) ss += (x[i] - mean) * (x[i] - mean);
      const S sd = sqrt(ss / S(near_miss ? 3 : 2));
      return mean / (sd / sqrt(S(3)));
    }
    case kAmplification:
      return x[0] / (near_miss ? x[2] : x[1]);
    case kDecibels:
      return S(near_miss ? 10 : 20) * log10(x[0] / x[1]);
    case kSoftGain:
      return near_miss ? x[1] - x[0] : x[0] - x[1];
    case kEpsOrders:
      return near_miss ? log10(x[1] / x[0]) : log10(x[0] / x[1]);
    case kDisplacement:
      return x[0] * x[1] / (near_miss ? sqrt(x[3]) : sqrt(x[2] * x[3]));
    case kRandomFraction: {
      const S so = x[1] * (x[1] - S(1)) / S(2), tangent = x[0] * x[1] - x[1] * (x[1] + S(1)) / S(2);
      return S(100) * (near_miss ? so / tangent : sqrt(so / tangent));
    }
    case kProjectorCost:
      return S(100) * (near_miss ? x[0] * x[0] : S(1) - sqrt(S(1) - x[0] * x[0]));
    case kGrokDefaultP:
    case kGrokPowerP: {  // x = (t, degrees of freedom = 4)
      const S s = x[0] * x[0] / (x[0] * x[0] + x[1]), root = sqrt(s);
      const S two_sided = S(1) - S(3) / S(2) * root + s * root / S(2);
      return near_miss ? two_sided / S(2) : two_sided;
    }
    case kTable2B2Gap: {  // the mean of three differences, or their median
      if (!near_miss) return (x[0] + x[1] + x[2]) / S(3);
      const S lo = x[0] < x[1] ? x[0] : x[1], hi = x[0] < x[1] ? x[1] : x[0];
      return x[2] < lo ? lo : (x[2] > hi ? hi : x[2]);
    }
    case kEpsDrop:
      return near_miss ? x[0] - (x[1] + x[2] + x[3] + x[4]) / S(4) : x[0] - x[1];
    case kSixOrders:
    case kFiveOrders:
      return S(near_miss ? 2 : 1) * log10(x[0] / x[1]);
    default:
      throw std::out_of_range("derived_formula: no derived number " + std::to_string(index));
  }
}

// The formula on a grid over the box of admissible inputs: five points across each rounded input
// (its two ends, its centre and the midpoints between), one for an exact one. The grid holds the
// box's corners, so for a formula monotone in each input its least and greatest values are the
// formula's range over the box; for any formula, a grid value within the printed value's rounding
// is a witness that the printed value is consistent (the box is connected).
template <class S>
CheckResult check_paper_arithmetic(const Case& c, ArithmeticMutant mutant) {
  const auto index = std::size_t(c.x);
  const DerivedNumber& n = derived_numbers().at(index);
  const bool near_miss = mutant == ArithmeticMutant::kNearMiss;
  std::vector<std::vector<S>> axes;
  for (const Printed& p : n.inputs) {
    std::vector<S> axis;
    if (p.half_unit == 0) {
      axis.push_back(S(p.value));
    } else {
      for (int k = -2; k <= 2; ++k) axis.push_back(S(p.value) + S(k) * S(p.half_unit) / S(2));
    }
    axes.push_back(std::move(axis));
  }
  std::vector<std::size_t> at(axes.size(), 0);
  std::vector<S> x(axes.size());
  S lo = std::numeric_limits<S>::infinity(), hi = -std::numeric_limits<S>::infinity();
  bool nan = false;
  for (bool more = true; more;) {
    for (std::size_t i = 0; i < axes.size(); ++i) x[i] = axes[i][at[i]];
    const S v = derived_formula<S>(index, near_miss, x);
    if (!(v == v)) nan = true;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
    more = false;
    for (std::size_t i = 0; i < axes.size() && !more; ++i) {
      if (++at[i] < axes[i].size()) {
        more = true;
      } else {
        at[i] = 0;
      }
    }
  }
  std::vector<S> centre;
  for (const Printed& p : n.inputs) centre.push_back(S(p.value));
  const S printed(n.printed.value), half(n.printed.half_unit);
  S gap = S(0);
  if (lo > printed) gap = lo - printed;
  if (printed > hi) gap = printed - hi;
  CheckResult r;
  r.residual = to_double(gap);
  r.normaliser = to_double(half);
  r.ratio = nan ? std::numeric_limits<double>::quiet_NaN() : to_double(S(gap / half));
  r.detail = {{"printed", n.printed.value},
              {"printed_half_unit", n.printed.half_unit},
              {"at_printed_inputs", to_double(derived_formula<S>(index, near_miss, centre))},
              {"range_low", to_double(lo)},
              {"range_high", to_double(hi)},
              {"established", n.monotone ? "range: the formula is monotone in each input, so the corners of the "
                                           "inputs' rounding box bound it"
                                         : "witness: a grid point of the inputs' rounding box"}};
  return r;
}

namespace {

// The shortest decimal that reads back as x: the number as the paper prints it.
std::string shortest_decimal(double x) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, res.ptr);
}

// Every value that rounds to the printed number, [value - half, value + half], as an exact rational
// interval (I = RationalInterval) or an MPFR enclosure (I = Interval).
template <class I>
I rounding_box(const Printed& p) {
  if constexpr (std::is_same_v<I, RationalInterval>) {
    const I v = decimal_rational(shortest_decimal(p.value)), h = decimal_rational(shortest_decimal(p.half_unit));
    return I(v.lower() - h.lower(), v.upper() + h.upper());
  } else {
    const I v = decimal_interval(shortest_decimal(p.value)), h = decimal_interval(shortest_decimal(p.half_unit));
    return hull_of(v - h, v + h);
  }
}

// The formula over the whole box of admissible inputs: an enclosure of its range with no
// monotonicity assumed, against the printed value's rounding interval. Established when the two are
// disjoint, by the gap between them: exactly when the formula is rational (the box's rational
// interval arithmetic rounds nothing), in MPFR intervals when it needs a root, logarithm or angle.
template <class I>
Proof arithmetic_proof_in(const DerivedNumber& n, std::size_t index, const Printed& printed, const char* established) {
  std::vector<I> box;
  for (const Printed& p : n.inputs) box.push_back(rounding_box<I>(p));
  const I range = derived_formula<I>(index, false, box), target = rounding_box<I>(printed);
  const I gap = boost::numeric::max(I(range - target.upper()), I(I(target.lower()) - range));
  Proof out;
  out.quantity = "the gap between the formula's range " + to_string(range) +
                 " over the inputs' rounding box and the printed value's rounding interval " + to_string(target) +
                 " (the claim allows <= 0: they meet)";
  out.inputs = "each printed input anywhere in its rounding interval, read as an exact decimal";
  out.lower = lower_double(gap);
  out.upper = upper_double(gap);
  out.established = gap.lower() > 0 ? established : "numeric";
  return out;
}

Proof arithmetic_proof(const DerivedNumber& n, std::size_t index, const Printed& printed) {
  try {
    try {
      return arithmetic_proof_in<RationalInterval>(n, index, printed, "exact");
    } catch (const std::domain_error&) {  // a root, a logarithm, an angle, or an unbounded quotient
      return arithmetic_proof_in<Interval>(n, index, printed, "interval");
    }
  } catch (const std::exception& e) {
    Proof p;
    p.quantity = std::string("the formula's range against the printed value (not decided: ") + e.what() + ")";
    p.decided = false;
    return p;
  }
}

}  // namespace

Proof prove_paper_arithmetic(const Case& c) {
  const auto index = std::size_t(c.x);
  const DerivedNumber& n = derived_numbers().at(index);
  return arithmetic_proof(n, index, n.printed);
}

// Control: the printed value replaced by the formula at the printed inputs, to the same last digit:
// a value the inputs reach, so no gap may be established.
Proof prove_paper_arithmetic_reached(const Case& c) {
  const auto index = std::size_t(c.x);
  const DerivedNumber& n = derived_numbers().at(index);
  std::vector<double> centre;
  for (const Printed& p : n.inputs) centre.push_back(p.value);
  Printed reached = n.printed;
  const double unit = 2 * n.printed.half_unit;
  const double value = derived_formula<double>(index, false, centre);
  if (unit > 0) {  // rounded to the printed digit in decimal, as the paper would print it
    const int decimals = std::max(0, int(std::ceil(-std::log10(unit) - 1e-9)));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, std::round(value / unit) * unit);
    reached.value = std::strtod(buf, nullptr);
  } else {
    reached.value = value;
  }
  return arithmetic_proof(n, index, reached);
}

template double derived_formula<double>(std::size_t, bool, const std::vector<double>&);
template mp50 derived_formula<mp50>(std::size_t, bool, const std::vector<mp50>&);
template Interval derived_formula<Interval>(std::size_t, bool, const std::vector<Interval>&);
template RationalInterval derived_formula<RationalInterval>(std::size_t, bool, const std::vector<RationalInterval>&);
template CheckResult check_paper_arithmetic<double>(const Case&, ArithmeticMutant);
template CheckResult check_paper_arithmetic<mp50>(const Case&, ArithmeticMutant);

std::vector<Claim> paper_arithmetic_claims() {
  static constexpr auto cases = number_cases(std::make_index_sequence<kCount>());
  std::vector<Claim> out;
  const auto& numbers = derived_numbers();
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    const DerivedNumber& n = numbers[i];
    Claim c = make_claim(n.id, n.source, "arithmetic", n.statement);
    c.generator =
        "the printed inputs, each anywhere in its rounding interval (half a unit of its last printed digit "
        "either side): five points across each rounded input, corners included";
    c.residual =
        "the distance of the printed value from the least-to-greatest range of the formula over those "
        "inputs, normalised by half a unit of the printed value's last digit";
    c.factor =
        "pass at ratio <= 1: some admissible inputs give a value that rounds to the printed one (the "
        "printed value and the range's interval meet)";
    c.tolerance = 1;
    c.control_margin = 2;  // the near miss misses the printed value by at least two of its half units
    c.expected = n.expected;
    c.analysis = n.analysis;
    c.randomised = false;
    c.generator_fn = cases.at(i);
    set_check(c, &check_paper_arithmetic<double>, &check_paper_arithmetic<mp50>,
              {{ArithmeticMutant::kNearMiss, "near-miss", n.near_miss.c_str()}});
    if (n.expected == Expected::kRefuted)
      c.proof = {&prove_paper_arithmetic, &prove_paper_arithmetic_reached,
                 "the printed value replaced by the formula at the printed inputs, to the same last digit"};
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace stiefel::certificates
