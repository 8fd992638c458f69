// The run's configuration: the options a record states (run_options), their validation against the
// task (validate), and the task's defaults made explicit (with_task_defaults).
#include "run.h"

#include <algorithm>
#include <tuple>
#include <variant>

namespace stiefel::training {

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

bool same_rule(const arms::FrameRule& a, const arms::FrameRule& b) {
  if (a.index() != b.index()) return false;
  if (const auto* x = std::get_if<RiemannianAdamHyper<double>>(&a)) {
    const auto& y = std::get<RiemannianAdamHyper<double>>(b);
    return std::tie(x->lr, x->beta1, x->beta2, x->eps, x->cap_tau, x->map, x->moment, x->retraction) ==
           std::tie(y.lr, y.beta1, y.beta2, y.eps, y.cap_tau, y.map, y.moment, y.retraction);
  }
  const auto& x = std::get<RiemannianSgdHyper<double>>(a);
  const auto& y = std::get<RiemannianSgdHyper<double>>(b);
  return std::tie(x.lr, x.map, x.retraction) == std::tie(y.lr, y.map, y.retraction);
}

// The options of the frames' rates and of the soft penalty, with their fields in TrainConfig.
struct ArmOption {
  const char* key;
  double TrainConfig::*given;
  double arms::Rates::*rate;  // null: not a rate of the frames' rule
};
constexpr ArmOption kArmOptions[] = {{"riemann_lr", &TrainConfig::riemann_lr, &arms::Rates::riemann_lr},
                                     {"tau", &TrainConfig::tau, &arms::Rates::tau},
                                     {"sgd_lr", &TrainConfig::sgd_lr, &arms::Rates::sgd_lr},
                                     {"elementwise_lr", &TrainConfig::elementwise_lr, &arms::Rates::elementwise_lr},
                                     {"soft_lambda", &TrainConfig::soft_lambda, nullptr}};

// Whether the arm reads the option: the soft penalty's weight where it has one; a rate where its
// rule changes with it (the arm is asked).
bool arm_reads(const arms::Arm& arm, const ArmOption& o) {
  if (o.rate == nullptr) return arm.soft_penalty;
  if (!arm.on_manifold()) return false;
  arms::Rates base, other;
  other.*o.rate = 2 * (base.*o.rate) + 1;
  return !same_rule(arm.rule(base), arm.rule(other));
}

}  // namespace

std::vector<std::string> options_not_read(const std::string& arm_name) {
  const arms::Arm& arm = arms::find(arm_name);
  std::vector<std::string> out;
  for (const ArmOption& o : kArmOptions)
    if (!arm_reads(arm, o)) out.push_back(o.key);
  return out;
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

// Nor do the frames' rates and the soft penalty's weight reach an arm that does not read them.
template <class Bad>
void refuse_options_not_read(const TrainConfig& c, const Bad& bad) {
  const TrainConfig defaults;
  const arms::Arm& arm = arms::find(c.arm);
  for (const ArmOption& o : kArmOptions)
    if (!arm_reads(arm, o) && c.*o.given != defaults.*o.given) {
      std::string option = o.key;
      std::replace(option.begin(), option.end(), '_', '-');
      bad(option, "arm " + c.arm + " does not read it: it would not run");
    }
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
  refuse_options_not_read(c, bad);
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

namespace run_detail {

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

}  // namespace run_detail
}  // namespace stiefel::training
