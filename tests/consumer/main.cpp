// Retracts a tangent step with the installed core and checks that the result is on St(5,2).
#include <stiefel/stiefel.h>

#include <iostream>

int main() {
  stiefel::Rng rng(3);
  const auto w = stiefel::random_stiefel<double>(rng, 5, 2);
  const auto xi = stiefel::project_tangent<double>(w, stiefel::gaussian_matrix<double>(rng, 5, 2));
  const auto w1 = stiefel::polar_svd<double>(w + 0.1 * xi);
  const double err = stiefel::isometry_error(w1);
  std::cout << "isometry error after one retraction: " << err << "\n";
  return err < 1e-13 ? 0 : 1;
}
