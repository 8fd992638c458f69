#include <stiefel/rules/frame_rules.h>
#include <stiefel/rules/update_rule.h>

namespace stiefel::rules {

const std::vector<std::string>& rule_property_names() {
  static const std::vector<std::string> names{"agrees-with-reference",
                                              "on-manifold",
                                              "tangent-step",
                                              "frozen",
                                              "decay-annihilated",
                                              "scale-free",
                                              "equivariance",
                                              "projection",
                                              "riemannian-gradient",
                                              "retraction",
                                              "retraction-second-order",
                                              "transport",
                                              "metric"};
  return names;
}

const char* rule_name(FrameRule r) { return r == FrameRule::kSgdGrassmann ? "b2-sgd" : frame_rule_arm(r); }

std::optional<FrameRule> rule_named(const std::string& name) {
  for (const FrameRule r : kFrameRules)
    if (name == rule_name(r)) return r;
  return std::nullopt;
}

RuleSettings settings_of(FrameRule rule, double lr, double eps) {
  RuleSettings s;
  if (is_adam_rule(rule)) {
    const auto h = adam_rule_hyper<double>(rule, lr, eps);
    s.lr = h.lr;
    s.beta1 = h.beta1;
    s.beta2 = h.beta2;
    s.eps = h.eps;
    s.cap_tau = h.cap_tau;
    s.moment = h.moment;
    s.map = h.map;
  } else {
    const auto h = sgd_rule_hyper<double>(rule, lr);
    s.adaptive = false;
    s.lr = h.lr;
    s.map = h.map;
    s.cap_tau.reset();
  }
  return s;
}

RiemannianAdamHyper<double> adam_hyper_of(const RuleSettings& s) {
  RiemannianAdamHyper<double> h;
  h.lr = s.lr;
  h.beta1 = s.beta1;
  h.beta2 = s.beta2;
  h.eps = s.eps;
  h.cap_tau = s.cap_tau;
  h.moment = s.moment;
  h.map = s.map;
  return h;
}

RiemannianSgdHyper<double> sgd_hyper_of(const RuleSettings& s) {
  RiemannianSgdHyper<double> h;
  h.lr = s.lr;
  h.map = s.map;
  return h;
}

std::vector<std::string> rule_names() {
  std::vector<std::string> out;
  for (const FrameRule r : kFrameRules) out.emplace_back(rule_name(r));
  return out;
}

RuleSettings rule_settings(const std::string& name, double lr) {
  const auto r = rule_named(name);
  if (!r) throw std::invalid_argument("no frame rule named '" + name + "'");
  return settings_of(*r, lr, 1e-8);
}

namespace {
thread_local std::string context;
}  // namespace

const std::string& call_context() { return context; }

CallContext::CallContext(std::string what) : previous_(std::move(context)) { context = std::move(what); }

CallContext::~CallContext() { context = std::move(previous_); }

}  // namespace stiefel::rules
