// Single training runs (`stiefel train`): the image-patch transformer or the grokking model, one
// optimizer arm for W_Q, W_K and the same AdamW for every other parameter; per-epoch metrics in
// DIR/run.json and an atomic checkpoint DIR/checkpoint.pt after every epoch, from which --resume
// continues bit-identically on CPU.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace stiefel::training {

struct TrainConfig {
  std::string task = "image";  // image | grok
  std::string arm = "b2";      // one of stiefel::arms::names()
  std::uint64_t seed = 0;
  std::string data;        // cifar10:DIR | fashion-mnist[:DIR]; empty: the task default
  std::int64_t n = 10000;  // image: the first n training images
  std::int64_t epochs = 40;
  std::string device = "cpu";  // cpu | cuda
  std::string out;
  bool resume = false;
  std::int64_t batch = 256;
  double adam_lr = -1, weight_decay = -1;        // −1: the task default (image 1e-3, 0.05; grok 1e-3, 1.0)
  double riemann_lr = 1.0, eps = -1, tau = 0.1;  // eps −1: image 1e-8, grok 1e-3
  double sgd_lr = 0.02, elementwise_lr = -1, soft_lambda = 0.1;  // elementwise −1: the AdamW rate
  double codebook_beta = 0.1;                                    // C2: the codebook prior's weight β
  std::int64_t codebook_k = 32;                                  // C2, C2-nb: the codebook's size K
  std::int64_t warmup_epochs = 5;                                // image schedule: linear warm-up, then cosine to zero
  bool power_stabilisation = false;                              // grok: β2 = 0.98 and a 10-step warm-up
  bool deterministic = false;  // LibTorch's deterministic algorithms (CUDA: deterministic cuBLAS and cuDNN)
  std::int64_t modulus = 97;   // grok: p of (a + b) mod p (§4.3: 97)
  std::int64_t test_n = 0;     // image: evaluate on the first test_n test images (0: all)
  std::int64_t val_n = 0;      // image: validation split, training images [n, n + val_n)
  double init_scale = 1.0;     // §4.4 H3: the circuit's rank ≥ 2 weights start at this × default
  std::int64_t layers = 2;
  std::string pooling = "mean", positional = "learned";
  std::int64_t pca_samples = 100000;
  std::int64_t threads = 1;
  std::string compute = "pinned";  // pinned: one BLAS thread, glibc keeps freed memory (results
                                   // independent of the environment); environment: as before
  std::int64_t eval_every = 0;     // 0: every epoch (image), every 100 epochs (grok)
  bool quiet = false;
  bool overwrite = false;  // replace a run already in `out` (otherwise refused)
  // --resume under other BLAS kernels than the record's (other bits from there on): refused unless
  // asked, and then recorded in earlier_compute. Not a setting of the run (never in its options).
  bool allow_kernel_change = false;
  // Stop after this epoch (0: never), the schedule still the whole run's: the record keeps its first
  // epochs as the whole run computes them (stiefel replicate). Not a setting of the run.
  std::int64_t stop_after_epoch = 0;
};

// The settings that define a run (everything but out, resume, quiet, overwrite), as given: stored in
// run.json ("options") and in every checkpoint, and compared on --resume.
nlohmann::json run_options(const TrainConfig& config);

// Throws std::invalid_argument naming the option when a setting is out of range (negative rates,
// non-finite values, too few PCA samples, ...). train() calls it first.
void validate(const TrainConfig& config);
// The options a record of ARM states that its run does not read (riemann_lr, tau, sgd_lr,
// elementwise_lr, soft_lambda): the frames' rates of a rule that does not use them, and the soft
// penalty's weight of an arm without it. The record lists them in config.not_read.
std::vector<std::string> options_not_read(const std::string& arm);

// Runs (or resumes) a run; returns run.json's content. Throws std::invalid_argument for a bad
// configuration, a resume whose settings differ from the stored run's, or an output folder that
// already holds a run (without `overwrite`), and DataError for bad data, before anything is written.
// A non-finite loss, gradient or parameter ends the run with status "diverged" (recorded with the
// epoch, the step and the tensor), not an exception: divergence is a result.
nlohmann::json train(const TrainConfig& config, std::ostream& progress);

// Seed batching: trains the runs CONFIGS in one process, every step of all of them through one
// batched forward (seed_batch.h), each run with its own data order, initialisation, optimisers,
// record, checkpoint and resume. Each record is the one train(config) writes, bit for bit on the
// CPU, but for its timings and its "compute" (which names the batch); runs at different epochs
// (resumed from different checkpoints) batch together, and a run that finishes or diverges leaves
// the batch. The runs must differ only in their seed and folder, and be grokking runs (the model
// seed_batch.h batches): std::invalid_argument otherwise, before anything is written. An error in
// the shared forward or backward records "failed" in every run still training (each resumes with
// --resume); a run that cannot start (its folder held by another process) or whose own part fails
// (its evaluation, its files) leaves the batch alone, the others go on, and the call then throws
// std::runtime_error naming it. Returns the records in the order of CONFIGS.
std::vector<nlohmann::json> train_seed_batch(const std::vector<TrainConfig>& configs, std::ostream& progress);

}  // namespace stiefel::training
