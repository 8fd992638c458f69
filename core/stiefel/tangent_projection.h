// Projections at W ∈ St(d,r) (W: d×r, WᵀW = I; G: d×r ambient). Paper §3.2 and §5.3.
//   T_W St = {WΩ + W⊥K : Ωᵀ = −Ω} = H_W ⊕ G_W (orthogonal), normal space N_W = {WS : Sᵀ = S}.
// Identities an implementation must satisfy: Π_W Π_W = Π_W, ⟨Π_W a, b⟩ = ⟨a, Π_W b⟩,
// Π_W(WS) = 0 for symmetric S, Π_W ξ = ξ for tangent ξ, ‖Π_W g‖² = ‖Π^h_W g‖² + ‖W skew(Wᵀg)‖² (12).
#pragma once

#include "scalar.h"

namespace stiefel {

// Π_W(G) = G − W sym(WᵀG): orthogonal projector onto T_W St. Absil et al. (3.35), paper (3).
template <class Scalar>
Matrix<Scalar> project_tangent(const Matrix<Scalar>& w, const Matrix<Scalar>& g) {
  return g - w * sym(w.transpose() * g);
}

// Π^h_W(G) = (I − WWᵀ)G: Grassmann horizontal projector onto H_W (removes the block WWᵀG).
template <class Scalar>
Matrix<Scalar> project_horizontal(const Matrix<Scalar>& w, const Matrix<Scalar>& g) {
  return g - w * (w.transpose() * g);
}

// Π_{G_W}(G) = W skew(WᵀG): the per-frame O(r) component (Table 8).
template <class Scalar>
Matrix<Scalar> gauge_component(const Matrix<Scalar>& w, const Matrix<Scalar>& g) {
  return w * skew(w.transpose() * g);
}

// skew(W_QᵀG_Q + W_KᵀG_K): the joint O(r) gauge component of a (W_Q, W_K) pair (Prop. 1).
template <class Scalar>
Matrix<Scalar> joint_gauge_component(const Matrix<Scalar>& wq, const Matrix<Scalar>& gq, const Matrix<Scalar>& wk,
                                     const Matrix<Scalar>& gk) {
  return skew(wq.transpose() * gq + wk.transpose() * gk);
}

// ∇^can = G − W GᵀW: the Riemannian gradient for the canonical metric, paper (4)
// (Edelman, Arias & Smith 1998, (2.53)).
template <class Scalar>
Matrix<Scalar> canonical_gradient(const Matrix<Scalar>& w, const Matrix<Scalar>& g) {
  return g - w * (g.transpose() * w);
}

// g_c(a, b) = tr(aᵀ(I − ½WWᵀ)b): the canonical metric on T_W St (§5.3).
template <class Scalar>
Scalar canonical_inner(const Matrix<Scalar>& w, const Matrix<Scalar>& a, const Matrix<Scalar>& b) {
  const Matrix<Scalar> wa = w.transpose() * a, wb = w.transpose() * b;
  return (a.array() * b.array()).sum() - (wa.array() * wb.array()).sum() / Scalar(2);
}

template <class Scalar>
Scalar canonical_norm_squared(const Matrix<Scalar>& w, const Matrix<Scalar>& xi) {
  return canonical_inner(w, xi, xi);
}

// Which map turns a Euclidean gradient into the tangent direction of an update rule.
enum class TangentMap {
  kStiefel,    // Π_W, embedded metric
  kGrassmann,  // Π^h_W, horizontal only
  kCanonical,  // ∇^can
};

template <class Scalar>
Matrix<Scalar> apply_tangent_map(TangentMap map, const Matrix<Scalar>& w, const Matrix<Scalar>& g) {
  switch (map) {
    case TangentMap::kStiefel:
      return project_tangent(w, g);
    case TangentMap::kGrassmann:
      return project_horizontal(w, g);
    case TangentMap::kCanonical:
      return canonical_gradient(w, g);
  }
  return project_tangent(w, g);
}

// The projector that re-projects moments and quotients for a given map: Π^h for the Grassmann
// rules (it keeps them horizontal), Π_W otherwise (∇^can is not itself a projector).
template <class Scalar>
Matrix<Scalar> reproject(TangentMap map, const Matrix<Scalar>& w, const Matrix<Scalar>& x) {
  return map == TangentMap::kGrassmann ? project_horizontal(w, x) : project_tangent(w, x);
}

}  // namespace stiefel
