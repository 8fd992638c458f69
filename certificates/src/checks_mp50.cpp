// The checks and figures of every group, instantiated for the 50-digit reference type (the slow
// translation unit), and the 50-digit reference of check_gradient_exact.
#include "claims/all_checks.h"

#define STIEFEL_INSTANTIATE_CHECK(name, Mutant) template CheckResult check_##name<mp50>(const Case&, Mutant);
#define STIEFEL_INSTANTIATE_FIGURES(name) template nlohmann::json figures_##name<mp50>();

namespace stiefel::certificates {

using mp50 = stiefel::mp50;
STIEFEL_ALL_CHECKS(STIEFEL_INSTANTIATE_CHECK)
STIEFEL_ALL_FIGURES(STIEFEL_INSTANTIATE_FIGURES)

mp50 loss_derivative_mp50(const Case& c, const Frames<mp50>& dq, const Frames<mp50>& dk) {
  const auto a = make_attention_case<mp50>(c);
  const auto loss_at = [&](const mp50& t) {
    Frames<mp50> q = a.wq, kk = a.wk;
    for (std::size_t h = 0; h < q.size(); ++h) {
      q[h] += t * dq[h];
      kk[h] += t * dk[h];
    }
    return attention_loss_and_gradient(a.problem, q, kk).loss;
  };
  const mp50 step("1e-8");
  const mp50 d1 = (loss_at(step) - loss_at(-step)) / (2 * step);
  const mp50 d2 = (loss_at(step / 2) - loss_at(-step / 2)) / step;
  return (4 * d2 - d1) / 3;
}

DirectionalReference directional_reference(const Case& c, int k) {
  Rng rng(c.seed ^ (0x510e527fade682d1ULL + std::uint64_t(k)));
  DirectionalReference ref;
  Frames<mp50> dq, dk;
  for (int h = 0; h < c.heads; ++h) {
    ref.dq.push_back(gaussian_matrix<double>(rng, c.d, c.r));
    ref.dk.push_back(gaussian_matrix<double>(rng, c.d, c.r));
    dq.push_back(ref.dq.back().cast<mp50>());
    dk.push_back(ref.dk.back().cast<mp50>());
  }
  ref.value = loss_derivative_mp50(c, dq, dk).str(40, std::ios_base::scientific);
  return ref;
}

}  // namespace stiefel::certificates
