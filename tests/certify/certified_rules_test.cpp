// The certificate's frame rules (certificates/src/claims/implemented_update.h) are the arm
// registry's Stiefel rules: one certified rule per arm of one frame per head, with the same tangent
// map, second moment, retraction, cap and moment constants, so that an arm added to the registry
// without its certified rule, or a rule changed in one place only, fails here. The block layout
// (b2-block) runs B2's rule on wider frames (its own claim: s32-block-heads-orthogonal); the
// codebook arms run PA16's rule (their codebook's claims: s33-chordal-mean-optimal,
// s33-kmeans-monotone).
#include <gtest/gtest.h>

#include <map>
#include <stiefel/arms.h>

#include "claims/implemented_update.h"

namespace stiefel::certificates {
namespace {

const arms::Rates kRates{
    .riemann_lr = 0.3, .adam_lr = 0.03, .elementwise_lr = 0.05, .sgd_lr = 0.02, .eps = 1e-8, .tau = 0.1};

// The registry's name of a certified rule ("b2-sgd (PA16)" is the arm b2-sgd).
std::string arm_name(FrameRule r) {
  const std::string s = frame_rule_arm(r);
  return s.substr(0, s.find(' '));
}

// Everything but the rate, which each side takes from its own source (the run's options; the case).
void expect_same_rule(const arms::FrameRule& registry, FrameRule certified) {
  if (const auto* a = std::get_if<RiemannianAdamHyper<double>>(&registry)) {
    ASSERT_TRUE(is_adam_rule(certified));
    const auto c = adam_rule_hyper<double>(certified, a->lr, a->eps);
    EXPECT_EQ(a->map, c.map);
    EXPECT_EQ(a->moment, c.moment);
    EXPECT_EQ(a->retraction, c.retraction);
    EXPECT_EQ(a->beta1, c.beta1);
    EXPECT_EQ(a->beta2, c.beta2);
    EXPECT_EQ(a->cap_tau.has_value(), c.cap_tau.has_value());
    if (a->cap_tau && c.cap_tau) {
      EXPECT_EQ(*a->cap_tau, *c.cap_tau);
    }
  } else {
    const auto& s = std::get<RiemannianSgdHyper<double>>(registry);
    ASSERT_FALSE(is_adam_rule(certified));
    const auto c = sgd_rule_hyper<double>(certified, s.lr);
    EXPECT_EQ(s.map, c.map);
    EXPECT_EQ(s.retraction, c.retraction);
    EXPECT_EQ(s.lr, c.lr);  // the frozen arm's rate is 0 on both sides
  }
}

TEST(CertifiedRules, AreTheArmRegistrysStiefelRules) {
  std::map<std::string, FrameRule> certified;
  for (const FrameRule r : kFrameRules) EXPECT_TRUE(certified.emplace(arm_name(r), r).second) << arm_name(r);
  std::size_t per_head_arms = 0;
  for (const arms::Arm& arm : arms::all()) {
    if (!arm.on_manifold()) continue;
    SCOPED_TRACE(arm.name);
    // The block layout runs B2's rule; the codebook arms (C2, C2-nb) run PA16's with a prior.
    const std::string name = arm.block_heads ? "b2" : arm.uses_codebook() ? "b2-sgd" : arm.name;
    per_head_arms += !arm.block_heads && !arm.uses_codebook();
    const auto it = certified.find(name);
    ASSERT_NE(it, certified.end()) << "no certified rule for the arm's rule";
    expect_same_rule(arm.rule(kRates), it->second);
  }
  EXPECT_EQ(per_head_arms, certified.size()) << "a certified rule that no arm runs";
}

}  // namespace
}  // namespace stiefel::certificates
