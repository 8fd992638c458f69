#include <stiefel/arms.h>

#include <stdexcept>

namespace stiefel::arms {
namespace {

// Core's Riemannian Adam presets take (rate, ε); τ is the run's.
RiemannianAdamHyper<double> capped(RiemannianAdamHyper<double> h, const Rates& r) {
  h.cap_tau = r.tau;
  return h;
}

// Each arm names the fields it sets; the others keep Arm's defaults (Euclidean, one frame per head,
// no codebook).
std::vector<Arm> build() {
  std::vector<Arm> a;
  a.push_back({.name = "a2",
               .label = "A2",
               .summary = "AdamW with weight decay on W_Q, W_K (Xavier init): the unconstrained baseline",
               .colour = "#7b3294",
               .frame_decay = true});
  a.push_back(
      {.name = "a2-nwf", .label = "A2-nwf", .summary = "A2 without weight decay on W_Q, W_K", .colour = "#c2a5cf"});
  a.push_back({.name = "soft",
               .label = "Soft",
               .summary = "A2 plus the soft-orthogonality penalty λ‖WᵀW − I‖_F² (--soft-lambda)",
               .colour = "#d7301f",
               .frame_decay = true,
               .soft_penalty = true});
  a.push_back({.name = "b2",
               .label = "B2",
               .summary = "Riemannian Adam, one second moment per frame, Stiefel projection, cap τ√r",
               .colour = "#1b7837",
               .rule = [](const Rates& r) -> FrameRule { return capped(b2_hyper(r.riemann_lr, r.eps), r); }});
  a.push_back({.name = "b2-mean-moment",
               .label = "B2-mean",
               .summary = "B2 with v_h the mean of ξ∘ξ over the d·r entries (§3.2's second reading; variant)",
               .colour = "#66bd63",
               .rule = [](const Rates& r) -> FrameRule { return capped(b2_mean_hyper(r.riemann_lr, r.eps), r); }});
  a.push_back({.name = "b2-block",
               .label = "B2-block",
               .summary = "B2 on the H heads of W_Q (and of W_K) as one frame in St(d, H·r): mutually orthogonal "
                          "heads (§3.2; variant)",
               .colour = "#01665e",
               .rule = [](const Rates& r) -> FrameRule { return capped(b2_hyper(r.riemann_lr, r.eps), r); },
               .block_heads = true});
  a.push_back({.name = "b2-column",
               .label = "B2-col",
               .summary = "B2 with one second moment per column (Prop. 7)",
               .colour = "#8073ac",
               .rule = [](const Rates& r) -> FrameRule { return capped(per_column_hyper(r.riemann_lr, r.eps), r); }});
  a.push_back({.name = "b2-grassmann",
               .label = "B2-Gr",
               .summary = "B2 with the horizontal (Grassmann) projection",
               .colour = "#2166ac",
               .rule = [](const Rates& r) -> FrameRule { return capped(b2_grassmann_hyper(r.riemann_lr, r.eps), r); }});
  a.push_back({.name = "b2m",
               .label = "B2m",
               .summary = "Riemannian Adam with Adam's elementwise moment, no cap, at --elementwise-lr",
               .colour = "#e08214",
               .rule = [](const Rates& r) -> FrameRule { return b2m_hyper(r.elementwise_lr, r.eps); }});
  a.push_back({.name = "b2m-can",
               .label = "B2m-can",
               .summary = "B2m with the canonical-metric gradient",
               .colour = "#b35806",
               .rule = [](const Rates& r) -> FrameRule { return b2m_can_hyper(r.elementwise_lr, r.eps); }});
  a.push_back({.name = "b2-sgd",
               .label = "PA16",
               .summary = "fixed-step Riemannian SGD on the horizontal space at --sgd-lr (PA16)",
               .colour = "#b8860b",
               .rule = [](const Rates& r) -> FrameRule { return pa16_hyper(r.sgd_lr); }});
  a.push_back({.name = "b2-sgd-stiefel",
               .label = "B2-SGD-St",
               .summary = "fixed-step Riemannian SGD with the Stiefel projection",
               .colour = "#8c510a",
               .rule = [](const Rates& r) -> FrameRule { return sgd_stiefel_hyper(r.sgd_lr); }});
  a.push_back({.name = "c2",
               .label = "C2",
               .summary = "PA16 plus the codebook prior β·mean_h min_k d_c(W_h, C_k)²/r toward a Grassmann K-means "
                          "codebook of the training images' patch spans (--codebook-beta, --codebook-k; §3.3, "
                          "Table 2; image task)",
               .colour = "#de77ae",
               .rule = [](const Rates& r) -> FrameRule { return pa16_hyper(r.sgd_lr); },
               .codebook_beta = [](const Rates& r) { return r.codebook_beta; }});
  a.push_back({.name = "c2-nb",
               .label = "C2-nb",
               .summary = "C2 with β = 0: its codebook built and its prior kept in the loss at weight 0, so PA16 "
                          "itself (Table 1: \"B2-SGD up to "
                          "the random draw\"; image task)",
               .colour = "#8e0152",
               .rule = [](const Rates& r) -> FrameRule { return pa16_hyper(r.sgd_lr); },
               .codebook_beta = [](const Rates&) { return 0.0; }});
  a.push_back({.name = "frozen",
               .label = "Frozen",
               .summary = "orthonormal init, η_R = 0: the constraint without its optimisation",
               .colour = "#4d4d4d",
               .rule = [](const Rates&) -> FrameRule { return frozen_hyper<double>(); }});
  return a;
}

}  // namespace

const std::vector<Arm>& all() {
  static const std::vector<Arm> arms = build();
  return arms;
}

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const Arm& a : all()) out.push_back(a.name);
  return out;
}

const Arm& find(const std::string& name) {
  for (const Arm& a : all())
    if (a.name == name) return a;
  std::string list;
  for (const Arm& a : all()) list += (list.empty() ? "" : ", ") + a.name;
  throw std::invalid_argument("--arm " + name + ": unknown arm (one of " + list + ")");
}

}  // namespace stiefel::arms
