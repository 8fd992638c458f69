// small_attention against the same attention in ATen ops: values and the gradients of qkv and the
// V bias, float and double, the grokking model's shape and odd ones; thread-count invariance; the
// two routes of the model agreeing; every vector width giving the same bits; and controls that a perturbed input or a
// wrong scale fails.
#include <gtest/gtest.h>

#include <stiefel/training/models.h>
#include <stiefel/training/small_attention.h>

namespace stiefel::training {
namespace {

// softmax(Q Kᵀ · scale) (V + bias) per (example, head), written independently of the kernel.
torch::Tensor reference(const torch::Tensor& qkv, const torch::Tensor& bias, std::int64_t heads, double scale) {
  const auto b = qkv.size(0), t = qkv.size(1), r = qkv.size(2) / (3 * heads);
  const auto split = qkv.split(heads * r, 2);  // Q, K, V: [B, T, H·r] each
  const auto per_head = [&](const torch::Tensor& x) { return x.reshape({b, t, heads, r}).permute({0, 2, 1, 3}); };
  const auto q = per_head(split[0]), k = per_head(split[1]), v = per_head(split[2] + bias);
  const auto scores = torch::einsum("bhic,bhjc->bhij", {q, k}) * scale;
  const auto mixed = torch::einsum("bhij,bhjc->bhic", {torch::softmax(scores, -1), v});
  return mixed.permute({0, 2, 1, 3}).reshape({b, t, heads * r});
}

// The relative error, computed in float64 whatever the tensors' type.
double rel64(const torch::Tensor& x_in, const torch::Tensor& y_in) {
  const auto x = x_in.to(torch::kFloat64), y = y_in.to(torch::kFloat64);
  return ((x - y).abs().max() / y.abs().max().clamp_min(1e-300)).item<double>();
}

struct Shape {
  std::int64_t b, t, heads, r;
};

class SmallAttention : public ::testing::TestWithParam<std::tuple<Shape, torch::ScalarType>> {};

TEST_P(SmallAttention, ValueAndGradientsMatchAtenOps) {
  const auto [s, dtype] = GetParam();
  torch::manual_seed(11);
  const auto opts = torch::dtype(dtype);
  auto qkv = (torch::randn({s.b, s.t, 3 * s.heads * s.r}, opts) * 1.5).requires_grad_();
  auto bias = torch::randn({s.heads * s.r}, opts).requires_grad_();
  auto qkv2 = qkv.detach().clone().requires_grad_(), bias2 = bias.detach().clone().requires_grad_();
  const double scale = 1.0 / std::sqrt(double(s.r));
  const auto out = small_attention(qkv, bias, s.heads, scale);
  const auto out_ref = reference(qkv2, bias2, s.heads, scale);
  ASSERT_EQ(out.sizes(), out_ref.sizes());
  const double tol = dtype == torch::kFloat ? 2e-6 : 1e-14;
  EXPECT_LE(rel64(out, out_ref), tol);
  const auto g = torch::randn_like(out);
  out.backward(g);
  out_ref.backward(g);
  EXPECT_LE(rel64(qkv.grad(), qkv2.grad()), tol * 4);
  EXPECT_LE(rel64(bias.grad(), bias2.grad()), tol * 4);
}

INSTANTIATE_TEST_SUITE_P(Shapes, SmallAttention,
                         ::testing::Combine(::testing::Values(Shape{37, 3, 4, 32},   // the grokking model's
                                                              Shape{5, 1, 2, 8},     // one token: P = 1
                                                              Shape{9, 7, 3, 13},    // r not a multiple of 8
                                                              Shape{4, 17, 8, 16}),  // the image model's
                                            ::testing::Values(torch::kFloat, torch::kDouble)));

TEST(SmallAttentionControl, APerturbedInputOrAWrongScaleIsDetected) {
  torch::manual_seed(12);
  const auto qkv = torch::randn({6, 3, 3 * 4 * 8}, torch::kFloat64), bias = torch::randn({32}, torch::kFloat64);
  const auto expected = reference(qkv, bias, 4, 0.25);
  auto bad = qkv.clone();
  bad[2][1][5] += 1e-6;  // a Q entry of one example
  EXPECT_GT(rel64(small_attention(bad, bias, 4, 0.25), expected), 1e-10);
  EXPECT_GT(rel64(small_attention(qkv, bias, 4, 0.25 * (1 + 1e-6)), expected), 1e-10);
  EXPECT_GT(rel64(small_attention(qkv, bias * (1 + 1e-6), 4, 0.25), expected), 1e-10);
  EXPECT_LE(rel64(small_attention(qkv, bias, 4, 0.25), expected), 1e-14);
}

TEST(SmallAttentionControl, TheSameBitsOnAnyThreadCount) {
  torch::manual_seed(13);
  auto qkv = torch::randn({300, 3, 384}).requires_grad_();
  auto bias = torch::randn({128}).requires_grad_();
  const auto g = torch::randn({300, 3, 128});
  const int before = torch::get_num_threads();
  std::vector<torch::Tensor> outs, grads;
  for (int threads : {1, 2, 3}) {
    torch::set_num_threads(threads);
    qkv.mutable_grad() = torch::Tensor();
    const auto out = small_attention(qkv, bias, 4, 1.0 / std::sqrt(32.0));
    out.backward(g);
    outs.push_back(out.detach());
    grads.push_back(qkv.grad().clone());
  }
  torch::set_num_threads(before);
  for (std::size_t i = 1; i < outs.size(); ++i) {
    EXPECT_TRUE(torch::equal(outs[i], outs[0]));
    EXPECT_TRUE(torch::equal(grads[i], grads[0]));
  }
}

// The kernel at each vector width the CPU runs (its own instance per width): the same bits, values
// and gradients, float and double, at the grokking model's shape and at one whose r is not a multiple
// of eight. The control: a few units of roundoff in one input are seen at every width.
TEST(SmallAttentionWidths, EveryWidthGivesTheSameBits) {
  const auto widths = small_attention_widths();
  ASSERT_FALSE(widths.empty());
  EXPECT_EQ(widths.back(), "default");
  for (const auto dtype : {torch::kFloat, torch::kDouble})
    for (const auto& s : {Shape{300, 3, 4, 32}, Shape{41, 5, 3, 13}}) {
      torch::manual_seed(16);
      const auto opts = torch::dtype(dtype);
      const auto qkv0 = torch::randn({s.b, s.t, 3 * s.heads * s.r}, opts) * 1.5;
      const auto bias0 = torch::randn({s.heads * s.r}, opts);
      const auto g = torch::randn({s.b, s.t, s.heads * s.r}, opts);
      auto nudged = qkv0.clone();
      nudged[7][1][3] *= 1 + (dtype == torch::kFloat ? 1e-5 : 1e-13);  // a few units of roundoff
      const auto run = [&](const torch::Tensor& x) {
        auto qkv = x.clone().requires_grad_();
        auto bias = bias0.clone().requires_grad_();
        const auto out = small_attention(qkv, bias, s.heads, 1.0 / std::sqrt(double(s.r)));
        out.backward(g);
        return std::vector<torch::Tensor>{out.detach(), qkv.grad(), bias.grad()};
      };
      std::vector<std::vector<torch::Tensor>> results;
      for (const auto& w : widths) {
        SCOPED_TRACE(w);
        set_small_attention_width(w);
        results.push_back(run(qkv0));
        EXPECT_EQ(small_attention_last_width(), w);  // that width's own instance ran
        const auto other = run(nudged);
        EXPECT_FALSE(torch::equal(other[0], results.back()[0]));  // the comparison sees roundoff
      }
      set_small_attention_width("");
      for (std::size_t i = 1; i < results.size(); ++i)
        for (std::size_t k = 0; k < 3; ++k) {
          SCOPED_TRACE(widths[i] + " against " + widths[0] + ", output " + std::to_string(k));
          EXPECT_TRUE(torch::equal(results[i][k], results[0][k]));
        }
    }
  EXPECT_THROW(set_small_attention_width("sse9"), std::invalid_argument);
}

TEST(SmallAttentionControl, MoreThan64TokensTakeTheFallback) {
  torch::manual_seed(14);
  const auto qkv = torch::randn({2, 65, 3 * 2 * 4}, torch::kFloat64), bias = torch::randn({8}, torch::kFloat64);
  EXPECT_LE(rel64(small_attention(qkv, bias, 2, 0.5), reference(qkv, bias, 2, 0.5)), 1e-14);
}

// The model's two attention routes compute the same function: the same weights, the same batch,
// outputs and every parameter's gradient equal to roundoff (double) and to float32 roundoff.
TEST(SmallAttentionModel, PackedAndPerHeadRoutesAgree) {
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    ModelSpec spec;
    spec.task = "grok";
    spec.input_dim = 98, spec.tokens = 3, spec.classes = 97, spec.d = 128, spec.heads = 4, spec.r = 32;
    spec.layers = 2, spec.positional = "none";
    torch::manual_seed(15);
    Classifier per_head(spec);
    auto gen = at::detail::createCPUGenerator(15);
    init_frames(per_head, true, gen);  // the frames start at zero: a zero gradient would pass anything
    spec.attention = "packed";
    Classifier packed(spec);
    per_head->to(dtype);
    packed->to(dtype);
    {
      torch::NoGradGuard guard;
      const auto from = per_head->parameters(), to = packed->parameters();
      ASSERT_EQ(from.size(), to.size());
      for (std::size_t i = 0; i < from.size(); ++i) to[i].copy_(from[i]);
    }
    const auto x = torch::randint(0, 98, {64, 3}, torch::kLong);
    const auto y = torch::randint(0, 97, {64}, torch::kLong);
    const auto out_a = per_head->forward(x), out_b = packed->forward(x);
    const double tol = dtype == torch::kFloat64 ? 1e-12 : 1e-5;
    EXPECT_LE(rel64(out_b, out_a), tol);
    torch::cross_entropy_loss(out_a, y).backward();
    torch::cross_entropy_loss(out_b, y).backward();
    const auto ga = per_head->named_parameters(), gb = packed->named_parameters();
    EXPECT_GT(ga["layers.0.attn.wq"].grad().abs().max().item<double>(), 0);  // not a vacuous comparison
    for (const auto& item : ga) {
      SCOPED_TRACE(item.key());
      EXPECT_LE(rel64(gb[item.key()].grad(), item.value().grad()), tol * 10);
    }
  }
}

}  // namespace
}  // namespace stiefel::training
