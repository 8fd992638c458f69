// The checks and figures of every group, instantiated for the 50-digit reference type (the slow
// translation unit).
#include "claims/all_checks.h"

#define STIEFEL_INSTANTIATE_CHECK(name, Mutant) template CheckResult check_##name<mp50>(const Case&, Mutant);
#define STIEFEL_INSTANTIATE_FIGURES(name) template nlohmann::json figures_##name<mp50>();

namespace stiefel::certificates {
using mp50 = stiefel::mp50;
STIEFEL_ALL_CHECKS(STIEFEL_INSTANTIATE_CHECK)
STIEFEL_ALL_FIGURES(STIEFEL_INSTANTIATE_FIGURES)
}  // namespace stiefel::certificates
