// The registry: every claim of the paper that the suite checks, group by group (claims/), in the
// order of the paper.
#include <stiefel/certificates/claim.h>

#include "claims/claim_groups.h"

namespace stiefel::certificates {

const std::vector<Claim>& registry() {
  static const std::vector<Claim> claims = [] {
    std::vector<Claim> all;
    for (const auto group :
         {&prop1_attention_gauge_claims, &prop2_projector_claims, &prop3_scale_invariance_claims,
          &s53_displacement_claims, &prop6_rotation_claims, &prop7_equivariance_claims, &prop8_decay_claims,
          &s2_polar_claims, &orders_claims, &s53_canonical_metric_claims, &implemented_update_claims,
          &s33_codebook_claims, &s6_normal_directions_claims, &paper_arithmetic_claims})
      for (Claim& c : group()) all.push_back(std::move(c));
    for (Claim& c : paper_size_claims(all)) all.push_back(std::move(c));
    for (Claim& c : added_rule_claims()) all.push_back(std::move(c));
    return all;
  }();
  return claims;
}

}  // namespace stiefel::certificates
