// RapidCheck generators of certificate cases. Every generator shrinks towards small dimensions,
// few steps and the lower end of each exponent range, so a refuted claim reports a small case.
#pragma once

#include <rapidcheck.h>

#include <cmath>
#include <stiefel/certificates/claim.h>

namespace stiefel::certificates::generators {

// A real in [lo, hi] on a grid of `steps` points (RapidCheck has no real-valued inRange).
inline double real(double lo, double hi, int steps = 1000) {
  return lo + (hi - lo) * (*rc::gen::inRange(0, steps + 1)) / double(steps);
}

struct FrameOptions {
  int min_d = 1, max_d = 24, min_r = 1;
  bool r_below_d = false;       // r < d
  bool not_one_by_one = false;  // (d, r) ≠ (1, 1)
  double scale_lo = -12, scale_hi = 12;
};

inline void draw_frame_shape(Case& c, const FrameOptions& o) {
  const int min_d = std::max({o.min_d, o.min_r + (o.r_below_d ? 1 : 0), o.not_one_by_one ? 2 : 1});
  c.d = *rc::gen::inRange(min_d, o.max_d + 1);
  c.r = *rc::gen::inRange(o.min_r, (o.r_below_d ? c.d - 1 : c.d) + 1);
  c.log10_scale = real(o.scale_lo, o.scale_hi, int(10 * (o.scale_hi - o.scale_lo)));
  c.seed = *rc::gen::arbitrary<std::uint64_t>();
}

inline rc::Gen<Case> frame(FrameOptions o) {
  return rc::gen::exec([o] {
    Case c;
    draw_frame_shape(c, o);
    return c;
  });
}

// Attention problems: n tokens, H heads, token scale 10^[−1, max_log10_scale]; the default 1
// reaches logits of a few hundred, a saturated softmax.
inline rc::Gen<Case> attention(int min_r, double max_log10_scale = 1.0, int min_tokens = 2, int min_d = 1) {
  return rc::gen::exec([=] {
    Case c;
    c.tokens = *rc::gen::inRange(min_tokens, 8);
    c.heads = *rc::gen::inRange(1, 4);
    c.d = *rc::gen::inRange(std::max({min_r, min_d, 1}), 13);
    c.r = *rc::gen::inRange(min_r, c.d + 1);
    c.log10_scale = real(-1.0, max_log10_scale, int(std::lround(10 * (max_log10_scale + 1))));
    c.seed = *rc::gen::arbitrary<std::uint64_t>();
    return c;
  });
}

// Gradient sequences: d ≥ 2, a persistent direction of weight corr ∈ [0, 1], T = 10^[0, 3] steps (1 … 1000), seven
// magnitude profiles, base scale 10^[−30, 30], rates 10^[−3, 1] (cap inactive and active), ε = 0 or 10^[−12, −2].
inline void draw_sequence(Case& c, int max_d) {
  c.d = *rc::gen::inRange(2, max_d + 1);  // St(1,1) = {±1} has no tangent directions
  c.r = *rc::gen::inRange(1, c.d + 1);
  c.heads = *rc::gen::inRange(1, 3);
  c.steps = int(std::lround(std::pow(10.0, real(0.0, 3.0, 30))));
  c.profile = *rc::gen::inRange(0, 7);
  c.log10_scale = real(-30, 30, 60);
  c.log10_lr = real(-3, 1, 40);
  c.eps_zero = *rc::gen::arbitrary<bool>();
  c.log10_eps = real(-12, -2, 10);
  const double x = real(0, 1, 10);
  c.corr = 1 - x * x;  // mostly correlated gradients, as in training; shrinks towards corr = 1
  c.seed = *rc::gen::arbitrary<std::uint64_t>();
}

inline rc::Gen<Case> sequence(int max_d) {
  return rc::gen::exec([max_d] {
    Case c;
    draw_sequence(c, max_d);
    return c;
  });
}

}  // namespace stiefel::certificates::generators
