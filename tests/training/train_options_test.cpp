// The defaults experiment.schema.json states for `stiefel train` (which the grid-cell check of run
// records reads) are the trainer's own: "default" against TrainConfig, "task_defaults" against what a
// run of each task records in its config.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <stiefel/schema.h>
#include <stiefel/training/trainer.h>
#include <unistd.h>

#include <utility>
#include <vector>

namespace stiefel::training {
namespace {

namespace fs = std::filesystem;

const nlohmann::json& train_properties() {
  return schema::experiment_definition().schema()["$defs"]["train"]["properties"];
}

TEST(TrainOptions, TheSchemaDefaultsAreTheTrainersDefaults) {
  auto options = run_options(TrainConfig{});
  TrainConfig codebook;  // the codebook's settings are recorded for the arms that have one
  codebook.arm = "c2";
  options.update(run_options(codebook));
  options["arm"] = TrainConfig{}.arm;
  // The modulus is recorded only where it is not §4.3's 97: the schema's default is the trainer's.
  EXPECT_FALSE(options.contains("modulus"));
  TrainConfig small;
  small.task = "grok";
  small.modulus = 23;
  EXPECT_EQ(run_options(small)["modulus"], 23);
  options["modulus"] = TrainConfig{}.modulus;
  // Deterministic algorithms likewise, only where asked.
  EXPECT_FALSE(options.contains("deterministic"));
  TrainConfig deterministic;
  deterministic.deterministic = true;
  EXPECT_EQ(run_options(deterministic)["deterministic"], true);
  options["deterministic"] = TrainConfig{}.deterministic;
  for (const auto& [key, spec] : train_properties().items()) {
    if (key == "data") continue;  // no default: the task's data set
    ASSERT_TRUE(spec.contains("default")) << key;
    ASSERT_TRUE(options.contains(key)) << key;
    EXPECT_EQ(spec["default"], options[key]) << key;
  }
}

// The codebook's settings are refused for an arm without a codebook, on either task: they would run
// nothing while the command says they did.
TEST(TrainOptions, CodebookSettingsOnlyForTheCodebookArms) {
  for (const std::string task : {"grok", "image"}) {
    TrainConfig c;
    c.task = task;
    c.out = "unused";
    c.arm = "a2";
    c.codebook_k = 8;
    try {
      validate(c);
      ADD_FAILURE() << task << ": --codebook-k accepted for arm a2";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--codebook-k: arm a2 has no codebook prior"), std::string::npos)
          << e.what();
    }
    c.codebook_k = TrainConfig{}.codebook_k;
    c.codebook_beta = 0.5;
    EXPECT_THROW(validate(c), std::invalid_argument) << task;
  }
  TrainConfig c2;
  c2.out = "unused";
  c2.arm = "c2";
  c2.codebook_k = 8;
  EXPECT_NO_THROW(validate(c2));
}

// A record states every rate it was given, but an arm reads only some: the record lists those its run
// does not read (config.not_read), and a value other than the default for one of them is refused.
TEST(TrainOptions, TheOptionsAnArmDoesNotReadAreListedAndNotAccepted) {
  using V = std::vector<std::string>;
  EXPECT_EQ(options_not_read("a2"), (V{"riemann_lr", "tau", "sgd_lr", "elementwise_lr", "soft_lambda"}));
  EXPECT_EQ(options_not_read("soft"), (V{"riemann_lr", "tau", "sgd_lr", "elementwise_lr"}));
  EXPECT_EQ(options_not_read("b2"), (V{"sgd_lr", "elementwise_lr", "soft_lambda"}));
  EXPECT_EQ(options_not_read("b2m"), (V{"riemann_lr", "tau", "sgd_lr", "soft_lambda"}));
  EXPECT_EQ(options_not_read("b2-sgd"), (V{"riemann_lr", "tau", "elementwise_lr", "soft_lambda"}));
  EXPECT_EQ(options_not_read("frozen"), (V{"riemann_lr", "tau", "sgd_lr", "elementwise_lr", "soft_lambda"}));
  const std::pair<const char*, double TrainConfig::*> given[] = {{"riemann-lr", &TrainConfig::riemann_lr},
                                                                 {"tau", &TrainConfig::tau},
                                                                 {"sgd-lr", &TrainConfig::sgd_lr},
                                                                 {"elementwise-lr", &TrainConfig::elementwise_lr},
                                                                 {"soft-lambda", &TrainConfig::soft_lambda}};
  for (const std::string task : {"grok", "image"})
    for (const auto& [option, field] : given) {
      TrainConfig c;
      c.task = task;
      c.out = "unused";
      c.arm = "a2";
      c.*field = 0.3;
      try {
        validate(c);
        ADD_FAILURE() << task << ": --" << option << " accepted for arm a2";
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("--" + std::string(option) + ": arm a2 does not read it"),
                  std::string::npos)
            << e.what();
      }
    }
  TrainConfig b2;  // the rates an arm reads are accepted
  b2.out = "unused";
  b2.arm = "b2";
  b2.riemann_lr = 0.3;
  b2.tau = 0.2;
  EXPECT_NO_THROW(validate(b2));
  TrainConfig soft;
  soft.out = "unused";
  soft.arm = "soft";
  soft.soft_lambda = 0.01;
  EXPECT_NO_THROW(validate(soft));
}

TEST(TrainOptions, TheSchemaTaskDefaultsAreWhatEachTaskRuns) {
  const fs::path dir = fs::temp_directory_path() / ("stiefel-train-options-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (const std::string task : {"grok", "image"}) {
    TrainConfig c;
    c.task = task;
    c.epochs = 1;
    c.quiet = true;
    c.out = (dir / task).string();
    if (task == "image") {  // Fashion-MNIST from Debian's dataset-fashion-mnist, at smoke size
      c.n = 256;
      c.pca_samples = 2000;
      c.test_n = 100;
      c.warmup_epochs = 0;
    }
    std::ostringstream progress;
    const auto run = train(c, progress);
    for (const auto& [key, spec] : train_properties().items()) {
      if (!spec.contains("task_defaults")) continue;
      ASSERT_TRUE(run["config"].contains(key)) << task << " " << key;
      EXPECT_EQ(run["config"][key], spec["task_defaults"][task]) << task << " " << key;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stiefel::training
