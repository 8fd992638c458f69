// An update rule under test: any implementation of a frame rule (core/, the training core's
// batched frame_step, a user's TorchScript rule) seen only through one step on a batch of frames,
// and the components it may expose. This room holds the interface alone: the training core
// implements it (stiefel/training/trainer_rule.h, script_rule.h), the certificate suite runs its
// claims through it (stiefel/certificates/update_rule.h), and neither includes the other.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <stiefel/frames.h>
#include <stiefel/riemannian_adam.h>
#include <stiefel/scalar.h>

namespace stiefel::rules {

// The rule's settings, those of core/'s RiemannianAdamHyper and RiemannianSgdHyper (adaptive =
// false: the fixed-step Riemannian SGD; lr = 0: the frozen arm). The polar factor is the SVD route.
struct RuleSettings {
  double lr = 1.0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  std::optional<double> cap_tau = 0.1;
  SecondMoment moment = SecondMoment::kPerFrame;
  // The tangent space the rule steps in: St(d, r)'s (W^T eta skew), or Grassmann's horizontal space
  // (W^T eta = 0).
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
//   tangent-step           the step it reports (UpdateRule::last_step) is tangent at the frames it
//                          leaves (horizontal, W^T eta = 0, for a Grassmann rule), and, where it
//                          exposes retract, its next frames are R(W, eta)
//   frozen                 at lr = 0 the frames stay where they start
//   decay-annihilated      its weight decay (coupled or decoupled, as it applies it) changes no frame
//                          (Prop. 8); a rule that takes none: lambda W added to its gradient
//   scale-free             gradients scaled by c give the same frames (eps scaled by c; Prop. 3(ii))
//   equivariance           from Q^T W with Q^T G it returns Q^T times its frames (Prop. 7)
// and, for the components a rule exposes:
//   projection             project(W, X) is idempotent, self-adjoint in the rule's metric, kills the
//                          normal space {W S : S symmetric} (Prop. 2; the vertical space {W A} for a
//                          Grassmann rule) and fixes tangent vectors
//   riemannian-gradient    rgrad(W, G) is tangent and represents G in the rule's metric (the Riesz
//                          identity g_W(rgrad, xi) = <G, xi> for every tangent xi)
//   retraction             retract(W, eta) stays on St(d, r), returns W at eta = 0 and agrees with
//                          W + eta to first order, judged by the slope of the defect
//   retraction-second-order  retract's curves leave W with a normal second derivative (the polar
//                          retraction's, not QR's), judged by the slope of the tangential defect
//   transport              transport(W, W', X) lands in the tangent space at W', is the identity at
//                          W' = W, and agrees with Pi_W'(X) to first order in ||W' - W||
//   metric                 metric(W, X, Y) is symmetric, bilinear and positive on tangent vectors
const std::vector<std::string>& rule_property_names();

// A frame map of one frame batch and a second argument: an exposed component (project(W, X),
// retract(W, eta), rgrad(W, G)).
using FramesMap = std::function<Frames<double>(const Frames<double>& w, const Frames<double>& x)>;
// transport(W, W', X): X, tangent at W, carried to the tangent space at W'.
using TransportMap =
    std::function<Frames<double>(const Frames<double>& w, const Frames<double>& w_new, const Frames<double>& x)>;
// metric(W, X, Y): g_W(X_h, Y_h), one number per frame h.
using MetricMap =
    std::function<std::vector<double>(const Frames<double>& w, const Frames<double>& x, const Frames<double>& y)>;

// What a rule under test says it is, in place of being one of the paper's rules: the settings it
// takes (each claim sets lr and eps), the properties it claims, and the components it exposes. Its
// certificate certifies exactly the declared properties; every other applicable one is measured
// and reported as an observation, which never fails the certificate.
struct RuleDeclaration {
  RuleSettings settings;
  std::string reference;                // a name of rule_names(), or empty
  std::vector<std::string> properties;  // names of rule_property_names()
  // Empty where the rule does not expose them.
  FramesMap project, retract, rgrad;
  TransportMap transport;
  MetricMap metric;
  bool reports_step = false;  // its steps report the step they retract (UpdateRule::last_step)
};

// A rule under test that cannot be run (it raised, or returned something that is not frames): the
// user's error, not a refutation. It stops the whole certificate, and the program exits 2 with its
// message; no claim is judged on it.
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
  // The step the last call of step() retracted (the tangent vector eta with W' = R(W, eta)), where
  // the rule reports it; null where it does not.
  virtual const Frames<double>* last_step() const { return nullptr; }
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
  // those of the declaration, and only_rule names its reference (if any).
  std::optional<RuleDeclaration> declaration;
};

// An implementation a program knows of but does not run (the trainer on CUDA where no GPU is
// present, the trainer in a build without LibTorch), with the reason: a certificate states it so
// that an absent claim is never read as a passed one.
struct SkippedImplementation {
  std::string name;    // the suffix its claims would take: "trainer-cuda"
  std::string reason;  // why it is not run here
};

// The frame rules by the names an implementation's only_rule takes: b2, b2-mean-moment, b2-column,
// b2-grassmann, b2m, b2m-can, b2-sgd, b2-sgd-stiefel, frozen.
std::vector<std::string> rule_names();
// The settings of the named rule at rate lr and eps 1e-8 (the presets of core/ and of the arm
// registry); throws std::invalid_argument for a name not in rule_names().
RuleSettings rule_settings(const std::string& name, double lr);

// What the calling thread is doing with a rule, empty where nothing said: the id of the claim a
// certificate runs (set by its runner), which an implementation names when it fails (RuleError) or
// is watched (the --rule sandbox's "which call").
const std::string& call_context();
// Sets the calling thread's context for as long as it lives.
class CallContext {
 public:
  explicit CallContext(std::string what);
  ~CallContext();
  CallContext(const CallContext&) = delete;
  CallContext& operator=(const CallContext&) = delete;

 private:
  std::string previous_;
};

}  // namespace stiefel::rules
