// The rule claims' builders, one per property (rule_claims_*.cpp), for the registry in
// rule_claims.cpp.
#pragma once

#include <memory>
#include <vector>

#include "rule_claims_support.h"

namespace stiefel::certificates::rule_detail {

// Agreement with core/'s rule, and at the paper's sizes over whole runs (rule_claims_agreement.cpp).
Claim agrees_with_core(const RuleImplementation& impl);
Claim paper_size_claim(const RuleImplementation& impl);
// The first stage of one step (direction, retraction, cap, moments) in which a rule differs from its
// reference, from probes run beside core/.
nlohmann::json diagnose_stages(const RuleImplementation& impl, FrameRule reference, const Case& c);
// core/'s rule through the UpdateRule interface (float64).
std::unique_ptr<UpdateRule> make_core_rule();

// The paper's invariances (rule_claims_invariance.cpp).
Claim scale_free_claim(const RuleImplementation& impl);
Claim equivariance_claim(const RuleImplementation& impl);
Claim decay_claim(const RuleImplementation& impl);
Claim frozen_claim(const RuleImplementation& impl);
// The rules rule-decay-annihilated runs: every rule that moves.
extern const std::vector<FrameRule> kDecayRules;

// A declared rule's iterates and exposed components (rule_claims_components.cpp).
Claim on_manifold_claim(const RuleImplementation& impl);
Claim projection_claim(const RuleImplementation& impl);
Claim retraction_claim(const RuleImplementation& impl);
Claim tangent_step_claim(const RuleImplementation& impl);

// A declared rule's exposed geometry (rule_claims_geometry.cpp).
Claim riemannian_gradient_claim(const RuleImplementation& impl);
Claim metric_claim(const RuleImplementation& impl);
Claim transport_claim(const RuleImplementation& impl);
Claim second_order_claim(const RuleImplementation& impl);

}  // namespace stiefel::certificates::rule_detail
