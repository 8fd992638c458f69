// Pins the batched LibTorch frame rules to the Eigen reference in core/: same inputs, float64 on
// CPU, 60 steps of a varying gradient sequence, every rule; agreement to 1e-12 relative.
#include <gtest/gtest.h>

#include <stiefel/stiefel.h>
#include <stiefel/training/frame_optimizer.h>
#include <stiefel/training/frame_rules.h>

namespace stiefel::training {
namespace {

torch::Tensor to_torch(const Frames<double>& f) {
  std::vector<torch::Tensor> out;
  for (const auto& m : f) {
    // Eigen is column-major: copy row by row into a row-major tensor.
    auto t = torch::empty({m.rows(), m.cols()}, torch::kFloat64);
    for (Index i = 0; i < m.rows(); ++i)
      for (Index j = 0; j < m.cols(); ++j) t[i][j] = m(i, j);
    out.push_back(t);
  }
  return torch::stack(out);
}

double max_abs(const torch::Tensor& a) { return a.abs().max().item<double>(); }

struct Rule {
  const char* name;
  FrameHyper torch_hyper;
};

class Differential : public ::testing::TestWithParam<int> {};

std::vector<Rule> rules() {
  std::vector<Rule> r;
  FrameHyper b2;  // scalar moment, Stiefel, cap 0.1
  b2.lr = 0.3;
  r.push_back({"b2", b2});
  FrameHyper column = b2;
  column.moment = SecondMoment::kPerColumn;
  r.push_back({"per-column", column});
  FrameHyper mean = b2;  // v = mean of ξ∘ξ (the second reading of §3.2)
  mean.moment = SecondMoment::kPerFrameMean;
  r.push_back({"b2-mean", mean});
  FrameHyper grassmann = b2;
  grassmann.map = TangentMap::kGrassmann;
  r.push_back({"b2-grassmann", grassmann});
  FrameHyper b2m = b2;
  b2m.moment = SecondMoment::kElementwise;
  b2m.cap_tau.reset();
  b2m.lr = 0.03;
  r.push_back({"b2m", b2m});
  FrameHyper can = b2m;
  can.map = TangentMap::kCanonical;
  r.push_back({"b2m-can", can});
  FrameHyper gram = b2;
  gram.retraction = Retraction::kPolarGram;
  r.push_back({"b2-gram-route", gram});
  FrameHyper sgd;
  sgd.adaptive = false;
  sgd.lr = 0.02;
  sgd.map = TangentMap::kGrassmann;
  r.push_back({"b2-sgd", sgd});
  FrameHyper sgd_stiefel = sgd;
  sgd_stiefel.map = TangentMap::kStiefel;
  r.push_back({"b2-sgd-stiefel", sgd_stiefel});
  FrameHyper frozen = sgd;
  frozen.lr = 0;
  r.push_back({"frozen", frozen});
  return r;
}

TEST(Differential, EveryRuleAgreesWithTheEigenReference) {
  for (const Rule& rule : rules()) {
    SCOPED_TRACE(rule.name);
    Rng rng(42);
    const Index heads = 3, d = 12, r = 4;
    Frames<double> w = random_frames<double>(rng, {d, r}, heads);
    torch::Tensor wt = to_torch(w);
    FrameState st = make_frame_state(wt, rule.torch_hyper);
    RiemannianAdamHyper<double> h;
    h.lr = rule.torch_hyper.lr;
    h.eps = rule.torch_hyper.eps;
    h.cap_tau = rule.torch_hyper.cap_tau;
    h.map = rule.torch_hyper.map;
    h.moment = rule.torch_hyper.moment;
    h.retraction = rule.torch_hyper.retraction;
    auto adam_state = make_riemannian_adam_state<double>(w, h.moment);
    RiemannianSgdHyper<double> sh;
    sh.lr = rule.torch_hyper.lr;
    sh.map = rule.torch_hyper.map;
    double worst = 0;
    for (int t = 0; t < 60; ++t) {
      Frames<double> g;
      const double mag = std::pow(10.0, 2.0 * std::sin(0.3 * t));  // magnitudes over four decades
      for (Index k = 0; k < heads; ++k) g.push_back(gaussian_matrix<double>(rng, d, r) * mag);
      if (rule.torch_hyper.adaptive) {
        auto next = riemannian_adam_step<double>(w, g, adam_state, h);
        w = next.frames;
        adam_state = next.state;
      } else {
        w = riemannian_sgd_step<double>(w, g, sh);
      }
      frame_step(wt, to_torch(g), st, rule.torch_hyper);
      worst = std::max(worst, max_abs(wt - to_torch(w)));
      if (rule.torch_hyper.adaptive) worst = std::max(worst, max_abs(st.m - to_torch(adam_state.m)) /
                                                                 std::max(1e-300, max_abs(st.m)));
    }
    EXPECT_LE(worst, 1e-12);  // frames have entries of size ≤ 1: absolute = relative
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
