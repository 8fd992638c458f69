// Refutations as proofs: each refuted claim's violated quantity re-computed on its shrunk
// counterexample in interval arithmetic over MPFR (interval.h), so that its sign needs no rounding
// argument. The inputs are made exact first: a frame is replaced by the exact orthonormal factor
// of its float64 value (Gram–Schmidt with a positive diagonal, in intervals), a tangent vector by
// its exact projection onto that frame's tangent space; gradients, tokens and rates are the
// float64 values the checks draw, which are exact rationals.
#pragma once

#include <stiefel/certificates/claim.h>

namespace stiefel::certificates {

// ‖m̂_t‖² − v̂_t at the step where it is greatest (s53-jensen-moment-bound allows ≤ 0). Control: the
// same case stopped after its first step, where ‖m̂_1‖² = v̂_1 exactly.
Proof prove_jensen_moment_bound(const Case& c);
Proof prove_jensen_moment_bound_first_step(const Case& c);

// ‖η_t‖² − min(η, τ√r)² at the step where it is greatest (s53-displacement-bound allows ≤ 0).
// Control: the first step only, where ‖η_1‖ = min(η, τ√r) when ε = 0 and less when ε > 0.
Proof prove_displacement_bound(const Case& c);
Proof prove_displacement_bound_first_step(const Case& c);

// ‖polar((1 − ηλ) W + ξ) − polar(W + ξ/(1 − ηλ))‖_F (s53-decay-absorbed-large-step allows 0).
// Control: ηλ = 10^−|x| < 1, where the two are one polar factor.
Proof prove_decay_absorbed_large_step(const Case& c);
Proof prove_decay_absorbed_below_one(const Case& c);

// ‖ΔL − α* L‖_F with α* the least-squares factor (s6-normal-directions-rescale-logits allows 0:
// ΔL a multiple of L). Control: the same case at r = 1, where every symmetric S is a scalar.
Proof prove_normal_directions_rescale(const Case& c);
Proof prove_normal_directions_rescale_rank_one(const Case& c);

}  // namespace stiefel::certificates
