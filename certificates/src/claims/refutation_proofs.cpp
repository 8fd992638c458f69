#include "refutation_proofs.h"

#include <stdexcept>
#include <stiefel/certificates/update_rule.h>

#include "../interval.h"
#include "attention_case.h"
#include "gradient_sequences.h"
#include "prop7_equivariance.h"

namespace stiefel::certificates {

namespace {

// A comparison the enclosures cannot decide (they overlap): the proof stops and says where.
struct Undecided : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A small dense matrix of enclosures, column-major.
struct IMatrix {
  int rows = 0, cols = 0;
  std::vector<Interval> a;
  IMatrix(int r, int c) : rows(r), cols(c), a(std::size_t(r * c), Interval(0)) {}
  Interval& operator()(int i, int j) { return a[std::size_t(j * rows + i)]; }
  const Interval& operator()(int i, int j) const { return a[std::size_t(j * rows + i)]; }
};

IMatrix exact(const Matrix<double>& m) {
  IMatrix out(int(m.rows()), int(m.cols()));
  for (int j = 0; j < out.cols; ++j)
    for (int i = 0; i < out.rows; ++i) out(i, j) = exact_interval(m(i, j));
  return out;
}

IMatrix operator*(const IMatrix& x, const IMatrix& y) {
  IMatrix out(x.rows, y.cols);
  for (int j = 0; j < y.cols; ++j)
    for (int i = 0; i < x.rows; ++i) {
      Interval s(0);
      for (int k = 0; k < x.cols; ++k) s += x(i, k) * y(k, j);
      out(i, j) = s;
    }
  return out;
}

IMatrix operator+(IMatrix x, const IMatrix& y) {
  for (std::size_t k = 0; k < x.a.size(); ++k) x.a[k] += y.a[k];
  return x;
}

IMatrix operator-(IMatrix x, const IMatrix& y) {
  for (std::size_t k = 0; k < x.a.size(); ++k) x.a[k] -= y.a[k];
  return x;
}

IMatrix operator*(const Interval& s, IMatrix x) {
  for (auto& v : x.a) v *= s;
  return x;
}

IMatrix transpose(const IMatrix& x) {
  IMatrix out(x.cols, x.rows);
  for (int j = 0; j < x.cols; ++j)
    for (int i = 0; i < x.rows; ++i) out(j, i) = x(i, j);
  return out;
}

Interval inner(const IMatrix& x, const IMatrix& y) {
  Interval s(0);
  for (std::size_t k = 0; k < x.a.size(); ++k) s += x.a[k] * y.a[k];
  return s;
}

Interval squared_norm(const IMatrix& x) {
  Interval s(0);
  for (const auto& v : x.a) s += boost::numeric::square(v);
  return s;
}

Interval norm(const IMatrix& x) { return sqrt(squared_norm(x)); }

IMatrix sym(const IMatrix& x) { return Interval(0.5) * (x + transpose(x)); }

// Π_W(G) = G − W sym(WᵀG).
IMatrix project_tangent(const IMatrix& w, const IMatrix& g) { return g - w * sym(transpose(w) * g); }

// x > y, decided by the enclosures or not at all.
bool greater(const Interval& x, const Interval& y, const char* what) {
  if (x.lower() > y.upper()) return true;
  if (x.upper() <= y.lower()) return false;
  throw Undecided(std::string("the enclosures cannot decide ") + what);
}

// The exact Q factor with a positive diagonal of R (Gram–Schmidt), of a full-rank d×r matrix: the
// point of St(d, r) that an exact Householder QR with fixed signs returns.
IMatrix orthonormal_factor(const IMatrix& m) {
  IMatrix q = m;
  for (int j = 0; j < m.cols; ++j) {
    for (int k = 0; k < j; ++k) {
      Interval p(0);
      for (int i = 0; i < m.rows; ++i) p += q(i, k) * m(i, j);
      for (int i = 0; i < m.rows; ++i) q(i, j) -= p * q(i, k);
    }
    Interval n2(0);
    for (int i = 0; i < m.rows; ++i) n2 += boost::numeric::square(q(i, j));
    if (!(n2.lower() > 0)) throw Undecided("a column of the frame is not independent of the others");
    const Interval n = sqrt(n2);
    for (int i = 0; i < m.rows; ++i) q(i, j) /= n;
  }
  return q;
}

// (AᵀA)^(−1/2) for a symmetric positive definite r×r M, in closed form for r ≤ 2:
// √M = (M + √det I) / √(tr + 2√det) for r = 2.
IMatrix inverse_sqrt_spd(const IMatrix& m) {
  if (m.rows == 1) {
    if (!(m(0, 0).lower() > 0)) throw Undecided("positive definiteness of the Gram matrix");
    IMatrix out(1, 1);
    out(0, 0) = Interval(1) / sqrt(m(0, 0));
    return out;
  }
  if (m.rows != 2) throw Undecided("the polar factor: a closed form exists here for r <= 2 only");
  const Interval det = m(0, 0) * m(1, 1) - m(0, 1) * m(1, 0), tr = m(0, 0) + m(1, 1);
  if (!(det.lower() > 0) || !(tr.lower() > 0)) throw Undecided("positive definiteness of the Gram matrix");
  const Interval s = sqrt(det), t = sqrt(tr + Interval(2) * s);
  // (M + s I)⁻¹ · t, with the 2×2 inverse written out; det(M + s I) = det + s tr + s² > 0.
  const Interval a = m(0, 0) + s, b = m(0, 1), c = m(1, 0), d = m(1, 1) + s;
  const Interval inv_det = t / (a * d - b * c);
  IMatrix out(2, 2);
  out(0, 0) = d * inv_det;
  out(0, 1) = -b * inv_det;
  out(1, 0) = -c * inv_det;
  out(1, 1) = a * inv_det;
  return out;
}

// polar(A) = A (AᵀA)^(−1/2): the retraction of §3.2 and the nearest point of St.
IMatrix polar(const IMatrix& a) { return a * inverse_sqrt_spd(transpose(a) * a); }

std::vector<IMatrix> exact_frames(const Frames<double>& w) {
  std::vector<IMatrix> out;
  for (const auto& f : w) out.push_back(orthonormal_factor(exact(f)));
  return out;
}

// Encloses `quantity` of a proof; established when it excludes every value the claim allows
// (lower > 0 for the violations below).
Proof violation(const Interval& excess, std::string quantity, std::string inputs) {
  Proof p;
  p.quantity = std::move(quantity);
  p.inputs = std::move(inputs);
  p.lower = lower_double(excess);
  p.upper = upper_double(excess);
  p.established = excess.lower() > 0 ? "interval" : "numeric";
  return p;
}

template <class Fn>
Proof guarded_proof(const std::string& quantity, Fn&& fn) {
  try {
    return fn();
  } catch (const RuleError&) {
    throw;
  } catch (const std::exception& e) {
    Proof p;
    p.quantity = quantity + " (not decided: " + e.what() + ")";
    p.decided = false;
    return p;
  }
}

constexpr const char* kFrameInputs =
    "frames: the exact orthonormal factor (Gram-Schmidt, positive diagonal) of the case's float64 frames; "
    "gradients, rate and eps: the case's float64 values, exactly";

// What a B2 sequence proof encloses, relative so that its size does not depend on the gradients'
// scale: the paper's bounds (refuted), or the corrected bounds (certified: the controls).
enum class SequenceQuantity {
  kJensen,                 // (‖m̂_t‖² − v̂_t) / v̂_t, the claim allows ≤ 0
  kJensenCorrected,        // (‖m̂_t‖² − C_t² v̂_t) / (C_t² v̂_t)
  kDisplacement,           // (‖η_t‖² − min(η, τ√r)²) / min(η, τ√r)²
  kDisplacementCorrected,  // (‖η_t‖² − min(η C_t, τ√r)²) / min(η C_t, τ√r)²
};

// C_t² of the corrected bound ‖m̂_t‖ ≤ C_t √v̂_t (s53_displacement.h's moment_constant), exactly:
// (1−β1)² (1−β2ᵗ) / ((1−β1ᵗ)² (1−β2)) · Σ_{k<t} (β1²/β2)ᵏ.
Interval moment_constant_squared(const Interval& beta1, const Interval& beta2, const Interval& p1, const Interval& p2,
                                 int t) {
  const Interval q = beta1 * beta1 / beta2;
  Interval sum(0), power(1);
  for (int k = 0; k < t; ++k) {
    sum += power;
    power *= q;
  }
  const Interval one(1);
  return boost::numeric::square(one - beta1) * (one - p2) / (boost::numeric::square(one - p1) * (one - beta2)) * sum;
}

// The B2 run of gradient_sequences.h's run_adam in intervals: the same draws, β1 = 9/10, β2 =
// 999/1000 and τ = 1/10 exactly, the polar retraction. Returns, over the steps and heads, the
// greatest enclosure (by its lower bound) of the quantity.
Interval adam_sequence_excess(const Case& c, SequenceQuantity what, int* at_step) {
  Rng rng(c.seed);
  const Frames<double> w0 = random_frames<double>(rng, {c.d, c.r}, c.heads);
  Frames<double> persistent;
  for (int h = 0; h < c.heads; ++h) persistent.push_back(gaussian_matrix<double>(rng, c.d, c.r));
  std::vector<IMatrix> w = exact_frames(w0);
  const Interval beta1 = Interval(9) / Interval(10), beta2 = Interval(999) / Interval(1000);
  const Interval lr = exact_interval(pow10(c.log10_lr)), eps = exact_interval(eps_of<double>(c));
  const Interval cap = Interval(1) / Interval(10) * sqrt(Interval(c.r));
  std::vector<IMatrix> m(std::size_t(c.heads), IMatrix(c.d, c.r));
  std::vector<Interval> v(std::size_t(c.heads), Interval(0));
  Interval p1(1), p2(1), best(0);
  bool first = true;
  for (int t = 0; t < c.steps; ++t) {
    const Frames<double> g = sequence_gradients<double>(rng, persistent, c, t, 1.0);
    p1 *= beta1;
    p2 *= beta2;
    const Interval b1 = Interval(1) - p1, b2 = Interval(1) - p2;
    const Interval ct2 = moment_constant_squared(beta1, beta2, p1, p2, t + 1);
    for (std::size_t h = 0; h < w.size(); ++h) {
      const IMatrix xi = project_tangent(w[h], exact(g[h]));
      m[h] = beta1 * project_tangent(w[h], m[h]) + (Interval(1) - beta1) * xi;
      v[h] = beta2 * v[h] + (Interval(1) - beta2) * squared_norm(xi);
      const IMatrix m_hat = (Interval(1) / b1) * m[h];
      const Interval v_hat = v[h] / b2;
      const Interval denom = sqrt(v_hat) + eps;
      IMatrix q(c.d, c.r);
      if (denom.lower() > 0) {
        q = (Interval(1) / denom) * m_hat;
      } else if (!(denom.upper() == 0)) {
        throw Undecided("whether sqrt(v_hat) + eps vanishes");
      }
      IMatrix eta = (-lr) * project_tangent(w[h], q);
      const Interval step = norm(eta);
      if (greater(step, cap, "whether the cap binds")) eta = (cap / step) * eta;
      Interval excess;
      if (what == SequenceQuantity::kJensen || what == SequenceQuantity::kJensenCorrected) {
        if (!(v_hat.lower() > 0)) continue;  // no gradient yet: nothing to compare
        const Interval allowed = what == SequenceQuantity::kJensen ? v_hat : ct2 * v_hat;
        excess = (squared_norm(m_hat) - allowed) / allowed;
      } else {
        const Interval bound = boost::numeric::min(what == SequenceQuantity::kDisplacement ? lr : lr * sqrt(ct2), cap);
        excess = (squared_norm(eta) - boost::numeric::square(bound)) / boost::numeric::square(bound);
      }
      if (first || excess.lower() > best.lower()) {
        best = excess;
        *at_step = t + 1;
        first = false;
      }
      w[h] = polar(w[h] + eta);
      m[h] = project_tangent(w[h], m[h]);
    }
  }
  if (first) throw Undecided("no step with a gradient");
  return best;
}

const char* sequence_quantity_text(SequenceQuantity what) {
  switch (what) {
    case SequenceQuantity::kJensen:
      return "(||m_hat_t||^2 - v_hat_t) / v_hat_t (the claim allows <= 0)";
    case SequenceQuantity::kJensenCorrected:
      return "(||m_hat_t||^2 - C_t^2 v_hat_t) / (C_t^2 v_hat_t), the corrected bound (allows <= 0)";
    case SequenceQuantity::kDisplacement:
      return "(||eta_t||^2 - min(eta, tau sqrt(r))^2) / min(eta, tau sqrt(r))^2 (the claim allows <= 0)";
    case SequenceQuantity::kDisplacementCorrected:
      return "(||eta_t||^2 - min(eta C_t, tau sqrt(r))^2) / min(eta C_t, tau sqrt(r))^2, the corrected bound "
             "(allows <= 0)";
  }
  return "?";
}

Proof adam_sequence_proof(const Case& c, SequenceQuantity what) {
  const std::string quantity = sequence_quantity_text(what);
  return guarded_proof(quantity, [&] {
    int at = 0;
    const Interval excess = adam_sequence_excess(c, what, &at);
    return violation(excess, quantity + ", greatest at step " + std::to_string(at), kFrameInputs);
  });
}

Proof decay_absorbed_proof(const Case& c) {
  const std::string quantity =
      "||polar((1 - eta lambda) W + xi) - polar(W + xi / (1 - eta lambda))||_F (the claim allows 0)";
  return guarded_proof(quantity, [&] {
    Rng rng(c.seed);
    const Matrix<double> w0 = random_stiefel<double>(rng, c.d, c.r);
    const Matrix<double> xi0 = random_tangent<double>(rng, w0) * pow10(c.log10_scale);
    const IMatrix w = orthonormal_factor(exact(w0));
    const IMatrix xi = project_tangent(w, exact(xi0));
    const Interval one_minus = Interval(1) - exact_interval(pow10(c.x));
    const IMatrix lhs = polar(one_minus * w + xi);
    const IMatrix rhs = polar(w + (Interval(1) / one_minus) * xi);
    return violation(norm(lhs - rhs), quantity + ", eta lambda = " + to_string(Interval(1) - one_minus),
                     "W: the exact orthonormal factor of the case's float64 frame; xi: the case's float64 tangent "
                     "vector projected exactly onto T_W St; eta lambda: the float64 value of 10^x, exactly");
  });
}

Proof normal_rescale_proof(const Case& c, bool scalar) {
  const std::string quantity =
      "||dL - alpha* L||_F, dL = X W_Q S W_K^T X^T, L = X W_Q W_K^T X^T, alpha* = <dL, L> / <L, L> "
      "(the claim allows 0: dL a multiple of L)";
  return guarded_proof(quantity, [&] {
    const AttentionCase<double> a = make_attention_case<double>(c);
    Rng rng(c.seed ^ 0x5d6e0f1a2b3c4d5eULL);  // normal_rescale_check's draw of S
    const Matrix<double> s_double =
        scalar ? Matrix<double>(Matrix<double>::Identity(c.r, c.r) * (0.5 + 1.5 * rng.uniform()))
               : Matrix<double>(random_symmetric<double>(rng, c.r));
    const IMatrix s = exact(s_double);
    const IMatrix wq = orthonormal_factor(exact(a.wq[0])), wk = orthonormal_factor(exact(a.wk[0]));
    const IMatrix x = exact(a.problem.x);
    const IMatrix logits = x * wq * transpose(wk) * transpose(x);
    const IMatrix change = x * (wq * s) * transpose(wk) * transpose(x);
    const Interval ll = inner(logits, logits);
    if (!(ll.lower() > 0)) throw Undecided("whether the logits vanish");
    const Interval alpha = inner(change, logits) / ll;
    return violation(norm(change - alpha * logits), quantity,
                     "W_Q, W_K: the exact orthonormal factors of the case's float64 frames; X and S: the case's "
                     "float64 values, exactly");
  });
}

}  // namespace

Proof prove_jensen_moment_bound(const Case& c) { return adam_sequence_proof(c, SequenceQuantity::kJensen); }
Proof prove_jensen_moment_bound_corrected(const Case& c) {
  return adam_sequence_proof(c, SequenceQuantity::kJensenCorrected);
}
Proof prove_displacement_bound(const Case& c) { return adam_sequence_proof(c, SequenceQuantity::kDisplacement); }
Proof prove_displacement_bound_corrected(const Case& c) {
  return adam_sequence_proof(c, SequenceQuantity::kDisplacementCorrected);
}

Proof prove_decay_absorbed_large_step(const Case& c) { return decay_absorbed_proof(c); }
Proof prove_decay_absorbed_below_one(const Case& c) {
  Case below = c;
  below.x = -std::abs(c.x);
  return decay_absorbed_proof(below);
}

Proof prove_normal_directions_rescale(const Case& c) { return normal_rescale_proof(c, false); }
Proof prove_normal_directions_rescale_scalar(const Case& c) { return normal_rescale_proof(c, true); }

}  // namespace stiefel::certificates
