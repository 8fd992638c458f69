#include <stiefel/multiprecision.h>

#include "core_properties.h"

STIEFEL_CORE_TESTS(CoreMp50, stiefel::mp50, 8)
