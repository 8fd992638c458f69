// Fixed-step Riemannian SGD (B2-SGD / PA16, a Stiefel instance of Bonnabel 2013), Table 1:
//   W ← polar(W − η P(W, G)),  P = Π^h_W (Grassmann, the paper's PA16) or Π_W.
// Its displacement η‖P(W,G)‖_F is degree one in the gradient (Prop. 3(i)).
// Frozen (B2-frz, Table 6): η = 0, the retraction is still applied: W ← polar(W).
#pragma once

#include "retraction.h"
#include "scalar.h"
#include "tangent_projection.h"

namespace stiefel {

template <class Scalar>
struct RiemannianSgdHyper {
  Scalar lr = Scalar(2) / Scalar(100);
  TangentMap map = TangentMap::kGrassmann;
  Retraction retraction = Retraction::kPolarSvd;
};

// The tangent displacement ξ_sgd = −η P(W, G) of one step.
template <class Scalar>
Matrix<Scalar> riemannian_sgd_displacement(const Matrix<Scalar>& w, const Matrix<Scalar>& g,
                                           const RiemannianSgdHyper<Scalar>& hyper) {
  return -hyper.lr * apply_tangent_map(hyper.map, w, g);
}

template <class Scalar>
Frames<Scalar> riemannian_sgd_step(const Frames<Scalar>& frames, const Frames<Scalar>& grads,
                                   const RiemannianSgdHyper<Scalar>& hyper) {
  Frames<Scalar> out;
  for (std::size_t h = 0; h < frames.size(); ++h)
    out.push_back(retract(hyper.retraction, frames[h], riemannian_sgd_displacement(frames[h], grads.at(h), hyper)));
  return out;
}

// The rule presets of the paper (Table 1, §4.5): PA16's fixed-step rule on the horizontal space,
// the same rule with the Stiefel projection, and the frozen control (η_R = 0).
template <class Scalar>
RiemannianSgdHyper<Scalar> pa16_hyper(Scalar lr) {
  RiemannianSgdHyper<Scalar> h;
  h.lr = lr;
  return h;
}
template <class Scalar>
RiemannianSgdHyper<Scalar> sgd_stiefel_hyper(Scalar lr) {
  RiemannianSgdHyper<Scalar> h = pa16_hyper(lr);
  h.map = TangentMap::kStiefel;
  return h;
}
template <class Scalar>
RiemannianSgdHyper<Scalar> frozen_hyper() {
  RiemannianSgdHyper<Scalar> h;
  h.lr = Scalar(0);
  return h;
}

}  // namespace stiefel
