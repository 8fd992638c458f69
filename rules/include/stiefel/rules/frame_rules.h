// The frame rules of the paper and of the arm registry's Stiefel arms (stiefel/arms.h), by the
// names a rule under test refers to, with the hyper-parameters they take from core/'s presets.
// tests/certify/certified_rules_test.cpp holds this list and the registry's equal.
#pragma once

#include <cmath>
#include <optional>
#include <string>

#include <stiefel/riemannian_adam.h>
#include <stiefel/riemannian_sgd.h>
#include <stiefel/rules/update_rule.h>

namespace stiefel::rules {

enum class FrameRule { kB2, kB2Mean, kB2Column, kB2Grassmann, kB2m, kB2mCan, kSgdGrassmann, kSgdStiefel, kFrozen };
inline constexpr FrameRule kFrameRules[] = {FrameRule::kB2,           FrameRule::kB2Mean,     FrameRule::kB2Column,
                                            FrameRule::kB2Grassmann,  FrameRule::kB2m,        FrameRule::kB2mCan,
                                            FrameRule::kSgdGrassmann, FrameRule::kSgdStiefel, FrameRule::kFrozen};

inline const char* frame_rule_arm(FrameRule r) {
  switch (r) {
    case FrameRule::kB2:
      return "b2";
    case FrameRule::kB2Mean:
      return "b2-mean-moment";
    case FrameRule::kB2Column:
      return "b2-column";
    case FrameRule::kB2Grassmann:
      return "b2-grassmann";
    case FrameRule::kB2m:
      return "b2m";
    case FrameRule::kB2mCan:
      return "b2m-can";
    case FrameRule::kSgdGrassmann:
      return "b2-sgd (PA16)";
    case FrameRule::kSgdStiefel:
      return "b2-sgd-stiefel";
    case FrameRule::kFrozen:
      return "frozen";
  }
  return "?";
}

inline bool is_adam_rule(FrameRule r) {
  return r != FrameRule::kSgdGrassmann && r != FrameRule::kSgdStiefel && r != FrameRule::kFrozen;
}

template <class S>
RiemannianAdamHyper<S> adam_rule_hyper(FrameRule r, const S& lr, const S& eps) {
  switch (r) {
    case FrameRule::kB2Mean:
      return b2_mean_hyper<S>(lr, eps);
    case FrameRule::kB2Column:
      return per_column_hyper<S>(lr, eps);
    case FrameRule::kB2Grassmann: {
      auto h = b2_hyper<S>(lr, eps);
      h.map = TangentMap::kGrassmann;
      return h;
    }
    case FrameRule::kB2m:
      return b2m_hyper<S>(lr, eps);
    case FrameRule::kB2mCan:
      return b2m_can_hyper<S>(lr, eps);
    default:
      return b2_hyper<S>(lr, eps);
  }
}

template <class S>
RiemannianSgdHyper<S> sgd_rule_hyper(FrameRule r, const S& lr) {
  if (r == FrameRule::kFrozen) return frozen_hyper<S>();
  RiemannianSgdHyper<S> h;
  h.lr = lr;
  h.map = r == FrameRule::kSgdStiefel ? TangentMap::kStiefel : TangentMap::kGrassmann;
  return h;
}

// Rule r's name among rule_names() (the arm's, with "b2-sgd" for the Grassmann SGD arm), and the
// rule of a name (none for a name not among them).
const char* rule_name(FrameRule r);
std::optional<FrameRule> rule_named(const std::string& name);
// Rule r's settings at rate lr and the given eps (eps is ignored by the fixed-step rules).
RuleSettings settings_of(FrameRule rule, double lr, double eps);
// core/'s hyper-parameters for settings s, settings_of's inverse: the adaptive rule's (s.adaptive) or
// the fixed-step rule's.
RiemannianAdamHyper<double> adam_hyper_of(const RuleSettings& s);
RiemannianSgdHyper<double> sgd_hyper_of(const RuleSettings& s);

}  // namespace stiefel::rules
