// The checks instantiated for the 50-digit reference type (the slow translation unit).
#include <stiefel/multiprecision.h>

#include "checks_impl.h"

using mp50 = stiefel::mp50;
#define STIEFEL_INSTANTIATE_ONE_mp50(name) template CheckResult check_##name<mp50>(const Case&, int);
STIEFEL_INSTANTIATE_CHECKS(mp50)
