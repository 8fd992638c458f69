#include <stiefel/training/small_attention.h>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace stiefel::training {
namespace {

constexpr std::int64_t kMaxTokens = 64, kMaxHeadSide = 256;

// a · b over n entries in a fixed order that vectorises: eight running sums (entry c goes to sum
// c mod 8, the last n mod 8 entries to sum 0), then added pairwise (0+4, 1+5, 2+6, 3+7; 0+2,
// 1+3; 0+1). The same bits at every vector width.
template <class T>
inline __attribute__((always_inline)) T dot(const T* __restrict a, const T* __restrict b, std::int64_t n) {
  T acc[8] = {};
  std::int64_t c = 0;
  for (; c + 8 <= n; c += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[c + l] * b[c + l];
  for (; c < n; ++c) acc[0] += a[c] * b[c];
  for (int l = 0; l < 4; ++l) acc[l] += acc[l + 4];
  acc[0] += acc[2];
  acc[1] += acc[3];
  return acc[0] + acc[1];
}

// One example: its T tokens' packed rows qkv[t, 3·H·r] (row stride 3·H·r); per head h, the scores,
// their softmax (kept in p[h, i, j] for the backward) and the mix of the biased values. Inlined
// into each clone below, so that each is compiled for its own vector width.
template <class T>
inline __attribute__((always_inline)) void forward_one(const T* __restrict qkv, const T* __restrict bias,
                                                       T* __restrict out, T* __restrict p, std::int64_t t,
                                                       std::int64_t heads, std::int64_t r, T scale) {
  const std::int64_t hr = heads * r, row = 3 * hr;
  for (std::int64_t h = 0; h < heads; ++h) {
    T* ph = p + h * t * t;
    for (std::int64_t i = 0; i < t; ++i) {
      const T* q = qkv + i * row + h * r;
      T* pi = ph + i * t;
      T top = -std::numeric_limits<T>::infinity();
      for (std::int64_t j = 0; j < t; ++j) {
        pi[j] = dot(q, qkv + j * row + hr + h * r, r) * scale;
        top = pi[j] > top ? pi[j] : top;
      }
      T sum = 0;
      for (std::int64_t j = 0; j < t; ++j) sum += (pi[j] = std::exp(pi[j] - top));
      for (std::int64_t j = 0; j < t; ++j) pi[j] /= sum;
      T* o = out + i * hr + h * r;
      for (std::int64_t c = 0; c < r; ++c) o[c] = 0;
      for (std::int64_t j = 0; j < t; ++j) {
        const T* v = qkv + j * row + 2 * hr + h * r;
        const T* bv = bias + h * r;
        const T w = pi[j];
        for (std::int64_t c = 0; c < r; ++c) o[c] += w * (v[c] + bv[c]);
      }
    }
  }
}

// dV[j] = Σ_i P[i, j] dO[i]; dP[i, j] = dO[i] · (V[j] + b); dS = P ⊙ (dP − rowsum(P ⊙ dP));
// dQ[i] = scale Σ_j dS[i, j] K[j]; dK[j] = scale Σ_i dS[i, j] Q[i]. Written into dqkv's packed row.
template <class T>
inline __attribute__((always_inline)) void backward_one(const T* __restrict qkv, const T* __restrict bias,
                                                        const T* __restrict p, const T* __restrict dout,
                                                        T* __restrict dqkv, std::int64_t t, std::int64_t heads,
                                                        std::int64_t r, T scale) {
  const std::int64_t hr = heads * r, row = 3 * hr;
  T ds[kMaxTokens * kMaxTokens];
  alignas(64) T vb[kMaxTokens * kMaxHeadSide];  // V + bias of this head, token by token
  for (std::int64_t h = 0; h < heads; ++h) {
    const T* ph = p + h * t * t;
    const T* bv = bias + h * r;
    for (std::int64_t j = 0; j < t; ++j) {
      const T* v = qkv + j * row + 2 * hr + h * r;
      for (std::int64_t c = 0; c < r; ++c) vb[j * r + c] = v[c] + bv[c];
    }
    for (std::int64_t i = 0; i < t; ++i) {
      const T* doi = dout + i * hr + h * r;
      T weighted = 0;
      for (std::int64_t j = 0; j < t; ++j) {
        const T dp = dot(doi, vb + j * r, r);
        ds[i * t + j] = dp;
        weighted += ph[i * t + j] * dp;
      }
      for (std::int64_t j = 0; j < t; ++j) ds[i * t + j] = ph[i * t + j] * (ds[i * t + j] - weighted);
    }
    for (std::int64_t j = 0; j < t; ++j) {
      T* dv = dqkv + j * row + 2 * hr + h * r;
      T* dk = dqkv + j * row + hr + h * r;
      for (std::int64_t c = 0; c < r; ++c) dv[c] = dk[c] = 0;
      for (std::int64_t i = 0; i < t; ++i) {
        const T* doi = dout + i * hr + h * r;
        const T* q = qkv + i * row + h * r;
        const T w = ph[i * t + j], g = ds[i * t + j] * scale;
        for (std::int64_t c = 0; c < r; ++c) dv[c] += w * doi[c];
        for (std::int64_t c = 0; c < r; ++c) dk[c] += g * q[c];
      }
    }
    for (std::int64_t i = 0; i < t; ++i) {
      T* dq = dqkv + i * row + h * r;
      for (std::int64_t c = 0; c < r; ++c) dq[c] = 0;
      for (std::int64_t j = 0; j < t; ++j) {
        const T* k = qkv + j * row + hr + h * r;
        const T g = ds[i * t + j] * scale;
        for (std::int64_t c = 0; c < r; ++c) dq[c] += g * k[c];
      }
    }
  }
}

// One instance of each kernel per vector width (forward_one and backward_one inlined into each, so
// each is compiled for its width), the widest the CPU has chosen at the first call; without FMA
// contraction they agree bit for bit (SmallAttentionWidths tests every width the CPU has).
std::atomic<int> g_ran{-1};  // the instance that ran last (0: avx512f, 1: avx2, 2: default), for tests

#define STIEFEL_WIDTH_KERNELS(suffix, target, index)                                                             \
  template <class T>                                                                                             \
  target void forward_##suffix(const T* qkv, const T* bias, T* out, T* p, std::int64_t t, std::int64_t heads,    \
                               std::int64_t r, T scale) {                                                        \
    g_ran.store(index, std::memory_order_relaxed);                                                               \
    forward_one<T>(qkv, bias, out, p, t, heads, r, scale);                                                       \
  }                                                                                                              \
  template <class T>                                                                                             \
  target void backward_##suffix(const T* qkv, const T* bias, const T* p, const T* dout, T* dqkv, std::int64_t t, \
                                std::int64_t heads, std::int64_t r, T scale) {                                   \
    g_ran.store(index, std::memory_order_relaxed);                                                               \
    backward_one<T>(qkv, bias, p, dout, dqkv, t, heads, r, scale);                                               \
  }
STIEFEL_WIDTH_KERNELS(avx512f, __attribute__((target("avx512f"))), 0)
STIEFEL_WIDTH_KERNELS(avx2, __attribute__((target("avx2"))), 1)
STIEFEL_WIDTH_KERNELS(base, , 2)
#undef STIEFEL_WIDTH_KERNELS

// The widths by index (the instances above), those this CPU runs (widest first), and the one in
// use (−1: the widest).
constexpr const char* kWidthNames[] = {"avx512f", "avx2", "default"};
int width_index(const std::string& name) {
  for (int i = 0; i < 3; ++i)
    if (name == kWidthNames[i]) return i;
  return -1;
}
const std::vector<std::string>& cpu_widths() {
  static const std::vector<std::string> widths = [] {
    std::vector<std::string> w;
    if (__builtin_cpu_supports("avx512f")) w.push_back("avx512f");
    if (__builtin_cpu_supports("avx2")) w.push_back("avx2");
    w.push_back("default");
    return w;
  }();
  return widths;
}
std::atomic<int> g_width{-1};

int width() {
  static const int widest = width_index(cpu_widths().front());
  const int w = g_width.load(std::memory_order_relaxed);
  return w >= 0 ? w : widest;
}

template <class T>
void forward_kernel(const T* qkv, const T* bias, T* out, T* p, std::int64_t t, std::int64_t heads, std::int64_t r,
                    T scale) {
  switch (width()) {
    case 0:
      return forward_avx512f<T>(qkv, bias, out, p, t, heads, r, scale);
    case 1:
      return forward_avx2<T>(qkv, bias, out, p, t, heads, r, scale);
    default:
      return forward_base<T>(qkv, bias, out, p, t, heads, r, scale);
  }
}

template <class T>
void backward_kernel(const T* qkv, const T* bias, const T* p, const T* dout, T* dqkv, std::int64_t t,
                     std::int64_t heads, std::int64_t r, T scale) {
  switch (width()) {
    case 0:
      return backward_avx512f<T>(qkv, bias, p, dout, dqkv, t, heads, r, scale);
    case 1:
      return backward_avx2<T>(qkv, bias, p, dout, dqkv, t, heads, r, scale);
    default:
      return backward_base<T>(qkv, bias, p, dout, dqkv, t, heads, r, scale);
  }
}

constexpr std::int64_t kGrain = 64;  // examples per task of the intra-op pool

struct SmallAttention : torch::autograd::Function<SmallAttention> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv_in,
                               const torch::Tensor& bias_in, std::int64_t heads, double scale) {
    RECORD_USER_SCOPE("stiefel::small_attention");  // a named operator in a profile (bench/grok_profile.cpp)
    const auto qkv = qkv_in.contiguous(), bias = bias_in.contiguous();
    const auto b = qkv.size(0), t = qkv.size(1), r = qkv.size(2) / (3 * heads);
    auto out = torch::empty({b, t, heads * r}, qkv.options());
    auto p = torch::empty({b, heads, t, t}, qkv.options());
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "small_attention", [&] {
      const auto* x = qkv.data_ptr<scalar_t>();
      const auto* bv = bias.data_ptr<scalar_t>();
      auto* o = out.data_ptr<scalar_t>();
      auto* pp = p.data_ptr<scalar_t>();
      at::parallel_for(0, b, kGrain, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t e = begin; e < end; ++e) {
          forward_kernel(x + e * t * 3 * heads * r, bv, o + e * t * heads * r, pp + e * heads * t * t, t, heads, r,
                         scalar_t(scale));
        }
      });
    });
    ctx->save_for_backward({qkv, bias, p});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["scale"] = scale;
    return out;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &qkv = saved[0], &bias = saved[1], &p = saved[2];
    const auto heads = ctx->saved_data["heads"].toInt();
    const double scale = ctx->saved_data["scale"].toDouble();
    const auto dout = grads[0].contiguous();
    const auto b = qkv.size(0), t = qkv.size(1), r = qkv.size(2) / (3 * heads);
    auto dqkv = torch::empty_like(qkv);
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "small_attention_backward", [&] {
      const auto* x = qkv.data_ptr<scalar_t>();
      const auto* bv = bias.data_ptr<scalar_t>();
      const auto* pp = p.data_ptr<scalar_t>();
      const auto* g = dout.data_ptr<scalar_t>();
      auto* dx = dqkv.data_ptr<scalar_t>();
      at::parallel_for(0, b, kGrain, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t e = begin; e < end; ++e) {
          const auto in = e * t * 3 * heads * r, o = e * t * heads * r, pe = e * heads * t * t;
          backward_kernel(x + in, bv, pp + pe, g + o, dx + in, t, heads, r, scalar_t(scale));
        }
      });
    });
    // The bias's gradient is the sum of dV over examples and tokens (ATen's reduction, as for a
    // Linear layer's bias).
    const auto dbias = dqkv.narrow(2, 2 * heads * r, heads * r).sum(std::vector<std::int64_t>{0, 1});
    return {dqkv, dbias, torch::Tensor(), torch::Tensor()};  // heads and scale: not differentiable
  }
};

// The same arithmetic in ATen ops (devices and inputs the kernel does not take).
torch::Tensor reference(const torch::Tensor& qkv, const torch::Tensor& bias, std::int64_t heads, double scale) {
  const auto b = qkv.size(0), t = qkv.size(1), r = qkv.size(2) / (3 * heads);
  const auto parts = qkv.view({b, t, 3, heads, r});
  const auto q = parts.select(2, 0).transpose(1, 2), k = parts.select(2, 1).transpose(1, 2);
  const auto v = (parts.select(2, 2) + bias.view({heads, r})).transpose(1, 2);
  const auto p = torch::softmax(q.matmul(k.transpose(-2, -1)) * scale, -1);
  return p.matmul(v).transpose(1, 2).reshape({b, t, heads * r});
}

}  // namespace

std::vector<std::string> small_attention_widths() { return cpu_widths(); }

std::string small_attention_last_width() {
  const int ran = g_ran.load();
  return ran >= 0 ? kWidthNames[ran] : "";
}

void set_small_attention_width(const std::string& name) {
  if (name.empty()) {
    g_width.store(-1);
    return;
  }
  const auto& widths = cpu_widths();
  if (std::find(widths.begin(), widths.end(), name) == widths.end())
    throw std::invalid_argument("small_attention: vector width " + name + " is not one this CPU runs");
  g_width.store(width_index(name));
}

torch::Tensor small_attention(const torch::Tensor& qkv, const torch::Tensor& bias_v, std::int64_t heads, double scale) {
  TORCH_CHECK(qkv.dim() == 3 && heads > 0 && qkv.size(2) % (3 * heads) == 0,
              "small_attention: qkv must be [B, T, 3·H·r]");
  TORCH_CHECK(bias_v.dim() == 1 && bias_v.size(0) == qkv.size(2) / 3, "small_attention: bias_v must be [H·r]");
  const bool kernel = qkv.device().is_cpu() && bias_v.device().is_cpu() && qkv.scalar_type() == bias_v.scalar_type() &&
                      (qkv.scalar_type() == torch::kFloat || qkv.scalar_type() == torch::kDouble) &&
                      qkv.size(1) <= kMaxTokens && qkv.size(2) / (3 * heads) <= kMaxHeadSide;
  if (!kernel) return reference(qkv, bias_v, heads, scale);
  return SmallAttention::apply(qkv, bias_v, heads, scale);
}

}  // namespace stiefel::training
