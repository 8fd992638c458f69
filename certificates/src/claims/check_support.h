// What every check shares. A check is `template <class S> CheckResult check_<name>(const Case&,
// <Name>Mutant)`: it draws its matrices from the case's seed (in double, then converted, so both
// precisions see the same inputs), evaluates the claim (Mutant::kNone) or one of its named
// controls, and returns a ratio against the claim's tolerance. Expected values are never built
// with the code under test. Each group header lists its checks and figures; they are
// instantiated for double in checks_double.cpp and for 50 digits in checks_mp50.cpp only.
#pragma once

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <numbers>
#include <stiefel/certificates/claim.h>
#include <stiefel/multiprecision.h>
#include <stiefel/properties/identity.h>
#include <stiefel/properties/residual.h>
#include <stiefel/properties/stiefel_identities.h>
#include <stiefel/stiefel.h>

namespace stiefel::certificates {

using properties::frobenius_inner;
using properties::Identity;
using properties::matrix_identity;
using properties::residual_ratio;
using properties::scalar_identity;
using std::abs;
using std::pow;
using std::sqrt;

inline double pow10(double e) { return std::pow(10.0, e); }

template <class S>
CheckResult roundoff_result(const S& residual, const S& normaliser, double factor) {
  CheckResult r;
  r.ratio = residual_ratio<S>(residual, normaliser, factor);
  r.residual = to_double(residual);
  r.normaliser = to_double(normaliser);
  return r;
}

// The result of an identity: its ratio, residual and normaliser.
template <class S>
CheckResult identity_result(const Identity<S>& id) {
  return roundoff_result<S>(id.residual, id.normaliser, id.factor);
}

// max(x, 0) that keeps a NaN (a NaN residual must fail its check, not read as 0).
template <class S>
S positive_part(const S& x) {
  return x <= S(0) ? S(0) : x;
}

// Keeps the worse of two results; a NaN ratio, once there, stays.
inline void keep_worst(CheckResult& acc, const CheckResult& r) {
  if (std::isnan(acc.ratio)) return;
  if (!(acc.ratio >= r.ratio)) {
    nlohmann::json detail = acc.detail;
    acc = r;
    for (auto& [k, v] : detail.items())
      if (!acc.detail.contains(k)) acc.detail[k] = v;
  }
}

// Adam's ε of a case: 0 or 10^log10_eps.
template <class S>
S eps_of(const Case& c) {
  return c.eps_zero ? S(0) : S(pow10(c.log10_eps));
}

}  // namespace stiefel::certificates

// A group header lists its checks as X(name, Mutant) and its figures as F(name); these declare
// the instantiations of both precisions extern, so that only the two instantiation units compile them.
#define STIEFEL_EXTERN_CHECK(name, Mutant)                                                                        \
  extern template ::stiefel::certificates::CheckResult check_##name<double>(const ::stiefel::certificates::Case&, \
                                                                            Mutant);                              \
  extern template ::stiefel::certificates::CheckResult check_##name<::stiefel::mp50>(                             \
      const ::stiefel::certificates::Case&, Mutant);
#define STIEFEL_EXTERN_FIGURES(name)                       \
  extern template nlohmann::json figures_##name<double>(); \
  extern template nlohmann::json figures_##name<::stiefel::mp50>();
