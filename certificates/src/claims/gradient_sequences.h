// Gradient sequences for the update-rule claims (Prop. 3, §5.3, the implemented update): T steps of
// H gradients d×r, √corr·D_h + √(1−corr)·N_t, under one of seven magnitude profiles (Case::profile).
#pragma once

#include <type_traits>

#include "check_support.h"

namespace stiefel::certificates {

// Magnitude multiplier of step t (0-based) of T under a profile.
inline double profile_magnitude(int profile, int t, int steps) {
  const double frac = steps > 1 ? double(t) / double(steps - 1) : 0.0;
  switch (profile) {
    case 0:
      return 1.0;  // constant
    case 1:
      return pow10(-6.0 * frac);  // decaying over six decades
    case 2:
      return pow10(6.0 * frac);  // growing over six decades
    case 3:
      return (t % 37 == 36) ? 1e4 : 1.0;  // sudden spikes
    case 4:
      return (t % 2 == 0) ? 1e-3 : 1e3;  // alternating
    case 5:
      return t < steps / 2 ? 1.0 : 1e-8;  // sudden drop
    case 6:
      return t < steps / 2 ? 1e-4 : 1.0;  // sudden rise
    default:
      return 1.0;
  }
}

// The ambient gradients of step t: √corr·D_h + √(1−corr)·N_t with D_h a Gaussian direction
// fixed for the run and N_t fresh Gaussian noise, scaled by 10^log10_scale · profile · extra.
template <class S>
Frames<S> sequence_gradients(Rng& rng, const Frames<S>& persistent, const Case& c, int t, double extra) {
  const double mag = pow10(c.log10_scale) * profile_magnitude(c.profile, t, c.steps) * extra;
  const S a(std::sqrt(c.corr) * mag), b(std::sqrt(1.0 - c.corr) * mag);
  Frames<S> g;
  for (int h = 0; h < c.heads; ++h) g.push_back(a * persistent[h] + b * gaussian_matrix<S>(rng, c.d, c.r));
  return g;
}

// The gradients of the paper-size runs: sqrt(corr) D + sqrt(1 - corr) N_t of unit scale, with the
// persistent direction D drawn afresh every `period` steps. A direction fixed for the whole run is
// reached within a few dozen steps at eta_R = 1, after which the first moment is noise and the cap
// never binds (measured: 0 of 1 600 image-task steps capped at corr 0.5; 448 with corr 0.9 and a
// new direction every 25 steps, and 531 of the grokking task's 1 000).
inline constexpr double kDriftingCorr = 0.9;
inline constexpr int kDriftingPeriod = 25;
template <class S>
Frames<S> drifting_gradients(Rng& rng, Frames<S>& direction, const Case& c, int t) {
  if (t % kDriftingPeriod == 0) {
    direction.clear();
    for (int h = 0; h < c.heads; ++h) direction.push_back(gaussian_matrix<S>(rng, c.d, c.r));
  }
  const S a(std::sqrt(kDriftingCorr)), b(std::sqrt(1.0 - kDriftingCorr));
  Frames<S> g;
  for (int h = 0; h < c.heads; ++h) g.push_back(a * direction[std::size_t(h)] + b * gaussian_matrix<S>(rng, c.d, c.r));
  return g;
}

// The gradients of the float32 isometry runs, which follow the frames as a loss's gradients do:
// drifting_gradients plus -U_h U_h^T W_h, the gradient of the loss -||U_h^T W_h||^2 / 2 that pulls
// each frame towards a fixed k-dimensional subspace (U_h a d x k Gaussian scaled by d^(-1/4), so that
// the pull's entries are of the noise's order at every frame).
inline constexpr int kPullRank = 8;
template <class S>
Frames<S> pull_subspaces(Rng& rng, const Case& c) {
  const S scale(1.0 / std::pow(double(c.d), 0.25));
  Frames<S> u;
  for (int h = 0; h < c.heads; ++h) u.push_back(scale * gaussian_matrix<S>(rng, c.d, kPullRank));
  return u;
}
template <class S>
Frames<S> frame_dependent_gradients(Rng& rng, Frames<S>& direction, const Frames<S>& pull, const Frames<S>& w,
                                    const Case& c, int t) {
  Frames<S> g = drifting_gradients<S>(rng, direction, c, t);
  for (std::size_t h = 0; h < g.size(); ++h) g[h] -= pull[h] * (pull[h].transpose() * w[h]);
  return g;
}

// B2 at the case's rate and ε, polar retraction by the Gram route.
template <class S>
RiemannianAdamHyper<S> sequence_hyper(const Case& c) {
  RiemannianAdamHyper<S> h = b2_hyper<S>(S(pow10(c.log10_lr)), eps_of<S>(c));
  h.retraction = Retraction::kPolarGram;
  return h;
}

// Runs a Riemannian Adam over the case's gradient sequence (gradients × extra), calling
// observe(t, frames, direction) after each direction and before the retraction (with the step's
// gradients as a fourth argument where observe takes one).
template <class S, class Observe>
Frames<S> run_adam(const Case& c, const RiemannianAdamHyper<S>& hyper, double extra, Observe&& observe) {
  Rng rng(c.seed);
  Frames<S> w = random_frames<S>(rng, {c.d, c.r}, c.heads);
  Frames<S> persistent;
  for (int h = 0; h < c.heads; ++h) persistent.push_back(gaussian_matrix<S>(rng, c.d, c.r));
  auto state = make_riemannian_adam_state<S>(w, hyper.moment);
  for (int t = 0; t < c.steps; ++t) {
    const Frames<S> g = sequence_gradients<S>(rng, persistent, c, t, extra);
    auto dir = riemannian_adam_direction<S>(w, g, state, hyper);
    if constexpr (std::is_invocable_v<Observe, int, const Frames<S>&, const RiemannianAdamDirection<S>&,
                                      const Frames<S>&>)
      observe(t, w, dir, g);
    else
      observe(t, w, dir);
    auto next = finish_riemannian_adam_step<S>(w, std::move(dir), hyper);
    w = std::move(next.frames);
    state = std::move(next.state);
  }
  return w;
}

// The share of (step, head) pairs in which B2's cap tau sqrt(r) rescales the step: core/'s B2 in
// float64 at the case's rate and eps on the case's sequence (the runs the sequence claims read).
inline double cap_binding_share(const Case& k) {
  long capped = 0, total = 0;
  run_adam<double>(k, sequence_hyper<double>(k), 1.0,
                   [&](int, const Frames<double>&, const RiemannianAdamDirection<double>& dir) {
                     for (const bool c : dir.report.capped) capped += c;
                     total += long(dir.report.capped.size());
                   });
  return total > 0 ? double(capped) / double(total) : 0.0;
}

}  // namespace stiefel::certificates
