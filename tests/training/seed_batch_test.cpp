// Seed batching: S grokking models trained through one batched forward give each model the logits
// and gradients of its own forward, bit for bit, on the CPU under the pinned compute configuration;
// models of another shape or route are refused.
#include <gtest/gtest.h>

#include <stiefel/training/compute.h>
#include <stiefel/training/models.h>
#include <stiefel/training/seed_batch.h>

namespace stiefel::training {
namespace {

ModelSpec grok_spec(std::int64_t d = 32, std::int64_t heads = 4, std::int64_t r = 8) {
  ModelSpec s;
  s.task = "grok";
  s.input_dim = 98;
  s.tokens = 3;
  s.classes = 97;
  s.d = d;
  s.heads = heads;
  s.r = r;
  s.layers = 2;
  s.positional = "none";
  s.attention = "packed";
  return s;
}

Classifier model(const ModelSpec& spec, std::uint64_t seed, bool orthonormal) {
  torch::manual_seed(seed);
  Classifier m(spec);
  auto gen = at::detail::createCPUGenerator(seed);
  init_frames(m, orthonormal, gen);
  return m;
}

torch::Tensor tokens(std::int64_t n, std::uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  auto x = torch::randint(0, 97, {n, 3}, gen, torch::kLong);
  x.select(1, 1).fill_(97);  // the "=" token, as in the task
  return x;
}

struct Pass {
  torch::Tensor logits;
  std::vector<torch::Tensor> grads;
};

std::vector<torch::Tensor> grads_of(const Classifier& m) {
  std::vector<torch::Tensor> g;
  for (const auto& p : m->parameters()) g.push_back(p.grad().clone());
  return g;
}

void zero(const Classifier& m) {
  for (auto& p : m->parameters()) p.mutable_grad() = torch::Tensor();
}

// Each model alone, then all of them in one batched pass: every logit and every gradient agrees.
void expect_batch_equals_singles(const ModelSpec& spec, std::int64_t n, const std::vector<bool>& orthonormal) {
  configure_cpu_compute(1);
  std::vector<Classifier> models;
  std::vector<torch::Tensor> inputs, labels;
  for (std::size_t s = 0; s < orthonormal.size(); ++s) {
    models.push_back(model(spec, 100 + s, orthonormal[s]));
    inputs.push_back(tokens(n, 7 + s));
    labels.push_back(torch::randint(0, 97, {n}, at::detail::createCPUGenerator(50 + s), torch::kLong));
  }
  std::vector<Pass> single;
  for (std::size_t s = 0; s < models.size(); ++s) {
    const auto logits = models[s]->forward(inputs[s]);
    torch::cross_entropy_loss(logits, labels[s]).backward();
    single.push_back({logits.detach(), grads_of(models[s])});
    zero(models[s]);
  }
  const auto logits = batched_forward(models, inputs);
  ASSERT_EQ(logits.size(), models.size());
  torch::Tensor total;
  for (std::size_t s = 0; s < models.size(); ++s) {
    const auto loss = torch::cross_entropy_loss(logits[s], labels[s]);
    total = total.defined() ? total + loss : loss;
  }
  total.backward();
  for (std::size_t s = 0; s < models.size(); ++s) {
    EXPECT_TRUE(torch::equal(logits[s].detach(), single[s].logits)) << "logits of model " << s;
    const auto g = grads_of(models[s]);
    const auto names = models[s]->named_parameters().keys();
    ASSERT_EQ(g.size(), single[s].grads.size());
    for (std::size_t i = 0; i < g.size(); ++i)
      EXPECT_TRUE(torch::equal(g[i], single[s].grads[i]))
          << "model " << s << ", gradient of " << names[i] << ": max difference "
          << (g[i] - single[s].grads[i]).abs().max().item<double>();
  }
}

TEST(SeedBatch, SmallModelsBitForBit) { expect_batch_equals_singles(grok_spec(), 40, {true, false, true}); }

TEST(SeedBatch, PaperSizeModelBitForBit) {
  // The paper's grokking model (d = 128, 4 heads of r = 32), enough examples for the GEMMs to block.
  expect_batch_equals_singles(grok_spec(128, 4, 32), 700, {true, false});
}

TEST(SeedBatch, OneModelIsItsOwnForward) { expect_batch_equals_singles(grok_spec(), 17, {false}); }

// The control: the batched pass hands each model its own gradient, not a neighbour's. Two models
// with different weights batched in swapped order, the loss of one only: that model's gradient is
// its lone gradient bit for bit, and the other's is zero.
TEST(SeedBatch, GradientsReachTheirOwnModel) {
  configure_cpu_compute(1);
  const auto spec = grok_spec();
  std::vector<Classifier> models{model(spec, 1, true), model(spec, 2, true)};
  const auto x = tokens(20, 3);
  const auto y = torch::randint(0, 97, {20}, at::detail::createCPUGenerator(4), torch::kLong);
  torch::cross_entropy_loss(models[1]->forward(x), y).backward();
  const auto alone = grads_of(models[1]);
  zero(models[1]);
  const auto logits = batched_forward({models[1], models[0]}, {x, x});
  torch::cross_entropy_loss(logits[0], y).backward();  // model 1's loss only
  const auto batched = grads_of(models[1]);
  for (std::size_t i = 0; i < alone.size(); ++i) EXPECT_TRUE(torch::equal(batched[i], alone[i])) << "tensor " << i;
  for (const auto& p : models[0]->parameters())
    EXPECT_TRUE(!p.grad().defined() || p.grad().abs().sum().item<double>() == 0);
}

TEST(SeedBatch, RefusesOtherShapesAndRoutes) {
  auto image = grok_spec();
  image.attention = "per-head";
  EXPECT_THROW(check_batchable({model(image, 1, true)}), std::invalid_argument);
  EXPECT_THROW(check_batchable({model(grok_spec(32, 4, 8), 1, true), model(grok_spec(32, 2, 8), 2, true)}),
               std::invalid_argument);
  EXPECT_THROW(check_batchable({}), std::invalid_argument);
}

}  // namespace
}  // namespace stiefel::training
