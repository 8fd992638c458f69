// An update rule under test: any implementation of a frame rule (core/, the training core's
// batched frame_step, a user's rule) seen only through one step on a batch of frames. The update
// claims that need nothing but the rule's steps (isometry over long runs, scale-freeness,
// O(d)-equivariance, weight-decay annihilation, the frozen arm, agreement with core/'s reference)
// run against every registered implementation through it (claims/rule_claims.cpp).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stiefel/certificates/claim.h>
#include <stiefel/riemannian_adam.h>
#include <stiefel/scalar.h>
#include <string>
#include <vector>

namespace stiefel::certificates {

// The rule's settings, those of core/'s RiemannianAdamHyper and RiemannianSgdHyper (adaptive =
// false: the fixed-step Riemannian SGD; lr = 0: the frozen arm). The polar factor is the SVD route.
struct RuleSettings {
  double lr = 1.0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  std::optional<double> cap_tau = 0.1;
  SecondMoment moment = SecondMoment::kPerFrame;
  TangentMap map = TangentMap::kStiefel;
  bool adaptive = true;
  // The weight decay lambda a rule applies itself (a declared rule that takes "weight_decay"); absent:
  // the rule takes none. core/'s rules take none: a claim adds lambda W to the gradient instead.
  std::optional<double> weight_decay;
};

// The properties a rule may declare of itself (RuleDeclaration::properties), each certified by one
// claim, rule-PROPERTY-NAME:
//   agrees-with-reference  its frames equal core/'s rule named by `reference` at every step
//   on-manifold            its iterates stay on St(d, r) over long runs: level and growth judged
//   frozen                 at lr = 0 the frames stay where they start
//   decay-annihilated      its weight decay (coupled or decoupled, as it applies it) changes no frame
//                          (Prop. 8); a rule that takes none: lambda W added to its gradient
//   scale-free             gradients scaled by c give the same frames (eps scaled by c; Prop. 3(ii))
//   equivariance           from Q^T W with Q^T G it returns Q^T times its frames (Prop. 7)
// and, for the components a rule exposes:
//   projection             its project(W, X) is idempotent, self-adjoint and kills {W S : S symmetric}
//                          (Prop. 2)
//   retraction             its retract(W, eta) stays on St(d, r), returns W at eta = 0 and agrees with
//                          W + eta to first order (judged by the slope of the defect)
const std::vector<std::string>& rule_property_names();

// A frame map of one frame batch and a second argument: an exposed component (project(W, X),
// retract(W, eta)).
using FramesMap = std::function<Frames<double>(const Frames<double>& w, const Frames<double>& x)>;

// What a rule under test says it is, in place of being one of the paper's rules: the settings it
// takes (each claim sets lr and eps), the properties it claims, and the components it exposes. Its
// certificate certifies exactly the declared properties; every other applicable one is measured
// and reported as an observation (Expected::kObserved), which never fails the certificate.
struct RuleDeclaration {
  RuleSettings settings;
  std::string reference;                // a name of rule_names(), or empty
  std::vector<std::string> properties;  // names of rule_property_names()
  FramesMap project, retract;           // empty where the rule does not expose them
};

// A rule under test that cannot be run (it raised, or returned something that is not frames): the
// user's error, not a refutation. It stops the whole certificate (run_certificate rethrows it), and
// the program exits 2 with its message; no claim is judged on it.
class RuleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class UpdateRule {
 public:
  virtual ~UpdateRule() = default;
  // A fresh state (zero moments, step 0) for the frames W (H frames d×r) under the settings.
  virtual void start(const Frames<double>& w, const RuleSettings& settings) = 0;
  // One step from W with the ambient gradients G (H frames d×r): the next frames.
  virtual Frames<double> step(const Frames<double>& w, const Frames<double>& g) = 0;
  // The rate of the following steps (a schedule: warm-up, cosine), the settings' otherwise unchanged.
  virtual void set_rate(double lr) = 0;
};

struct RuleImplementation {
  std::string name;         // the suffix of its claims' ids: "trainer"
  std::string description;  // what runs, where, in which dtype
  // The unit roundoff of the update's arithmetic, and that of the dtype frames and gradients cross
  // in (the trainer: float64 master frames and moments, float32 parameters and gradients). Where
  // the second is coarser, its rounding enters once per step (the gradient) and once per read frame,
  // not once per flop: the tolerance adds u_io (1 + 4 T ||eta||max) to the arithmetic's term.
  double unit_roundoff = 0x1p-53;
  double io_roundoff = 0x1p-53;
  std::function<std::unique_ptr<UpdateRule>()> make;
  // Empty: the implementation runs every frame rule the settings name (core/, the trainer). Else the
  // one rule it implements (a name of rule_names(), e.g. "b2"): each claim runs that rule alone, with
  // its settings, and its controls are those that need no second rule.
  std::string only_rule;
  // A rule that declares itself (a user's rule with "properties" in its config): its claims are
  // those of the declaration, and only_rule is ignored.
  std::optional<RuleDeclaration> declaration;
};

// The frame rules by the names an implementation's only_rule takes: b2, b2-mean-moment, b2-column,
// b2-grassmann, b2m, b2m-can, b2-sgd, b2-sgd-stiefel, frozen.
std::vector<std::string> rule_names();
// The settings of the named rule at rate lr (the presets of core/ and of the arm registry); throws
// std::invalid_argument for a name not in rule_names().
RuleSettings rule_settings(const std::string& name, double lr);

// core/'s rule through the interface, float64.
RuleImplementation core_rule_implementation();

// The update claims run through `impl`.
std::vector<Claim> rule_claims(const RuleImplementation& impl);

// Implementations outside this library (the training core's frame_step) are added by the program
// that links them, before registry() is first read; their claims follow the paper's. A name that is
// "core" or already added is refused (std::invalid_argument).
void add_rule_implementation(RuleImplementation impl);

// An implementation this program knows of but does not run (the trainer on CUDA where no GPU is
// present, the trainer in a build without LibTorch), with the reason: the certificate states it
// (run.implementations_not_run) so that an absent claim is never read as a passed one.
struct SkippedImplementation {
  std::string name;    // the suffix its claims would take: "trainer-cuda"
  std::string reason;  // why it is not run here
};
void add_skipped_implementation(SkippedImplementation skipped);
const std::vector<SkippedImplementation>& skipped_implementations();

}  // namespace stiefel::certificates
