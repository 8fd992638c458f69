#include <stiefel/training/frame_optimizer.h>

#include <stiefel/training/checkpoint.h>

namespace stiefel::training {

FrameOptimizer::FrameOptimizer(std::vector<torch::Tensor> params, FrameHyper hyper, FrameLayout layout)
    : Optimizer({torch::optim::OptimizerParamGroup(std::move(params))},
                std::make_unique<FrameOptimizerOptions>(hyper, layout)) {}

const FrameHyper& FrameOptimizer::hyper() const {
  return static_cast<const FrameOptimizerOptions&>(param_groups_.front().options()).hyper_;
}

FrameLayout FrameOptimizer::layout() const {
  return static_cast<const FrameOptimizerOptions&>(param_groups_.front().options()).layout_;
}

torch::Tensor FrameOptimizer::step(LossClosure closure) {
  torch::NoGradGuard guard;
  torch::Tensor loss;
  if (closure) {
    torch::AutoGradMode enable(true);
    loss = closure();
  }
  std::vector<torch::Tensor> tn, sn, cp, gf, pf;
  for (auto& group : param_groups_) {
    const auto& options = static_cast<FrameOptimizerOptions&>(group.options());
    const FrameHyper& h = options.hyper_;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto key = optimizer_state_key(state_, p);
      auto it = state_.find(key);
      if (it == state_.end()) {
        auto st = std::make_unique<FrameParamState>();
        st->master = to_frames(p.detach().to(torch::kFloat64), options.layout_).clone();
        st->frame = make_frame_state(st->master, h);
        it = state_.emplace(key, std::move(st)).first;
      }
      auto& st = static_cast<FrameParamState&>(*it->second);
      const auto g = to_frames(p.grad().to(torch::kFloat64), options.layout_);
      FrameReport r = frame_step(st.master, g, st.frame, h);
      p.copy_(from_frames(st.master, p, options.layout_).to(p.dtype()));
      tn.push_back(r.direction_norm);
      sn.push_back(r.step_norm);
      cp.push_back(r.capped);
      gf.push_back(r.gauge_fraction);
      pf.push_back(r.polar_fallback);
    }
  }
  if (!tn.empty()) report_ = {torch::cat(tn), torch::cat(sn), torch::cat(cp), torch::cat(gf), torch::cat(pf)};
  return loss;
}

void FrameOptimizer::save(torch::serialize::OutputArchive& archive) const {
  std::int64_t index = 0;
  for (const auto& group : param_groups_)
    for (const auto& p : group.params()) {
      const auto key = optimizer_state_key(state_, p);
      const auto it = state_.find(key);
      const std::int64_t i = index++;
      if (it == state_.end()) continue;
      const auto& st = static_cast<const FrameParamState&>(*it->second);
      archive.write(checkpoint::frame_key(i, "master"), st.master);
      archive.write(checkpoint::frame_key(i, "m"), st.frame.m);
      archive.write(checkpoint::frame_key(i, "v"), st.frame.v);
      archive.write(checkpoint::frame_key(i, "step"), torch::tensor(st.frame.step));
    }
}

void FrameOptimizer::load(torch::serialize::InputArchive& archive) {
  std::int64_t index = 0;
  for (auto& group : param_groups_)
    for (auto& p : group.params()) {
      const std::int64_t i = index++;
      auto st = std::make_unique<FrameParamState>();
      if (!archive.try_read(checkpoint::frame_key(i, "master"), st->master)) continue;
      archive.read(checkpoint::frame_key(i, "m"), st->frame.m);
      archive.read(checkpoint::frame_key(i, "v"), st->frame.v);
      torch::Tensor step;
      archive.read(checkpoint::frame_key(i, "step"), step);
      // A stored tensor replaces the state whatever its shape: check each against the frames.
      const auto frames = to_frames(p.detach(), static_cast<FrameOptimizerOptions&>(group.options()).layout_);
      const auto expect = [&](const torch::Tensor& t, const std::string& key, bool frame_shaped) {
        const bool shape_ok = frame_shaped ? t.sizes() == frames.sizes() : t.dim() == 3 && t.size(0) == frames.size(0);
        if (!shape_ok || t.scalar_type() != torch::kFloat64)
          throw std::invalid_argument(
              "checkpoint tensor " + key + " has shape " + c10::str(t.sizes()) + " and type " +
              std::string(c10::toString(t.scalar_type())) + "; the frame " + std::to_string(i) + " needs " +
              (frame_shaped ? c10::str(frames.sizes()) : "[" + std::to_string(frames.size(0)) + ", …]") +
              " in float64");
      };
      expect(st->master, checkpoint::frame_key(i, "master"), true);
      expect(st->frame.m, checkpoint::frame_key(i, "m"), true);
      expect(st->frame.v, checkpoint::frame_key(i, "v"), false);
      if (step.numel() != 1 || step.item<std::int64_t>() < 0)
        throw std::invalid_argument("checkpoint tensor " + checkpoint::frame_key(i, "step") +
                                    " is not a non-negative step count");
      st->frame.step = step.item<std::int64_t>();
      state_[optimizer_state_key(state_, p)] = std::move(st);
    }
}

}  // namespace stiefel::training
