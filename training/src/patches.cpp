#include <stiefel/training/patches.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace stiefel::training {
namespace {

// Images per chunk of the pipeline: every intermediate of a chunk (1024 images × 16 patches × 192
// values in float64 = 25 MiB) stays below glibc's 32 MiB mmap threshold, so the chunks reuse freed
// memory instead of faulting in fresh pages. Every stage works row by row, so chunking changes no
// value (the tests compare with the unchunked pipeline bit for bit).
// A tail shorter than kMinChunkImages joins the chunk before it (≤ 1279 images, 31.4 MiB), so every
// whitening GEMM has at least 4 096 rows and never takes a BLAS's small-matrix path.
constexpr std::int64_t kChunkImages = 1024, kMinChunkImages = 256;

std::int64_t chunk_end(std::int64_t begin, std::int64_t count) {
  const std::int64_t end = std::min(count, begin + kChunkImages);
  return count - end < kMinChunkImages ? count : end;
}

torch::Tensor normalised_patches(const ImageSet& images, std::int64_t first, std::int64_t count, std::int64_t patch) {
  std::vector<torch::Tensor> parts;
  for (std::int64_t i = 0; i < count; i = chunk_end(i, count))
    parts.push_back(contrast_normalise(extract_patches(images, first + i, chunk_end(i, count) - i, patch)));
  return parts.size() == 1 ? parts.front() : torch::cat(parts);
}

}  // namespace

torch::Tensor extract_patches(const ImageSet& images, std::int64_t first, std::int64_t count, std::int64_t patch) {
  if (first < 0 || count < 0 || first + count > images.count)
    throw std::invalid_argument("extract_patches: images [" + std::to_string(first) + ", " +
                                std::to_string(first + count) + ") out of " + std::to_string(images.count));
  const std::int64_t c = images.channels, h = images.height, w = images.width;
  if (h % patch != 0 || w % patch != 0)
    throw std::invalid_argument("extract_patches: " + std::to_string(h) + "x" + std::to_string(w) +
                                " images do not split into " + std::to_string(patch) + "-pixel patches");
  const std::int64_t per_image = c * h * w;
  auto bytes = torch::from_blob(const_cast<std::uint8_t*>(images.pixels.data()) + first * per_image,
                                {count, c, h / patch, patch, w / patch, patch}, torch::kUInt8);
  // [n, c, gy, py, gx, px] → [n, gy, gx, c, py, px] → [n, gy·gx, c·p·p]
  return bytes.permute({0, 2, 4, 1, 3, 5})
      .reshape({count, (h / patch) * (w / patch), c * patch * patch})
      .to(torch::kFloat32)
      .div_(255.0f);
}

torch::Tensor contrast_normalise(const torch::Tensor& patches) {
  const auto mean = patches.mean(-1, true);
  const auto var = patches.var(-1, /*unbiased=*/false, /*keepdim=*/true);
  return (patches - mean) / torch::sqrt(var + 10.0 / (255.0 * 255.0));
}

Whitener Whitener::fit(const torch::Tensor& sample, std::int64_t dim, double eps) {
  const auto x = sample.to(torch::kFloat64);
  if (dim > x.size(1))
    throw std::invalid_argument("whitening to " + std::to_string(dim) + " dimensions from " +
                                std::to_string(x.size(1)) + " raw ones");
  Whitener w;
  w.eps = eps;
  w.mean = x.mean(0);
  const auto centred = x - w.mean;
  const auto cov = centred.t().mm(centred) / double(x.size(0));
  const auto eig = torch::linalg_eigh(cov);  // ascending eigenvalues
  const auto lambda = std::get<0>(eig).flip(0).slice(0, 0, dim);
  const auto vectors = std::get<1>(eig).flip(1).slice(1, 0, dim);
  w.projection = vectors / torch::sqrt(lambda + eps).unsqueeze(0);
  return w;
}

torch::Tensor Whitener::apply(const torch::Tensor& patches) const {
  const std::int64_t rows = patches.dim() >= 2 ? patches.size(0) : 0;
  if (chunk_end(0, rows) < rows) {
    std::vector<torch::Tensor> parts;
    for (std::int64_t i = 0; i < rows; i = chunk_end(i, rows)) parts.push_back(patches.slice(0, i, chunk_end(i, rows)));
    for (auto& part : parts) part = (part.to(torch::kFloat64) - mean).matmul(projection).to(torch::kFloat32);
    return torch::cat(parts);
  }
  return (patches.to(torch::kFloat64) - mean).matmul(projection).to(torch::kFloat32);
}

PatchData prepare_patch_data(const ImageSet& train, const ImageSet& test, std::int64_t n, std::int64_t patch,
                             std::int64_t dim, std::int64_t pca_samples, std::uint64_t seed, std::string dataset,
                             std::int64_t val_n) {
  if (n < 1 || n > train.count)
    throw std::invalid_argument("--n " + std::to_string(n) + ": the training set has " + std::to_string(train.count) +
                                " images");
  if (val_n < 0 || n + val_n > train.count)
    throw std::invalid_argument("--val-n " + std::to_string(val_n) + ": the validation split [" + std::to_string(n) +
                                ", " + std::to_string(n + val_n) + ") does not fit in the training set of " +
                                std::to_string(train.count) + " images");
  PatchData d;
  d.dataset = std::move(dataset);
  d.classes = train.classes;
  const auto train_p = normalised_patches(train, 0, n, patch);
  const auto test_p = normalised_patches(test, 0, test.count, patch);
  d.raw_dim = train_p.size(2);
  const auto flat = train_p.reshape({-1, d.raw_dim});
  d.pca_samples = std::min<std::int64_t>(pca_samples, flat.size(0));
  auto gen = at::detail::createCPUGenerator(seed);
  const auto pick = torch::randperm(flat.size(0), gen, torch::kLong).slice(0, 0, d.pca_samples);
  const Whitener w = Whitener::fit(flat.index_select(0, pick), dim, 0.1);
  d.dim = dim;
  d.train_x = w.apply(train_p);
  d.test_x = w.apply(test_p);
  d.train_y = torch::tensor(std::vector<std::int64_t>(train.labels.begin(), train.labels.begin() + n));
  d.test_y = torch::tensor(test.labels);
  if (val_n > 0) {
    d.val_x = w.apply(normalised_patches(train, n, val_n, patch));
    d.val_y = torch::tensor(std::vector<std::int64_t>(train.labels.begin() + n, train.labels.begin() + n + val_n));
  }
  return d;
}

}  // namespace stiefel::training
