// The identities of St(d,r) and of its projectors, written once for the core tests and the
// certificate (W: d×r with WᵀW = I; A, B, X: d×r). A projector P (Π_W, Π^h_W or a mutant of
// them) is any callable X ↦ P(X). Paper §3.2, §5.3; Absil et al. (3.35).
//   P(P A) = P A,  ⟨P A, B⟩ = ⟨A, P B⟩,  P X = 0 on its kernel,  P X = X on its range,
//   sym(WᵀX) = 0 for X in T_W St,  WᵀW = I,  ‖Π_W g‖² = ‖Π^h_W g‖² + ‖V‖² with V = W skew(Wᵀg) (12).
#pragma once

#include <stiefel/properties/identity.h>
#include <stiefel/tangent_projection.h>

namespace stiefel::properties {

// ⟨A, B⟩ = Σ_ij A_ij B_ij.
template <class Scalar>
Scalar frobenius_inner(const Matrix<Scalar>& a, const Matrix<Scalar>& b) {
  return (a.array() * b.array()).sum();
}

// P(P A) = P A for P A = pa, normalised by ‖A‖.
template <class Scalar, class Projector>
Identity<Scalar> projector_idempotent(const Projector& p, const Matrix<Scalar>& pa, const Scalar& a_norm,
                                      double factor) {
  return matrix_identity<Scalar>("P(P A) = P A", pa, p(pa), a_norm, factor);
}

// ⟨P A, B⟩ = ⟨A, P B⟩, normalised by ‖A‖‖B‖.
template <class Scalar, class Projector>
Identity<Scalar> projector_self_adjoint(const Projector& p, const Matrix<Scalar>& a, const Matrix<Scalar>& b,
                                        double factor) {
  return scalar_identity<Scalar>("<P A, B> = <A, P B>", frobenius_inner<Scalar>(a, p(b)),
                                 frobenius_inner<Scalar>(p(a), b), a.norm() * b.norm(), factor);
}

// P X = 0 for X in the kernel of P (the normal space WS of Π_W), normalised by `normaliser`.
template <class Scalar, class Projector>
Identity<Scalar> projector_annihilates(const Projector& p, const Matrix<Scalar>& x, const Scalar& normaliser,
                                       double factor) {
  const Matrix<Scalar> px = p(x);
  return matrix_identity<Scalar>("P X = 0 on the kernel", Matrix<Scalar>::Zero(px.rows(), px.cols()), px, normaliser,
                                 factor);
}

// P X = X for X in the range of P, normalised by ‖X‖.
template <class Scalar, class Projector>
Identity<Scalar> projector_fixes(const Projector& p, const Matrix<Scalar>& x, double factor) {
  return matrix_identity<Scalar>("P X = X on the range", x, p(x), x.norm(), factor);
}

// sym(WᵀX) = 0: X lies in T_W St.
template <class Scalar>
Identity<Scalar> tangent_at(const Matrix<Scalar>& w, const Matrix<Scalar>& x, const Scalar& normaliser, double factor) {
  return matrix_identity<Scalar>("sym(W^T X) = 0", Matrix<Scalar>::Zero(w.cols(), w.cols()), sym(w.transpose() * x),
                                 normaliser, factor);
}

// WᵀW = I, residual max|WᵀW − I| (the isometry error the paper reports, §4.1), normaliser 1.
template <class Scalar>
Identity<Scalar> on_stiefel(const Matrix<Scalar>& w, double factor) {
  Identity<Scalar> id{"W^T W = I",       Matrix<Scalar>::Identity(w.cols(), w.cols()),
                      w.transpose() * w, isometry_error(w),
                      Scalar(1),         factor};
  return id;
}

// (12): ‖Π_W g‖² = ‖Π^h_W g‖² + ‖V‖², V the gauge part W skew(Wᵀg); normalised by ‖g‖².
template <class Scalar>
Identity<Scalar> gauge_split(const Matrix<Scalar>& w, const Matrix<Scalar>& g, const Matrix<Scalar>& vertical,
                             double factor) {
  return scalar_identity<Scalar>("|Pi g|^2 = |Pi^h g|^2 + |W skew(W^T g)|^2", project_tangent(w, g).squaredNorm(),
                                 Scalar(project_horizontal(w, g).squaredNorm() + vertical.squaredNorm()),
                                 g.squaredNorm(), factor);
}

}  // namespace stiefel::properties
