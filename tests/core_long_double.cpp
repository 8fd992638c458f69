#include "core_properties.h"

using LongDouble = long double;
STIEFEL_CORE_TESTS(CoreLongDouble, LongDouble, 16)
