// The trainer's rooms share this header: what a run is built from (run_build.cpp), its configuration
// (run_config.cpp), its folder (run_folder.cpp) and its epoch loop (epoch_loop.cpp); train() and
// train_seed_batch() (trainer.cpp) drive a Run through them in that order.
#pragma once

#include <stiefel/training/provenance.h>
#include <stiefel/training/seed_batch.h>
#include <stiefel/training/trainer.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <stiefel/arms.h>
#include <stiefel/schema.h>
#include <stiefel/io/atomic_file.h>
#include <stiefel/io/bounded_read.h>
#include <stiefel/io/sha256.h>
#include <stiefel/training/checkpoint.h>
#include <stiefel/training/codebook.h>
#include <stiefel/training/compute.h>
#include <stiefel/training/datasets.h>
#include <stiefel/training/frame_optimizer.h>
#include <stiefel/training/models.h>
#include <stiefel/training/patches.h>
#include <stiefel/training/small_matmul.h>
#include <stdexcept>

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace stiefel::training::run_detail {

namespace fs = std::filesystem;

// The registry's arm (stiefel/arms.h) with its frame rule resolved for this run's rates.
struct Arm {
  std::string name;
  bool frames_on_manifold;  // orthonormal init, updated by FrameOptimizer
  bool frame_decay;         // AdamW arms: decay on W_Q, W_K
  bool soft_penalty;
  FrameHyper hyper;
  FrameLayout layout = FrameLayout::kPerHead;
  std::optional<double> codebook_beta = {};  // C2, C2-nb: the codebook prior's β
};

struct Data {
  std::string name;
  torch::Tensor train_x, train_y, test_x, test_y, val_x, val_y;
  std::int64_t input_dim = 0, tokens = 0, classes = 0;
  nlohmann::json record;
};

struct Optimisers {
  std::unique_ptr<torch::optim::AdamW> adamw;
  std::unique_ptr<FrameOptimizer> frames;  // the Stiefel arms only
  FrameHyper frame_hyper;
  double beta2 = 0.999;
};

// Configuration (run_config.cpp): the settings a task leaves at their defaults made explicit.
TrainConfig with_task_defaults(const TrainConfig& cin);

// What a run is built from (run_build.cpp).
Arm make_arm(const TrainConfig& c, double adam_lr, double eps);
Data load_data(const TrainConfig& c);
std::vector<torch::Tensor> frame_params(Classifier& model);
torch::Device select_device(const TrainConfig& c);
std::string attention_route(const TrainConfig& c);
std::string blas_kernels(const nlohmann::json& compute);
nlohmann::json select_compute(const TrainConfig& c);
ModelSpec model_spec(const TrainConfig& c, const Data& data);
Classifier build_model(const TrainConfig& c, const ModelSpec& spec, const Arm& arm, torch::Device dev);
Optimisers build_optimisers(const TrainConfig& c, const Arm& arm, Classifier& model);

// The run folder (run_folder.cpp).
void check_stored_record(const nlohmann::json& run, const fs::path& run_path);
std::int64_t recorded_checkpoint_epoch(const nlohmann::json& run, const std::string& sha);
nlohmann::json read_existing_run(const TrainConfig& c, const fs::path& run_path, const fs::path& ckpt_path,
                                 const nlohmann::json& options);

// The epoch loop (epoch_loop.cpp).
std::string first_non_finite(const std::vector<std::pair<std::string, torch::Tensor>>& named, bool grad);
double schedule_factor(std::int64_t step, std::int64_t warmup, std::int64_t total, bool cosine);
std::string format_seconds(double s);
std::pair<torch::Tensor, torch::Tensor> gradient_finiteness(
    const std::vector<std::pair<std::string, torch::Tensor>>& named, torch::Device dev);
std::string error_line(const std::exception& e);

// The per-step sums of an epoch and its first non-finite value, kept on the run's device. The sums
// are read once at the end of the epoch, so that a step never waits for the host (on a GPU a read is
// a synchronisation); the first non-finite step is read there too on a GPU, and after each check on
// the CPU, where a read waits for nothing. Every sum is the same float64 additions in the same order
// as a host sum of the per-step values, so the record is the same bits.
struct DeviceEpoch {
  DeviceEpoch(torch::Device dev, std::size_t tensors)
      : sums(torch::zeros({kSums}, torch::TensorOptions().dtype(torch::kFloat64).device(dev))),
        correct(torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(dev))),
        bad_step(torch::full({}, -1, torch::TensorOptions().dtype(torch::kLong).device(dev))),
        bad_check(torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(dev))),
        bad_tensors(torch::zeros({std::int64_t(std::max<std::size_t>(1, tensors))},
                                 torch::TensorOptions().dtype(torch::kBool).device(dev))) {}

  enum Sum : std::int64_t { kLoss, kTangent, kGauge, kCapped, kPolar, kStep, kSums };
  enum Check : std::int64_t { kFinite, kLossCheck, kGradients, kFrames };

  void add(Sum k, const torch::Tensor& v) { sums[k] += v; }
  // Records step STEP as the epoch's first non-finite one when BAD holds and no earlier step was;
  // TENSORS: which gradients were non-finite (the gradient check).
  void check(const torch::Tensor& bad, std::int64_t step, Check which, const torch::Tensor& tensors = {}) {
    const auto first = bad.logical_and(bad_step.lt(0));
    bad_step = torch::where(first, torch::full_like(bad_step, step), bad_step);
    bad_check = torch::where(first, torch::full_like(bad_check, which), bad_check);
    if (tensors.defined()) bad_tensors = torch::where(first, tensors, bad_tensors);
  }

  torch::Tensor sums, correct, bad_step, bad_check, bad_tensors;
};

// What one epoch's steps accumulate for the record.
struct EpochSums {
  double loss = 0, tangent = 0, step = 0, gauge = 0, capped = 0, frames_seen = 0, polar_fallbacks = 0;
  std::int64_t correct = 0;
};

// One run: its settings, folder, data, model and optimisers, and the stages train() runs in order.
class Run {
 public:
  Run(const TrainConfig& given, std::ostream& progress)
      : c_(with_task_defaults(given)),
        options_(run_options(given)),
        grok_(c_.task == "grok"),
        arm_(make_arm(c_, c_.adam_lr, c_.eps)),
        dev_(select_device(c_)),
        progress_(progress) {}

  // Set-up: the output folder and what it holds. Returns the stored record when it is the result
  // (a completed or diverged run of these settings); otherwise null, and the run goes on.
  std::optional<nlohmann::json> open_folder();
  std::optional<nlohmann::json> finished_result(const nlohmann::json& run) const;
  void set_up();
  void resume();
  void write_header();
  // One epoch of steps; a non-finite value returns the diverged record.
  std::optional<nlohmann::json> train_epoch(std::int64_t epoch, EpochSums& sums);
  nlohmann::json evaluate_epoch(std::int64_t epoch, const EpochSums& sums);
  void commit_epoch(std::int64_t epoch, const nlohmann::json& metrics);
  // After a trained epoch: its evaluation (where due) and its record and checkpoint.
  void close_epoch(std::int64_t epoch, const EpochSums& sums);
  nlohmann::json run_epochs();

  // An epoch in the phases of its steps, as train_epoch runs them for this run alone and
  // train_seed_batch for many runs through one batched forward: begin_epoch; per step step_input
  // (the rates, zeroed gradients, the batch), the model's forward, step_loss, the backward of
  // step_loss's loss, step_update; end_epoch. A phase that returns a record ended the run there
  // (diverged); guarded runs a phase as train_epoch does (an error after a divergence is that
  // divergence).
  void begin_epoch(std::int64_t epoch);
  torch::Tensor step_input(std::int64_t step);
  std::optional<nlohmann::json> step_loss(const torch::Tensor& logits);
  const torch::Tensor& loss() const { return ep_->loss; }
  std::optional<nlohmann::json> step_update();
  std::optional<nlohmann::json> end_epoch(EpochSums& sums);
  template <class F>
  std::optional<nlohmann::json> guarded(F phase);
  void start_clock() { run_start_ = window_start_ = std::chrono::steady_clock::now(); }
  void restart_lap() { lap_start_ = std::chrono::steady_clock::now(); }
  void add_stage(const char* stage, double seconds) { stage_seconds_[stage] += seconds; }
  void record_failure(std::int64_t epoch, const std::string& error) noexcept;
  void note_seed_batch(const nlohmann::json& batch, const std::string& malloc) {
    compute_["seed_batch"] = batch;
    if (c_.compute == "pinned") compute_["malloc"] = malloc;
  }
  Classifier model() const { return model_; }
  std::int64_t start_epoch() const { return start_epoch_; }
  std::int64_t steps_per_epoch() const { return steps_per_epoch_; }
  const nlohmann::json& record() const { return run_; }

 private:
  // The frame diagnostics of all W_Q, W_K at once, cut as the arm's optimiser cuts them (to_frames):
  // [frames, d, r] in float64.
  torch::Tensor stacked_frames(bool grad) const;
  nlohmann::json diverged(const std::string& what, std::int64_t epoch);
  // The parts of write_header (run_folder.cpp).
  nlohmann::json config_record() const;
  void check_resumed_settings() const;
  void note_earlier_compute();
  void write_environment();
  std::optional<nlohmann::json> stop_if_diverged();
  void lap(const char* stage);
  void write_record();
  void print_progress(std::int64_t epoch) const;

  const TrainConfig c_;
  const nlohmann::json options_;
  const bool grok_;
  const Arm arm_;
  const torch::Device dev_;
  std::ostream& progress_;
  const bool tty_ = !c_.quiet && isatty(STDERR_FILENO);
  nlohmann::json compute_;
  fs::path run_path_, ckpt_path_;
  std::optional<io::FolderLock> lock_;
  nlohmann::json run_;
  nlohmann::json stored_config_ = nlohmann::json::object();
  std::string stored_compute_, stored_attention_;
  nlohmann::json stored_compute_record_;  // the record's "compute" before this resume
  Data data_;
  ModelSpec spec_;
  Classifier model_{nullptr};
  Optimisers opt_;
  Codebook codebook_;  // C2, C2-nb: built from the training images at set-up
  std::vector<torch::Tensor> fparams_;
  std::vector<std::pair<std::string, torch::Tensor>> named_;
  std::int64_t n_train_ = 0, batch_ = 0, steps_per_epoch_ = 0, total_steps_ = 0, warmup_ = 0;
  std::int64_t start_epoch_ = 0, global_step_ = 0;
  // Wall seconds per stage of this process's epochs (a profile; never part of the results).
  std::map<std::string, double> stage_seconds_;
  std::chrono::steady_clock::time_point lap_start_, run_start_, window_start_;
  std::int64_t window_epochs_ = 0;
  double frames_seen_ = 0;  // frame steps of the epoch in progress
  // The epoch in progress: its data order, device sums and the step's batch, logits and loss.
  struct EpochState {
    std::int64_t epoch;
    torch::Tensor order;
    DeviceEpoch acc;
    torch::Tensor idx, yb, logits, loss;
  };
  std::optional<EpochState> ep_;
};

// On a GPU a step after a non-finite value may fail outright (an SVD of non-finite frames): that is
// the divergence already recorded; anything else is an error of its own.
template <class F>
std::optional<nlohmann::json> Run::guarded(F phase) {
  try {
    return phase();
  } catch (const std::exception&) {
    if (ep_)
      if (auto stopped = stop_if_diverged()) return stopped;
    throw;
  }
}

}  // namespace stiefel::training::run_detail
