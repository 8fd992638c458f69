// The update claims against an implementation seen only through UpdateRule (stiefel/rules/update_rule.h): the
// training core's batched frame_step, or any rule a user registers. Each claim runs the rule on
// generated gradient sequences and reads nothing but its frames; its controls are near misses fed
// through the same implementation (another second moment, an eps at the gradients' scale, a
// tangent direction in place of the decay) or, for the agreement with core/, a mutant of the
// reference. The implementation runs in its own dtype: its 50-digit slot reports the same run,
// except for the agreement claim, whose 50-digit slot compares with core/'s rule in 50 digits.
// This file: the registry of implementations and the claims each gets; the claims themselves are in
// rule_claims_agreement.cpp, rule_claims_invariance.cpp, rule_claims_components.cpp and
// rule_claims_geometry.cpp, their shared support in rule_claims_support.h.
#include "rule_claim_builders.h"

namespace stiefel::certificates {
namespace {

using namespace rule_detail;

std::vector<RuleImplementation>& added_implementations() {
  static std::vector<RuleImplementation> impls;
  return impls;
}

// A declared rule's claims: one per property that applies to it, certified where declared and
// observed where not.
std::vector<Claim> declared_rule_claims(const RuleImplementation& impl) {
  const RuleDeclaration& decl = *impl.declaration;
  std::vector<std::pair<std::string, Claim>> built;
  if (!decl.reference.empty()) built.emplace_back("agrees-with-reference", agrees_with_core(impl));
  built.emplace_back("on-manifold", on_manifold_claim(impl));
  if (decl.reports_step) built.emplace_back("tangent-step", tangent_step_claim(impl));
  built.emplace_back("frozen", frozen_claim(impl));
  built.emplace_back("decay-annihilated", decay_claim(impl));
  if (decl.settings.adaptive) built.emplace_back("scale-free", scale_free_claim(impl));
  built.emplace_back("equivariance", equivariance_claim(impl));
  if (decl.project) built.emplace_back("projection", projection_claim(impl));
  if (decl.rgrad) built.emplace_back("riemannian-gradient", riemannian_gradient_claim(impl));
  if (decl.retract) built.emplace_back("retraction", retraction_claim(impl));
  if (decl.retract) built.emplace_back("retraction-second-order", second_order_claim(impl));
  if (decl.transport) built.emplace_back("transport", transport_claim(impl));
  if (decl.metric) built.emplace_back("metric", metric_claim(impl));
  // A Grassmann rule's horizontal space is {0} at r = d: its cases keep r < d.
  if (decl.settings.map == TangentMap::kGrassmann)
    for (auto& [property, claim] : built) {
      auto inner_gen = claim.generator_fn;
      claim.generator_fn = [inner_gen] {
        return rc::gen::map(inner_gen(), [](Case k) {
          k.d = std::max(k.d, 2);
          k.r = std::min(k.r, k.d - 1);
          return k;
        });
      };
      claim.generator += "; r < d (the horizontal space is {0} at r = d)";
    }
  std::vector<Claim> out;
  for (auto& [property, claim] : built) {
    const auto stem = std::find_if(rule_claim_stems().begin(), rule_claim_stems().end(),
                                   [&](const RuleClaimStem& s) { return s.property == property; });
    if (stem == rule_claim_stems().end() || claim.id != stem->stem + "-" + impl.name)
      throw std::logic_error("declared_rule_claims: claim " + claim.id + " is not property " + property +
                             "'s stem in rule_claim_stems()");
    const bool declared = std::find(decl.properties.begin(), decl.properties.end(), property) != decl.properties.end();
    claim.expected = declared ? Expected::kCertified : Expected::kObserved;
    if (!declared) claim.statement = "Not claimed by the rule; measured: " + claim.statement;
    // The claims a rule of the paper's family gets are stated of that family; a declared rule's are
    // stated of it alone.
    claim.generator += "; the rule's declared settings";
    out.push_back(std::move(claim));
  }
  for (const auto& p : decl.properties)
    if (std::none_of(built.begin(), built.end(), [&](const auto& b) { return b.first == p; }))
      throw std::invalid_argument("rule " + impl.name + " declares '" + p +
                                  "', which does not apply to it (agrees-with-reference needs a reference, "
                                  "scale-free an adaptive rule, tangent-step a forward that returns its step, "
                                  "projection, riemannian-gradient, retraction, retraction-second-order, transport "
                                  "and metric an exposed method)");
  return out;
}

}  // namespace

const std::vector<RuleClaimStem>& rule_claim_stems() {
  static const std::vector<RuleClaimStem> stems{{"agrees-with-reference", "rule-agrees-with-core"},
                                                {"", "rule-agrees-with-core-at-paper-size"},
                                                {"on-manifold", "rule-on-manifold"},
                                                {"tangent-step", "rule-tangent-step"},
                                                {"frozen", "rule-frozen-stays"},
                                                {"decay-annihilated", "rule-decay-annihilated"},
                                                {"scale-free", "rule-scale-free"},
                                                {"equivariance", "rule-equivariance"},
                                                {"projection", "rule-projection"},
                                                {"riemannian-gradient", "rule-riemannian-gradient"},
                                                {"retraction", "rule-retraction"},
                                                {"retraction-second-order", "rule-retraction-second-order"},
                                                {"transport", "rule-transport"},
                                                {"metric", "rule-metric"}};
  return stems;
}

std::string rule_claims_pattern(const std::string& name) {
  std::string alternatives;
  for (const auto& s : rule_claim_stems()) alternatives += (alternatives.empty() ? "" : "|") + s.stem;
  return "^(" + alternatives + ")-" + name + "$";
}

std::vector<Claim> rule_claims(const RuleImplementation& impl) {
  if (impl.name.empty() || !impl.make)
    throw std::invalid_argument("rule_claims: an implementation needs a name and a factory");
  if (impl.declaration) return declared_rule_claims(impl);
  const auto only = rules_for(impl, {std::begin(kFrameRules), std::end(kFrameRules)});
  const bool any_adaptive = std::any_of(only.begin(), only.end(), is_adam_rule);
  const bool any_decay_rule = std::any_of(only.begin(), only.end(), [](FrameRule r) {
    return r != FrameRule::kFrozen && std::find(kDecayRules.begin(), kDecayRules.end(), r) != kDecayRules.end();
  });
  std::vector<Claim> out{agrees_with_core(impl)};
  if (any_adaptive) out.push_back(scale_free_claim(impl));  // a fixed-step rule is not scale-free
  out.push_back(equivariance_claim(impl));
  // Coupled decay through a coarser gradient dtype: G + lambda W rounded to float32 keeps G only to
  // u_io lambda sqrt(r) / ||G|| relative (measured: a residual of 1.6e-3 at lambda = 100 ||G||), so
  // such an implementation is judged at lambda below its smallest gradient (decay_annihilated).
  if (any_decay_rule) out.push_back(decay_claim(impl));
  out.push_back(frozen_claim(impl));
  // The paper's sizes over whole runs, for every implementation but core/ itself (its reference).
  if (impl.name != "core" && any_adaptive) out.push_back(paper_size_claim(impl));
  return out;
}

RuleImplementation core_rule_implementation() {
  return {.name = "core",
          .description = "core/'s riemannian_adam_step and riemannian_sgd_step (Eigen), float64",
          .unit_roundoff = 0x1p-53,
          .io_roundoff = 0x1p-53,
          .make = [] { return make_core_rule(); },
          .only_rule = {},
          .declaration = {}};
}

void add_rule_implementation(RuleImplementation impl) {
  if (impl.name.empty() || !impl.make)
    throw std::invalid_argument("add_rule_implementation: an implementation needs a name and a factory");
  bool taken = impl.name == core_rule_implementation().name;
  for (const auto& other : added_implementations()) taken = taken || other.name == impl.name;
  if (taken)
    throw std::invalid_argument("rule implementation name '" + impl.name +
                                "' is taken (its claims' ids would repeat another implementation's)");
  added_implementations().push_back(std::move(impl));
}

namespace {
std::vector<SkippedImplementation>& skipped_registry() {
  static std::vector<SkippedImplementation> skipped;
  return skipped;
}
}  // namespace

void add_skipped_implementation(SkippedImplementation skipped) {
  if (skipped.name.empty() || skipped.reason.empty())
    throw std::invalid_argument("add_skipped_implementation: a skipped implementation needs a name and a reason");
  skipped_registry().push_back(std::move(skipped));
}

const std::vector<SkippedImplementation>& skipped_implementations() { return skipped_registry(); }

std::vector<Claim> added_rule_claims() {
  // core/ itself first: the interface's claims on the reference they compare with.
  std::vector<Claim> out = rule_claims(core_rule_implementation());
  for (const auto& impl : added_implementations())
    for (Claim& c : rule_claims(impl)) out.push_back(std::move(c));
  return out;
}

}  // namespace stiefel::certificates
