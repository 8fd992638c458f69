// LAPACK-style residual ratios: residual / (normaliser · u · factor), where u is the unit roundoff
// of the working type and `factor` a stated dimension factor. An exact identity computed in
// floating point passes at ratio ≤ 30 (the LAPACK test threshold).
#pragma once

#include <stiefel/scalar.h>

namespace stiefel::properties {

inline constexpr double kRatioThreshold = 30.0;

template <class Scalar>
double residual_ratio(const Scalar& residual, const Scalar& normaliser, double factor) {
  const Scalar floor = unit_roundoff<Scalar>() * Scalar(factor) * (normaliser > Scalar(0) ? normaliser : Scalar(1));
  return to_double(Scalar(residual / floor));
}

// Least-squares slope of log(e) against log(h): the order of a remainder e(h) = O(h^p).
inline double log_log_slope(const std::vector<double>& h, const std::vector<double>& e) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = static_cast<double>(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) {
    const double x = std::log(h[i]), y = std::log(e[i]);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

}  // namespace stiefel::properties
