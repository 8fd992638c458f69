// The optimizer arms for W_Q, W_K (Table 1, §3.3, §4.3, §4.5 and this project's named variants),
// each defined once: its name, the paper's label, what the other parameters' AdamW does to the
// frames, and the rule of core/ it runs, built from core's presets. `stiefel train` (its --arm and
// --help), the trainer, the differential test, the smoke tests and the experiment definitions'
// loader all read this table; adding an arm is one entry here and its test.
#pragma once

#include <functional>
#include <optional>
#include <stiefel/riemannian_adam.h>
#include <stiefel/riemannian_sgd.h>
#include <string>
#include <variant>
#include <vector>

namespace stiefel::arms {

// The rates an arm may read, as the run resolves them (`stiefel train`'s options after defaults).
struct Rates {
  double riemann_lr = 1.0;       // --riemann-lr: η_R of the Riemannian Adam arms
  double adam_lr = 1e-3;         // --adam-lr: the AdamW rate of every other parameter
  double elementwise_lr = 1e-3;  // --elementwise-lr (its default is adam_lr): the B2m arms' rate
  double sgd_lr = 0.02;          // --sgd-lr: the fixed step of the Riemannian SGD arms
  double eps = 1e-8;             // --eps
  double tau = 0.1;              // --tau: the cap ‖η‖_F ≤ τ√r
  double codebook_beta = 0.1;    // --codebook-beta: the weight β of C2's codebook prior
};

// The rule an arm runs on its frames: a Riemannian Adam or a fixed-step Riemannian SGD of core/.
using FrameRule = std::variant<RiemannianAdamHyper<double>, RiemannianSgdHyper<double>>;

struct Arm {
  std::string name;        // --arm
  std::string label = {};  // the paper's name for it, or the variant's
  std::string summary = {};
  // Its colour (#rrggbb) in every figure of the reports, so that an arm looks the same in all.
  std::string colour = {};
  // Euclidean arms (no rule) train W_Q, W_K with the AdamW of every other parameter.
  bool frame_decay = false;   // Euclidean: AdamW's weight decay also acts on W_Q, W_K
  bool soft_penalty = false;  // Euclidean: λ‖WᵀW − I‖_F² added to the loss
  // Stiefel arms: orthonormal initialisation, and this rule for the run's rates.
  std::function<FrameRule(const Rates&)> rule = {};
  // Stiefel arms: the H heads of W_Q (and of W_K) as one frame in St(d, H·r), so that the heads
  // stay mutually orthogonal (§3.2's block-orthogonal heads); otherwise one frame per head.
  bool block_heads = false;
  // Codebook arms (C2, C2-nb; image task): the weight β of the prior that pulls every head toward
  // its nearest centroid of a Grassmann K-means codebook of the training images; empty otherwise.
  std::function<double(const Rates&)> codebook_beta = {};

  bool on_manifold() const { return static_cast<bool>(rule); }
  bool uses_codebook() const { return static_cast<bool>(codebook_beta); }
};

// Every arm, in the order `--help` lists them.
const std::vector<Arm>& all();
std::vector<std::string> names();
// The arm called NAME; std::invalid_argument "--arm NAME: unknown arm (one of …)" otherwise.
const Arm& find(const std::string& name);

}  // namespace stiefel::arms
