#include <stiefel/training/trainer_rule.h>

#include <stiefel/training/compute.h>
#include <stiefel/training/frame_optimizer.h>
#include <stiefel/training/frame_rules.h>

namespace stiefel::training {
namespace {

// The trainer's path for one W_Q or W_K parameter [H, d, r]: the parameter in the model's dtype,
// its gradient in that dtype, and FrameOptimizer::step (a float64 master copy of the frames,
// frame_step on it, the result written back in the parameter's dtype). The frames a claim reads
// are the parameter's, as the model reads them; the master is the optimizer's, as in training.
class TrainerRule final : public rules::UpdateRule {
 public:
  TrainerRule(torch::Device device, torch::ScalarType dtype) : device_(device), dtype_(dtype) {}

  void start(const Frames<double>& w, const rules::RuleSettings& s) override {
    FrameHyper hyper;
    hyper.lr = s.lr;
    hyper.beta1 = s.beta1;
    hyper.beta2 = s.beta2;
    hyper.eps = s.eps;
    hyper.cap_tau = s.cap_tau;
    hyper.moment = s.moment;
    hyper.map = s.map;
    hyper.retraction = Retraction::kPolarSvd;
    hyper.adaptive = s.adaptive;
    param_ = frames_to_tensor(w).to(device_, dtype_);
    optimizer_ = std::make_unique<FrameOptimizer>(std::vector<torch::Tensor>{param_}, hyper);
  }

  // The optimizer carries its master copy from step to step, as in training: W is the parameter
  // the previous step returned (the claims pass it back unchanged).
  Frames<double> step(const Frames<double>&, const Frames<double>& g) override {
    param_.mutable_grad() = frames_to_tensor(g).to(device_, dtype_);
    optimizer_->step();
    return tensor_to_frames(param_);
  }

  // As the trainer's schedule sets it (epoch_loop.cpp): through the parameter group's options.
  void set_rate(double lr) override { optimizer_->param_groups().front().options().set_lr(lr); }

 private:
  torch::Device device_;
  torch::ScalarType dtype_;
  torch::Tensor param_;
  std::unique_ptr<FrameOptimizer> optimizer_;
};

}  // namespace

torch::Tensor frames_to_tensor(const Frames<double>& f, torch::ScalarType dtype) {
  const auto heads = std::int64_t(f.size()), d = f.front().rows(), r = f.front().cols();
  auto out = torch::empty({heads, d, r}, torch::dtype(torch::kFloat64));
  auto a = out.accessor<double, 3>();
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < d; ++i)
      for (std::int64_t j = 0; j < r; ++j) a[h][i][j] = f[std::size_t(h)](i, j);
  return out.to(dtype);
}

Frames<double> tensor_to_frames(const torch::Tensor& t) {
  const auto cpu = t.to(torch::kCPU, torch::kFloat64).contiguous();
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

rules::RuleImplementation trainer_rule_implementation(torch::Device device, torch::ScalarType dtype) {
  const bool cuda = device.is_cuda();
  const bool single = dtype == torch::kFloat32;
  if (!single && dtype != torch::kFloat64)
    throw std::invalid_argument("trainer_rule_implementation: the parameter dtype must be float32 or float64");
  std::string name = cuda ? "trainer-cuda" : "trainer";
  if (single) name += "-f32";
  return {.name = name,
          .description = std::string("the training core's FrameOptimizer::step and frame_step "
                                     "(training/src/frame_optimizer.cpp, frame_rules.cpp), LibTorch, ") +
                         (cuda ? "CUDA" : "CPU") + ", parameter and gradient in " +
                         (single ? "float32 (the model's dtype)" : "float64") +
                         ", master frames and moments in float64",
          .unit_roundoff = 0x1p-53,
          .io_roundoff = single ? 0x1p-24 : 0x1p-53,
          .make =
              [device, dtype] {
                // As in training: OpenBLAS and LibTorch on one thread each (the certificate runs its claims
                // on its own worker threads; a BLAS pool on top of them oversubscribes the cores). Applied
                // when a claim first runs the rule, not when it is registered: registering happens in
                // every `stiefel` process, and `train --compute environment` keeps the environment's.
                static const bool configured = (configure_cpu_compute(1), true);
                (void)configured;
                return std::make_unique<TrainerRule>(device, dtype);
              },
          .only_rule = {},
          .declaration = {}};
}

}  // namespace stiefel::training
