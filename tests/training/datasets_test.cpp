// Readers and the patch pipeline: real layouts round-trip; truncated, corrupt and mismatched files
// raise DataError naming the file.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <stiefel/training/datasets.h>
#include <stiefel/training/patches.h>

namespace stiefel::training {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("stiefel-datasets-" + std::to_string(::getpid())) / name;
  fs::create_directories(p.parent_path());
  return p;
}

void write_bytes(const fs::path& p, const std::vector<std::uint8_t>& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

void write_gz(const fs::path& p, const std::vector<std::uint8_t>& b) {
  gzFile f = gzopen(p.c_str(), "wb");
  gzwrite(f, b.data(), unsigned(b.size()));
  gzclose(f);
}

std::vector<std::uint8_t> cifar_file(std::uint8_t first_label) {
  std::vector<std::uint8_t> b(std::size_t(10000) * 3073);
  for (std::size_t i = 0; i < 10000; ++i) {
    b[i * 3073] = std::uint8_t((first_label + i) % 10);
    for (std::size_t k = 0; k < 3072; ++k) b[i * 3073 + 1 + k] = std::uint8_t((i + k) % 251);
  }
  return b;
}

template <class Fn>
void expect_data_error(Fn fn, const std::string& path, const std::string& what) {
  try {
    fn();
    FAIL() << "no DataError for " << path;
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(Cifar10, ReadsTheBinaryLayout) {
  const auto p = scratch("batch.bin");
  write_bytes(p, cifar_file(3));
  const ImageSet s = read_cifar10({p.string()});
  ASSERT_EQ(s.count, 10000);
  EXPECT_EQ(s.labels[0], 3);
  EXPECT_EQ(s.labels[8], 1);
  EXPECT_EQ(s.pixels[3072 * 2 + 5], std::uint8_t((2 + 5) % 251));
}

TEST(Cifar10, RejectsTruncatedBadLabelAndMissingFiles) {
  const auto p = scratch("truncated.bin");
  auto b = cifar_file(0);
  b.resize(b.size() - 100);
  write_bytes(p, b);
  expect_data_error([&] { read_cifar10({p.string()}); }, p.string(), "truncated");
  auto c = cifar_file(0);
  c[3073 * 7] = 12;
  const auto q = scratch("label.bin");
  write_bytes(q, c);
  expect_data_error([&] { read_cifar10({q.string()}); }, q.string(), "label 12");
  expect_data_error([&] { cifar10_files(scratch("nowhere").string(), true); }, "data_batch_1.bin", "missing");
}

std::vector<std::uint8_t> idx(std::uint32_t magic, std::vector<std::uint32_t> dims, std::size_t payload,
                              std::uint8_t fill) {
  std::vector<std::uint8_t> b;
  for (std::uint32_t v : std::vector<std::uint32_t>{magic})
    b.insert(b.end(), {std::uint8_t(v >> 24), std::uint8_t(v >> 16), std::uint8_t(v >> 8), std::uint8_t(v)});
  for (std::uint32_t v : dims)
    b.insert(b.end(), {std::uint8_t(v >> 24), std::uint8_t(v >> 16), std::uint8_t(v >> 8), std::uint8_t(v)});
  b.insert(b.end(), payload, fill);
  return b;
}

TEST(Idx, ReadsGzipAndRejectsMalformedFiles) {
  const auto img = scratch("img.gz"), lab = scratch("lab.gz");
  write_gz(img, idx(0x803, {5, 28, 28}, 5 * 784, 7));
  write_gz(lab, idx(0x801, {5}, 5, 4));
  const ImageSet s = read_idx(img.string(), lab.string());
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(s.height, 28);
  EXPECT_EQ(s.labels[4], 4);

  const auto bad_magic = scratch("magic.gz");
  write_gz(bad_magic, idx(0x804, {5, 28, 28}, 5 * 784, 7));
  expect_data_error([&] { read_idx(bad_magic.string(), lab.string()); }, bad_magic.string(), "magic");
  const auto short_img = scratch("short.gz");
  write_gz(short_img, idx(0x803, {5, 28, 28}, 4 * 784, 7));
  expect_data_error([&] { read_idx(short_img.string(), lab.string()); }, short_img.string(), "truncated");
  const auto more_labels = scratch("more.gz");
  write_gz(more_labels, idx(0x801, {6}, 6, 1));
  expect_data_error([&] { read_idx(img.string(), more_labels.string()); }, more_labels.string(), "6 labels");
  // A gzip stream cut in half.
  std::ifstream in(img, std::ios::binary);
  std::vector<std::uint8_t> gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  gz.resize(gz.size() / 2);
  const auto cut = scratch("cut.gz");
  write_bytes(cut, gz);
  expect_data_error([&] { read_idx(cut.string(), lab.string()); }, cut.string(), "");
}

TEST(Modular, AllPairsWithASeededFortyPercentSplit) {
  const auto a = make_modular_addition(97, 0.4, 0), b = make_modular_addition(97, 0.4, 0),
             c = make_modular_addition(97, 0.4, 1);
  EXPECT_EQ(a.train_labels.size(), 3764u);
  EXPECT_EQ(a.test_labels.size(), 5645u);
  EXPECT_EQ(a.train_tokens, b.train_tokens);
  EXPECT_NE(a.train_tokens, c.train_tokens);
  for (std::size_t i = 0; i < a.train_labels.size(); ++i) {
    EXPECT_EQ(a.train_labels[i], (a.train_tokens[3 * i] + a.train_tokens[3 * i + 1]) % 97);
    EXPECT_EQ(a.train_tokens[3 * i + 2], 97);
  }
}

TEST(Patches, GridOrderContrastNormalisationAndWhitening) {
  ImageSet s;
  s.count = 64;
  s.channels = 3;
  s.height = s.width = 32;
  s.pixels.resize(std::size_t(64 * 3 * 32 * 32));
  for (std::size_t i = 0; i < s.pixels.size(); ++i) s.pixels[i] = std::uint8_t((i * 2654435761u) >> 24);
  const auto p = extract_patches(s, 0, 2, 8);
  ASSERT_EQ(p.sizes(), (std::vector<std::int64_t>{2, 16, 192}));
  // Patch 5 of image 1 is grid row 1, column 1: pixel (8, 8) of the red plane.
  EXPECT_FLOAT_EQ(p[1][5][0].item<float>(), float(s.pixels[3072 + 8 * 32 + 8]) / 255.0f);
  const auto n = contrast_normalise(extract_patches(s, 0, 64, 8));
  EXPECT_LT(n.mean(-1).abs().max().item<float>(), 1e-5f);
  const auto flat = n.reshape({-1, 192});
  const auto w = Whitener::fit(flat, 128, 0.1);
  const auto z = w.apply(flat).to(torch::kFloat64);
  const auto cov = z.t().mm(z - z.mean(0)) / double(z.size(0));
  // Whitened covariance is diag(λ/(λ + ε)): off-diagonal zero, diagonal in (0, 1).
  EXPECT_LT((cov - torch::diag(torch::diagonal(cov))).abs().max().item<double>(), 1e-6);
  EXPECT_LT(torch::diagonal(cov).max().item<double>(), 1.0);
  EXPECT_THROW(Whitener::fit(flat, 193, 0.1), std::invalid_argument);
}

ImageSet hashed_images(std::int64_t count, std::uint32_t salt) {
  ImageSet s;
  s.count = count;
  s.channels = 3;
  s.height = s.width = 32;
  s.pixels.resize(std::size_t(count * 3 * 32 * 32));
  for (std::size_t i = 0; i < s.pixels.size(); ++i) s.pixels[i] = std::uint8_t(((i + salt) * 2654435761u) >> 24);
  for (std::int64_t i = 0; i < count; ++i) s.labels.push_back(i % 10);
  return s;
}

ImageSet slice_images(const ImageSet& s, std::int64_t first, std::int64_t count) {
  ImageSet out = s;
  const auto per = std::size_t(s.channels * s.height * s.width);
  out.count = count;
  out.pixels.assign(s.pixels.begin() + std::ptrdiff_t(first * per),
                    s.pixels.begin() + std::ptrdiff_t((first + count) * per));
  out.labels.assign(s.labels.begin() + first, s.labels.begin() + first + count);
  return out;
}

TEST(Patches, ValidationSplitIsTheNextImagesAndTouchesNothingElse) {
  const ImageSet train = hashed_images(40, 0), test = hashed_images(12, 7);
  const std::int64_t n = 24, val_n = 10;
  const auto with = prepare_patch_data(train, test, n, 8, 64, 300, 5, "synthetic", val_n);
  const auto without = prepare_patch_data(train, test, n, 8, 64, 300, 5, "synthetic");
  // The training and test data, and hence the PCA, are the same with and without the split.
  EXPECT_TRUE(torch::equal(with.train_x, without.train_x));
  EXPECT_TRUE(torch::equal(with.test_x, without.test_x));
  EXPECT_FALSE(without.val_x.defined());
  // The split is images [n, n + val_n), whitened by the same fit: the same images given as the
  // test split of a run on the first n images come out identical.
  const auto as_test =
      prepare_patch_data(slice_images(train, 0, n), slice_images(train, n, val_n), n, 8, 64, 300, 5, "synthetic");
  ASSERT_EQ(with.val_x.sizes(), (std::vector<std::int64_t>{val_n, 16, 64}));
  EXPECT_TRUE(torch::equal(with.val_x, as_test.test_x));
  EXPECT_TRUE(torch::equal(with.val_y, as_test.test_y));
  // No validation image is a training image: every validation row differs from every training row.
  const auto tr = with.train_x.reshape({n, -1}), va = with.val_x.reshape({val_n, -1});
  EXPECT_GT(torch::cdist(va, tr).min().item<float>(), 1e-3f);
  // Control: the same check on rows that are training images finds distance zero.
  EXPECT_LT(torch::cdist(tr.slice(0, n - 3, n), tr).min().item<float>(), 1e-6f);
  EXPECT_THROW(prepare_patch_data(train, test, n, 8, 64, 300, 5, "synthetic", 17), std::invalid_argument);
  EXPECT_THROW(prepare_patch_data(train, test, n, 8, 64, 300, 5, "synthetic", -1), std::invalid_argument);
}

TEST(Patches, ChunkedPipelineEqualsTheWholeBatchBitForBit) {
  // prepare_patch_data runs the pipeline in chunks of 1024 images; every stage works row by row,
  // so the chunks must reproduce the one-batch result exactly.
  // 2500 images: chunks 1024 + 1476 (the 452-image tail stays a chunk); 2049: 1024 + 1025 (a
  // one-image tail joins the chunk before it).
  for (const std::int64_t count : {2500, 2049}) {
    const ImageSet s = hashed_images(count, 3);
    const auto whole = contrast_normalise(extract_patches(s, 0, count, 8));
    std::vector<torch::Tensor> parts;
    for (std::int64_t i = 0; i < count; i += 1024)
      parts.push_back(contrast_normalise(extract_patches(s, i, std::min<std::int64_t>(1024, count - i), 8)));
    EXPECT_TRUE(torch::equal(torch::cat(parts), whole));
    const auto w = Whitener::fit(whole.reshape({-1, 192}).slice(0, 0, 5000), 100, 0.1);
    const auto one_batch = (whole.to(torch::kFloat64) - w.mean).matmul(w.projection).to(torch::kFloat32);
    EXPECT_TRUE(torch::equal(w.apply(whole), one_batch));  // apply() works in chunks over 1024 images
    // Control: the equality check tells different inputs apart.
    EXPECT_FALSE(torch::equal(w.apply(whole.flip(0)), one_batch));
  }
}

}  // namespace
}  // namespace stiefel::training
