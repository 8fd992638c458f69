// What a run is built from: its arm with the rates resolved, its data, the model, the optimisers and
// the compute settings; Run::set_up puts them together.
#include "run.h"

namespace stiefel::training::run_detail {

constexpr const char* kJpegCopyTestSha256 = "04f678140f6c19922ac2cd6173508c3ff0dcb7f932804c755f677b00c33bd949";

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

namespace {

// The grokking task's data: modular addition, 40 % of the pairs for training.
Data load_modular(const TrainConfig& c) {
  Data d;
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

// The image task's data: patches of CIFAR-10 or Fashion-MNIST, whitened (prepare_patch_data).
Data load_images(const TrainConfig& c) {
  Data d;
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

}  // namespace

Data load_data(const TrainConfig& c) { return c.task == "grok" ? load_modular(c) : load_images(c); }

std::vector<torch::Tensor> frame_params(Classifier& model) {
  std::vector<torch::Tensor> out;
  for (auto& attn : model->attention_layers()) {
    out.push_back(attn->wq);
    out.push_back(attn->wk);
  }
  return out;
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

}  // namespace stiefel::training::run_detail
