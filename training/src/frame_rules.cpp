#include <stiefel/training/frame_rules.h>

namespace stiefel::training {
namespace {

torch::Tensor bt(const torch::Tensor& x) { return x.transpose(-2, -1); }
torch::Tensor sym(const torch::Tensor& a) { return (a + bt(a)) / 2; }

torch::Tensor apply_map(TangentMap map, const torch::Tensor& w, const torch::Tensor& g) {
  switch (map) {
    case TangentMap::kStiefel:
      return batched_project_tangent(w, g);
    case TangentMap::kGrassmann:
      return g - w.bmm(bt(w).bmm(g));
    case TangentMap::kCanonical:
      return g - w.bmm(bt(g).bmm(w));
  }
  return batched_project_tangent(w, g);
}

torch::Tensor reproject(TangentMap map, const torch::Tensor& w, const torch::Tensor& x) {
  return map == TangentMap::kGrassmann ? x - w.bmm(bt(w).bmm(x)) : batched_project_tangent(w, x);
}

torch::Tensor frob(const torch::Tensor& x) { return x.pow(2).sum({-2, -1}).sqrt(); }

}  // namespace

torch::Tensor batched_project_tangent(const torch::Tensor& w, const torch::Tensor& g) {
  return g - w.bmm(sym(bt(w).bmm(g)));
}

torch::Tensor tangent_gradient_norm(const torch::Tensor& w, const torch::Tensor& g) {
  return batched_project_tangent(w, g).pow(2).sum({-2, -1}).sqrt();
}

torch::Tensor batched_gauge_component(const torch::Tensor& w, const torch::Tensor& g) {
  const auto a = bt(w).bmm(g);
  return w.bmm((a - bt(a)) / 2);
}

torch::Tensor soft_penalty(const torch::Tensor& w, double lambda) {
  const auto eye = torch::eye(w.size(-1), w.options());
  return lambda * (w.transpose(-2, -1).matmul(w) - eye).pow(2).sum();
}

torch::Tensor batched_polar(const torch::Tensor& m, Retraction route, bool* fell_back) {
  if (fell_back) *fell_back = false;
  const auto gram = [&m] {
    const auto [lambda, v] = torch::linalg_eigh(bt(m).bmm(m));
    return m.bmm(v.bmm(torch::diag_embed(lambda.rsqrt())).bmm(bt(v)));
  };
  if (route == Retraction::kPolarGram) return gram();
  try {
    const auto [u, s, vh] = torch::linalg_svd(m, /*full_matrices=*/false);
    return u.bmm(vh);
  } catch (const c10::Error&) {  // no convergence (LAPACK info > 0); anything else fails again below
    if (fell_back) *fell_back = true;
    return gram();
  }
}

torch::Tensor to_frames(const torch::Tensor& param, FrameLayout layout) {
  const auto d = param.size(-2), r = param.size(-1);
  if (layout == FrameLayout::kBlock && param.dim() == 3)
    return param.permute({1, 0, 2}).reshape({1, d, param.size(0) * r});
  return param.reshape({-1, d, r});
}

torch::Tensor from_frames(const torch::Tensor& frames, const torch::Tensor& param, FrameLayout layout) {
  if (layout == FrameLayout::kBlock && param.dim() == 3)
    return frames.reshape({param.size(1), param.size(0), param.size(2)}).permute({1, 0, 2});
  return frames.reshape(param.sizes());
}

FrameHyper frame_hyper(const arms::FrameRule& rule) {
  FrameHyper f;
  if (const auto* a = std::get_if<RiemannianAdamHyper<double>>(&rule)) {
    f.lr = a->lr;
    f.beta1 = a->beta1;
    f.beta2 = a->beta2;
    f.eps = a->eps;
    f.cap_tau = a->cap_tau;
    f.map = a->map;
    f.moment = a->moment;
    f.retraction = a->retraction;
  } else {
    const auto& g = std::get<RiemannianSgdHyper<double>>(rule);
    f.adaptive = false;
    f.lr = g.lr;
    f.map = g.map;
    f.retraction = g.retraction;
  }
  return f;
}

FrameState make_frame_state(const torch::Tensor& w, const FrameHyper& hyper) {
  FrameState s;
  const auto opts = w.options().dtype(torch::kFloat64);
  const auto b = w.size(0), d = w.size(1), r = w.size(2);
  s.m = torch::zeros({b, d, r}, opts);
  switch (hyper.moment) {
    case SecondMoment::kPerFrame:
    case SecondMoment::kPerFrameMean:
      s.v = torch::zeros({b, 1, 1}, opts);
      break;
    case SecondMoment::kPerColumn:
      s.v = torch::zeros({b, 1, r}, opts);
      break;
    case SecondMoment::kElementwise:
      s.v = torch::zeros({b, d, r}, opts);
      break;
    case SecondMoment::kPerRow:
      s.v = torch::zeros({b, d, 1}, opts);
      break;
  }
  return s;
}

FrameReport frame_step(torch::Tensor& w, const torch::Tensor& g, FrameState& st, const FrameHyper& h) {
  FrameReport rep;
  const auto xi = apply_map(h.map, w, g);
  rep.direction_norm = frob(xi);
  rep.gauge_fraction = frob(batched_gauge_component(w, g)) / tangent_gradient_norm(w, g).clamp_min(1e-300);
  torch::Tensor eta;
  if (!h.adaptive) {
    eta = -h.lr * xi;
    rep.capped = torch::zeros_like(rep.direction_norm, torch::kBool);
  } else {
    st.step += 1;
    const double bias1 = 1 - std::pow(h.beta1, double(st.step));
    const double bias2 = 1 - std::pow(h.beta2, double(st.step));
    st.m = h.beta1 * reproject(h.map, w, st.m) + (1 - h.beta1) * xi;
    switch (h.moment) {
      case SecondMoment::kPerFrame:
        st.v = h.beta2 * st.v + (1 - h.beta2) * xi.pow(2).sum({-2, -1}, true);
        break;
      case SecondMoment::kPerFrameMean:
        st.v = h.beta2 * st.v + (1 - h.beta2) * (xi.pow(2).sum({-2, -1}, true) / double(xi.size(1) * xi.size(2)));
        break;
      case SecondMoment::kPerColumn:
        st.v = h.beta2 * st.v + (1 - h.beta2) * xi.pow(2).sum(-2, true);
        break;
      case SecondMoment::kElementwise:
        st.v = h.beta2 * st.v + (1 - h.beta2) * xi.pow(2);
        break;
      case SecondMoment::kPerRow:
        st.v = h.beta2 * st.v + (1 - h.beta2) * xi.pow(2).sum(-1, true);
        break;
    }
    const auto m_hat = st.m / bias1;
    const auto denom = (st.v / bias2).sqrt() + h.eps;
    // 0/0 (ε = 0, no gradient yet) is 0, as in core's adam_divide.
    const auto q = torch::where(denom > 0, m_hat / denom.clamp_min(1e-300), torch::zeros_like(m_hat));
    eta = -h.lr * reproject(h.map, w, q);
    if (h.cap_tau) {
      const double cap = *h.cap_tau * std::sqrt(double(w.size(2)));
      const auto norm = frob(eta);
      rep.capped = norm > cap;
      const auto factor = torch::where(rep.capped, cap / norm.clamp_min(1e-300), torch::ones_like(norm));
      eta = eta * factor.view({-1, 1, 1});
    } else {
      rep.capped = torch::zeros_like(rep.direction_norm, torch::kBool);
    }
  }
  bool fell_back = false;
  const auto next = batched_polar(w + eta, h.retraction, &fell_back);
  rep.polar_fallback = torch::full_like(rep.direction_norm, fell_back ? 1.0 : 0.0);
  rep.step_norm = frob(next - w);
  if (h.adaptive) st.m = reproject(h.map, next, st.m);
  w = next;
  return rep;
}

torch::Tensor isometry_error(const torch::Tensor& w) {
  const auto w64 = w.to(torch::kFloat64);
  const auto eye = torch::eye(w.size(-1), w64.options());
  return (bt(w64).bmm(w64) - eye).abs().amax({-2, -1});
}

}  // namespace stiefel::training
