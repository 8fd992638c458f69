// RapidCheck generators for frame shapes; they shrink towards the smallest d and r.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <stiefel/frames.h>

namespace stiefel::properties {

struct ShapeCase {
  Index d = 1, r = 1;
  std::uint64_t seed = 0;
};

inline std::ostream& operator<<(std::ostream& os, const ShapeCase& c) {
  return os << "{d=" << c.d << ", r=" << c.r << ", seed=" << c.seed << "}";
}

// 1 ≤ r ≤ d ≤ max_d, r = d included; the seed drives the matrices drawn from it.
inline rc::Gen<ShapeCase> gen_shape(Index max_d) {
  return rc::gen::exec([max_d] {
    ShapeCase c;
    c.d = *rc::gen::inRange<Index>(1, max_d + 1);
    c.r = *rc::gen::inRange<Index>(1, c.d + 1);
    c.seed = *rc::gen::arbitrary<std::uint64_t>();
    return c;
  });
}

}  // namespace stiefel::properties
