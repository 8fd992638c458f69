#include <ostream>
#include <stiefel/certificates/claim.h>

namespace stiefel::certificates {

const char* profile_name(int profile) {
  static const char* const names[] = {"constant",    "decaying",    "growing",    "spikes",
                                      "alternating", "sudden-drop", "sudden-rise"};
  return profile >= 0 && profile < 7 ? names[profile] : "unknown";
}

nlohmann::json to_json(const Case& c) {
  return {{"d", c.d},
          {"r", c.r},
          {"heads", c.heads},
          {"tokens", c.tokens},
          {"steps", c.steps},
          {"profile", profile_name(c.profile)},
          {"log10_scale", c.log10_scale},
          {"log10_c", c.log10_c},
          {"log10_lr", c.log10_lr},
          {"eps", c.eps_zero ? nlohmann::json(0.0) : nlohmann::json(std::pow(10.0, c.log10_eps))},
          {"x", c.x},
          {"corr", c.corr},
          {"seed", std::to_string(c.seed)}};
}

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << to_json(c).dump(); }

}  // namespace stiefel::certificates
