// A torch::optim::Optimizer for Stiefel frame parameters ([H, d, r] or [d, r] tensors, one frame
// per leading index): each step runs training::frame_step in float64 on a float64 master copy of
// the frames and writes the result back in the parameter's dtype. Usable from any LibTorch program.
#pragma once

#include <torch/torch.h>

#include <sstream>
#include <string>
#include <type_traits>

#include "frame_rules.h"

namespace stiefel::training {

// The key under which a torch::optim::Optimizer keeps parameter p's state in `state` (its state()
// map): the TensorImpl's address printed as a string in LibTorch 1.13, the address itself from
// LibTorch 2.0 on.
template <class StateMap>
typename StateMap::key_type optimizer_state_key(const StateMap& /*state*/, const torch::Tensor& p) {
  using Key = typename StateMap::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream os;
    os << p.unsafeGetTensorImpl();
    return os.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

struct FrameOptimizerOptions : torch::optim::OptimizerCloneableOptions<FrameOptimizerOptions> {
  explicit FrameOptimizerOptions(FrameHyper hyper = {}, FrameLayout layout = FrameLayout::kPerHead)
      : hyper_(hyper), layout_(layout) {}
  FrameHyper hyper_;
  FrameLayout layout_;
  double get_lr() const override { return hyper_.lr; }
  void set_lr(const double lr) override { hyper_.lr = lr; }
};

struct FrameParamState : torch::optim::OptimizerCloneableParamState<FrameParamState> {
  torch::Tensor master;  // float64 [B, d, r]: the parameter's frames (to_frames)
  FrameState frame;
};

class FrameOptimizer : public torch::optim::Optimizer {
 public:
  FrameOptimizer(std::vector<torch::Tensor> params, FrameHyper hyper, FrameLayout layout = FrameLayout::kPerHead);
  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  // What the last step did, concatenated over every frame of every parameter.
  const FrameReport& last_report() const { return report_; }
  const FrameHyper& hyper() const;
  FrameLayout layout() const;

 private:
  FrameReport report_;
};

}  // namespace stiefel::training
