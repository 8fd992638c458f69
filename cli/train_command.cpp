#include <iostream>
#include <memory>
#include <stiefel/arms.h>
#include <stiefel/training/datasets.h>
#include <stiefel/training/trainer.h>

#include "commands.h"

namespace stiefel::cli {
namespace {

// The optimisers' settings: batch, rates, decay, ε, cap, penalties, the codebook prior.
void add_optimiser_options(CLI::App* cmd, training::TrainConfig* cfg) {
  cmd->add_option("--batch", cfg->batch, "batch size (image)")->check(kPositive)->capture_default_str();
  cmd->add_option("--adam-lr", cfg->adam_lr, "AdamW rate (default: 1e-3)")->check(kNonNegative);
  cmd->add_option("--weight-decay", cfg->weight_decay, "AdamW decay (default: image 0.05, grok 1.0)")
      ->check(kNonNegative);
  cmd->add_option("--riemann-lr", cfg->riemann_lr, "Riemannian Adam rate eta_R")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--eps", cfg->eps, "Riemannian Adam eps (default: image 1e-8, grok 1e-3)")->check(kNonNegative);
  cmd->add_option("--tau", cfg->tau, "step cap ||eta||_F <= tau sqrt(r)")->check(kNonNegative)->capture_default_str();
  cmd->add_option("--sgd-lr", cfg->sgd_lr, "fixed step of b2-sgd arms")->check(kNonNegative)->capture_default_str();
  cmd->add_option("--elementwise-lr", cfg->elementwise_lr, "rate of b2m arms (default: the AdamW rate)")
      ->check(kNonNegative);
  cmd->add_option("--soft-lambda", cfg->soft_lambda, "soft-orthogonality penalty")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--codebook-beta", cfg->codebook_beta, "C2: the codebook prior's weight beta")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--codebook-k", cfg->codebook_k, "C2, C2-nb: the codebook's size K (Grassmann K-means)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
}

// The model, data pipeline, schedule and compute settings.
void add_model_options(CLI::App* cmd, training::TrainConfig* cfg) {
  cmd->add_option("--warmup-epochs", cfg->warmup_epochs, "image warm-up epochs")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_flag("--power-stabilisation", cfg->power_stabilisation, "grok: beta2 = 0.98 and a 10-step warm-up");
  cmd->add_option("--modulus", cfg->modulus, "grok: the modulus p of (a + b) mod p (§4.3: 97)")
      ->check(CLI::Range(5, 1000))
      ->capture_default_str();
  cmd->add_option("--test-n", cfg->test_n, "image: evaluate on the first N test images (default: all)")
      ->check(kNonNegative);
  cmd->add_option("--val-n", cfg->val_n,
                  "image: validation split of the training images [n, n + val_n), evaluated beside the test split")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--init-scale", cfg->init_scale, "scale of the non-frame weight matrices at initialisation")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--layers", cfg->layers, "image encoder layers")->check(kPositive)->capture_default_str();
  cmd->add_option("--pooling", cfg->pooling, "mean | cls")
      ->check(CLI::IsMember({"mean", "cls"}))
      ->capture_default_str();
  cmd->add_option("--positional", cfg->positional, "learned | none")
      ->check(CLI::IsMember({"learned", "none"}))
      ->capture_default_str();
  cmd->add_option("--pca-samples", cfg->pca_samples,
                  "patches for the PCA fit (at most the training patches; the default takes all of them when there "
                  "are fewer)")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--threads", cfg->threads, "LibTorch intra-op threads")->check(kPositive)->capture_default_str();
  cmd->add_option("--eval-every", cfg->eval_every,
                  "epochs between test evaluations; the last epoch is always evaluated (default: image 1, grok 100)")
      ->check(kPositive);
  cmd->add_option("--compute", cfg->compute,
                  "pinned: one OpenBLAS thread, glibc keeping freed memory and the small-matrix attention kernel, set "
                  "by the program (results do not "
                  "depend on the environment); environment: BLAS threads and malloc from the environment, "
                  "evaluation in chunks of 2048, attention through torch::matmul (the reference configuration of "
                  "bench/train_speed.sh)")
      ->check(CLI::IsMember({"pinned", "environment"}))
      ->capture_default_str();
}

// --batch-seed SEED=DIR: the configuration of each seed's run, the first being cfg's own.
std::vector<training::TrainConfig> batch_configs(const training::TrainConfig& cfg,
                                                 const std::vector<std::string>& batch) {
  std::vector<training::TrainConfig> configs{cfg};
  for (const auto& item : batch) {
    const auto eq = item.find('=');
    std::size_t used = 0;
    training::TrainConfig c = cfg;
    try {
      if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) throw std::invalid_argument(item);
      const auto seed = std::stoll(item.substr(0, eq), &used);
      if (used != eq || seed < 0) throw std::invalid_argument(item);
      c.seed = std::uint64_t(seed);
    } catch (const std::logic_error&) {
      throw std::invalid_argument("--batch-seed " + item + ": expected SEED=DIR (a non-negative seed)");
    }
    c.out = item.substr(eq + 1);
    configs.push_back(c);
  }
  return configs;
}

int train_batch(const training::TrainConfig& cfg, const std::vector<std::string>& batch) {
  const auto configs = batch_configs(cfg, batch);
  int code = 0;
  const auto runs = training::train_seed_batch(configs, std::cerr);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string status = runs[i].value("status", "");
    std::cerr << "run " << status << ": " << configs[i].out << "/run.json";
    if (status == "diverged") code = 3;
    if (runs[i].contains("final") && runs[i]["final"].contains("test_acc"))
      std::cerr << "  test accuracy " << runs[i]["final"]["test_acc"].get<double>();
    std::cerr << "\n";
  }
  return code;
}

int train_one(const training::TrainConfig& cfg) {
  const auto run = training::train(cfg, std::cerr);  // DataError (bad data) exits 1
  if (run.value("status", "") == "diverged") {
    const auto& d = run["divergence"];
    std::cerr << "run diverged: " << cfg.out << "/run.json: non-finite " << d["tensor"].get<std::string>()
              << " at epoch " << d["epoch"] << ", step " << d["step"] << "\n";
    return 3;
  }
  std::cerr << "run " << run.value("status", "") << ": " << cfg.out << "/run.json";
  if (run.contains("final") && run["final"].contains("test_acc"))
    std::cerr << "  test accuracy " << run["final"]["test_acc"].get<double>();
  std::cerr << "\n";
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("train",
                                 "Train the image-patch transformer or the grokking model with one "
                                 "optimizer arm for W_Q, W_K; writes OUT/run.json and OUT/checkpoint.pt");
  auto cfg = std::make_shared<training::TrainConfig>();
  cmd->add_option("--task", cfg->task, "image | grok")->check(CLI::IsMember({"image", "grok"}))->capture_default_str();
  std::string arm_list = "Arms (--arm):\n";
  for (const arms::Arm& a : arms::all()) arm_list += "  " + a.name + " (" + a.label + "): " + a.summary + "\n";
  cmd->footer(arm_list);
  cmd->add_option("--arm", cfg->arm, "optimizer arm for W_Q, W_K (listed below)")
      ->check(CLI::IsMember(arms::names()))
      ->capture_default_str();
  cmd->add_option("--seed", cfg->seed, "seed of initialisation, data order and split")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--data", cfg->data, "cifar10:DIR | fashion-mnist[:DIR] (image; default fashion-mnist)");
  cmd->add_option("--n", cfg->n, "training images (the first n)")->check(kPositive)->capture_default_str();
  cmd->add_option("--epochs", cfg->epochs, "epochs")->check(kPositive)->capture_default_str();
  cmd->add_option("--device", cfg->device, "cpu | cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  cmd->add_option("--out", cfg->out, "run folder")->required();
  cmd->add_flag("--resume", cfg->resume,
                "continue from OUT/checkpoint.pt (refused when OUT holds a run with other settings); a finished run is "
                "returned as it is");
  cmd->add_flag("--overwrite", cfg->overwrite, "replace the run OUT holds (without it, a run in OUT is refused)");
  cmd->add_flag("--allow-kernel-change", cfg->allow_kernel_change,
                "with --resume: continue under other BLAS kernels than the record's (refused without it; the "
                "record keeps what computed the earlier epochs)");
  add_optimiser_options(cmd, cfg.get());
  add_model_options(cmd, cfg.get());
  cmd->add_flag("--quiet", cfg->quiet, "no progress output");
  cmd->add_option("--stop-after-epoch", cfg->stop_after_epoch,
                  "stop after epoch E, the schedule still the whole run's (the record stays running; resumable)")
      ->check(kPositive);
  cmd->add_flag("--deterministic", cfg->deterministic,
                "LibTorch's deterministic algorithms; on CUDA also CUBLAS_WORKSPACE_CONFIG=:4096:8 (unless set) and "
                "deterministic cuDNN without benchmarking (recorded in run.json's compute block)");
  auto batch = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--batch-seed", *batch,
                  "SEED=DIR: train seed SEED into DIR as well, in this process, every step of all the runs through one "
                  "batched forward (grok; repeatable; each record is the one its own run writes)");
  cmd->callback([cfg, batch, &exit_code] {
    run_command("train", exit_code, [&] { return batch->empty() ? train_one(*cfg) : train_batch(*cfg, *batch); });
  });
}

}  // namespace stiefel::cli
