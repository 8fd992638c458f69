// Checkpoints: any byte string either restores into a run of the same model and options, or is
// refused with std::invalid_argument naming the file; never another exception, never a crash.
// (A resume verifies the SHA-256 its run record names before this loader reads a byte; this
// target exercises the loader itself, as `stiefel certify --checkpoint` uses it on any file.)
#include <stiefel/training/checkpoint.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>

namespace {

using namespace stiefel::training;

// The run the fuzzed bytes are restored into: one layer, d = 8, two heads of r = 3, B2 frames.
struct Target {
  Target() : model(spec()) {
    auto gen = at::detail::createCPUGenerator(7);
    init_frames(model, true, gen);
    std::vector<torch::Tensor> frames, rest;
    std::set<const void*> frame_set;
    for (auto& attn : model->attention_layers()) {
      frame_set.insert(attn->wq.unsafeGetTensorImpl());
      frame_set.insert(attn->wk.unsafeGetTensorImpl());
    }
    for (auto& p : model->parameters()) (frame_set.count(p.unsafeGetTensorImpl()) ? frames : rest).push_back(p);
    adamw = std::make_unique<torch::optim::AdamW>(rest, torch::optim::AdamWOptions(1e-3));
    frame_opt = std::make_unique<FrameOptimizer>(frames, FrameHyper{});
  }
  static ModelSpec spec() {
    ModelSpec s;
    s.input_dim = 6;
    s.tokens = 4;
    s.classes = 3;
    s.d = 8;
    s.heads = 2;
    s.r = 3;
    s.layers = 1;
    return s;
  }
  void step() {
    adamw->zero_grad();
    frame_opt->zero_grad();
    torch::cross_entropy_loss(model->forward(torch::randn({5, 4, 6})), torch::randint(0, 3, {5})).backward();
    adamw->step();
    frame_opt->step();
  }
  checkpoint::State state() { return {&model, adamw.get(), frame_opt.get()}; }
  Classifier model;
  std::unique_ptr<torch::optim::AdamW> adamw;
  std::unique_ptr<FrameOptimizer> frame_opt;
};

const nlohmann::json kOptions = {{"arm", "b2"}, {"seed", 0}};

}  // namespace

// `fuzz_checkpoint -seed FILE` writes a valid checkpoint of the target's run to FILE (the corpus's seed).
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  torch::set_num_threads(1);
  for (int i = 1; i + 1 < *argc; ++i)
    if (std::string((*argv)[i]) == "-seed") {
      torch::manual_seed(0);
      Target t;
      t.step();
      std::ofstream((*argv)[i + 1], std::ios::binary) << checkpoint::serialise(t.state(), 1, 1, kOptions);
      std::exit(0);
    }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Target t;
  auto state = t.state();
  try {
    checkpoint::restore(std::string(reinterpret_cast<const char*>(data), size), "checkpoint.pt", kOptions, state);
  } catch (const std::invalid_argument& e) {
    if (std::string(e.what()).find("checkpoint.pt") == std::string::npos) std::abort();  // it must name the file
    return 0;
  }
  t.step();  // a restored state is usable
  return 0;
}
