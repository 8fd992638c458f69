// The update claims through the UpdateRule interface: the training core's frame_step meets every
// one of them, and a rule with one plausible bug (the elementwise second moment whatever the settings
// ask) fails exactly the claims that name it: agreement with core/ and O(d)-equivariance.
#include <gtest/gtest.h>

#include <sstream>
#include <stiefel/certificates/runner.h>
#include <stiefel/certificates/update_rule.h>
#include <stiefel/training/trainer_rule.h>

namespace stiefel::certificates {
namespace {

class ElementwiseAlways final : public UpdateRule {
 public:
  void start(const Frames<double>& w, const RuleSettings& s) override {
    RuleSettings e = s;
    if (e.adaptive) e.moment = SecondMoment::kElementwise;
    inner_->start(w, e);
  }
  Frames<double> step(const Frames<double>& w, const Frames<double>& g) override { return inner_->step(w, g); }
  void set_rate(double lr) override { inner_->set_rate(lr); }

 private:
  std::unique_ptr<UpdateRule> inner_ = training::trainer_rule_implementation().make();
};

// Registered once, before the registry is first read by this program.
const bool registered = [] {
  add_rule_implementation(training::trainer_rule_implementation());
  add_rule_implementation(training::trainer_rule_implementation(torch::kCPU, torch::kFloat32));
  add_rule_implementation({.name = "elementwise-always",
                           .description = "frame_step with the elementwise second moment whatever the settings",
                           .unit_roundoff = 0x1p-53,
                           .io_roundoff = 0x1p-53,
                           .make = [] { return std::make_unique<ElementwiseAlways>(); },
                           .only_rule = {},
                           .declaration = {}});
  return true;
}();

nlohmann::json certify(const std::string& claims) {
  RunOptions opt;
  opt.cases = 6;
  opt.claims = claims;
  opt.jobs = 1;
  std::ostringstream log;
  return run_certificate(opt, log).certificate;
}

TEST(RuleClaims, TheTrainersFrameStepMeetsEveryUpdateClaim) {
  ASSERT_TRUE(registered);
  const auto cert = certify("^rule-.*-trainer$");
  ASSERT_EQ(cert["claims"].size(), 5u);
  for (const auto& c : cert["claims"]) {
    SCOPED_TRACE(c["id"].get<std::string>());
    EXPECT_TRUE(c["meets_expectation"].get<bool>()) << c.dump(1).substr(0, 2000);
    EXPECT_NE(c["implementation"].get<std::string>().find("frame_step"), std::string::npos);
    for (const auto& k : c["controls"]) EXPECT_EQ(k["status"], "killed") << k["id"];
  }
}

// The trainer as it trains: float32 parameters and gradients, float64 master frames and moments.
// Coupled decay runs at lambda below the smallest gradient there (rule_claims_invariance.cpp): five
// claims run (agreement, scale-free, equivariance, decay, frozen).
TEST(RuleClaims, TheTrainersFloat32PathMeetsItsUpdateClaims) {
  ASSERT_TRUE(registered);
  const auto cert = certify("^rule-.*-trainer-f32$");
  ASSERT_EQ(cert["claims"].size(), 5u);
  for (const auto& c : cert["claims"]) {
    SCOPED_TRACE(c["id"].get<std::string>());
    EXPECT_TRUE(c["meets_expectation"].get<bool>()) << c.dump(1).substr(0, 2000);
    EXPECT_NE(c["implementation"].get<std::string>().find("float32"), std::string::npos);
    for (const auto& k : c["controls"]) EXPECT_EQ(k["status"], "killed") << k["id"];
  }
}

TEST(RuleClaims, ABuggyRuleFailsTheClaimsThatNameItsBug) {
  ASSERT_TRUE(registered);
  const auto cert = certify("^rule-.*-elementwise-always$");
  ASSERT_EQ(cert["claims"].size(), 5u);
  for (const auto& c : cert["claims"]) {
    const std::string id = c["id"];
    SCOPED_TRACE(id);
    const bool named = id.rfind("rule-agrees-with-core", 0) == 0 || id.rfind("rule-equivariance", 0) == 0;
    EXPECT_EQ(c["observed"], named ? "refuted" : "certified");
  }
}

}  // namespace
}  // namespace stiefel::certificates
