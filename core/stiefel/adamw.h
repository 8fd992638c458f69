// Euclidean AdamW with decoupled weight decay (Loshchilov & Hutter 2019), the A2 baseline, in
// PyTorch's order:  W ← (1 − lr λ) W;  m ← β1 m + (1−β1) G;  v ← β2 v + (1−β2) G∘G;
//                   W ← W − lr · m̂ / (√v̂ + ε),  m̂ = m/(1−β1ᵗ), v̂ = v/(1−β2ᵗ).
#pragma once

#include <cmath>

#include "scalar.h"

namespace stiefel {

template <class Scalar>
struct AdamWHyper {
  // Defaults are exact decimals in Scalar (0.9 as 9/10, not as the nearest double).
  Scalar lr = Scalar(1) / Scalar(1000);
  Scalar beta1 = Scalar(9) / Scalar(10);
  Scalar beta2 = Scalar(999) / Scalar(1000);
  Scalar eps = Scalar(1) / Scalar(100000000);
  Scalar weight_decay = Scalar(5) / Scalar(100);
};

template <class Scalar>
struct AdamWState {
  Frames<Scalar> m, v;
  long step = 0;
};

template <class Scalar>
AdamWState<Scalar> make_adamw_state(const Frames<Scalar>& params) {
  AdamWState<Scalar> s;
  for (const auto& p : params) {
    s.m.push_back(Matrix<Scalar>::Zero(p.rows(), p.cols()));
    s.v.push_back(Matrix<Scalar>::Zero(p.rows(), p.cols()));
  }
  return s;
}

template <class Scalar>
struct AdamWResult {
  Frames<Scalar> params;
  AdamWState<Scalar> state;
};

template <class Scalar>
AdamWResult<Scalar> adamw_step(const Frames<Scalar>& params, const Frames<Scalar>& grads,
                               const AdamWState<Scalar>& state, const AdamWHyper<Scalar>& hyper) {
  using std::pow;
  AdamWResult<Scalar> out{params, state};
  const long t = state.step + 1;
  out.state.step = t;
  const Scalar bias1 = Scalar(1) - pow(hyper.beta1, Scalar(t));
  const Scalar bias2 = Scalar(1) - pow(hyper.beta2, Scalar(t));
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Matrix<Scalar>& g = grads.at(i);
    Matrix<Scalar>& p = out.params[i];
    Matrix<Scalar>& m = out.state.m[i];
    Matrix<Scalar>& v = out.state.v[i];
    p *= Scalar(1) - hyper.lr * hyper.weight_decay;
    m = hyper.beta1 * m + (Scalar(1) - hyper.beta1) * g;
    v = hyper.beta2 * v + (Scalar(1) - hyper.beta2) * g.cwiseProduct(g);
    p.array() -= hyper.lr * (m.array() / bias1) / ((v.array() / bias2).sqrt() + hyper.eps);
  }
  return out;
}

}  // namespace stiefel
