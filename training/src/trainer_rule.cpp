#include <stiefel/training/trainer_rule.h>

#include <stiefel/training/compute.h>
#include <stiefel/training/frame_rules.h>

namespace stiefel::training {
namespace {

torch::Tensor to_tensor(const Frames<double>& f, torch::Device device) {
  const auto heads = std::int64_t(f.size()), d = f.front().rows(), r = f.front().cols();
  auto out = torch::empty({heads, d, r}, torch::dtype(torch::kFloat64));
  auto a = out.accessor<double, 3>();
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < d; ++i)
      for (std::int64_t j = 0; j < r; ++j) a[h][i][j] = f[std::size_t(h)](i, j);
  return out.to(device);
}

Frames<double> to_frames(const torch::Tensor& t) {
  const auto cpu = t.to(torch::kCPU).contiguous();
  const auto a = cpu.accessor<double, 3>();
  Frames<double> out;
  for (std::int64_t h = 0; h < cpu.size(0); ++h) {
    Matrix<double> m(cpu.size(1), cpu.size(2));
    for (std::int64_t i = 0; i < cpu.size(1); ++i)
      for (std::int64_t j = 0; j < cpu.size(2); ++j) m(i, j) = a[h][i][j];
    out.push_back(std::move(m));
  }
  return out;
}

class TrainerRule final : public certificates::UpdateRule {
 public:
  explicit TrainerRule(torch::Device device) : device_(device) {}

  void start(const Frames<double>& w, const certificates::RuleSettings& s) override {
    hyper_.lr = s.lr;
    hyper_.beta1 = s.beta1;
    hyper_.beta2 = s.beta2;
    hyper_.eps = s.eps;
    hyper_.cap_tau = s.cap_tau;
    hyper_.moment = s.moment;
    hyper_.map = s.map;
    hyper_.retraction = Retraction::kPolarSvd;
    hyper_.adaptive = s.adaptive;
    state_ = make_frame_state(to_tensor(w, device_), hyper_);
  }

  Frames<double> step(const Frames<double>& w, const Frames<double>& g) override {
    torch::Tensor wt = to_tensor(w, device_);
    frame_step(wt, to_tensor(g, device_), state_, hyper_);
    return to_frames(wt);
  }

 private:
  torch::Device device_;
  FrameHyper hyper_;
  FrameState state_;
};

}  // namespace

certificates::RuleImplementation trainer_rule_implementation(torch::Device device) {
  const bool cuda = device.is_cuda();
  return {.name = cuda ? "trainer-cuda" : "trainer",
          .description = std::string("the training core's frame_step (training/src/frame_rules.cpp), LibTorch, ") +
                         (cuda ? "CUDA" : "CPU") + ", float64",
          .unit_roundoff = 0x1p-53,
          .make = [device] {
            // As in training: OpenBLAS and LibTorch on one thread each (the certificate runs its claims
            // on its own worker threads; a BLAS pool on top of them oversubscribes the cores). Applied
            // when a claim first runs the rule, not when it is registered: registering happens in
            // every `stiefel` process, and `train --compute environment` keeps the environment's.
            static const bool configured = (configure_cpu_compute(1), true);
            (void)configured;
            return std::make_unique<TrainerRule>(device);
          }};
}

}  // namespace stiefel::training
