// Prop. 7, §5.3 and Table 9: the Riemannian Adam with a scalar (per-frame, per-column or mean)
// second moment is O(d)-equivariant, Φ(QᵀW, Qᵀg) = QᵀΦ(W, g), over many steps; a moment that varies
// down the columns (elementwise, or row-weighted √(b_i v_j) with b not constant) is not.
#pragma once

#include "check_support.h"

namespace stiefel::certificates {

enum class EquivarianceMutant { kNone, kElementwiseMoment, kAdamW };
enum class ConverseMutant { kNone, kScalarMoment };
enum class ConverseFamilyMutant { kNone, kConstantWeights };
enum class OrderOfWMutant { kNone, kScalarMoment, kSignedPermutation };
enum class Table9BoundMutant { kNone, kStaleSecondMoment };

template <class S>
Frames<S> rotate(const Matrix<S>& qt, const Frames<S>& f) {
  Frames<S> out;
  for (const auto& m : f) out.push_back(qt * m);
  return out;
}

// kAdamW: AdamW with core's default decay 0.05; kAdam: the same with zero decay (Table 9's row).
// kAdamStaleMoment: Adam (zero decay) whose quotient reads the second moment before this step's
// update (at t = 1 it divides by eps alone), a control of table9-violation-displacement-bound.
enum class Rule { kScalar, kPerColumn, kElementwise, kAdamW, kAdam, kPerRow, kMean, kRowWeighted, kAdamStaleMoment };

// f(W) = −Σ_h tr(W_hᵀ A W_h N): ∇f = −2 A W N (A symmetric, N diagonal). N = I is the paper's
// Table 9 problem; N = diag(1, …, r)/r (Brockett's cost) is not constant on O(d) when r = d.
template <class S>
Frames<S> trace_problem_gradient(const Matrix<S>& a, const Vector<S>& n, const Frames<S>& w) {
  Frames<S> g;
  for (const auto& f : w) g.push_back(S(-2) * a * f * n.asDiagonal());
  return g;
}

// A member of the family of Prop. 7's converse: the Riemannian Adam (B2's projection, cap and
// polar retraction, by the Gram route) whose second moment is √V_ij = √(b_i v_j), v_j the per-column moment and b a
// fixed positive row weight. √V is constant down each column iff b is constant.
template <class S>
std::vector<Frames<S>> run_row_weighted(const Matrix<S>& a, const Vector<S>& n, Frames<S> w, int steps, const S& lr,
                                        const S& eps, const Vector<S>& b) {
  const RiemannianAdamHyper<S> h = b2_hyper<S>(lr, eps);
  Frames<S> m, v;
  for (const auto& f : w) {
    m.push_back(Matrix<S>::Zero(f.rows(), f.cols()));
    v.push_back(Matrix<S>::Zero(1, f.cols()));
  }
  std::vector<Frames<S>> out;
  for (int t = 1; t <= steps; ++t) {
    const Frames<S> g = trace_problem_gradient(a, n, w);
    const S bias1 = S(1) - pow(h.beta1, S(t)), bias2 = S(1) - pow(h.beta2, S(t));
    for (std::size_t k = 0; k < w.size(); ++k) {
      const Matrix<S> xi = project_tangent(w[k], g[k]);
      m[k] = h.beta1 * project_tangent(w[k], m[k]) + (S(1) - h.beta1) * xi;
      v[k] = h.beta2 * v[k] + (S(1) - h.beta2) * xi.colwise().squaredNorm();
      Matrix<S> q = m[k] / bias1;
      for (Index j = 0; j < q.cols(); ++j)
        for (Index i = 0; i < q.rows(); ++i) q(i, j) /= sqrt(b(i) * v[k](0, j) / bias2) + eps;
      Matrix<S> eta = -lr * project_tangent(w[k], q);
      const S cap = *h.cap_tau * sqrt(S(w[k].cols()));
      if (eta.norm() > cap) eta *= cap / eta.norm();
      w[k] = retract_polar_gram<S>(w[k], eta);  // equal to the SVD route (s2-polar-routes-agree), cheaper
      m[k] = project_tangent(w[k], m[k]);
    }
    out.push_back(w);
  }
  return out;
}

// Runs `rule` for T steps on f and returns every iterate.
template <class S>
std::vector<Frames<S>> run_trace_problem(Rule rule, const Matrix<S>& a, const Vector<S>& n, Frames<S> w, int steps,
                                         const S& lr, const S& eps, const Vector<S>& row_weight = {}) {
  if (rule == Rule::kRowWeighted) return run_row_weighted<S>(a, n, std::move(w), steps, lr, eps, row_weight);
  std::vector<Frames<S>> out;
  if (rule == Rule::kAdamStaleMoment) {
    const AdamWHyper<S> h;
    auto st = make_adamw_state<S>(w);
    for (int t = 1; t <= steps; ++t) {
      const Frames<S> g = trace_problem_gradient(a, n, w);
      const S bias1 = S(1) - pow(h.beta1, S(t)), bias2 = S(1) - pow(h.beta2, S(t));
      for (std::size_t k = 0; k < w.size(); ++k) {
        st.m[k] = h.beta1 * st.m[k] + (S(1) - h.beta1) * g[k];
        w[k].array() -= lr * (st.m[k].array() / bias1) / ((st.v[k].array() / bias2).sqrt() + eps);
        st.v[k] = h.beta2 * st.v[k] + (S(1) - h.beta2) * g[k].cwiseProduct(g[k]);
      }
      out.push_back(w);
    }
    return out;
  }
  if (rule == Rule::kAdamW || rule == Rule::kAdam) {
    AdamWHyper<S> h;
    h.lr = lr;
    h.eps = eps;
    if (rule == Rule::kAdam) h.weight_decay = S(0);
    auto st = make_adamw_state<S>(w);
    for (int t = 0; t < steps; ++t) {
      auto next = adamw_step<S>(w, trace_problem_gradient(a, n, w), st, h);
      w = std::move(next.params);
      st = std::move(next.state);
      out.push_back(w);
    }
    return out;
  }
  RiemannianAdamHyper<S> h = b2_hyper<S>(lr, eps);
  if (rule == Rule::kPerColumn) h.moment = SecondMoment::kPerColumn;
  if (rule == Rule::kPerRow) h.moment = SecondMoment::kPerRow;
  if (rule == Rule::kMean) h.moment = SecondMoment::kPerFrameMean;
  if (rule == Rule::kElementwise) h = b2m_hyper<S>(lr, eps);
  h.retraction = Retraction::kPolarGram;  // equal to the SVD route (s2-polar-routes-agree), cheaper
  auto st = make_riemannian_adam_state<S>(w, h.moment);
  for (int t = 0; t < steps; ++t) {
    auto next = riemannian_adam_step<S>(w, trace_problem_gradient(a, n, w), st, h);
    w = std::move(next.frames);
    st = std::move(next.state);
    out.push_back(w);
  }
  return out;
}

// A uniformly drawn signed permutation matrix of order d.
template <class S>
Matrix<S> random_signed_permutation(Rng& rng, Index d) {
  std::vector<Index> order(std::size_t(d), 0);
  for (Index i = 0; i < d; ++i) order[std::size_t(i)] = i;
  for (Index i = d - 1; i > 0; --i)
    std::swap(order[std::size_t(i)], order[std::size_t(rng.bits() % std::uint64_t(i + 1))]);
  Matrix<S> q = Matrix<S>::Zero(d, d);
  for (Index i = 0; i < d; ++i) q(order[std::size_t(i)], i) = (rng.bits() & 1) ? S(1) : S(-1);
  return q;
}

// max over steps and heads of max|W_t^(Q) − QᵀW_t|, and the largest |entry| of the iterates. With
// `scaled`, the runs start from 10^x W_0 (x = c.x), formed in float64.
template <class S>
std::pair<S, S> equivariance_violation(Rule rule, const Case& c, std::uint64_t q_seed, bool brockett = true,
                                       bool scaled = false, bool signed_permutation = false) {
  Rng rng(c.seed);
  const Matrix<S> a = random_symmetric<S>(rng, c.d);
  Vector<S> n = Vector<S>::Ones(c.r);
  if (brockett)
    for (int j = 0; j < c.r; ++j) n(j) = S(j + 1) / S(c.r);
  Frames<S> w0;
  if (scaled) {
    for (const auto& f : random_frames<double>(rng, {c.d, c.r}, c.heads))
      w0.push_back(Matrix<double>(pow10(c.x) * f).template cast<S>());
  } else {
    w0 = random_frames<S>(rng, {c.d, c.r}, c.heads);
  }
  Rng qrng(q_seed);
  // A signed permutation (an orthogonal Q under which every elementwise rule is equivariant) where asked.
  const Matrix<S> q = signed_permutation ? random_signed_permutation<S>(qrng, c.d) : random_orthogonal<S>(qrng, c.d);
  const Matrix<S> qt = q.transpose();
  const S lr(pow10(c.log10_lr)), eps = eps_of<S>(c);
  // Row weights of the converse's family: b_i = 10^(x u_i), u_i uniform in [-1, 1] (spread 10^±x).
  Vector<S> b = Vector<S>::Ones(c.d);
  if (rule == Rule::kRowWeighted) {
    Rng brng(c.seed ^ 0x7f4a7c159e3779b9ULL);
    for (int i = 0; i < c.d; ++i) b(i) = S(pow10(c.x * (2 * brng.uniform() - 1)));
  }
  const auto plain = run_trace_problem<S>(rule, a, n, w0, c.steps, lr, eps, b);
  const auto rotated = run_trace_problem<S>(rule, Matrix<S>(qt * a * q), n, rotate(qt, w0), c.steps, lr, eps, b);
  S worst(0), size(0);
  for (int t = 0; t < c.steps; ++t)
    for (int h = 0; h < c.heads; ++h) {
      worst = std::max(worst, S((rotated[t][h] - qt * plain[t][h]).cwiseAbs().maxCoeff()));
      size = std::max(size, S(plain[t][h].cwiseAbs().maxCoeff()));
    }
  return {worst, size};
}

template <class S>
CheckResult equivariance_check(Rule claimed, const Case& c, EquivarianceMutant mutant) {
  const Rule rule = mutant == EquivarianceMutant::kElementwiseMoment ? Rule::kElementwise
                    : mutant == EquivarianceMutant::kAdamW           ? Rule::kAdamW
                                                                     : claimed;
  const auto [viol, size] = equivariance_violation<S>(rule, c, c.seed ^ 0x5bd1e995ULL);
  CheckResult r = roundoff_result<S>(viol, std::max(size, S(1)), double(c.d) * c.steps);
  r.detail["violation"] = to_double(viol);
  return r;
}

template <class S>
CheckResult check_equivariance_scalar(const Case& c, EquivarianceMutant mutant) {
  return equivariance_check<S>(Rule::kScalar, c, mutant);
}
template <class S>
CheckResult check_equivariance_per_column(const Case& c, EquivarianceMutant mutant) {
  return equivariance_check<S>(Rule::kPerColumn, c, mutant);
}
template <class S>
CheckResult check_equivariance_mean(const Case& c, EquivarianceMutant mutant) {
  return equivariance_check<S>(Rule::kMean, c, mutant);
}

// A non-equivariance result: ratio = u·d·T·max(1, ‖W‖_max) / violation (pass when far below 1).
template <class S>
CheckResult violation_result(Rule rule, const Case& c) {
  const auto [viol, size] = equivariance_violation<S>(rule, c, c.seed ^ 0x5bd1e995ULL);
  CheckResult r;
  const S floor = unit_roundoff<S>() * S(double(c.d) * c.steps) * std::max(size, S(1));
  r.ratio = viol > S(0) ? to_double(S(floor / viol)) : INFINITY;
  r.residual = to_double(viol);
  r.normaliser = to_double(std::max(size, S(1)));
  return r;
}

// Converse of Prop. 7 over a family: every row-weighted moment √V_ij = √(b_i v_j) with b not
// constant (spread 10^±x, x = c.x) violates equivariance far above roundoff.
// Control: b ≡ 1 (the per-column moment), which is equivariant.
template <class S>
CheckResult check_equivariance_family(const Case& c, ConverseFamilyMutant mutant) {
  Case k = c;
  if (mutant == ConverseFamilyMutant::kConstantWeights) k.x = 0;
  return violation_result<S>(Rule::kRowWeighted, k);
}

// Converse of Prop. 7: the elementwise moment violates equivariance far above roundoff
// (control: the scalar moment, which is equivariant).
template <class S>
CheckResult check_equivariance_converse(const Case& c, ConverseMutant mutant) {
  return violation_result<S>(mutant == ConverseMutant::kScalarMoment ? Rule::kScalar : Rule::kElementwise, c);
}

// Table 9's setting: d = 24, r = 6, T = 15, eps = 1e-8, rate 0.01 (its Adam row's), H heads.
inline Case table9_case(int heads, std::uint64_t seed) {
  Case c;
  c.heads = heads;
  c.d = 24;
  c.r = 6;
  c.steps = 15;
  c.seed = seed;
  c.log10_eps = -8;
  c.log10_lr = -2;
  return c;
}

// Table 9's caption as the paper states it: "the baseline's error is of the same order as W itself",
// on Table 9's setting (the case's H heads, d = 24, r = 6, T = 15, rate 0.01, eps 1e-8, W_0 on
// St(d, r)): Adam (zero decay, the caption's row) against the worst of five Haar rotations, ratio =
// max|W| / violation, the claim allowing <= 10 (the violation within a factor 10 of W). Controls:
// the scalar-moment rule, and Adam under signed permutations; both equivariant, their violation
// rounding.
template <class S>
CheckResult check_table9_order_of_w(const Case& c, OrderOfWMutant mutant) {
  const Rule rule = mutant == OrderOfWMutant::kScalarMoment ? Rule::kScalar : Rule::kAdam;
  S viol(0), size(0);
  for (std::uint64_t k = 0; k < 5; ++k) {
    const auto [v, w] = equivariance_violation<S>(rule, c, (c.seed ^ 0x5bd1e995ULL) + k, /*brockett=*/false,
                                                  /*scaled=*/false,
                                                  /*signed_permutation=*/mutant == OrderOfWMutant::kSignedPermutation);
    viol = std::max(viol, v);
    size = std::max(size, w);
  }
  CheckResult r;
  r.ratio = viol > S(0) ? to_double(S(size / viol)) : INFINITY;
  r.residual = to_double(viol);
  r.normaliser = to_double(size);
  r.detail = {{"violation", to_double(viol)}, {"max_abs_W", to_double(size)}};
  return r;
}

// Adam's entrywise step bound summed over T steps: sum_t B_t, B_t = (1 - b1)/(1 - b1^t) sqrt((1 - b2^t)/(1 - b2))
// sum_{k<t} (b1/sqrt(b2))^k, which bounds |m_hat_t| / (sqrt(v_hat_t) + eps) entrywise (Cauchy-Schwarz
// against the b2 weights).
template <class S>
S adam_step_bound_sum(int steps) {
  const AdamWHyper<S> h;
  S sum(0), geo(0), ratio_power(1);
  const S ratio = h.beta1 / sqrt(h.beta2);
  for (int t = 1; t <= steps; ++t) {
    geo += ratio_power;
    ratio_power *= ratio;
    sum += (S(1) - h.beta1) / (S(1) - pow(h.beta1, S(t))) * sqrt((S(1) - pow(h.beta2, S(t))) / (S(1) - h.beta2)) * geo;
  }
  return sum;
}

// The corrected reading of Table 9's caption: Adam's and AdamW's equivariance violation on Table 9's
// problem is at most (1 + sqrt(d)) eta sum_t B_t whatever W (each run moves an entry by at most
// eta sum B_t; Q^T mixes d rows of such a displacement, ||Q e_i||_1 <= sqrt(d); the decoupled decay
// is linear, hence equivariant, and only contracts the difference). ratio = violation / bound, the
// worse of Adam (zero decay) and AdamW (decay 0.05). Control: the stale-moment Adam.
template <class S>
CheckResult check_table9_bound(const Case& c, Table9BoundMutant mutant) {
  const S bound = (S(1) + sqrt(S(c.d))) * S(pow10(c.log10_lr)) * adam_step_bound_sum<S>(c.steps);
  CheckResult r;
  r.ratio = -1;
  const std::vector<Rule> rules = mutant == Table9BoundMutant::kStaleSecondMoment
                                      ? std::vector<Rule>{Rule::kAdamStaleMoment}
                                      : std::vector<Rule>{Rule::kAdam, Rule::kAdamW};
  for (const Rule rule : rules) {
    const auto [viol, size] = equivariance_violation<S>(rule, c, c.seed ^ 0x5bd1e995ULL, /*brockett=*/false,
                                                        /*scaled=*/true);
    const double ratio = to_double(S(viol / bound));
    r.detail[rule == Rule::kAdamW ? "adamw_violation" : "adam_violation"] = to_double(viol);
    r.detail["max_abs_W"] = to_double(size);
    if (!(ratio <= r.ratio)) {
      r.ratio = ratio;
      r.residual = to_double(viol);
    }
  }
  r.normaliser = to_double(bound);
  r.detail["bound"] = to_double(bound);
  r.detail["scale"] = pow10(c.x);
  return r;
}

// Table 9: the equivariance violation after T = 15 steps for each rule (H = 3, d = 24, r = 6).
template <class S>
nlohmann::json figures_table9() {
  Case c = table9_case(3, 9);
  const std::vector<std::tuple<const char*, Rule, double>> rules = {
      {"scalar (B2)", Rule::kScalar, 0.05},
      {"per-column", Rule::kPerColumn, 0.05},
      {"elementwise (B2m)", Rule::kElementwise, 0.03},
      {"AdamW (decay 0.05)", Rule::kAdamW, 0.01},
      {"Adam (zero decay; the caption's row)", Rule::kAdam, 0.01},
      {"per-row (converse)", Rule::kPerRow, 0.05}};
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [name, rule, lr] : rules) {
    c.log10_lr = std::log10(lr);
    S worst(0), size(0);
    for (std::uint64_t k = 0; k < 5; ++k) {
      const auto [v, s] = equivariance_violation<S>(rule, c, 1000 + k, /*brockett=*/false);
      worst = std::max(worst, v);
      size = std::max(size, s);
    }
    rows.push_back(
        {{"rule", name}, {"lr", lr}, {"violation_max_abs", to_double(worst)}, {"max_abs_entry_of_W", to_double(size)}});
  }
  return {{"table", "Table 9"},
          {"setting",
           "f(W) = -tr(W^T A W), A symmetric Gaussian, H = 3, d = 24, r = 6, T = 15, "
           "eps = 1e-8, worst of 5 Haar rotations Q; max|W_T^(Q) - Q^T W_T| over all "
           "steps and heads"},
          {"rows", rows}};
}

// Table 9's Adam row against the scale of W_0: the violation stays of the order of the displacement
// (at most (1 + sqrt(d)) eta sum_t B_t, B_t Adam's entrywise step bound) while max|W| grows with s.
template <class S>
nlohmann::json figures_table9_growth() {
  Case c = table9_case(1, 9);
  nlohmann::json rows = nlohmann::json::array();
  for (const double x : {0.0, 1.0, 3.0, 6.0}) {
    c.x = x;
    const auto [v, size] = equivariance_violation<S>(Rule::kAdam, c, c.seed ^ 0x5bd1e995ULL, false, true);
    rows.push_back({{"scale", pow10(x)},
                    {"violation", to_double(v)},
                    {"max_abs_entry_of_W", to_double(size)},
                    {"violation_over_W", to_double(S(v / size))}});
  }
  return {{"setting", "Table 9's problem, Adam (zero decay), one head, from s W_0; one Haar rotation"},
          {"violation_bound_any_W",
           (1 + std::sqrt(double(c.d))) * pow10(c.log10_lr) * adam_step_bound_sum<double>(c.steps)},
          {"rows", rows}};
}

// clang-format off
#define STIEFEL_PROP7_CHECKS(X)                                                                      \
  X(equivariance_scalar, EquivarianceMutant) X(equivariance_per_column, EquivarianceMutant)          \
  X(equivariance_mean, EquivarianceMutant) X(equivariance_converse, ConverseMutant)                  \
  X(equivariance_family, ConverseFamilyMutant) X(table9_order_of_w, OrderOfWMutant)      \
  X(table9_bound, Table9BoundMutant)
// clang-format on
#define STIEFEL_PROP7_FIGURES(F) F(table9) F(table9_growth)
STIEFEL_PROP7_CHECKS(STIEFEL_EXTERN_CHECK)
STIEFEL_PROP7_FIGURES(STIEFEL_EXTERN_FIGURES)

}  // namespace stiefel::certificates
