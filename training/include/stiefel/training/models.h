// The two models of the paper, with W_Q and W_K of every layer held as frame tensors [H, d, r].
//   Image (§3.3): a linear embedding of the whitened patch tokens to d = 128, learned positional
//   embeddings, pre-LN encoder layers (H = 8, r = 16, FFN 4×, GELU), final LayerNorm, mean pooling
//   (or a class token), linear classifier. Depth, positional encoding and pooling are not stated
//   in the paper: they are options (defaults: 2 layers, learned, mean).
//   Grokking (§4.3): 2 pre-LN layers, 4 heads, d = 128, r = 32, FFN 4×, one-hot token embedding
//   98×128 (an Embedding, decayed), no causal mask, no positional embedding, read-out
//   concat(3×128) → 128 → ReLU → 97.
// The attention has two implementations of the same function (ModelSpec::attention):
//   "per-head"  Q and K per head (einsum over the frames [H, d, r]), V by its Linear, then
//               softmax(Q Kᵀ/√r) V as batches of small products (small_bmm); the image model's
//               route, with which its committed records were made;
//   "packed"    one GEMM projects every token onto [Q | K | V] (the frames laid side by side with
//               V's weight), and small_attention mixes the heads in one pass; the grokking model's
//               route (3 tokens: the per-head route spends more than the projections' GEMMs there).
// They agree to float32 roundoff (tests/training/small_attention_test.cpp), not bit for bit.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace stiefel::training {

struct FrameAttentionImpl : torch::nn::Module {
  FrameAttentionImpl(std::int64_t d, std::int64_t heads, std::int64_t r, bool packed = false);
  torch::Tensor forward(const torch::Tensor& x);  // [B, T, d] → [B, T, d]
  // The packed route's projection [W_Q | W_K | W_Vᵀ]: the frames' heads side by side, [d, 3·H·r].
  torch::Tensor packed_weight() const;
  std::int64_t heads, r;
  bool packed;
  torch::Tensor wq, wk;  // [H, d, r]
  torch::nn::Linear wv{nullptr}, wo{nullptr};
};
TORCH_MODULE(FrameAttention);

struct EncoderLayerImpl : torch::nn::Module {
  EncoderLayerImpl(std::int64_t d, std::int64_t heads, std::int64_t r, std::int64_t ffn, bool packed = false);
  torch::Tensor forward(torch::Tensor x);
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  FrameAttention attn{nullptr};
  torch::nn::Linear ff1{nullptr}, ff2{nullptr};
};
TORCH_MODULE(EncoderLayer);

struct ModelSpec {
  std::string task = "image";  // image | grok
  std::int64_t input_dim = 128, tokens = 16, classes = 10;
  std::int64_t d = 128, heads = 8, r = 16, layers = 2;
  std::string pooling = "mean";        // mean | cls
  std::string positional = "learned";  // learned | none
  std::string attention = "per-head";  // per-head | packed
};

struct ClassifierImpl : torch::nn::Module {
  explicit ClassifierImpl(const ModelSpec& spec);
  torch::Tensor forward(const torch::Tensor& x);  // image: [B, T, input] float; grok: [B, 3] int64
  std::vector<FrameAttention> attention_layers() const;
  ModelSpec spec;
  torch::nn::Linear embed{nullptr}, head{nullptr}, readout1{nullptr}, readout2{nullptr};
  torch::nn::Embedding token_embed{nullptr};
  torch::Tensor positional, cls;
  torch::nn::ModuleList layers;
  torch::nn::LayerNorm final_ln{nullptr};
};
TORCH_MODULE(Classifier);

// W_Q, W_K initialisation: orthonormal frames (QR of a Gaussian, signs fixed) or Xavier-uniform
// per head (A2 and the soft penalty, as in the paper). Orthonormal frames are drawn per head, or,
// with `block`, as one frame in St(d, H·r) whose column blocks are the heads (needs H·r ≤ d).
void init_frames(Classifier& model, bool orthonormal, torch::Generator& gen, bool block = false);

}  // namespace stiefel::training
