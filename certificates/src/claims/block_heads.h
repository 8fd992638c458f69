// Two readings of the implemented update's structure (§2, §3.2): block-orthogonal heads kept
// mutually orthogonal by one polar factor, and Bécigneul and Ganea's per-factor second moment as B2's.
// Included by implemented_update.h, after the helpers it defines (the schedules, the hand-computed
// steps).
#pragma once

#include <array>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include <stiefel/rules/frame_rules.h>

#include "gradient_sequences.h"

namespace stiefel::certificates {

// The per-frame second moment under the readings a user could take for Bécigneul–Ganea's: the mean
// over the d·r entries (B2-mean), one scalar for the whole product St(d,r)^H, and the norm of the
// canonical metric in place of the embedded one.
enum class FactorMomentMutant { kNone, kMeanOverEntries, kWholeProduct, kCanonicalNorm };

// §3.2's block-orthogonal heads (the training core's arm b2-block): B2 on the H heads of W_Q side
// by side, one frame in St(d, H·r), T steps of a gradient sequence. The heads stay mutually
// orthogonal, W_hᵀW_k = 0 for h ≠ k, and each on St(d, r). The near miss retracts the same step
// head by head (one polar factor per head, the per-head layout's retraction): each head stays on
// St(d, r), the heads' subspaces do not stay orthogonal.
enum class BlockMutant { kNone, kPerHeadRetraction };

template <class S>
CheckResult check_block_heads_orthogonal(const Case& c, BlockMutant mutant) {
  Rng rng(c.seed);
  const Index d = c.d, r = c.r, heads = c.heads;
  Frames<S> w = {stack_heads<S>(random_block_orthogonal_frames<S>(rng, {d, r}, heads))};
  const auto hyper = b2_hyper<S>(S(pow10(c.log10_lr)), eps_of<S>(c));
  auto state = make_riemannian_adam_state<S>(w, hyper.moment);
  const S scale = S(pow10(c.log10_scale));
  for (int t = 0; t < c.steps; ++t) {
    const Frames<S> g = {Matrix<S>(gaussian_matrix<S>(rng, d, heads * r) * scale)};
    auto dir = riemannian_adam_direction<S>(w, g, state, hyper);
    if (mutant == BlockMutant::kPerHeadRetraction) {
      const Frames<S> at = split_heads<S>(w[0], heads), step = split_heads<S>(dir.eta[0], heads);
      Frames<S> next;
      for (Index h = 0; h < heads; ++h) next.push_back(polar_svd<S>(Matrix<S>(at[h] + step[h])));
      w = {stack_heads<S>(next)};
      state = std::move(dir.state);
      state.m[0] = reproject(hyper.map, w[0], state.m[0]);
    } else {
      auto res = finish_riemannian_adam_step<S>(w, std::move(dir), hyper);
      w = std::move(res.frames);
      state = std::move(res.state);
    }
  }
  // Every r×r block W_hᵀW_k − δ_hk I of WᵀW − I (h = k: the head's own isometry), over √r;
  // factor d·H·r.
  const Frames<S> split = split_heads<S>(w[0], heads);
  CheckResult out;
  for (Index h = 0; h < heads; ++h)
    for (Index k = 0; k < heads; ++k) {
      Matrix<S> block = split[h].transpose() * split[k];
      if (h == k) block -= Matrix<S>::Identity(r, r);
      CheckResult one = roundoff_result<S>(S(block.norm()), sqrt(S(r)), double(d * heads * r));
      one.detail = {{"worst_pair", std::to_string(h) + "," + std::to_string(k)}};
      keep_worst(out, one);
    }
  return out;
}

// §2: Bécigneul & Ganea's per-factor second moment v_i <- beta2 v_i + (1 - beta2) ||grad_i f||^2_{x_i}
// on the product St(d,r)^H is the per-frame scalar v_h of B2. Their v is computed here from its
// definition, not from core's tangent projection: ||grad f||^2 at W in the embedded metric is the sum
// of squares of the coordinates of G in an orthonormal basis of T_W St, {W (E_ij - E_ji)/sqrt(2) :
// i < j} and {W_perp E_aj} (W_perp from a QR of W, not from the projector). Its value is compared
// with core's state v_h after every step of a B2 run over a gradient sequence.
template <class S>
S embedded_gradient_norm_squared(const Matrix<S>& w, const Matrix<S>& g) {
  const Matrix<S> a = w.transpose() * g;
  S sum(0);
  for (Index i = 0; i < a.rows(); ++i)
    for (Index j = i + 1; j < a.cols(); ++j) {
      const S coord = (a(i, j) - a(j, i)) / sqrt(S(2));
      sum += coord * coord;
    }
  return sum + Matrix<S>(orthogonal_complement(w).transpose() * g).squaredNorm();
}

template <class S>
CheckResult check_becigneul_ganea_moment(const Case& c, FactorMomentMutant mutant) {
  RiemannianAdamHyper<S> hyper = sequence_hyper<S>(c);
  if (mutant == FactorMomentMutant::kMeanOverEntries) hyper.moment = SecondMoment::kPerFrameMean;
  std::vector<S> factor_v(std::size_t(c.heads), S(0)), tested_v(std::size_t(c.heads), S(0));
  S whole(0);
  CheckResult out;
  const S b2 = hyper.beta2, one(1);
  run_adam<S>(c, hyper, 1.0, [&](int t, const Frames<S>& w, const RiemannianAdamDirection<S>& dir, const Frames<S>& g) {
    S total(0);
    for (int h = 0; h < c.heads; ++h) {
      const auto k = std::size_t(h);
      const S bg = embedded_gradient_norm_squared<S>(w[k], g[k]);
      factor_v[k] = b2 * factor_v[k] + (one - b2) * bg;
      total += bg;
      if (mutant == FactorMomentMutant::kCanonicalNorm) {
        const Matrix<S> xi = project_tangent<S>(w[k], g[k]);
        tested_v[k] = b2 * tested_v[k] + (one - b2) * canonical_norm_squared<S>(w[k], xi);
      } else {
        tested_v[k] = dir.state.v[k](0, 0);
      }
    }
    whole = b2 * whole + (one - b2) * total;
    for (int h = 0; h < c.heads; ++h) {
      const auto k = std::size_t(h);
      const S under_test = mutant == FactorMomentMutant::kWholeProduct ? whole : tested_v[k];
      CheckResult one_frame =
          roundoff_result<S>(abs(under_test - factor_v[k]), factor_v[k], double(c.d * c.r + c.steps));
      one_frame.detail = {
          {"step", t + 1}, {"frame", h}, {"v_core", to_double(under_test)}, {"v_bg", to_double(factor_v[k])}};
      keep_worst(out, one_frame);
    }
  });
  return out;
}

}  // namespace stiefel::certificates
