// The claims of each group (claims/<group>.cpp), which registry() concatenates in the paper's order.
#pragma once

#include <vector>
#include <stiefel/certificates/claim.h>

namespace stiefel::certificates {

std::vector<Claim> prop1_attention_gauge_claims();   // Prop. 1, §5.1, Table 8
std::vector<Claim> prop2_projector_claims();         // Prop. 2, eq. (12)
std::vector<Claim> prop3_scale_invariance_claims();  // Prop. 3
std::vector<Claim> s53_displacement_claims();        // §5.3 after Prop. 3, Remark 5
std::vector<Claim> prop6_rotation_claims();          // Prop. 6, §7
std::vector<Claim> prop7_equivariance_claims();      // Prop. 7, Table 9
std::vector<Claim> prop8_decay_claims();             // Prop. 8, §5.3, §5.4
std::vector<Claim> s2_polar_claims();                // §2
std::vector<Claim> orders_claims();                  // §2, §3.2, §5.1: orders of agreement
std::vector<Claim> s53_canonical_metric_claims();    // eq. (4), §5.3
std::vector<Claim> implemented_update_claims();      // Table 6, §3.2, §4.1
std::vector<Claim> s33_codebook_claims();            // §3.3, Table 2: the C2 codebook
std::vector<Claim> s6_normal_directions_claims();    // §6: the normal directions and the logits
std::vector<Claim> paper_arithmetic_claims();        // the numbers the paper derives from its figures
// The sequence claims of `built` again at d = 128, r = 16 and r = 32 (§4, Table 6).
std::vector<Claim> paper_size_claims(const std::vector<Claim>& built);
// The update claims through core/'s rule and every implementation added with add_rule_implementation
// (rule_claims.cpp).
std::vector<Claim> added_rule_claims();

}  // namespace stiefel::certificates
