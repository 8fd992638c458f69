#include <stiefel/arms.h>

#include <stdexcept>

namespace stiefel::arms {
namespace {

// Core's Riemannian Adam presets take (rate, ε); τ is the run's.
RiemannianAdamHyper<double> capped(RiemannianAdamHyper<double> h, const Rates& r) {
  h.cap_tau = r.tau;
  return h;
}

std::vector<Arm> build() {
  std::vector<Arm> a;
  a.push_back({"a2", "A2", "AdamW with weight decay on W_Q, W_K (Xavier init): the unconstrained baseline", true,
               false, nullptr});
  a.push_back({"a2-nwf", "A2-nwf", "A2 without weight decay on W_Q, W_K", false, false, nullptr});
  a.push_back({"soft", "Soft", "A2 plus the soft-orthogonality penalty λ‖WᵀW − I‖_F² (--soft-lambda)", true, true,
               nullptr});
  a.push_back({"b2", "B2", "Riemannian Adam, one second moment per frame, Stiefel projection, cap τ√r", false, false,
               [](const Rates& r) -> FrameRule { return capped(b2_hyper(r.riemann_lr, r.eps), r); }});
  a.push_back({"b2-mean-moment", "B2-mean",
               "B2 with v_h the mean of ξ∘ξ over the d·r entries (§3.2's second reading; variant)", false, false,
               [](const Rates& r) -> FrameRule { return capped(b2_mean_hyper(r.riemann_lr, r.eps), r); }});
  a.push_back({"b2-block", "B2-block",
               "B2 on the H heads of W_Q (and of W_K) as one frame in St(d, H·r): mutually orthogonal heads "
               "(§3.2; variant)",
               false, false, [](const Rates& r) -> FrameRule { return capped(b2_hyper(r.riemann_lr, r.eps), r); },
               /*block_heads=*/true});
  a.push_back({"b2-column", "B2-col", "B2 with one second moment per column (Prop. 7)", false, false,
               [](const Rates& r) -> FrameRule { return capped(per_column_hyper(r.riemann_lr, r.eps), r); }});
  a.push_back({"b2-grassmann", "B2-Gr", "B2 with the horizontal (Grassmann) projection", false, false,
               [](const Rates& r) -> FrameRule { return capped(b2_grassmann_hyper(r.riemann_lr, r.eps), r); }});
  a.push_back({"b2m", "B2m", "Riemannian Adam with Adam's elementwise moment, no cap, at --elementwise-lr", false,
               false, [](const Rates& r) -> FrameRule { return b2m_hyper(r.elementwise_lr, r.eps); }});
  a.push_back({"b2m-can", "B2m-can", "B2m with the canonical-metric gradient", false, false,
               [](const Rates& r) -> FrameRule { return b2m_can_hyper(r.elementwise_lr, r.eps); }});
  a.push_back({"b2-sgd", "PA16", "fixed-step Riemannian SGD on the horizontal space at --sgd-lr (PA16)", false, false,
               [](const Rates& r) -> FrameRule { return pa16_hyper(r.sgd_lr); }});
  a.push_back({"b2-sgd-stiefel", "B2-SGD-St", "fixed-step Riemannian SGD with the Stiefel projection", false, false,
               [](const Rates& r) -> FrameRule { return sgd_stiefel_hyper(r.sgd_lr); }});
  a.push_back({"c2", "C2",
               "PA16 plus the codebook prior β·mean_h min_k d_c(W_h, C_k)²/r toward a Grassmann K-means codebook "
               "of the training images' patch spans (--codebook-beta, --codebook-k; §3.3, Table 2; image task)",
               false, false, [](const Rates& r) -> FrameRule { return pa16_hyper(r.sgd_lr); }, false,
               [](const Rates& r) { return r.codebook_beta; }});
  a.push_back({"c2-nb", "C2-nb",
               "C2 with β = 0: its codebook built and not used, so PA16 itself (Table 1: \"B2-SGD up to the "
               "random draw\"; image task)",
               false, false, [](const Rates& r) -> FrameRule { return pa16_hyper(r.sgd_lr); }, false,
               [](const Rates&) { return 0.0; }});
  a.push_back({"frozen", "Frozen", "orthonormal init, η_R = 0: the constraint without its optimisation", false, false,
               [](const Rates&) -> FrameRule { return frozen_hyper<double>(); }});
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
