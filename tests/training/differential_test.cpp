// Pins the batched LibTorch frame rules to the Eigen reference in core/: same inputs, float64 on
// CPU, 60 steps of a varying gradient sequence, every rule; agreement to 1e-12 relative.
#include <gtest/gtest.h>

#include <fstream>

#include <stiefel/stiefel.h>
#include <stiefel/training/compute.h>
#include <stiefel/training/frame_optimizer.h>
#include <stiefel/training/frame_rules.h>

#include "core_tensors.h"

namespace stiefel::training {
namespace {

using core_tensors::max_abs;
using core_tensors::to_torch;

struct Rule {
  std::string name;
  arms::FrameRule core_rule;  // the reference: core's rule
};

// Every Stiefel arm of the registry at test rates, plus the Gram route of the polar retraction
// (B2's rule with Retraction::kPolarGram). The torch side runs frame_hyper(core_rule): an arm's
// batched rule and its rule of core/ come from the one registry entry.
std::vector<Rule> rules() {
  const arms::Rates rates{
      .riemann_lr = 0.3, .adam_lr = 0.03, .elementwise_lr = 0.03, .sgd_lr = 0.02, .eps = 1e-8, .tau = 0.1};
  std::vector<Rule> r;
  for (const arms::Arm& arm : arms::all())
    if (arm.on_manifold()) r.push_back({arm.name, arm.rule(rates)});
  auto gram = std::get<RiemannianAdamHyper<double>>(arms::find("b2").rule(rates));
  gram.retraction = Retraction::kPolarGram;
  r.push_back({"b2-gram-route", gram});
  return r;
}

// Every arm's rule is pinned, so a new Stiefel arm cannot skip this test: the registry's count.
TEST(Differential, CoversEveryStiefelArm) {
  std::size_t stiefel_arms = 0;
  for (const arms::Arm& arm : arms::all()) stiefel_arms += arm.on_manifold();
  EXPECT_GE(stiefel_arms, 9u);
  EXPECT_EQ(rules().size(), stiefel_arms + 1);
}

TEST(Differential, EveryRuleAgreesWithTheEigenReference) {
  for (const Rule& rule : rules()) {
    SCOPED_TRACE(rule.name);
    const FrameHyper torch_hyper = frame_hyper(rule.core_rule);
    const auto* adam = std::get_if<RiemannianAdamHyper<double>>(&rule.core_rule);
    Rng rng(42);
    const Index heads = 3, d = 12, r = 4;
    Frames<double> w = random_frames<double>(rng, {d, r}, heads);
    torch::Tensor wt = to_torch(w);
    FrameState st = make_frame_state(wt, torch_hyper);
    auto adam_state = make_riemannian_adam_state<double>(w, adam ? adam->moment : SecondMoment::kPerFrame);
    double worst = 0;
    for (int t = 0; t < 60; ++t) {
      Frames<double> g;
      const double mag = std::pow(10.0, 2.0 * std::sin(0.3 * t));  // magnitudes over four decades
      for (Index k = 0; k < heads; ++k) g.push_back(gaussian_matrix<double>(rng, d, r) * mag);
      if (adam) {
        auto next = riemannian_adam_step<double>(w, g, adam_state, *adam);
        w = next.frames;
        adam_state = next.state;
      } else {
        w = riemannian_sgd_step<double>(w, g, std::get<RiemannianSgdHyper<double>>(rule.core_rule));
      }
      frame_step(wt, to_torch(g), st, torch_hyper);
      worst = std::max(worst, max_abs(wt - to_torch(w)));
      if (adam) worst = std::max(worst, max_abs(st.m - to_torch(adam_state.m)) / std::max(1e-300, max_abs(st.m)));
    }
    EXPECT_LE(worst, 1e-12);  // frames have entries of size ≤ 1: absolute = relative
  }
}

// The frame formulas the trainer records and trains with, against core/: the tangent gradient norm
// and the gauge component (run.json's "tangent_grad_norm" and "gauge_fraction"), and the soft
// baseline's penalty with its gradient (autograd against core's closed form ∇P = 4λW(WᵀW − I)).
// Frames on St(d, r) and off it (the soft arm's frames are not orthonormal).
TEST(Differential, FrameFormulasAgreeWithTheEigenReference) {
  Rng rng(7);
  const Index heads = 4, d = 12, r = 5;
  for (const bool on_manifold : {true, false}) {
    SCOPED_TRACE(on_manifold ? "frames on St(d, r)" : "frames off it");
    Frames<double> w, g;
    for (Index k = 0; k < heads; ++k) {
      w.push_back(on_manifold ? random_stiefel<double>(rng, d, r) : gaussian_matrix<double>(rng, d, r));
      g.push_back(gaussian_matrix<double>(rng, d, r) * 3.0);
    }
    const auto wt = to_torch(w), gt = to_torch(g);
    const auto norms = tangent_gradient_norm(wt, gt);
    const auto gauge = batched_gauge_component(wt, gt);
    double penalty = 0;
    Frames<double> gauge_ref, penalty_grad;
    for (Index k = 0; k < heads; ++k) {
      EXPECT_NEAR(norms[k].item<double>(), project_tangent<double>(w[k], g[k]).norm(), 1e-12 * norms[k].item<double>());
      gauge_ref.push_back(gauge_component<double>(w[k], g[k]));
      penalty += soft_orthogonality_penalty<double>(w[k], 0.1);
      penalty_grad.push_back(soft_orthogonality_gradient<double>(w[k], 0.1));
    }
    EXPECT_LE(max_abs(gauge - to_torch(gauge_ref)), 1e-12 * max_abs(gauge));
    const auto leaf = wt.clone().set_requires_grad(true);
    const auto p = soft_penalty(leaf, 0.1);
    p.backward();
    EXPECT_NEAR(p.item<double>(), penalty, 1e-12 * std::max(1.0, penalty));
    EXPECT_LE(max_abs(leaf.grad() - to_torch(penalty_grad)), 1e-12 * std::max(1.0, max_abs(leaf.grad())));
  }
}

TEST(FrameOptimizer, KeepsFramesOrthonormalAndRoundTripsItsState) {
  torch::manual_seed(1);
  auto q = std::get<0>(torch::linalg_qr(torch::randn({2, 10, 3}, torch::kFloat64)));
  torch::Tensor p = q.to(torch::kFloat32).clone().set_requires_grad(true);
  FrameHyper hyper;
  FrameOptimizer opt({p}, hyper);
  for (int t = 0; t < 20; ++t) {
    opt.zero_grad();
    (p * torch::randn_like(p)).sum().backward();
    opt.step();
  }
  EXPECT_LT(isometry_error(p.detach()).max().item<double>(), 1e-6);
  torch::serialize::OutputArchive out;
  opt.save(out);
  std::stringstream buffer;
  out.save_to(buffer);
  FrameOptimizer other({p}, hyper);
  torch::serialize::InputArchive in;
  in.load_from(buffer);
  other.load(in);
  std::stringstream again;
  torch::serialize::OutputArchive out2;
  other.save(out2);
  out2.save_to(again);
  EXPECT_EQ(buffer.str().size(), again.str().size());
}

// The block layout (arm b2-block): the H heads of a [H, d, r] parameter are one frame in
// St(d, H·r). to_frames/from_frames are inverse to each other, and the heads stay mutually
// orthogonal step after step (WᵀW = I over all H·r columns), which the per-head layout does not
// keep: the control.
TEST(FrameOptimizer, BlockLayoutKeepsTheHeadsMutuallyOrthogonal) {
  const std::int64_t heads = 4, d = 12, r = 3;
  torch::manual_seed(5);
  const auto block = std::get<0>(torch::linalg_qr(torch::randn({d, heads * r}, torch::kFloat64)));
  const auto start = from_frames(block.unsqueeze(0), torch::empty({heads, d, r}), FrameLayout::kBlock).contiguous();
  ASSERT_TRUE(torch::equal(to_frames(start, FrameLayout::kBlock), block.unsqueeze(0)));
  ASSERT_TRUE(torch::equal(start[1], block.slice(1, r, 2 * r)));  // head h is columns h·r … (h+1)·r − 1
  const auto cross_heads = [&](const torch::Tensor& p) {          // max |W_hᵀ W_k| over h ≠ k
    double worst = 0;
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t k = 0; k < heads; ++k)
        if (h != k) worst = std::max(worst, max_abs(p[h].transpose(0, 1).mm(p[k])));
    return worst;
  };
  for (const FrameLayout layout : {FrameLayout::kBlock, FrameLayout::kPerHead}) {
    torch::Tensor p = start.clone().set_requires_grad(true);
    FrameHyper hyper;
    hyper.lr = 0.3;
    FrameOptimizer opt({p}, hyper, layout);
    for (int t = 0; t < 50; ++t) {
      opt.zero_grad();
      (p * torch::randn_like(p)).sum().backward();
      opt.step();
    }
    if (layout == FrameLayout::kBlock) {
      // Its state ([1, d, H·r]) saves and loads, and the loaded optimiser takes the same next step.
      torch::serialize::OutputArchive out;
      opt.save(out);
      std::stringstream buffer;
      out.save_to(buffer);
      torch::Tensor q = p.detach().clone().set_requires_grad(true);
      FrameOptimizer loaded({q}, hyper, layout);
      torch::serialize::InputArchive in;
      in.load_from(buffer);
      loaded.load(in);
      const auto g = torch::randn_like(p);
      for (auto [param, o] : {std::pair{&p, &opt}, std::pair{&q, &loaded}}) {
        o->zero_grad();
        (*param * g).sum().backward();
        o->step();
      }
      EXPECT_TRUE(torch::equal(p, q));
      EXPECT_LT(isometry_error(to_frames(p.detach(), FrameLayout::kBlock)).max().item<double>(), 1e-13);
      EXPECT_LT(cross_heads(p.detach()), 1e-13);
    } else {
      EXPECT_LT(isometry_error(p.detach()).max().item<double>(), 1e-13);  // each head on St(d, r) …
      EXPECT_GT(cross_heads(p.detach()), 1e-2);                           // … but not mutually orthogonal
    }
  }
}

// A square frame one tiny step from orthogonal (all 128 singular values 1 to 1e-12): the matrix on
// which LAPACK's divide-and-conquer SVD stopped arm b2-block at epoch 39 ("failed to converge",
// with one OpenBLAS thread, as the trainer runs it). The retraction must still give its polar
// factor: the Gram route takes over. The file holds the 128×128 float64 matrix, row-major.
TEST(BatchedPolar, TakesTheGramRouteWhereTheSvdDoesNotConverge) {
  configure_cpu_compute(1);
  std::ifstream in(std::string(STIEFEL_TEST_DATA_DIR) + "/square-frame-unit-spectrum.f64", std::ios::binary);
  auto m = torch::empty({1, 128, 128}, torch::kFloat64);
  in.read(reinterpret_cast<char*>(m.data_ptr<double>()), std::streamsize(m.numel() * sizeof(double)));
  ASSERT_TRUE(in.good()) << "the 128×128 fixture could not be read";
  ASSERT_LT(isometry_error(m).item<double>(), 1e-11);
  bool fell_back = false;
  const auto q = batched_polar(m, Retraction::kPolarSvd, &fell_back);
  RecordProperty("svd_failed_here", fell_back ? "yes" : "no");
  EXPECT_LT(isometry_error(q).item<double>(), 1e-13);
  EXPECT_LT(max_abs(q - m), 1e-11);  // M is orthogonal to 3e-12: its polar factor is M itself, nearly
  EXPECT_LT(max_abs(q - batched_polar(m, Retraction::kPolarGram)), 1e-14);
}

// A stored state tensor replaces the frame's state whatever its shape: load refuses one that does
// not fit the frame (shape or type), naming the tensor, and accepts the state it saved itself.
TEST(FrameOptimizer, LoadRefusesStateOfTheWrongShapeOrType) {
  torch::manual_seed(2);
  auto q = std::get<0>(torch::linalg_qr(torch::randn({2, 10, 3}, torch::kFloat64)));
  torch::Tensor p = q.to(torch::kFloat32).clone().set_requires_grad(true);
  FrameHyper hyper;
  FrameOptimizer opt({p}, hyper);
  opt.zero_grad();
  (p * torch::randn_like(p)).sum().backward();
  opt.step();
  const auto saved = [&](const std::string& key, const torch::Tensor& replacement) {
    torch::serialize::OutputArchive good;
    opt.save(good);
    std::stringstream buffer;
    good.save_to(buffer);
    torch::serialize::InputArchive in;
    in.load_from(buffer);
    torch::serialize::OutputArchive out;
    for (const std::string k : {"frame0_master", "frame0_m", "frame0_v", "frame0_step"}) {
      torch::Tensor t;
      in.read(k, t);
      out.write(k, k == key ? replacement : t);
    }
    std::stringstream bad;
    out.save_to(bad);
    return bad.str();
  };
  const auto load = [&](const std::string& bytes) {
    std::stringstream buffer(bytes);
    torch::serialize::InputArchive in;
    in.load_from(buffer);
    FrameOptimizer other({p}, hyper);
    other.load(in);
  };
  EXPECT_NO_THROW(load(saved("", torch::Tensor())));
  const auto refused = [&](const std::string& key, const torch::Tensor& t) {
    try {
      load(saved(key, t));
      ADD_FAILURE() << key << " of shape " << t.sizes() << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  refused("frame0_master", torch::zeros({2, 10, 4}, torch::kFloat64));
  refused("frame0_master", torch::zeros({2, 10, 3}, torch::kFloat32));
  refused("frame0_m", torch::zeros({3, 10, 3}, torch::kFloat64));
  refused("frame0_v", torch::zeros({5, 1, 1}, torch::kFloat64));
  refused("frame0_step", torch::tensor({-1}, torch::kInt64));
}

}  // namespace
}  // namespace stiefel::training
