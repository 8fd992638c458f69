#include <stiefel/training/seed_batch.h>
#include <stiefel/training/small_attention.h>

#include <cmath>
#include <stdexcept>

namespace stiefel::training {
namespace {

// x[s] · W[s]ᵀ + b[s] for x [S, M, in], W [S, out, in], b [S, out]: per slice the products of a
// Linear layer's own forward and backward. LibTorch's Linear adds the bias in two ways, and they
// round apart once the GEMM splits its sum into blocks (the FFN's 512 inputs): a 2-D input goes
// through addmm (the bias
// copied into the result, then the GEMM added with β = 1: `bias_first`), a 3-D one through matmul
// with the bias added after. The backward takes W's gradient as gᵀ · x ([out, in], the orientation
// of LibTorch's mm backward for a transposed weight; bmm's own backward would form xᵀ · g, another
// GEMM with other bits), x's as g · W and b's as the sum of g over the rows.
struct BatchedLinear : torch::autograd::Function<BatchedLinear> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w,
                               const torch::Tensor& b, bool bias_first) {
    ctx->save_for_backward({x, w});
    if (bias_first) return torch::baddbmm(b.unsqueeze(1), x, w.transpose(1, 2));
    return x.bmm(w.transpose(1, 2)) + b.unsqueeze(1);
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &w = saved[1];
    const auto& g = grads[0];
    return {g.bmm(w), g.transpose(1, 2).bmm(x), g.sum(1), torch::Tensor()};
  }
};

// The Linear layers L[s] of the S models applied to x [S, M, in] (`rows_of_3d`: in the models' own
// forward the layer reads a 3-D input, whose M rows it flattens).
torch::Tensor batched_linear(const std::vector<torch::nn::Linear>& layers, const torch::Tensor& x, bool rows_of_3d) {
  std::vector<torch::Tensor> w, b;
  for (const auto& l : layers) {
    w.push_back(l->weight);
    b.push_back(l->bias);
  }
  return BatchedLinear::apply(x, torch::stack(w), torch::stack(b), !rows_of_3d);
}

// f(slice s, s) for every model, stacked back: the stages whose parameters enter a fused kernel.
template <class F>
torch::Tensor per_model(const torch::Tensor& x, std::size_t models, F f) {
  std::vector<torch::Tensor> out;
  out.reserve(models);
  for (std::size_t s = 0; s < models; ++s) out.push_back(f(x.select(0, std::int64_t(s)), s));
  return torch::stack(out);
}

template <class Get>
auto gather(std::vector<Classifier>& models, Get get) {
  std::vector<decltype(get(models.front()))> out;
  for (auto& m : models) out.push_back(get(m));
  return out;
}

}  // namespace

void check_batchable(const std::vector<Classifier>& models) {
  if (models.empty()) throw std::invalid_argument("seed batch: no models");
  const auto& s0 = models.front()->spec;
  if (s0.task != "grok" || s0.attention != "packed")
    throw std::invalid_argument("seed batch: only the grokking model on the packed attention route batches (task " +
                                s0.task + ", attention " + s0.attention + ")");
  for (const auto& m : models) {
    const auto& s = m->spec;
    if (s.task != s0.task || s.input_dim != s0.input_dim || s.tokens != s0.tokens || s.classes != s0.classes ||
        s.d != s0.d || s.heads != s0.heads || s.r != s0.r || s.layers != s0.layers || s.attention != s0.attention)
      throw std::invalid_argument("seed batch: the models differ in shape");
  }
}

std::vector<torch::Tensor> batched_forward(std::vector<Classifier> models, const std::vector<torch::Tensor>& inputs) {
  check_batchable(models);
  if (inputs.size() != models.size()) throw std::invalid_argument("seed batch: one input per model");
  const auto S = models.size();
  const auto& spec = models.front()->spec;
  const auto n = inputs.front().size(0);
  for (const auto& x : inputs)
    if (x.size(0) != n) throw std::invalid_argument("seed batch: the inputs differ in size");
  const auto t = spec.tokens, d = spec.d, hr = spec.heads * spec.r;
  const double scale = 1.0 / std::sqrt(double(spec.r));

  std::vector<torch::Tensor> embedded;
  for (std::size_t s = 0; s < S; ++s) embedded.push_back(models[s]->token_embed->forward(inputs[s]));
  auto h = torch::stack(embedded);  // [S, N, T, d]
  for (std::int64_t l = 0; l < spec.layers; ++l) {
    const auto layers = gather(models, [&](Classifier& m) { return m->layers[l]->as<EncoderLayer>(); });
    // x + attn(ln1(x))
    const auto a_in =
        per_model(h, S, [&](const torch::Tensor& x, std::size_t s) { return layers[s]->ln1->forward(x); });
    std::vector<torch::Tensor> packed;
    for (const auto& layer : layers) packed.push_back(layer->attn->packed_weight());
    const auto qkv = torch::bmm(a_in.reshape({std::int64_t(S), n * t, d}), torch::stack(packed))
                         .view({std::int64_t(S), n, t, 3 * hr});
    const auto mixed = per_model(qkv, S, [&](const torch::Tensor& x, std::size_t s) {
      return small_attention(x, layers[s]->attn->wv->bias, spec.heads, scale);
    });
    const auto wo = gather(models, [&](Classifier& m) { return m->layers[l]->as<EncoderLayer>()->attn->wo; });
    h = h + batched_linear(wo, mixed.reshape({std::int64_t(S), n * t, hr}), true).view({std::int64_t(S), n, t, d});
    // x + ff2(gelu(ff1(ln2(x))))
    const auto f_in =
        per_model(h, S, [&](const torch::Tensor& x, std::size_t s) { return layers[s]->ln2->forward(x); });
    const auto ff1 = gather(models, [&](Classifier& m) { return m->layers[l]->as<EncoderLayer>()->ff1; });
    const auto ff2 = gather(models, [&](Classifier& m) { return m->layers[l]->as<EncoderLayer>()->ff2; });
    const auto hidden = torch::gelu(batched_linear(ff1, f_in.reshape({std::int64_t(S), n * t, d}), true));
    h = h + batched_linear(ff2, hidden, true).view({std::int64_t(S), n, t, d});
  }
  h = per_model(h, S, [&](const torch::Tensor& x, std::size_t s) { return models[s]->final_ln->forward(x); });
  const auto r1 = gather(models, [](Classifier& m) { return m->readout1; });
  const auto r2 = gather(models, [](Classifier& m) { return m->readout2; });
  const auto logits =
      batched_linear(r2, torch::relu(batched_linear(r1, h.reshape({std::int64_t(S), n, t * d}), false)), false);
  return logits.unbind(0);
}

}  // namespace stiefel::training
