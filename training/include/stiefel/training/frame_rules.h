// The frame update rules of core/ (riemannian_adam.h, riemannian_sgd.h) batched over frames in
// LibTorch, in float64: W, G, m: [B, d, r]; v: [B, 1, 1] (per frame), [B, 1, r] (per column) or
// [B, d, r] (elementwise). The same stages in the same order as core's riemannian_adam_step; the
// differential test pins the two to 1e-12.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <stiefel/arms.h>
#include <stiefel/retraction.h>
#include <stiefel/riemannian_adam.h>
#include <stiefel/tangent_projection.h>

namespace stiefel::training {

struct FrameHyper {
  double lr = 1.0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  std::optional<double> cap_tau = 0.1;
  TangentMap map = TangentMap::kStiefel;
  SecondMoment moment = SecondMoment::kPerFrame;
  Retraction retraction = Retraction::kPolarSvd;
  bool adaptive = true;  // false: fixed-step Riemannian SGD (B2-SGD / PA16); lr = 0: frozen
};

struct FrameState {
  torch::Tensor m, v;  // float64
  std::int64_t step = 0;
};

// Per frame, after one step: ‖ξ‖_F of the rule's direction (its tangent map of G: Π_W G, the
// horizontal part, or the canonical gradient; the run record's "tangent_grad_norm" is ‖Π_W G‖_F for
// every arm, see tangent_gradient_norm), ‖W_new − W‖_F, whether the cap acted, the gauge fraction
// ‖W skew(WᵀG)‖/‖Π_W G‖, and whether the polar factor came from the Gram route (batched_polar).
struct FrameReport {
  torch::Tensor direction_norm, step_norm, capped, gauge_fraction, polar_fallback;
};

// The frame formulas of core/ on batches of frames [B, d, r] (float64 for the step; the trainer's
// diagnostics and penalty use them too). Each is pinned to core/ by the differential test.
// Π_W(G) = G − W sym(WᵀG) (core: project_tangent).
torch::Tensor batched_project_tangent(const torch::Tensor& w, const torch::Tensor& g);
// ‖Π_W G‖_F per frame: the record's "tangent_grad_norm".
torch::Tensor tangent_gradient_norm(const torch::Tensor& w, const torch::Tensor& g);
// W skew(WᵀG) per frame: the gauge component (core: gauge_component; Table 8's gauge fraction is
// its norm over ‖Π_W G‖_F).
torch::Tensor batched_gauge_component(const torch::Tensor& w, const torch::Tensor& g);
// λ Σ ‖WᵀW − I‖²_F over the frames of W (any dtype, differentiable): the soft baseline's penalty
// (core: soft_orthogonality_penalty).
torch::Tensor soft_penalty(const torch::Tensor& w, double lambda);
// The polar factor M(MᵀM)^(-1/2) of every frame of M, by the SVD (UVᵀ) or the Gram route (an
// eigendecomposition of MᵀM). LAPACK's divide-and-conquer SVD can fail to converge where many
// singular values coincide (a square frame one tiny step from orthogonal: all of them are 1); the
// SVD route then takes the Gram route for that batch and sets *fell_back. A retraction's
// M = W + η with η tangent has MᵀM = I + ηᵀη ⪰ I, so the Gram route is well conditioned there.
torch::Tensor batched_polar(const torch::Tensor& m, Retraction route, bool* fell_back = nullptr);
// How a W_Q or W_K parameter ([H, d, r], or one frame [d, r]) is cut into frames: one per head
// ([H, d, r]), or the H heads side by side as one frame in St(d, H·r) ([1, d, H·r]; head h is
// columns h·r … (h+1)·r − 1).
enum class FrameLayout { kPerHead, kBlock };
torch::Tensor to_frames(const torch::Tensor& param, FrameLayout layout);
// The inverse: FRAMES in the shape of PARAM.
torch::Tensor from_frames(const torch::Tensor& frames, const torch::Tensor& param, FrameLayout layout);

// The batched rule's settings for an arm's rule of core/ (stiefel/arms.h): the same fields.
FrameHyper frame_hyper(const arms::FrameRule& rule);
FrameState make_frame_state(const torch::Tensor& w, const FrameHyper& hyper);

// One step on every frame of w (modified in place), float64 throughout.
FrameReport frame_step(torch::Tensor& w, const torch::Tensor& g, FrameState& state, const FrameHyper& hyper);

// ‖WᵀW − I‖_max per frame.
torch::Tensor isometry_error(const torch::Tensor& w);

}  // namespace stiefel::training
