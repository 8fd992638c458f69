// The checks instantiated for double.
#include "checks_impl.h"

#define STIEFEL_INSTANTIATE_ONE_double(name) template CheckResult check_##name<double>(const Case&, int);
STIEFEL_INSTANTIATE_CHECKS(double)
