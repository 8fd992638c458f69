// Eigen's matrix products in an order that is the same on every machine.
#pragma once

#include <Eigen/Core>

namespace stiefel {

// Eigen sizes the blocks of a large matrix product from the CPU's cache sizes (read with CPUID), and
// the block along the inner dimension fixes the order in which each entry is summed: the same
// program gives other last bits for a d = 128 product on a machine with other caches (measured: a
// 128 x 600 by 600 x 32 product differs by 4e-14 between two cache configurations), in float64 and
// in 50 digits alike. Fixed sizes make a product's rounding a function of its operands alone, so that
// a certificate made on one machine is the one any machine makes. Called once, before any product
// and before any thread starts (Eigen keeps the sizes in unsynchronised statics).
inline void pin_eigen_blocking() {
  Eigen::setCpuCacheSizes(std::ptrdiff_t(32) << 10, std::ptrdiff_t(1) << 20, std::ptrdiff_t(32) << 20);
}

}  // namespace stiefel
