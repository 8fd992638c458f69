// Riemannian Adam on St(d,r)^H, one step, in exactly the order of §3.2 (per frame h):
//   ξ = P(W, G)                          tangent map: Π_W (B2), Π^h_W, or ∇^can (B2m-can)
//   m ← β1 Π(m) + (1−β1) ξ               previous m re-projected at the current point first
//   v ← β2 v + (1−β2) ‖ξ‖²_F            per frame (B2); ‖ξ‖²_F/(d·r), the mean over the entries
//                                        (B2-mean); per column; or ξ∘ξ elementwise (B2m)
//   m̂ = m/(1−β1ᵗ), v̂ = v/(1−β2ᵗ)
//   η = −lr · Π(m̂ / (√v̂ + ε))          re-projected quotient
//   η ← η · min(1, τ√r / ‖η‖_F)          per-frame cap (B2; none for B2m)
//   W ← polar(W + η),  m ← Π_{W}(m)      retraction, then m re-projected at the new point.
// A pure function of (frames, gradients, state, hyper): replayable and checkpointable.
#pragma once

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "retraction.h"
#include "scalar.h"
#include "tangent_projection.h"

namespace stiefel {

enum class SecondMoment {
  kPerFrame,      // one scalar per frame (B2; Bécigneul & Ganea 2019)
  kPerFrameMean,  // one scalar per frame, the mean of ξ∘ξ over the d·r entries (B2-mean: the
                  // reading of §3.2 under which the cap binds "on almost every step")
  kPerColumn,     // one scalar per column (Prop. 7: also O(d)-equivariant)
  kElementwise,   // Adam's per-entry moment (B2m; not equivariant)
  kPerRow,        // one scalar per row: the converse of Prop. 7 (not equivariant; a control)
};

template <class Scalar>
struct RiemannianAdamHyper {
  // Defaults are exact decimals in Scalar (0.9 as 9/10, not as the nearest double).
  Scalar lr = Scalar(1);
  Scalar beta1 = Scalar(9) / Scalar(10);
  Scalar beta2 = Scalar(999) / Scalar(1000);
  Scalar eps = Scalar(1) / Scalar(100000000);
  std::optional<Scalar> cap_tau = Scalar(1) / Scalar(10);  // ‖η‖_F ≤ τ√r; nullopt: no cap
  TangentMap map = TangentMap::kStiefel;
  SecondMoment moment = SecondMoment::kPerFrame;
  Retraction retraction = Retraction::kPolarSvd;
};

template <class Scalar>
struct RiemannianAdamState {
  Frames<Scalar> m;  // first moments, d×r, tangent at the current frames
  Frames<Scalar> v;  // second moments: 1×1, 1×r or d×r per frame
  long step = 0;
};

// What one step did, per frame (for run records and certificates).
template <class Scalar>
struct StepReport {
  std::vector<Scalar> tangent_norm;  // ‖ξ‖_F
  std::vector<Scalar> step_norm;     // ‖η‖_F after the cap
  std::vector<bool> capped;          // whether the cap rescaled η
};

template <class Scalar>
struct RiemannianAdamResult {
  Frames<Scalar> frames;
  RiemannianAdamState<Scalar> state;
  StepReport<Scalar> report;
};

// A zero state for frames of the given shapes.
template <class Scalar>
RiemannianAdamState<Scalar> make_riemannian_adam_state(const Frames<Scalar>& frames, SecondMoment moment) {
  RiemannianAdamState<Scalar> s;
  for (const auto& w : frames) {
    s.m.push_back(Matrix<Scalar>::Zero(w.rows(), w.cols()));
    switch (moment) {
      case SecondMoment::kPerFrame:
      case SecondMoment::kPerFrameMean:
        s.v.push_back(Matrix<Scalar>::Zero(1, 1));
        break;
      case SecondMoment::kPerColumn:
        s.v.push_back(Matrix<Scalar>::Zero(1, w.cols()));
        break;
      case SecondMoment::kElementwise:
        s.v.push_back(Matrix<Scalar>::Zero(w.rows(), w.cols()));
        break;
      case SecondMoment::kPerRow:
        s.v.push_back(Matrix<Scalar>::Zero(w.rows(), 1));
        break;
    }
  }
  return s;
}

namespace detail {

template <class Scalar>
void accumulate_second_moment(SecondMoment kind, Scalar beta2, const Matrix<Scalar>& xi, Matrix<Scalar>& v) {
  const Scalar c = Scalar(1) - beta2;
  switch (kind) {
    case SecondMoment::kPerFrame:
      v(0, 0) = beta2 * v(0, 0) + c * xi.squaredNorm();
      break;
    case SecondMoment::kPerFrameMean:
      v(0, 0) = beta2 * v(0, 0) + c * (xi.squaredNorm() / Scalar(xi.rows() * xi.cols()));
      break;
    case SecondMoment::kPerColumn:
      v = beta2 * v + c * xi.colwise().squaredNorm();
      break;
    case SecondMoment::kElementwise:
      v = beta2 * v + c * xi.cwiseProduct(xi);
      break;
    case SecondMoment::kPerRow:
      v = beta2 * v + c * xi.rowwise().squaredNorm();
      break;
  }
}

// x / (√v + ε), defined as 0 when √v + ε = 0: then ε = 0 and every past tangent gradient of that
// entry was zero, so its first moment is zero too (no gradient, no step).
template <class Scalar>
Scalar adam_divide(const Scalar& x, const Scalar& v, const Scalar& eps) {
  using std::sqrt;
  const Scalar denom = sqrt(v) + eps;
  return denom > Scalar(0) ? Scalar(x / denom) : Scalar(0);
}

// m̂ / (√v̂ + ε) with the moment broadcast to the shape of m̂.
template <class Scalar>
Matrix<Scalar> adam_quotient(SecondMoment kind, const Matrix<Scalar>& m_hat, const Matrix<Scalar>& v_hat, Scalar eps) {
  Matrix<Scalar> q = m_hat;
  for (Index j = 0; j < q.cols(); ++j)
    for (Index i = 0; i < q.rows(); ++i) {
      const Scalar& v = kind == SecondMoment::kPerFrame || kind == SecondMoment::kPerFrameMean ? v_hat(0, 0)
                        : kind == SecondMoment::kPerColumn                                     ? v_hat(0, j)
                        : kind == SecondMoment::kPerRow                                        ? v_hat(i, 0)
                                                                                               : v_hat(i, j);
      q(i, j) = adam_divide(m_hat(i, j), v, eps);
    }
  return q;
}

}  // namespace detail

// The tangent step η of every frame and the updated moments, before the retraction: the first
// six stages of §3.2. The returned first moments are still tangent at the current frames.
template <class Scalar>
struct RiemannianAdamDirection {
  Frames<Scalar> eta;
  RiemannianAdamState<Scalar> state;
  StepReport<Scalar> report;
};

template <class Scalar>
RiemannianAdamDirection<Scalar> riemannian_adam_direction(const Frames<Scalar>& frames, const Frames<Scalar>& grads,
                                                          const RiemannianAdamState<Scalar>& state,
                                                          const RiemannianAdamHyper<Scalar>& hyper) {
  using std::pow;
  using std::sqrt;
  if (grads.size() != frames.size() || state.m.size() != frames.size() || state.v.size() != frames.size())
    throw std::invalid_argument("riemannian_adam_step: " + std::to_string(frames.size()) + " frames but " +
                                std::to_string(grads.size()) + " gradients and " + std::to_string(state.m.size()) +
                                " moments");
  RiemannianAdamDirection<Scalar> out{{}, state, {}};
  const long t = state.step + 1;
  out.state.step = t;
  const Scalar bias1 = Scalar(1) - pow(hyper.beta1, Scalar(t));
  const Scalar bias2 = Scalar(1) - pow(hyper.beta2, Scalar(t));
  for (std::size_t h = 0; h < frames.size(); ++h) {
    const Matrix<Scalar>& w = frames[h];
    Matrix<Scalar>& m = out.state.m[h];
    Matrix<Scalar>& v = out.state.v[h];
    if (grads[h].rows() != w.rows() || grads[h].cols() != w.cols())
      throw std::invalid_argument("riemannian_adam_step: gradient " + std::to_string(h) +
                                  " does not have the shape of its frame");
    const Matrix<Scalar> xi = apply_tangent_map(hyper.map, w, grads[h]);
    m = hyper.beta1 * reproject(hyper.map, w, m) + (Scalar(1) - hyper.beta1) * xi;
    detail::accumulate_second_moment(hyper.moment, hyper.beta2, xi, v);
    const Matrix<Scalar> m_hat = m / bias1;
    const Matrix<Scalar> v_hat = v / bias2;
    Matrix<Scalar> eta =
        -hyper.lr * reproject(hyper.map, w, detail::adam_quotient(hyper.moment, m_hat, v_hat, hyper.eps));
    bool capped = false;
    if (hyper.cap_tau) {
      const Scalar cap = *hyper.cap_tau * sqrt(Scalar(w.cols()));
      const Scalar norm = eta.norm();
      if (norm > cap) {
        eta *= cap / norm;
        capped = true;
      }
    }
    out.report.tangent_norm.push_back(xi.norm());
    out.report.step_norm.push_back(eta.norm());
    out.report.capped.push_back(capped);
    out.eta.push_back(std::move(eta));
  }
  return out;
}

// The last two stages: W ← R_W(η), then m re-projected at the new point.
template <class Scalar>
RiemannianAdamResult<Scalar> finish_riemannian_adam_step(const Frames<Scalar>& frames,
                                                         RiemannianAdamDirection<Scalar> dir,
                                                         const RiemannianAdamHyper<Scalar>& hyper) {
  RiemannianAdamResult<Scalar> out{{}, std::move(dir.state), std::move(dir.report)};
  for (std::size_t h = 0; h < frames.size(); ++h) {
    out.frames.push_back(retract(hyper.retraction, frames[h], dir.eta[h]));
    out.state.m[h] = reproject(hyper.map, out.frames[h], out.state.m[h]);
  }
  return out;
}

// One full step: the direction, the retraction, then m re-projected at the new point.
template <class Scalar>
RiemannianAdamResult<Scalar> riemannian_adam_step(const Frames<Scalar>& frames, const Frames<Scalar>& grads,
                                                  const RiemannianAdamState<Scalar>& state,
                                                  const RiemannianAdamHyper<Scalar>& hyper) {
  return finish_riemannian_adam_step(frames, riemannian_adam_direction(frames, grads, state, hyper), hyper);
}

// The rule presets of the paper (Table 1, §4.3).
template <class Scalar>
RiemannianAdamHyper<Scalar> b2_hyper(Scalar lr, Scalar eps) {  // scalar v, Stiefel, cap τ = 0.1
  RiemannianAdamHyper<Scalar> h;
  h.lr = lr;
  h.eps = eps;
  return h;
}
template <class Scalar>
RiemannianAdamHyper<Scalar> per_column_hyper(Scalar lr, Scalar eps) {
  RiemannianAdamHyper<Scalar> h = b2_hyper(lr, eps);
  h.moment = SecondMoment::kPerColumn;
  return h;
}
template <class Scalar>
RiemannianAdamHyper<Scalar> b2_mean_hyper(Scalar lr, Scalar eps) {  // v = mean of ξ∘ξ, cap τ = 0.1
  RiemannianAdamHyper<Scalar> h = b2_hyper(lr, eps);
  h.moment = SecondMoment::kPerFrameMean;
  return h;
}
template <class Scalar>
RiemannianAdamHyper<Scalar> b2_grassmann_hyper(Scalar lr, Scalar eps) {  // B2 with the horizontal map
  RiemannianAdamHyper<Scalar> h = b2_hyper(lr, eps);
  h.map = TangentMap::kGrassmann;
  return h;
}
template <class Scalar>
RiemannianAdamHyper<Scalar> b2m_hyper(Scalar adam_lr, Scalar eps) {  // elementwise v, no cap
  RiemannianAdamHyper<Scalar> h = b2_hyper(adam_lr, eps);
  h.moment = SecondMoment::kElementwise;
  h.cap_tau.reset();
  return h;
}
template <class Scalar>
RiemannianAdamHyper<Scalar> b2m_can_hyper(Scalar adam_lr, Scalar eps) {  // B2m with ∇^can
  RiemannianAdamHyper<Scalar> h = b2m_hyper(adam_lr, eps);
  h.map = TangentMap::kCanonical;
  return h;
}

}  // namespace stiefel
