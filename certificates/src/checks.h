// Declarations of the check functions, one template per claim, instantiated for double
// (checks_double.cpp) and mp50 (checks_mp50.cpp) so the slow 50-digit build stays in one unit.
#pragma once

#include <Eigen/Core>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include <stiefel/certificates/claim.h>

#define STIEFEL_CHECK_LIST(X)                                                                     \
  X(joint_gauge) X(gl_gauge) X(loss_invariance) X(gradient_exact) X(per_frame_gauge_nonzero) X(random_tangent_gauge_fraction)          \
  X(orthogonal_projector) X(steepest_ascent) X(gauge_split) X(sgd_degree_one) X(adam_scale_free)  \
  X(adam_mean_scale_free)                                                                         \
  X(jensen_moment_bound) X(displacement_bound) X(first_step_equality) X(displacement_corrected)   \
  X(corrected_bound_tight) X(gradient_proportional) X(sigma_min) X(angle_bound)                   \
  X(equivariance_scalar) X(equivariance_per_column) X(equivariance_mean) X(equivariance_converse) \
  X(decay_annihilated) X(decay_drifted)                                                                            \
  X(decay_absorbed) X(decay_absorbed_corrected) X(decay_fixed_point) X(polar_nearest)             \
  X(polar_routes) X(query_norm) X(retraction_order) X(attention_taylor) X(canonical_riesz)        \
  X(canonical_norm_split) X(frozen_fixes_frame) X(update_invariants) X(update_long_run) \
  X(eps_scale_defect) X(uncapped_angle) X(horizontal_cost) X(equivariance_family)

namespace stiefel::certificates {

// The reference of check_gradient_exact, computed in the 50-digit unit: direction k (two Gaussian
// tensors per head, in double, exactly representable in every precision) and the loss's derivative
// along it, Richardson-extrapolated central differences in 50 digits (decimal, 40 digits).
struct DirectionalReference {
  std::vector<Eigen::MatrixXd> dq, dk;
  std::string value;
};
DirectionalReference directional_reference(const Case& c, int k);

#define STIEFEL_DECLARE_CHECK(name) \
  template <class S>                \
  CheckResult check_##name(const Case& c, int variant);
STIEFEL_CHECK_LIST(STIEFEL_DECLARE_CHECK)
#undef STIEFEL_DECLARE_CHECK

// Table 9: the equivariance violation after T = 15 steps for each rule (H = 3, d = 24, r = 6).
template <class S>
nlohmann::json figures_table9();
// Table 8: the per-frame gauge fraction of random tangent vectors at d = 128, r = 16.
template <class S>
nlohmann::json figures_table8();
// §5.3: the constant C_t of the corrected displacement bound, and its limit.
template <class S>
nlohmann::json figures_moment_constant();
// The isometry error's growth over 10^4 steps of every frame rule, float64 and float32.
template <class S>
nlohmann::json figures_long_run();
// 1 − √(1 − ρ²), the cost of the horizontal projection, at the gauge shares the paper and we measure.
template <class S>
nlohmann::json figures_horizontal_cost();
// The largest rotation of an uncapped horizontal step against its norm (§7's "approaching 90°").
template <class S>
nlohmann::json figures_uncapped_rotation();

}  // namespace stiefel::certificates
