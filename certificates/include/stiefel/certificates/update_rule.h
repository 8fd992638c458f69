// The update claims that need nothing but a rule's steps (isometry over long runs, scale-freeness,
// O(d)-equivariance, weight-decay annihilation, the frozen arm, agreement with core/'s reference)
// and its exposed components, run against every registered implementation of the update-rule
// interface (stiefel/rules/update_rule.h; claims/rule_claims.cpp).
#pragma once

#include <stiefel/certificates/claim.h>
#include <stiefel/rules/update_rule.h>
#include <string>
#include <vector>

namespace stiefel::certificates {

// The interface's names, as the claims use them.
using rules::FramesMap;
using rules::MetricMap;
using rules::rule_names;
using rules::rule_property_names;
using rules::rule_settings;
using rules::RuleDeclaration;
using rules::RuleError;
using rules::RuleImplementation;
using rules::RuleSettings;
using rules::SkippedImplementation;
using rules::TransportMap;
using rules::UpdateRule;

// The update claims' ids are STEM-IMPLEMENTATION. The stems, each with the property it certifies
// (empty for a claim no rule declares: the paper's sizes over whole runs): the one list the
// selection of an implementation's claims, the certificate's note of a skipped implementation and
// the conformance report (`stiefel certify --list-rule-properties`) read.
struct RuleClaimStem {
  std::string property, stem;
};
const std::vector<RuleClaimStem>& rule_claim_stems();
// The --claims pattern that selects exactly the update claims of the implementation `name`.
std::string rule_claims_pattern(const std::string& name);

// core/'s rule through the interface, float64.
RuleImplementation core_rule_implementation();

// The update claims run through `impl`.
std::vector<Claim> rule_claims(const RuleImplementation& impl);

// Implementations outside this library (the training core's frame_step, a user's rule) are added by
// the program that links them, before registry() is first read; their claims follow the paper's. A
// name that is "core" or already added is refused (std::invalid_argument).
void add_rule_implementation(RuleImplementation impl);

// An implementation this program knows of but does not run: the certificate states it
// (run.implementations_not_run).
void add_skipped_implementation(SkippedImplementation skipped);
const std::vector<SkippedImplementation>& skipped_implementations();

}  // namespace stiefel::certificates
