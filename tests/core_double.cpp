#include "core_properties.h"

STIEFEL_CORE_TESTS(CoreDouble, double, 24)
