#include <stiefel/training/models.h>
#include <stiefel/training/small_attention.h>
#include <stiefel/training/small_matmul.h>

#include <cmath>
#include <stdexcept>

namespace stiefel::training {

FrameAttentionImpl::FrameAttentionImpl(std::int64_t d, std::int64_t heads_, std::int64_t r_, bool packed_)
    : heads(heads_), r(r_), packed(packed_) {
  wq = register_parameter("wq", torch::zeros({heads, d, r}));
  wk = register_parameter("wk", torch::zeros({heads, d, r}));
  wv = register_module("wv", torch::nn::Linear(d, heads * r));
  wo = register_module("wo", torch::nn::Linear(heads * r, d));
}

torch::Tensor FrameAttentionImpl::packed_weight() const {
  const auto d = wq.size(1);
  return torch::cat(
      {wq.permute({1, 0, 2}).reshape({d, heads * r}), wk.permute({1, 0, 2}).reshape({d, heads * r}), wv->weight.t()},
      1);
}

torch::Tensor FrameAttentionImpl::forward(const torch::Tensor& x) {
  const auto b = x.size(0), t = x.size(1);
  if (packed) {
    // [Q | K | V] = x · [W_Q | W_K | W_Vᵀ] ([H, d, r] frames → [d, H·r] blocks).
    const auto d = x.size(2);
    const auto qkv = x.reshape({b * t, d}).mm(packed_weight()).view({b, t, 3 * heads * r});
    return wo->forward(small_attention(qkv, wv->bias, heads, 1.0 / std::sqrt(double(r))));
  }
  const auto q = torch::einsum("btd,hdr->bhtr", {x, wq});
  const auto k = torch::einsum("btd,hdr->bhtr", {x, wk});
  const auto v = wv->forward(x).view({b, t, heads, r}).transpose(1, 2);
  // softmax(Q Kᵀ / √r) V per (image, head), as [B·H, T, r] products of small matrices.
  const auto scores =
      small_bmm(q.reshape({b * heads, t, r}), k.reshape({b * heads, t, r}), false, true, std::sqrt(double(r)));
  const auto heads_out = small_bmm(torch::softmax(scores, -1), v.reshape({b * heads, t, r}), false, false);
  return wo->forward(heads_out.view({b, heads, t, r}).transpose(1, 2).reshape({b, t, heads * r}));
}

EncoderLayerImpl::EncoderLayerImpl(std::int64_t d, std::int64_t heads, std::int64_t r, std::int64_t ffn, bool packed) {
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  attn = register_module("attn", FrameAttention(d, heads, r, packed));
  ff1 = register_module("ff1", torch::nn::Linear(d, ffn));
  ff2 = register_module("ff2", torch::nn::Linear(ffn, d));
}

torch::Tensor EncoderLayerImpl::forward(torch::Tensor x) {
  x = x + attn->forward(ln1->forward(x));
  return x + ff2->forward(torch::gelu(ff1->forward(ln2->forward(x))));
}

ClassifierImpl::ClassifierImpl(const ModelSpec& s) : spec(s) {
  if (s.task != "image" && s.task != "grok") throw std::invalid_argument("model task must be image or grok");
  if (s.attention != "per-head" && s.attention != "packed")
    throw std::invalid_argument("model attention must be per-head or packed");
  if (s.task == "image") {
    embed = register_module("embed", torch::nn::Linear(s.input_dim, s.d));
    if (s.positional == "learned") {
      const auto n = s.tokens + (s.pooling == "cls" ? 1 : 0);
      positional = register_parameter("positional", torch::randn({n, s.d}) * 0.02);
    } else if (s.positional != "none") {
      throw std::invalid_argument("--positional must be learned or none");
    }
    if (s.pooling == "cls")
      cls = register_parameter("cls", torch::zeros({1, 1, s.d}));
    else if (s.pooling != "mean")
      throw std::invalid_argument("--pooling must be mean or cls");
    head = register_module("head", torch::nn::Linear(s.d, s.classes));
  } else {
    token_embed = register_module("token_embed", torch::nn::Embedding(s.input_dim, s.d));
    readout1 = register_module("readout1", torch::nn::Linear(s.tokens * s.d, s.d));
    readout2 = register_module("readout2", torch::nn::Linear(s.d, s.classes));
  }
  layers = register_module("layers", torch::nn::ModuleList());
  for (std::int64_t l = 0; l < s.layers; ++l)
    layers->push_back(EncoderLayer(s.d, s.heads, s.r, 4 * s.d, s.attention == "packed"));
  final_ln = register_module("final_ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({s.d})));
}

torch::Tensor ClassifierImpl::forward(const torch::Tensor& x) {
  torch::Tensor h;
  if (spec.task == "image") {
    h = embed->forward(x);
    if (spec.pooling == "cls") h = torch::cat({cls.expand({h.size(0), 1, spec.d}), h}, 1);
    if (positional.defined()) h = h + positional;
  } else {
    h = token_embed->forward(x);
  }
  for (const auto& layer : *layers) h = layer->as<EncoderLayer>()->forward(h);
  h = final_ln->forward(h);
  if (spec.task == "grok") return readout2->forward(torch::relu(readout1->forward(h.reshape({h.size(0), -1}))));
  const auto pooled = spec.pooling == "cls" ? h.select(1, 0) : h.mean(1);
  return head->forward(pooled);
}

std::vector<FrameAttention> ClassifierImpl::attention_layers() const {
  std::vector<FrameAttention> out;
  for (const auto& layer : *layers) out.push_back(layer->as<EncoderLayer>()->attn);
  return out;
}

void init_frames(Classifier& model, bool orthonormal, torch::Generator& gen, bool block) {
  torch::NoGradGuard guard;
  for (auto& attn : model->attention_layers())
    for (torch::Tensor* w : {&attn->wq, &attn->wk}) {
      const auto heads = w->size(0), d = w->size(1), r = w->size(2);
      if (orthonormal && block) {
        if (heads * r > d)
          throw std::invalid_argument("block-orthogonal heads need H·r ≤ d (H = " + std::to_string(heads) +
                                      ", r = " + std::to_string(r) + ", d = " + std::to_string(d) + ")");
        const auto g = torch::randn({d, heads * r}, gen, torch::dtype(torch::kFloat64));
        auto [q, rr] = torch::linalg_qr(g, "reduced");
        const auto sign = torch::sign(torch::diagonal(rr)).unsqueeze(0);
        q = q * torch::where(sign == 0, torch::ones_like(sign), sign);
        w->copy_(q.reshape({d, heads, r}).permute({1, 0, 2}));
      } else if (orthonormal) {
        const auto g = torch::randn({heads, d, r}, gen, torch::dtype(torch::kFloat64));
        auto [q, rr] = torch::linalg_qr(g, "reduced");
        const auto sign = torch::sign(torch::diagonal(rr, 0, -2, -1)).unsqueeze(1);
        w->copy_(q * torch::where(sign == 0, torch::ones_like(sign), sign));
      } else {
        const double bound = std::sqrt(6.0 / double(d + r));
        w->copy_(torch::rand({heads, d, r}, gen) * (2 * bound) - bound);
      }
    }
}

}  // namespace stiefel::training
