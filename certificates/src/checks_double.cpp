// The checks and figures of every group, instantiated for double.
#include "claims/all_checks.h"

#define STIEFEL_INSTANTIATE_CHECK(name, Mutant) template CheckResult check_##name<double>(const Case&, Mutant);
#define STIEFEL_INSTANTIATE_FIGURES(name) template nlohmann::json figures_##name<double>();

namespace stiefel::certificates {
STIEFEL_ALL_CHECKS(STIEFEL_INSTANTIATE_CHECK)
STIEFEL_ALL_FIGURES(STIEFEL_INSTANTIATE_FIGURES)
}  // namespace stiefel::certificates
