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

namespace stiefel::training {
namespace {

namespace fs = std::filesystem;

constexpr const char* kJpegCopyTestSha256 = "04f678140f6c19922ac2cd6173508c3ff0dcb7f932804c755f677b00c33bd949";

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

Arm make_arm(const TrainConfig& c, double adam_lr, double eps) {
  const arms::Arm& def = arms::find(c.arm);
  Arm a{c.arm,
        def.on_manifold(),
        def.frame_decay,
        def.soft_penalty,
        {},
        def.block_heads ? FrameLayout::kBlock : FrameLayout::kPerHead};
  const arms::Rates rates{.riemann_lr = c.riemann_lr,
                          .adam_lr = adam_lr,
                          .elementwise_lr = c.elementwise_lr > 0 ? c.elementwise_lr : adam_lr,
                          .sgd_lr = c.sgd_lr,
                          .eps = eps,
                          .tau = c.tau,
                          .codebook_beta = c.codebook_beta};
  if (def.on_manifold()) a.hyper = frame_hyper(def.rule(rates));
  if (def.uses_codebook()) a.codebook_beta = def.codebook_beta(rates);
  return a;
}

struct Data {
  std::string name;
  torch::Tensor train_x, train_y, test_x, test_y, val_x, val_y;
  std::int64_t input_dim = 0, tokens = 0, classes = 0;
  nlohmann::json record;
};

Data load_data(const TrainConfig& c) {
  Data d;
  if (c.task == "grok") {
    if (c.val_n > 0) throw std::invalid_argument("--val-n: the grok task has no validation split");
    if (!c.data.empty() && c.data != "modular")
      throw std::invalid_argument("--data " + c.data + ": the grok task uses modular arithmetic (no data)");
    const std::int64_t p = c.modulus;
    const auto m = make_modular_addition(p, 0.4, c.seed);
    d.name = "modular addition (a + b) mod " + std::to_string(p);
    d.train_x = torch::tensor(m.train_tokens).view({-1, 3});
    d.train_y = torch::tensor(m.train_labels);
    d.test_x = torch::tensor(m.test_tokens).view({-1, 3});
    d.test_y = torch::tensor(m.test_labels);
    d.input_dim = p + 1;  // the residues and the "=" token
    d.tokens = 3;
    d.classes = p;
    d.record = {{"name", d.name},           {"p", p},
                {"train_fraction", 0.4},    {"train", d.train_y.size(0)},
                {"test", d.test_y.size(0)}, {"split_seed", c.seed}};
    return d;
  }
  ImageSet train, test;
  std::int64_t patch = 0, dim = 0;
  const std::string spec = c.data.empty() ? "fashion-mnist" : c.data;
  if (spec.rfind("cifar10:", 0) == 0) {
    const std::string dir = spec.substr(8);
    train = read_cifar10(cifar10_files(dir, true));
    test = read_cifar10(cifar10_files(dir, false));
    d.name = io::sha256_file(dir + "/test_batch.bin") == kJpegCopyTestSha256 ? "CIFAR-10 (JPEG copy)" : "CIFAR-10";
    patch = 8;
    dim = 128;
  } else if (spec == "fashion-mnist" || spec.rfind("fashion-mnist:", 0) == 0) {
    const std::string dir = spec == "fashion-mnist" ? "/usr/share/datasets/fashion-mnist" : spec.substr(14);
    train = read_idx(dir + "/train-images-idx3-ubyte.gz", dir + "/train-labels-idx1-ubyte.gz");
    test = read_idx(dir + "/t10k-images-idx3-ubyte.gz", dir + "/t10k-labels-idx1-ubyte.gz");
    d.name = "Fashion-MNIST";
    patch = 7;
    dim = 49;  // 16 patches of 7×7×1: whitened in full (49 dimensions)
  } else {
    throw std::invalid_argument("--data " + spec + ": expected cifar10:DIR or fashion-mnist[:DIR]");
  }
  const auto p = prepare_patch_data(train, test, c.n, patch, dim, c.pca_samples, c.seed, d.name, c.val_n);
  // The default takes every training patch when there are fewer than it asks for (the record's
  // dataset.pca_samples says how many); a number given is never cut down.
  if (p.pca_samples < c.pca_samples && c.pca_samples != TrainConfig{}.pca_samples)
    throw std::invalid_argument("--pca-samples " + std::to_string(c.pca_samples) + ": more than the " +
                                std::to_string(p.pca_samples) + " training patches (" + std::to_string(c.n) +
                                " images × " + std::to_string(p.train_x.size(1)) + "); expected 1000 to " +
                                std::to_string(p.pca_samples));
  d.val_x = p.val_x;
  d.val_y = p.val_y;
  d.train_x = p.train_x;
  d.train_y = p.train_y;
  d.test_x = p.test_x;
  d.test_y = p.test_y;
  if (c.test_n > d.test_y.size(0))
    throw std::invalid_argument("--test-n " + std::to_string(c.test_n) + ": the test split has " +
                                std::to_string(d.test_y.size(0)) + " images");
  if (c.test_n > 0 && c.test_n < d.test_y.size(0)) {  // the first test_n test images (smoke runs)
    d.test_x = d.test_x.slice(0, 0, c.test_n);
    d.test_y = d.test_y.slice(0, 0, c.test_n);
  }
  d.input_dim = p.dim;
  d.tokens = p.train_x.size(1);
  d.classes = p.classes;
  d.record = {{"name", d.name},
              {"source", spec},
              {"train", c.n},
              {"test", d.test_y.size(0)},
              {"patch", patch},
              {"patches_per_image", d.tokens},
              {"raw_dim", p.raw_dim},
              {"whitened_dim", p.dim},
              {"pca_samples", p.pca_samples},
              {"pca_eps", 0.1},
              {"contrast_normalisation", "(x - mean) / sqrt(var + 10/255^2)"}};
  if (c.val_n > 0)
    d.record["validation"] = {{"first", c.n},
                              {"count", c.val_n},
                              {"note", "training images [n, n + val_n): never trained on, not in the PCA fit"}};
  return d;
}

// The first non-finite tensor among NAMED (its gradient when `grad`), or "" when all are finite. One
// float64 reduction per tensor and one synchronisation in all.
std::string first_non_finite(const std::vector<std::pair<std::string, torch::Tensor>>& named, bool grad) {
  std::vector<torch::Tensor> sums;
  for (const auto& [name, t] : named) {
    const auto& x = grad ? t.grad() : t;
    sums.push_back(x.defined() ? x.detach().sum(torch::kFloat64)
                               : torch::zeros({}, t.options().dtype(torch::kFloat64)));
  }
  if (sums.empty() || std::isfinite(torch::stack(sums).sum().item<double>())) return "";
  for (std::size_t i = 0; i < named.size(); ++i) {
    const auto& x = grad ? named[i].second.grad() : named[i].second;
    if (x.defined() && !torch::isfinite(x.detach()).all().item<bool>())
      return (grad ? "gradient of " : "parameter ") + named[i].first;
  }
  return grad ? "gradients (sum overflows float64)" : "parameters (sum overflows float64)";
}

double schedule_factor(std::int64_t step, std::int64_t warmup, std::int64_t total, bool cosine) {
  if (warmup > 0 && step < warmup) return double(step + 1) / double(warmup);
  if (!cosine) return 1.0;
  const double t = double(step - warmup) / double(std::max<std::int64_t>(1, total - warmup));
  return 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, t)));
}

std::vector<torch::Tensor> frame_params(Classifier& model) {
  std::vector<torch::Tensor> out;
  for (auto& attn : model->attention_layers()) {
    out.push_back(attn->wq);
    out.push_back(attn->wk);
  }
  return out;
}

struct Accuracy {
  double loss = 0, acc = 0;
};

// Evaluates in chunks of `chunk` examples: 256 keeps every activation below glibc's mmap threshold
// (an FFN activation of 2048 images is 64 MiB, mapped and faulted in afresh on every call).
Accuracy evaluate(Classifier& model, const torch::Tensor& x, const torch::Tensor& y, torch::Device dev,
                  std::int64_t chunk) {
  torch::NoGradGuard guard;
  model->eval();
  // Summed on the device (float64 additions in chunk order, as a host sum would) and read once.
  auto loss = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(dev));
  auto correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(dev));
  for (std::int64_t i = 0; i < x.size(0); i += chunk) {
    const auto xb = x.slice(0, i, std::min(x.size(0), i + chunk)).to(dev);
    const auto yb = y.slice(0, i, std::min(y.size(0), i + chunk)).to(dev);
    const auto logits = model->forward(xb);
    loss += torch::cross_entropy_loss(logits, yb, {}, at::Reduction::Sum).to(torch::kFloat64);
    correct += logits.argmax(1).eq(yb).sum();
  }
  model->train();
  return {loss.to(torch::kCPU).item<double>() / double(x.size(0)),
          double(correct.to(torch::kCPU).item<std::int64_t>()) / double(x.size(0))};
}

// A stored record is read only once it matches run.schema.json; a damaged one is refused naming the
// file and the field.
void check_stored_record(const nlohmann::json& run, const fs::path& run_path) {
  const auto v = schema::run_record().violations(run, 1);
  if (!v.empty())
    throw std::invalid_argument(run_path.string() + ": " + v[0] + " (" + schema::run_record().name() +
                                "); --overwrite starts the run over");
  if (const auto why = schema::run_record_sequence_violation(run); !why.empty())
    throw std::invalid_argument(run_path.string() + ": " + why + "; --overwrite starts the run over");
}

// The epoch whose checkpoint the record names with this SHA-256 (the record keeps the last two), or −1.
std::int64_t recorded_checkpoint_epoch(const nlohmann::json& run, const std::string& sha) {
  std::int64_t epoch = -1;
  if (run.contains("checkpoints"))
    for (const auto& [e, h] : run["checkpoints"].items())
      if (h == sha) epoch = std::stoll(e);
  return epoch;
}

// What OUT already holds, read before anything is written. Without --resume a run there is
// refused (unless --overwrite). With --resume: the stored record (an empty object when there is
// none), once its settings are checked to be this run's.
nlohmann::json read_existing_run(const TrainConfig& c, const fs::path& run_path, const fs::path& ckpt_path,
                                 const nlohmann::json& options) {
  const bool has_run = fs::exists(run_path), has_ckpt = fs::exists(ckpt_path);
  auto parse = [&] {
    nlohmann::json run;
    try {
      run = schema::parse_bounded(io::read_regular_file(run_path, checkpoint::kMaxRecordBytes, "a run record"),
                                  run_path.string());
    } catch (const std::exception& e) {
      throw std::invalid_argument(run_path.string() + ": not a readable run record (" + e.what() +
                                  "); --overwrite starts the run over");
    }
    if (!run.is_object())
      throw std::invalid_argument(run_path.string() + ": not a run record (expected a JSON object)");
    return run;
  };
  if (!c.resume) {
    if ((has_run || has_ckpt) && !c.overwrite) {
      std::string what = "a run";
      if (has_run) {
        try {
          const auto status = parse().value("status", "");
          what = status == "completed"  ? "a completed run"
                 : status == "diverged" ? "a diverged run"
                                        : "an interrupted run";
        } catch (const std::exception&) {
          what = "an unreadable run record";
        }
      }
      throw std::invalid_argument("--out " + c.out + ": holds " + what + " (" +
                                  (has_run ? run_path : ckpt_path).string() +
                                  "); --resume continues or returns it, --overwrite replaces it");
    }
    return nlohmann::json();
  }
  if (!has_run) {
    if (has_ckpt)
      throw std::invalid_argument(ckpt_path.string() +
                                  ": no run record (run.json) to verify this checkpoint against; "
                                  "--overwrite starts the run over");
    return nlohmann::json::object();
  }
  nlohmann::json run = parse();
  check_stored_record(run, run_path);
  if (run.contains("options")) {
    const auto differs = checkpoint::differing_settings(run["options"], options);
    if (!differs.empty())
      throw std::invalid_argument("--resume: " + run_path.string() + " records another run: " + differs +
                                  "; resume with the same options, use another --out, or --overwrite");
  }
  return run;
}

std::string format_seconds(double s) {
  std::ostringstream os;
  const long t = long(std::lround(s));
  os << t / 3600 << ":" << std::setw(2) << std::setfill('0') << (t / 60) % 60 << ":" << std::setw(2) << t % 60;
  return os.str();
}

}  // namespace

nlohmann::json run_options(const TrainConfig& c) {
  nlohmann::json o = {{"task", c.task},
                      {"arm", c.arm},
                      {"seed", c.seed},
                      {"data", c.data},
                      {"n", c.n},
                      {"epochs", c.epochs},
                      {"device", c.device},
                      {"batch", c.batch},
                      {"adam_lr", c.adam_lr},
                      {"weight_decay", c.weight_decay},
                      {"riemann_lr", c.riemann_lr},
                      {"eps", c.eps},
                      {"tau", c.tau},
                      {"sgd_lr", c.sgd_lr},
                      {"elementwise_lr", c.elementwise_lr},
                      {"soft_lambda", c.soft_lambda},
                      {"warmup_epochs", c.warmup_epochs},
                      {"power_stabilisation", c.power_stabilisation},
                      {"test_n", c.test_n},
                      {"val_n", c.val_n},
                      {"init_scale", c.init_scale},
                      {"layers", c.layers},
                      {"pooling", c.pooling},
                      {"positional", c.positional},
                      {"pca_samples", c.pca_samples},
                      {"threads", c.threads},
                      {"compute", c.compute},
                      {"eval_every", c.eval_every}};
  // The codebook's settings only where the arm has one: every other run's options stay as they were.
  if (arms::find(c.arm).uses_codebook()) {
    o["codebook_beta"] = c.codebook_beta;
    o["codebook_k"] = c.codebook_k;
  }
  // The modulus only where it is not §4.3's 97, and deterministic algorithms only where asked, for the
  // same reason.
  if (c.modulus != TrainConfig{}.modulus) o["modulus"] = c.modulus;
  if (c.deterministic) o["deterministic"] = true;
  return o;
}

namespace {

// The grokking task trains §4.3's model on all its pairs in one batch: the image task's data, model,
// schedule and evaluation options do not apply to it, and a record must never state a setting
// that did not run, so one given with another value than its default is refused.
template <class Bad>
void refuse_image_options(const TrainConfig& c, const Bad& bad) {
  const TrainConfig d;
  const auto refuse = [&](const char* option, bool given) {
    if (given)
      bad(option, "the grok task does not use it (an image-task option; §4.3's model and its full batch are fixed)");
  };
  refuse("data", !c.data.empty());
  refuse("n", c.n != d.n);
  refuse("batch", c.batch != d.batch);
  refuse("layers", c.layers != d.layers);
  refuse("pooling", c.pooling != d.pooling);
  refuse("positional", c.positional != d.positional);
  refuse("warmup-epochs", c.warmup_epochs != d.warmup_epochs);
  refuse("test-n", c.test_n != d.test_n);
  refuse("val-n", c.val_n != d.val_n);
  refuse("pca-samples", c.pca_samples != d.pca_samples);
}

}  // namespace

void validate(const TrainConfig& c) {
  auto bad = [](const std::string& option, const std::string& what) {
    throw std::invalid_argument("--" + option + ": " + what);
  };
  if (c.task != "image" && c.task != "grok") bad("task", c.task + ": expected image or grok");
  if (c.out.empty()) bad("out", "an output folder is required");
  // Rates and weights: finite and ≥ 0; those with a task default also take −1 ("the default").
  auto rate = [&](const char* option, double v, bool has_default) {
    if (has_default && v == -1) return;
    if (!std::isfinite(v) || v < 0)
      bad(option, std::to_string(v) + ": expected a finite number >= 0" + (has_default ? " (or omit it)" : ""));
  };
  rate("adam-lr", c.adam_lr, true);
  rate("weight-decay", c.weight_decay, true);
  rate("eps", c.eps, true);
  rate("elementwise-lr", c.elementwise_lr, true);
  rate("riemann-lr", c.riemann_lr, false);
  rate("tau", c.tau, false);
  rate("sgd-lr", c.sgd_lr, false);
  rate("soft-lambda", c.soft_lambda, false);
  rate("codebook-beta", c.codebook_beta, false);
  if (c.codebook_k < 1 || c.codebook_k > 4096) bad("codebook-k", std::to_string(c.codebook_k) + ": expected 1 to 4096");
  if (arms::find(c.arm).uses_codebook() && c.task != "image")
    bad("arm", c.arm + ": the codebook prior needs the image task (its codebook is built from image patches)");
  // The codebook's settings reach only the arms that have one: given to another arm, they would run
  // nothing while the command line says they did.
  if (!arms::find(c.arm).uses_codebook()) {
    const TrainConfig d;
    for (const auto& [option, given] :
         {std::pair<const char*, bool>{"codebook-beta", c.codebook_beta != d.codebook_beta},
          {"codebook-k", c.codebook_k != d.codebook_k}})
      if (given) bad(option, "arm " + c.arm + " has no codebook prior (c2 and c2-nb have one): it would not run");
  }
  if (c.tau == 0) bad("tau", "0: the cap must be positive");
  if (!std::isfinite(c.init_scale) || c.init_scale <= 0) bad("init-scale", "expected a finite number > 0");
  auto at_least = [&](const char* option, std::int64_t v, std::int64_t lo) {
    if (v < lo) bad(option, std::to_string(v) + ": expected at least " + std::to_string(lo));
  };
  at_least("epochs", c.epochs, 1);
  at_least("n", c.n, 1);
  at_least("batch", c.batch, 1);
  at_least("warmup-epochs", c.warmup_epochs, 0);
  at_least("test-n", c.test_n, 0);
  at_least("val-n", c.val_n, 0);
  at_least("layers", c.layers, 1);
  at_least("threads", c.threads, 1);
  at_least("eval-every", c.eval_every, 0);
  // The whitening PCA of 128 dimensions needs well over 128 patches for a full-rank covariance.
  at_least("pca-samples", c.pca_samples, 1000);
  // The grokking modulus: from 5 (10 training and 15 test pairs) to 1 000 (a full batch of 400 000).
  at_least("modulus", c.modulus, 5);
  // Upper bounds keep every product of counts (steps × epochs, images × pixels) far from overflow.
  auto at_most = [&](const char* option, std::int64_t v, std::int64_t hi) {
    if (v > hi) bad(option, std::to_string(v) + ": expected at most " + std::to_string(hi));
  };
  at_most("epochs", c.epochs, 10000000);
  at_most("n", c.n, 100000000);
  at_most("batch", c.batch, 10000000);
  at_most("warmup-epochs", c.warmup_epochs, 10000000);
  at_most("test-n", c.test_n, 100000000);
  at_most("val-n", c.val_n, 100000000);
  at_most("layers", c.layers, 64);
  at_most("threads", c.threads, 256);
  at_most("eval-every", c.eval_every, 10000000);
  at_most("pca-samples", c.pca_samples, 100000000);
  at_most("modulus", c.modulus, 1000);
  if (c.resume && c.overwrite)
    bad("overwrite", "--resume continues the run in --out, --overwrite starts it over: choose one");
  if (c.task == "grok") refuse_image_options(c, bad);
  if (c.task == "image" && c.modulus != TrainConfig{}.modulus)
    bad("modulus", "the image task does not use it (the grokking task's modulus)");
  if (c.seed > std::uint64_t(std::numeric_limits<std::int64_t>::max())) bad("seed", "expected 0 <= seed < 2^63");
}

namespace {

// The settings after the task defaults are filled in (options keep them as given).
TrainConfig with_task_defaults(const TrainConfig& cin) {
  TrainConfig c = cin;
  const bool grok = c.task == "grok";
  if (c.adam_lr < 0) c.adam_lr = 1e-3;
  if (c.weight_decay < 0) c.weight_decay = grok ? 1.0 : 0.05;
  if (c.eps < 0) c.eps = grok ? 1e-3 : 1e-8;
  if (c.eval_every <= 0) c.eval_every = grok ? 100 : 1;
  return c;
}

torch::Device select_device(const TrainConfig& c) {
  if (c.device == "cpu") return torch::Device(torch::kCPU);
  if (c.device != "cuda") throw std::invalid_argument("--device " + c.device + ": expected cpu or cuda");
  if (!torch::cuda::is_available())
    throw std::invalid_argument("--device cuda: no CUDA device is available to this LibTorch build");
  return torch::Device(torch::kCUDA);
}

// The attention route of a configuration: the grokking model's 3-token attention goes through the
// packed route (models.h) under the pinned configuration; the reference configuration and the image
// model keep the per-head route. Recorded in run.json and built by model_spec from this one rule.
std::string attention_route(const TrainConfig& c) {
  return c.task == "grok" && c.compute == "pinned" ? "packed" : "per-head";
}

// The BLAS kernels a compute record names (OpenBLAS's core), or "" where it names none.
std::string blas_kernels(const nlohmann::json& compute) {
  if (!compute.is_object() || !compute.contains("blas") || !compute["blas"].is_object()) return "";
  const auto k = compute["blas"].value("kernels", nlohmann::json());
  return k.is_string() ? k.get<std::string>() : "";
}

// Threads, BLAS and malloc for this process, recorded in run.json ("compute").
nlohmann::json select_compute(const TrainConfig& c) {
  if (c.compute != "pinned" && c.compute != "environment")
    throw std::invalid_argument("--compute " + c.compute + ": expected pinned or environment");
  const bool pinned = c.compute == "pinned";
  nlohmann::json compute;
  if (pinned) {
    compute = configure_cpu_compute(int(c.threads));
  } else {  // the configuration before pinning: BLAS threads and malloc from the environment
    torch::set_num_threads(int(c.threads));
    compute = {{"intra_op_threads", torch::get_num_threads()},
               {"blas", "threads from the environment"},
               {"malloc", "glibc defaults"}};
  }
  use_small_bmm_kernel(pinned);
  compute["mode"] = c.compute;
  // Deterministic algorithms: an operation without one throws, naming itself. cuBLAS reads its
  // workspace setting when it starts, before this run's first GEMM.
  at::globalContext().setDeterministicAlgorithms(c.deterministic, /*warn_only=*/false);
  if (c.deterministic) {
    if (c.device == "cuda") {
      ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
      at::globalContext().setDeterministicCuDNN(true);
      at::globalContext().setBenchmarkCuDNN(false);
    }
    const char* workspace = std::getenv("CUBLAS_WORKSPACE_CONFIG");
    compute["deterministic"] = {{"algorithms", true},
                                {"cudnn", c.device == "cuda" ? "deterministic, no benchmarking" : "not used"},
                                {"cublas_workspace_config", workspace ? nlohmann::json(workspace) : nlohmann::json()}};
  }
  compute["attention_products"] = attention_route(c) == "packed" ? "one [Q|K|V] GEMM, small-attention kernel"
                                  : pinned                       ? "small-matrix kernel"
                                                                 : "torch::matmul";
  return compute;
}

ModelSpec model_spec(const TrainConfig& c, const Data& data) {
  const bool grok = c.task == "grok";
  ModelSpec spec;
  spec.task = c.task;
  spec.input_dim = data.input_dim;
  spec.tokens = data.tokens;
  spec.classes = data.classes;
  spec.layers = grok ? 2 : c.layers;
  spec.heads = grok ? 4 : 8;
  spec.r = grok ? 32 : 16;
  spec.pooling = c.pooling;
  spec.positional = grok ? "none" : c.positional;
  spec.attention = attention_route(c);
  return spec;
}

// The model, seeded: W_Q, W_K as the arm initialises them, every other rank ≥ 2 weight scaled by
// --init-scale.
Classifier build_model(const TrainConfig& c, const ModelSpec& spec, const Arm& arm, torch::Device dev) {
  torch::manual_seed(c.seed);
  Classifier model(spec);
  auto gen = at::detail::createCPUGenerator(c.seed);
  init_frames(model, arm.frames_on_manifold, gen, arm.layout == FrameLayout::kBlock);
  if (c.init_scale <= 0) throw std::invalid_argument("--init-scale must be positive");
  if (c.init_scale != 1.0) {
    torch::NoGradGuard guard;
    std::set<const void*> frames_at_init;
    for (auto& f : frame_params(model)) frames_at_init.insert(f.unsafeGetTensorImpl());
    for (auto& p : model->parameters())
      if (p.dim() >= 2 && !frames_at_init.count(p.unsafeGetTensorImpl())) p.mul_(c.init_scale);
  }
  model->to(dev);
  return model;
}

struct Optimisers {
  std::unique_ptr<torch::optim::AdamW> adamw;
  std::unique_ptr<FrameOptimizer> frames;  // the Stiefel arms only
  FrameHyper frame_hyper;
  double beta2 = 0.999;
};

// AdamW on every non-frame parameter, decay on rank ≥ 2 tensors only; W_Q, W_K go to AdamW too
// for the Euclidean arms (decayed except for a2-nwf), to FrameOptimizer otherwise.
Optimisers build_optimisers(const TrainConfig& c, const Arm& arm, Classifier& model) {
  std::vector<torch::Tensor> decay, no_decay, frames;
  std::set<const void*> frame_set;
  for (auto& f : frame_params(model)) frame_set.insert(f.unsafeGetTensorImpl());
  for (auto& p : model->parameters()) {
    if (frame_set.count(p.unsafeGetTensorImpl())) {
      if (arm.frames_on_manifold)
        frames.push_back(p);
      else
        (arm.frame_decay ? decay : no_decay).push_back(p);
    } else {
      (p.dim() >= 2 ? decay : no_decay).push_back(p);
    }
  }
  Optimisers o;
  o.beta2 = c.power_stabilisation ? 0.98 : 0.999;
  torch::optim::AdamWOptions adam_options(c.adam_lr);
  adam_options.betas({0.9, o.beta2}).eps(1e-8).weight_decay(c.weight_decay);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(adam_options));
  auto no_decay_options = adam_options;
  no_decay_options.weight_decay(0.0);
  groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(no_decay_options));
  o.adamw = std::make_unique<torch::optim::AdamW>(std::move(groups), adam_options);
  o.frame_hyper = arm.hyper;
  o.frame_hyper.beta2 = o.beta2;
  if (arm.frames_on_manifold) o.frames = std::make_unique<FrameOptimizer>(frames, o.frame_hyper, arm.layout);
  return o;
}

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

// Whether the gradients of NAMED are finite, per tensor (a float64 sum of a tensor is finite exactly
// when its entries are, but for a float64 tensor whose finite entries overflow the sum) and in all
// (the sum of those sums, which may overflow where no tensor does).
std::pair<torch::Tensor, torch::Tensor> gradient_finiteness(
    const std::vector<std::pair<std::string, torch::Tensor>>& named, torch::Device dev) {
  std::vector<torch::Tensor> sums;
  for (const auto& [name, t] : named)
    sums.push_back(t.grad().defined() ? t.grad().detach().sum(torch::kFloat64)
                                      : torch::zeros({}, t.options().dtype(torch::kFloat64)));
  if (sums.empty())
    return {torch::zeros({1}, torch::TensorOptions().dtype(torch::kBool).device(dev)),
            torch::zeros({}, torch::TensorOptions().dtype(torch::kBool).device(dev))};
  const auto stacked = torch::stack(sums);
  return {stacked.isfinite().logical_not(), stacked.sum().isfinite().logical_not()};
}

// An error as a record states it: LibTorch's message without its backtrace, one line; any other
// error's message as it is.
std::string error_line(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) {
    const std::string msg = c10->what_without_backtrace();
    return msg.substr(0, msg.find('\n'));
  }
  return e.what();
}

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

// A record in --out that is already the run's result: diverged, or completed with its final
// checkpoint or with none (results folders do not keep checkpoints). A kill between the final record
// and the checkpoint's commit leaves an older checkpoint it names: null, and the run resumes from it
// and recomputes the last epochs (bit-identically). A checkpoint the record does not name is refused.
std::optional<nlohmann::json> Run::finished_result(const nlohmann::json& run) const {
  if (!run.is_object()) return std::nullopt;
  const std::string status = run.value("status", "");
  if (status == "diverged") return run;
  if (status != "completed") return std::nullopt;
  if (!run.contains("checkpoints") || run["checkpoints"].empty()) return run;  // records before checksums
  if (!fs::exists(fs::symlink_status(ckpt_path_))) return run;
  std::int64_t last = 0;
  for (const auto& [e, h] : run["checkpoints"].items()) last = std::max(last, std::int64_t(std::stoll(e)));
  const std::int64_t held = recorded_checkpoint_epoch(run, io::sha256(checkpoint::read_file(ckpt_path_)));
  if (held == last) return run;
  if (held < 0)
    throw std::invalid_argument(ckpt_path_.string() + ": matches no checkpoint that " + run_path_.string() +
                                " records (damaged, or another run's); the record is complete: `rm " +
                                ckpt_path_.string() + "` keeps it as the result, --overwrite trains the run again");
  return std::nullopt;
}

std::optional<nlohmann::json> Run::open_folder() {
  compute_ = select_compute(c_);
  const fs::path out(c_.out);
  run_path_ = out / "run.json";
  ckpt_path_ = out / "checkpoint.pt";
  if (fs::exists(out) && !fs::is_directory(out)) throw std::invalid_argument("--out " + c_.out + ": not a folder");
  // A finished run is returned before anything is written, locked or checked for writing: a
  // results folder on a read-only file system, or one another process is reading, gives its result.
  if (c_.resume && fs::is_regular_file(fs::symlink_status(run_path_)))
    if (auto result = finished_result(read_existing_run(c_, run_path_, ckpt_path_, options_))) return result;
  io::check_output_path(run_path_);
  io::check_output_path(ckpt_path_);
  // One process at a time writes a run folder (an existing one is locked now, a new one once created).
  if (fs::is_directory(out)) lock_.emplace(out);
  run_ = read_existing_run(c_, run_path_, ckpt_path_, options_);
  io::remove_stale_temporaries(run_path_);  // left by a killed process
  io::remove_stale_temporaries(ckpt_path_);
  if (auto result = finished_result(run_)) return result;
  if (run_.is_object() && run_.value("status", "") == "completed" && !c_.quiet)
    progress_ << ckpt_path_.string() << ": not the final checkpoint the record names; recomputing it\n";
  if (run_.is_object()) {
    stored_config_ = run_.value("config", nlohmann::json::object());
    if (run_.contains("compute") && run_["compute"].is_object()) {
      stored_compute_record_ = run_["compute"];
      stored_compute_ = run_["compute"].value("mode", "");
      stored_attention_ = run_["compute"].value("attention_products", "");
    }
  }
  return std::nullopt;
}

// Data, folder, model, optimisers and the step counts; nothing is written before the data loads.
void Run::set_up() {
  data_ = load_data(c_);  // may throw DataError before anything is written
  spec_ = model_spec(c_, data_);
  // C2's codebook lives in the patch space and the frames in the model's: they must be the same
  // space, as on CIFAR-10 whitened to d = 128 (§3.3).
  if (arm_.codebook_beta && (spec_.input_dim != spec_.d || spec_.tokens < spec_.r))
    throw std::invalid_argument("--arm " + c_.arm + ": the codebook is built from the patches (" +
                                std::to_string(spec_.tokens) + " per image of dimension " +
                                std::to_string(spec_.input_dim) + " in " + data_.name + ") and pulls frames of St(" +
                                std::to_string(spec_.d) + ", " + std::to_string(spec_.r) +
                                "): it needs patches of dimension d and at least r of them per image (CIFAR-10)");
  if (arm_.codebook_beta && c_.codebook_k > data_.train_x.size(0))
    throw std::invalid_argument("--codebook-k " + std::to_string(c_.codebook_k) +
                                ": more centroids than training images (" + std::to_string(data_.train_x.size(0)) +
                                ")");
  const fs::path out(c_.out);
  fs::create_directories(out);
  if (!lock_) lock_.emplace(out);
  if (!c_.resume && c_.overwrite) {  // --overwrite: the old run goes only once the new one can start
    fs::remove(run_path_);
    fs::remove(ckpt_path_);
  }
  model_ = build_model(c_, spec_, arm_, dev_);
  opt_ = build_optimisers(c_, arm_, model_);
  fparams_ = frame_params(model_);
  for (const auto& item : model_->named_parameters()) named_.emplace_back(item.key(), item.value());
  n_train_ = data_.train_x.size(0);
  batch_ = grok_ ? n_train_ : std::min(c_.batch, n_train_);
  steps_per_epoch_ = (n_train_ + batch_ - 1) / batch_;
  total_steps_ = steps_per_epoch_ * c_.epochs;
  warmup_ = grok_ ? (c_.power_stabilisation ? 10 : 0) : c_.warmup_epochs * steps_per_epoch_;
  if (arm_.codebook_beta) {  // deterministic from the data and the seed: a resume rebuilds the same one
    codebook_ = build_codebook(patch_span_frames(data_.train_x, spec_.r), c_.codebook_k, c_.seed, 50);
    codebook_.centroids = codebook_.centroids.to(dev_);
  }
}

// --resume: the checkpoint the record names restores the model and optimisers, and the record is
// trimmed to the checkpoint's epoch.
void Run::resume() {
  if (c_.resume && fs::exists(ckpt_path_)) {
    // The record names the SHA-256 of the checkpoints it was written with (the last two): a damaged
    // or foreign checkpoint matches none of them. Records from before checksums carry none.
    std::int64_t recorded_epoch = -1;
    const std::string bytes = checkpoint::read_file(ckpt_path_);
    if (run_.contains("checkpoints")) {
      const std::string sha = io::sha256(bytes);
      recorded_epoch = recorded_checkpoint_epoch(run_, sha);
      if (recorded_epoch < 0)
        throw std::invalid_argument(ckpt_path_.string() + ": SHA-256 " + sha.substr(0, 16) +
                                    "… matches no checkpoint that " + run_path_.string() +
                                    " records (damaged, or from another run); --overwrite starts over");
    }
    checkpoint::State state{&model_, opt_.adamw.get(), opt_.frames.get()};
    start_epoch_ = checkpoint::restore(bytes, ckpt_path_.string(), options_, state);
    if (recorded_epoch >= 0 && recorded_epoch != start_epoch_)
      throw std::invalid_argument(ckpt_path_.string() + ": holds epoch " + std::to_string(start_epoch_) + " but " +
                                  run_path_.string() + " records it as epoch " + std::to_string(recorded_epoch));
    if (start_epoch_ >= c_.epochs && run_.value("status", "") != "completed")
      throw std::runtime_error(ckpt_path_.string() + ": the checkpoint is at the last epoch but " + run_path_.string() +
                               " is not completed (a record lost by an interrupted write); rerun without --resume");
  }
  if (start_epoch_ == 0 || !run_.contains("epochs")) {
    run_ = nlohmann::json::object();
    run_["epochs"] = nlohmann::json::array();
  } else {
    auto& epochs = run_["epochs"];
    while (!epochs.empty() && epochs.back()["epoch"].get<std::int64_t>() > start_epoch_)
      epochs.erase(epochs.size() - 1);
    if (run_.contains("checkpoints")) {
      nlohmann::json kept = nlohmann::json::object();
      for (const auto& [e, h] : run_["checkpoints"].items())
        if (std::stoll(e) <= start_epoch_) kept[e] = h;
      run_["checkpoints"] = kept;
    }
  }
  if (start_epoch_ > 0) run_["resumed_at_epochs"].push_back(start_epoch_);
  if (run_.contains("failure")) {  // a failed run continues; its failure stays on the record
    run_["earlier_failures"].push_back(run_["failure"]);
    run_.erase("failure");
  }
  global_step_ = start_epoch_ * steps_per_epoch_;
}

// The record's settings ("options" as given, "config" as run); a resume refuses other settings.
void Run::write_header() {
  const FrameHyper& fh = opt_.frame_hyper;
  run_["status"] = "running";
  run_["options"] = options_;
  run_["config"] = {{"task", c_.task},
                    {"arm", c_.arm},
                    {"seed", c_.seed},
                    {"n", n_train_},  // the training examples that trained (grok: the pairs of its split)
                    {"epochs", c_.epochs},
                    {"batch", batch_},
                    {"device", c_.device},
                    {"adam_lr", c_.adam_lr},
                    {"weight_decay", c_.weight_decay},
                    {"adam_betas", {0.9, opt_.beta2}},
                    {"riemann_lr", fh.lr},
                    {"eps", c_.eps},
                    {"tau", c_.tau},
                    {"cap", arm_.frames_on_manifold && fh.cap_tau.has_value()},
                    {"soft_lambda", arm_.soft_penalty ? c_.soft_lambda : 0.0},
                    {"schedule", grok_ ? (c_.power_stabilisation ? "10-step warm-up, then constant" : "constant")
                                       : "linear warm-up over " + std::to_string(c_.warmup_epochs) +
                                             " epochs, then cosine to zero (both rates)"},
                    {"model",
                     {{"layers", spec_.layers},
                      {"d", spec_.d},
                      {"heads", spec_.heads},
                      {"r", spec_.r},
                      {"ffn", 4 * spec_.d},
                      {"pooling", grok_ ? "concat readout" : spec_.pooling},
                      {"positional", spec_.positional},
                      {"input_dim", spec_.input_dim},
                      {"tokens", spec_.tokens},
                      {"classes", spec_.classes}}},
                    {"init_scale", c_.init_scale},
                    {"test_n", data_.test_y.size(0)},
                    {"threads", c_.threads},
                    {"eval_every", c_.eval_every},
                    {"val_n", c_.val_n}};
  if (start_epoch_ > 0) {
    std::string differs;
    for (const auto& [k, v] : run_["config"].items())
      if (stored_config_.contains(k) && stored_config_[k] != v)
        differs += (differs.empty() ? "" : ", ") + k + " (" + stored_config_[k].dump() + " → " + v.dump() + ")";
    if (!stored_compute_.empty() && stored_compute_ != c_.compute)
      differs += std::string(differs.empty() ? "" : ", ") + "compute (" + stored_compute_ + " → " + c_.compute + ")";
    // Its epochs so far came from another attention route (another build): the same function,
    // not the same bits, so the record would not be one run's.
    const auto attention = compute_.value("attention_products", "");
    if (!stored_attention_.empty() && stored_attention_ != attention)
      differs += std::string(differs.empty() ? "" : ", ") + "attention products (" + stored_attention_ + " → " +
                 attention + ")";
    if (!differs.empty())
      throw std::invalid_argument("--resume: " + run_path_.string() + " records another run: " + differs +
                                  "; resume with the same options or use another --out");
    // Other BLAS kernels give other bits from the resumed epoch on: the record would mix two kernels.
    const std::string was = blas_kernels(stored_compute_record_), now = blas_kernels(compute_);
    if (!was.empty() && !now.empty() && was != now && !c_.allow_kernel_change)
      throw std::invalid_argument("--resume: " + run_path_.string() + " was computed with OpenBLAS's " + was +
                                  " kernels, this process has " + now +
                                  " (other bits from here on): run with "
                                  "OPENBLAS_CORETYPE=" +
                                  was + ", or add --allow-kernel-change to continue under " + now +
                                  " (recorded in earlier_compute)");
  }
  if (arm_.codebook_beta) {
    run_["codebook"] = codebook_.record;
    run_["codebook"]["beta"] = *arm_.codebook_beta;
  }
  // A run resumed under other kernels (another BLAS core, ATen vector width or thread count: other
  // bits, the same function) keeps the record of what computed its earlier epochs.
  // The compute of epoch start_epoch_ is the record's, unless a process that wrote no checkpoint
  // since (one that failed, or was killed before its first) replaced it: entries from start_epoch_ on
  // name what computed the epochs kept.
  if (start_epoch_ > 0 && stored_compute_record_.is_object()) {
    auto before = stored_compute_record_;
    auto& earlier = run_["earlier_compute"];
    while (earlier.is_array() && !earlier.empty() &&
           earlier.back()["until_epoch"].get<std::int64_t>() >= start_epoch_) {
      before = earlier.back()["compute"];
      earlier.erase(earlier.size() - 1);
    }
    const auto numerics = [](nlohmann::json c) {
      for (const char* k : {"seed_batch", "malloc"}) c.erase(k);  // neither changes a result
      return c;
    };
    if (numerics(before) != numerics(compute_)) {
      earlier.push_back({{"until_epoch", start_epoch_}, {"compute", before}});
      if (blas_kernels(before) != blas_kernels(compute_)) earlier.back()["kernel_change_allowed"] = true;
    }
    if (earlier.is_null() || earlier.empty()) run_.erase("earlier_compute");
  }
  run_["compute"] = compute_;
  run_["dataset"] = data_.record;
  // The program that wrote the record, and the one before it where a resume changed it.
  const nlohmann::json program = program_provenance();
  if (start_epoch_ > 0 && run_.contains("environment") && run_["environment"].contains("program") &&
      run_["environment"]["program"] != program) {
    auto& earlier = run_["environment"]["earlier_programs"];
    auto kept = earlier.is_array() ? earlier : nlohmann::json::array();
    kept.push_back({{"until_epoch", start_epoch_}, {"program", run_["environment"]["program"]}});
    earlier = kept;
  }
  const nlohmann::json earlier_programs =
      run_.contains("environment") ? run_["environment"].value("earlier_programs", nlohmann::json()) : nlohmann::json();
  run_["environment"] = {{"torch", TORCH_VERSION},
                         {"cuda_available", torch::cuda::is_available()},
                         {"threads", torch::get_num_threads()},
                         {"program", program},
                         {"cpu_model", cpu_model()}};
  if (!earlier_programs.is_null()) run_["environment"]["earlier_programs"] = earlier_programs;
}

torch::Tensor Run::stacked_frames(bool grad) const {
  std::vector<torch::Tensor> parts;
  for (const auto& w : fparams_)
    parts.push_back(to_frames((grad ? w.grad() : w.detach()).to(torch::kFloat64), arm_.layout));
  return torch::cat(parts);
}

// The record replaces run.json only as run.schema.json describes it: a field the schema does not
// know is a bug here, caught before any reader sees it.
void Run::write_record() {
  const auto v = schema::run_record().violations(run_, 1);
  if (!v.empty())
    throw std::logic_error(run_path_.string() + ": the record to write breaks " + schema::run_record().name() + ": " +
                           v[0]);
  io::write_file_atomically(run_path_, run_.dump(2) + "\n");
}

void Run::lap(const char* stage) {
  const auto now = std::chrono::steady_clock::now();
  stage_seconds_[stage] += std::chrono::duration<double>(now - lap_start_).count();
  lap_start_ = now;
}

// Divergence is a result: the first non-finite loss, gradient or parameter ends the run with status
// "diverged", recorded with the epoch, the step and the tensor; the last good checkpoint stays.
nlohmann::json Run::diverged(const std::string& what, std::int64_t epoch) {
  run_["status"] = "diverged";
  run_["divergence"] = {{"epoch", epoch + 1},
                        {"step", global_step_ + 1},
                        {"tensor", what},
                        {"note", "a non-finite value; the run stopped at this step (recorded epochs are before it)"}};
  run_["stage_seconds"] = stage_seconds_;
  write_record();
  if (!c_.quiet)
    progress_ << (tty_ ? "\n" : "") << "diverged at epoch " << epoch + 1 << ", step " << global_step_ + 1
              << ": non-finite " << what << "\n";
  return run_;
}

void Run::print_progress(std::int64_t epoch) const {
  const double done = double(global_step_ + 1 - start_epoch_ * steps_per_epoch_) /
                      double(total_steps_ - start_epoch_ * steps_per_epoch_);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start_).count();
  const int width = 30, filled = int(done * width);
  progress_ << "\r[" << std::string(filled, '#') << std::string(width - filled, '.') << "] epoch " << epoch + 1 << "/"
            << c_.epochs << " ETA " << format_seconds(elapsed / done - elapsed) << "   " << std::flush;
}

void Run::begin_epoch(std::int64_t epoch) {
  auto shuffle_gen = at::detail::createCPUGenerator(c_.seed * 1000003 + std::uint64_t(epoch));
  auto order = torch::randperm(n_train_, shuffle_gen, torch::kLong);
  ep_.emplace(EpochState{epoch, std::move(order), DeviceEpoch(dev_, named_.size()), {}, {}, {}, {}});
  ++window_epochs_;
  lap_start_ = std::chrono::steady_clock::now();
}

// The epoch's first non-finite value, read from the device: the run stops there as it always did
// (the record and the step are those of the first bad step; on a GPU the steps after it ran on
// non-finite values and are discarded with the epoch).
std::optional<nlohmann::json> Run::stop_if_diverged() {
  const auto& acc = ep_->acc;
  const auto at = acc.bad_step.to(torch::kCPU).item<std::int64_t>();
  if (at < 0) return std::nullopt;
  global_step_ = at;
  const auto which = acc.bad_check.to(torch::kCPU).item<std::int64_t>();
  if (which == DeviceEpoch::kLossCheck) return diverged("loss", ep_->epoch);
  if (which == DeviceEpoch::kFrames) return diverged("W_Q/W_K frames after the step", ep_->epoch);
  const auto tensors = acc.bad_tensors.to(torch::kCPU);
  for (std::size_t i = 0; i < named_.size(); ++i)
    if (tensors[std::int64_t(i)].item<bool>()) return diverged("gradient of " + named_[i].first, ep_->epoch);
  return diverged("gradients (sum overflows float64)", ep_->epoch);
}

// On the CPU a read costs no waiting, so the run stops at the bad step itself and never hands
// non-finite frames to LAPACK; on a GPU the epoch runs on and the read waits for its end.
#define STIEFEL_STOP_NOW \
  if (dev_.is_cpu() && ep_->acc.bad_step.item<std::int64_t>() >= 0) return stop_if_diverged()

torch::Tensor Run::step_input(std::int64_t s) {
  const double f = schedule_factor(global_step_, warmup_, total_steps_, !grok_);
  for (auto& g : opt_.adamw->param_groups()) g.options().set_lr(c_.adam_lr * f);
  if (opt_.frames) opt_.frames->param_groups().front().options().set_lr(opt_.frame_hyper.lr * f);
  ep_->idx = ep_->order.slice(0, s * batch_, std::min(n_train_, (s + 1) * batch_));
  const auto xb = data_.train_x.index_select(0, ep_->idx).to(dev_);
  ep_->yb = data_.train_y.index_select(0, ep_->idx).to(dev_);
  opt_.adamw->zero_grad();
  if (opt_.frames) opt_.frames->zero_grad();
  lap("data");
  return xb;
}

std::optional<nlohmann::json> Run::step_loss(const torch::Tensor& logits) {
  auto& acc = ep_->acc;
  ep_->logits = logits;
  auto loss = torch::cross_entropy_loss(logits, ep_->yb);
  if (arm_.soft_penalty)
    for (auto& w : fparams_) loss = loss + soft_penalty(w, c_.soft_lambda);
  // C2-nb keeps the prior in the graph at β = 0: its runs equal PA16's bit for bit only if the prior adds
  // exactly nothing and the codebook's draws leave the run's own draws alone (train_smoke.sh checks both).
  if (arm_.codebook_beta)
    for (auto& w : fparams_) loss = loss + codebook_prior(w, codebook_.centroids, *arm_.codebook_beta);
  {
    torch::NoGradGuard guard;
    const auto loss64 = loss.detach().to(torch::kFloat64);
    acc.check(loss64.isfinite().logical_not(), global_step_, DeviceEpoch::kLossCheck);
    acc.add(DeviceEpoch::kLoss, loss64 * double(ep_->idx.size(0)));
  }
  STIEFEL_STOP_NOW;
  lap("forward");
  ep_->loss = loss;
  return std::nullopt;
}

std::optional<nlohmann::json> Run::step_update() {
  auto& acc = ep_->acc;
  ep_->loss = torch::Tensor();  // its graph is spent
  {
    const auto [per_tensor, overall] = gradient_finiteness(named_, dev_);
    acc.check(overall, global_step_, DeviceEpoch::kGradients, per_tensor);
  }
  STIEFEL_STOP_NOW;
  lap("backward");
  torch::Tensor before;
  {
    torch::NoGradGuard guard;
    const auto w64 = stacked_frames(false), g64 = stacked_frames(true);
    const auto pg_norm = tangent_gradient_norm(w64, g64);
    acc.add(DeviceEpoch::kTangent, pg_norm.sum());
    const auto gauge = batched_gauge_component(w64, g64).pow(2).sum({-2, -1}).sqrt();
    acc.add(DeviceEpoch::kGauge, (gauge / pg_norm.clamp_min(1e-300)).sum());
    frames_seen_ += double(w64.size(0));
    before = w64;
  }
  lap("diagnostics");
  opt_.adamw->step();
  lap("adamw");
  if (opt_.frames) {
    opt_.frames->step();
    acc.add(DeviceEpoch::kCapped, opt_.frames->last_report().capped.to(torch::kFloat64).sum());
    acc.add(DeviceEpoch::kPolar, opt_.frames->last_report().polar_fallback.to(torch::kFloat64).sum());
  }
  lap("frames");
  {
    torch::NoGradGuard guard;
    const auto moved = (stacked_frames(false) - before).pow(2).sum({-2, -1}).sqrt().sum();
    acc.check(moved.isfinite().logical_not(), global_step_, DeviceEpoch::kFrames);
    acc.add(DeviceEpoch::kStep, moved);
    acc.correct += ep_->logits.detach().argmax(1).eq(ep_->yb).sum();
  }
  ep_->logits = torch::Tensor();
  STIEFEL_STOP_NOW;
  lap("diagnostics");
  if (tty_) print_progress(ep_->epoch);
  ++global_step_;
  return std::nullopt;
}
#undef STIEFEL_STOP_NOW

std::optional<nlohmann::json> Run::end_epoch(EpochSums& sums) {
  if (auto stopped = stop_if_diverged()) return stopped;
  const auto host = ep_->acc.sums.to(torch::kCPU);
  const auto h = host.accessor<double, 1>();
  sums.loss = h[DeviceEpoch::kLoss];
  sums.tangent = h[DeviceEpoch::kTangent];
  sums.gauge = h[DeviceEpoch::kGauge];
  sums.capped = h[DeviceEpoch::kCapped];
  sums.polar_fallbacks = h[DeviceEpoch::kPolar];
  sums.step = h[DeviceEpoch::kStep];
  sums.correct = ep_->acc.correct.to(torch::kCPU).item<std::int64_t>();
  sums.frames_seen = frames_seen_;
  frames_seen_ = 0;
  const auto epoch = ep_->epoch;
  ep_.reset();
  if (const auto bad = first_non_finite(named_, false); !bad.empty()) return diverged(bad + " after the epoch", epoch);
  return std::nullopt;
}

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

std::optional<nlohmann::json> Run::train_epoch(std::int64_t epoch, EpochSums& sums) {
  begin_epoch(epoch);
  for (std::int64_t s = 0; s < steps_per_epoch_; ++s) {
    const auto stopped = guarded([&]() -> std::optional<nlohmann::json> {
      const auto xb = step_input(s);
      if (auto st = step_loss(model_->forward(xb))) return st;
      ep_->loss.backward();
      return step_update();
    });
    if (stopped) return stopped;
  }
  return end_epoch(sums);
}

// The epoch's record: training loss and accuracy, test (and validation) accuracy at the evaluated
// epochs, the frames' isometry and the step diagnostics.
nlohmann::json Run::evaluate_epoch(std::int64_t epoch, const EpochSums& sums) {
  nlohmann::json metrics = {{"epoch", epoch + 1},
                            {"train_loss", sums.loss / double(n_train_)},
                            {"train_acc", double(sums.correct) / double(n_train_)}};
  const std::int64_t eval_chunk = c_.compute == "pinned" ? 256 : 2048;
  const bool evaluated = (epoch + 1) % c_.eval_every == 0 || epoch + 1 == c_.epochs;
  if (evaluated) {
    metrics["test_acc"] = evaluate(model_, data_.test_x, data_.test_y, dev_, eval_chunk).acc;
    if (data_.val_x.defined()) metrics["val_acc"] = evaluate(model_, data_.val_x, data_.val_y, dev_, eval_chunk).acc;
    lap("evaluation");
  }
  std::vector<double> iso;
  {
    const auto e = isometry_error(stacked_frames(false));
    for (std::int64_t i = 0; i < e.size(0); ++i) iso.push_back(e[i].item<double>());
  }
  metrics["isometry_error"] = iso;
  metrics["isometry_error_max"] = *std::max_element(iso.begin(), iso.end());
  const double frame_steps = std::max(1.0, sums.frames_seen);
  metrics["tangent_grad_norm"] = sums.tangent / frame_steps;
  metrics["step_norm"] = sums.step / frame_steps;
  metrics["step_per_gradient"] = sums.tangent > 0 ? sums.step / sums.tangent : 0.0;
  metrics["cap_active_fraction"] = sums.capped / frame_steps;
  metrics["gauge_fraction"] = sums.gauge / frame_steps;
  // Frame steps whose polar factor came from the Gram route after the SVD failed (batched_polar);
  // recorded only where there were any, so that every other record stays as before.
  if (sums.polar_fallbacks > 0) metrics["polar_gram_fallbacks"] = std::int64_t(sums.polar_fallbacks);
  const double window = std::chrono::duration<double>(std::chrono::steady_clock::now() - window_start_).count();
  metrics["seconds"] = window / double(window_epochs_);  // wall seconds per epoch since the last record
  window_start_ = std::chrono::steady_clock::now();
  window_epochs_ = 0;
  return metrics;
}

// The record and the checkpoint of one epoch, as one unit: the checkpoint is written and hashed,
// the record naming its hash replaces the old record, then the checkpoint replaces the old
// checkpoint. A kill in between leaves a record one epoch ahead of a checkpoint it still names; a
// resume recomputes that epoch bit-identically and trims the record to match.
void Run::commit_epoch(std::int64_t epoch, const nlohmann::json& metrics) {
  run_["epochs"].push_back(metrics);
  if (epoch + 1 == c_.epochs) {
    run_["status"] = "completed";
    run_["final"] = metrics;
  }
  run_["stage_seconds"] = stage_seconds_;
  // Serialised in memory, written by io's checked writer: LibTorch's own file writer cannot report
  // a full disk (its destructor throws again while unwinding, which terminates the process).
  const checkpoint::State state{&model_, opt_.adamw.get(), opt_.frames.get()};
  io::PendingFile pending(ckpt_path_, checkpoint::serialise(state, epoch + 1, global_step_, options_));
  auto& hashes = run_["checkpoints"];
  if (!hashes.is_object()) hashes = nlohmann::json::object();
  hashes[std::to_string(epoch + 1)] = io::sha256_file(pending.temporary());
  while (hashes.size() > 2) {  // the last two: the one committed and the one about to be
    std::string oldest = hashes.begin().key();
    for (const auto& [e, h] : hashes.items())
      if (std::stoll(e) < std::stoll(oldest)) oldest = e;
    hashes.erase(oldest);
  }
  write_record();
  pending.commit();
  lap("checkpoint");
  if (c_.quiet) return;
  if (tty_) progress_ << "\r";
  progress_ << "epoch " << epoch + 1 << "/" << c_.epochs << "  loss " << std::setprecision(4)
            << metrics["train_loss"].get<double>() << "  train " << metrics["train_acc"].get<double>();
  if (metrics.contains("test_acc")) progress_ << "  test " << metrics["test_acc"].get<double>();
  progress_ << "  iso " << std::setprecision(2) << metrics["isometry_error_max"].get<double>() << "  "
            << std::setprecision(3) << metrics["seconds"].get<double>() << " s" << std::string(tty_ ? 20 : 0, ' ')
            << "\n";
}

// After a trained epoch: its evaluation where due, then its record and checkpoint.
void Run::close_epoch(std::int64_t epoch, const EpochSums& sums) {
  const bool evaluated = (epoch + 1) % c_.eval_every == 0 || epoch + 1 == c_.epochs;
  if (!evaluated && grok_) return;
  nlohmann::json metrics;
  try {  // a write error of commit_epoch leaves the files as they were
    metrics = evaluate_epoch(epoch, sums);
  } catch (const std::exception& e) {
    record_failure(epoch, error_line(e));
    throw;
  }
  commit_epoch(epoch, metrics);
}

// The image task records every epoch (test accuracy at the evaluated epochs and the last); the
// grokking task records and checkpoints at its evaluated epochs only, so a 20 000-epoch run writes
// 200 of each.
nlohmann::json Run::run_epochs() {
  start_clock();
  for (std::int64_t epoch = start_epoch_; epoch < c_.epochs; ++epoch) {
    if (c_.stop_after_epoch > 0 && epoch >= c_.stop_after_epoch) break;  // the record stays "running"
    EpochSums sums;
    try {
      if (auto stopped = train_epoch(epoch, sums)) return *stopped;
    } catch (const std::exception& e) {
      record_failure(epoch, error_line(e));
      throw;
    }
    close_epoch(epoch, sums);
  }
  return run_;
}

// An error while training or evaluating an epoch is not a result: the record says "failed", with
// the epoch, the step and the error, and keeps the epochs before it; the last checkpoint stays, and
// a rerun with --resume continues from it. Nothing is recorded where the record itself cannot be
// written (a full disk).
void Run::record_failure(std::int64_t epoch, const std::string& error) noexcept {
  try {
    run_["status"] = "failed";
    run_["failure"] = {{"epoch", epoch + 1}, {"step", global_step_ + 1}, {"error", error}};
    run_["stage_seconds"] = stage_seconds_;
    write_record();
  } catch (...) {}
}

}  // namespace

nlohmann::json train(const TrainConfig& config, std::ostream& progress) {
  validate(config);
  Run run(config, progress);
  if (auto result = run.open_folder()) return *result;
  run.set_up();
  run.resume();
  run.write_header();
  return run.run_epochs();
}

std::vector<nlohmann::json> train_seed_batch(const std::vector<TrainConfig>& configs, std::ostream& progress) {
  if (configs.empty()) throw std::invalid_argument("seed batch: no runs");
  std::set<std::uint64_t> seeds;
  std::set<std::string> outs;
  for (const auto& c : configs) {
    validate(c);
    auto options = run_options(c), first = run_options(configs.front());
    options.erase("seed");
    first.erase("seed");
    if (options != first || c.resume != configs.front().resume || c.overwrite != configs.front().overwrite)
      throw std::invalid_argument("--batch-seed: the runs of a seed batch differ only in their seed and folder");
    if (!seeds.insert(c.seed).second)
      throw std::invalid_argument("--batch-seed: seed " + std::to_string(c.seed) + " twice");
    if (!outs.insert(fs::weakly_canonical(c.out).string()).second)
      throw std::invalid_argument("--batch-seed: folder " + c.out + " twice");
  }
  if (configs.front().task != "grok" || attention_route(configs.front()) != "packed")
    throw std::invalid_argument(
        "--batch-seed: seed batching trains the grokking model under --compute pinned (the model seed_batch.h "
        "batches); "
        "task " +
        configs.front().task + ", compute " + configs.front().compute);
  if (configs.size() == 1) return {train(configs.front(), progress)};

  // A member that cannot start (its folder held by another process, its data or resume refused)
  // stays out, the others train, and the call fails at the end naming it.
  const std::size_t n = configs.size();
  std::vector<std::unique_ptr<Run>> runs;
  std::vector<std::optional<nlohmann::json>> results(n);
  std::vector<std::string> errors;
  std::vector<bool> out(n, false);
  const auto leave = [&](std::size_t i, const std::string& error) {
    errors.push_back(configs[i].out + ": " + error);
    out[i] = true;
  };
  for (std::size_t i = 0; i < n; ++i) {
    runs.push_back(std::make_unique<Run>(configs[i], progress));
    try {
      results[i] = runs[i]->open_folder();
    } catch (const std::exception& e) {
      leave(i, e.what());
    }
  }
  std::vector<std::size_t> to_train;
  nlohmann::json to_train_seeds = nlohmann::json::array();
  for (std::size_t i = 0; i < n; ++i)
    if (!results[i] && !out[i]) {
      to_train.push_back(i);
      to_train_seeds.push_back(configs[i].seed);
    }
  const nlohmann::json batch = {{"runs", std::int64_t(to_train.size())}, {"seeds", to_train_seeds}};
  const std::string malloc = keep_every_freed_block();
  std::vector<std::size_t> active;
  std::vector<std::int64_t> epoch(n, 0);
  for (const auto i : to_train) {
    try {
      runs[i]->set_up();
      runs[i]->resume();
      if (to_train.size() > 1) runs[i]->note_seed_batch(batch, malloc);
      runs[i]->write_header();
    } catch (const std::exception& e) {
      leave(i, e.what());
      continue;
    }
    epoch[i] = runs[i]->start_epoch();
    if (epoch[i] >= configs[i].epochs) {
      results[i] = runs[i]->record();  // nothing left to train
      continue;
    }
    active.push_back(i);
  }
  for (const auto i : active) runs[i]->start_clock();
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  while (!active.empty()) {
    std::vector<EpochSums> sums(n);
    std::vector<bool> stopped(n, false);
    const auto stop = [&](std::size_t i, std::optional<nlohmann::json> record) {
      if (!record) return false;
      results[i] = std::move(record);
      stopped[i] = true;
      return true;
    };
    // The shared part of the epoch: an error there is every active run's, recorded as each run's
    // failure at its epoch (each resumes from its last checkpoint).
    try {
      for (const auto i : active) runs[i]->begin_epoch(epoch[i]);
      // The grokking task takes its whole split in one step per epoch: every run has the same steps.
      for (std::int64_t s = 0; s < runs[active.front()]->steps_per_epoch(); ++s) {
        std::vector<std::size_t> stepping;
        std::vector<Classifier> models;
        std::vector<torch::Tensor> inputs;
        for (const auto i : active)
          if (!stopped[i]) {
            stepping.push_back(i);
            models.push_back(runs[i]->model());
            runs[i]->restart_lap();
            inputs.push_back(runs[i]->step_input(s));
          }
        if (stepping.empty()) break;
        // Each run's stage times: its own phases, and the shared forward and backward whole.
        auto t = Clock::now();
        const auto logits = batched_forward(models, inputs);
        const double forward = seconds_since(t);
        torch::Tensor total;
        for (std::size_t k = 0; k < stepping.size(); ++k) {
          const auto i = stepping[k];
          runs[i]->add_stage("forward", forward);
          runs[i]->restart_lap();
          if (stop(i, runs[i]->guarded([&] { return runs[i]->step_loss(logits[k]); }))) continue;
          total = total.defined() ? total + runs[i]->loss() : runs[i]->loss();
        }
        // One backward for all: the sum hands each run's loss the gradient 1, as its own backward does.
        t = Clock::now();
        if (total.defined()) total.backward();
        const double backward = seconds_since(t);
        for (const auto i : stepping)
          if (!stopped[i]) {
            runs[i]->add_stage("backward", backward);
            runs[i]->restart_lap();
            stop(i, runs[i]->guarded([&] { return runs[i]->step_update(); }));
          }
      }
    } catch (const std::exception& e) {
      const std::string msg = "seed batch: " + error_line(e);
      for (const auto i : active)
        if (!results[i]) runs[i]->record_failure(epoch[i], msg);
      throw;
    }
    // Each run's own end of the epoch: an error there is that run's alone (as when it runs alone:
    // its evaluation's error recorded as its failure, a write error leaving its files as they
    // were); it leaves the batch and the others go on.
    std::vector<std::size_t> still;
    for (const auto i : active) {
      if (stopped[i]) continue;
      try {
        runs[i]->restart_lap();
        if (stop(i, runs[i]->end_epoch(sums[i]))) continue;
      } catch (const std::exception& e) {
        runs[i]->record_failure(epoch[i], e.what());
        leave(i, e.what());
        continue;
      }
      try {
        runs[i]->close_epoch(epoch[i], sums[i]);
      } catch (const std::exception& e) {
        leave(i, e.what());
        continue;
      }
      if (++epoch[i] < configs[i].epochs)
        still.push_back(i);
      else
        results[i] = runs[i]->record();
    }
    active = still;
  }
  if (!errors.empty()) {
    std::string all;
    for (const auto& e : errors) all += (all.empty() ? "" : "; ") + e;
    throw std::runtime_error("seed batch: " + std::to_string(errors.size()) + " of " + std::to_string(n) +
                             " runs did not finish (the others did): " + all);
  }
  std::vector<nlohmann::json> records;
  for (auto& r : results) records.push_back(*r);
  return records;
}

}  // namespace stiefel::training
