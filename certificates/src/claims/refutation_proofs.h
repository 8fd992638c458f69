// Refutations as proofs: each refuted claim's violated quantity re-computed on its shrunk
// counterexample in interval arithmetic over MPFR (interval.h), so that its sign needs no rounding
// argument. The inputs are made exact first: a frame is replaced by the exact orthonormal factor
// of its float64 value (Gram–Schmidt with a positive diagonal, in intervals), a tangent vector by
// its exact projection onto that frame's tangent space; gradients, tokens and rates are the
// float64 values the checks draw, which are exact rationals.
#pragma once

#include <stiefel/certificates/claim.h>

namespace stiefel::certificates {

// (‖m̂_t‖² − v̂_t)/v̂_t at the step where it is greatest (s53-jensen-moment-bound allows ≤ 0).
// Control: the corrected bound ‖m̂_t‖² ≤ C_t² v̂_t over the same whole trajectory (certified by
// s53-displacement-bound-corrected, attained by s53-corrected-bound-tight), which every stage of
// the run (re-projection, retraction, bias corrections, cap) enters.
Proof prove_jensen_moment_bound(const Case& c);
Proof prove_jensen_moment_bound_corrected(const Case& c);

// (‖η_t‖² − min(η, τ√r)²)/min(η, τ√r)² at the step where it is greatest (s53-displacement-bound
// allows ≤ 0). Control: the corrected bound min(η C_t, τ√r) over the same trajectory.
Proof prove_displacement_bound(const Case& c);
Proof prove_displacement_bound_corrected(const Case& c);

// ‖polar((1 − ηλ) W + ξ) − polar(W + ξ/(1 − ηλ))‖_F (s53-decay-absorbed-large-step allows 0).
// Control: ηλ = 10^−|x| < 1, where the two are one polar factor.
Proof prove_decay_absorbed_large_step(const Case& c);
Proof prove_decay_absorbed_below_one(const Case& c);

// ‖ΔL − α* L‖_F with α* the least-squares factor (s6-normal-directions-rescale-logits allows 0:
// ΔL a multiple of L). Control: the same case with S = c I (check_normal_rescale_scalar's draw),
// the direction that does rescale the logits.
Proof prove_normal_directions_rescale(const Case& c);
Proof prove_normal_directions_rescale_scalar(const Case& c);

}  // namespace stiefel::certificates
