#include <stiefel/io/bounded_read.h>
#include <stiefel/training/datasets.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

namespace stiefel::training {
namespace {

constexpr std::int64_t kCifarRecord = 1 + 3 * 32 * 32;
constexpr std::int64_t kCifarPerFile = 10000;

// The largest file a reader here accepts: a CIFAR-10 batch is 30 730 000 bytes, Fashion-MNIST's
// training images 47 040 016 (inflated); no IDX or CIFAR-10 file it reads comes near 1 GiB.
constexpr std::uintmax_t kMaxDataBytes = std::uintmax_t(1) << 30;

// The whole of PATH: a regular file (never a FIFO or a device such as /dev/zero) of at most MAX bytes.
std::vector<std::uint8_t> read_all(const std::string& path, std::uintmax_t max_bytes, const std::string& what) {
  try {
    const std::string bytes = io::read_regular_file(path, max_bytes, what);
    return {bytes.begin(), bytes.end()};
  } catch (const io::IoError& e) {
    throw DataError(e.what());
  }
}

// Reads a file, inflating it when it starts with the gzip magic bytes; the inflated size is bounded
// too (a small file can inflate without end).
std::vector<std::uint8_t> read_maybe_gzip(const std::string& path) {
  std::vector<std::uint8_t> raw = read_all(path, kMaxDataBytes, "an IDX file");
  if (raw.size() < 2 || raw[0] != 0x1f || raw[1] != 0x8b) return raw;
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw DataError(path + ": cannot open as gzip");
  std::vector<std::uint8_t> out;
  std::array<std::uint8_t, 1 << 16> buf{};
  int n;
  while ((n = gzread(f, buf.data(), unsigned(buf.size()))) > 0) {
    out.insert(out.end(), buf.begin(), buf.begin() + n);
    if (out.size() > kMaxDataBytes) {
      gzclose(f);
      throw DataError(path + ": inflates to more than " + io::byte_count(kMaxDataBytes) +
                      ", larger than an IDX file can be");
    }
  }
  int err = 0;
  const char* msg = gzerror(f, &err);
  const bool bad = n < 0 || (err != Z_OK && err != Z_STREAM_END);
  const std::string what = bad ? std::string(msg) : "";
  gzclose(f);
  if (bad) throw DataError(path + ": corrupt gzip stream (" + what + ")");
  return out;
}

std::uint32_t big_endian(const std::vector<std::uint8_t>& b, std::size_t at) {
  return (std::uint32_t(b[at]) << 24) | (std::uint32_t(b[at + 1]) << 16) | (std::uint32_t(b[at + 2]) << 8) |
         std::uint32_t(b[at + 3]);
}

}  // namespace

void append_cifar10(ImageSet& set, const std::vector<std::uint8_t>& bytes, const std::string& path,
                    std::int64_t records) {
  set.channels = 3;
  set.height = set.width = 32;
  if (records < 1 || bytes.size() != std::size_t(kCifarRecord) * std::size_t(records))
    throw DataError(path + ": " + std::to_string(bytes.size()) + " bytes, expected " +
                    std::to_string(kCifarRecord * std::max<std::int64_t>(records, 1)) + " (" + std::to_string(records) +
                    " records of 3,073 bytes)" +
                    (bytes.size() % kCifarRecord == 0 ? "" : "; truncated or not a CIFAR-10 batch"));
  for (std::int64_t i = 0; i < records; ++i) {
    const std::uint8_t label = bytes[std::size_t(i * kCifarRecord)];
    if (label > 9)
      throw DataError(path + ": record " + std::to_string(i) + " has label " + std::to_string(label) +
                      ", expected 0..9");
    set.labels.push_back(label);
    const auto* start = bytes.data() + i * kCifarRecord + 1;
    set.pixels.insert(set.pixels.end(), start, start + 3072);
  }
  set.count += records;
}

ImageSet read_cifar10(const std::vector<std::string>& files) {
  ImageSet set;
  set.channels = 3;
  set.height = set.width = 32;
  for (const auto& path : files) {
    const std::vector<std::uint8_t> bytes =
        read_all(path, std::uintmax_t(kCifarRecord * kCifarPerFile), "a CIFAR-10 batch");
    if (bytes.size() != std::size_t(kCifarRecord * kCifarPerFile))
      throw DataError(path + ": " + std::to_string(bytes.size()) + " bytes, expected " +
                      std::to_string(kCifarRecord * kCifarPerFile) + " (10,000 records of 3,073 bytes)" +
                      (bytes.size() % kCifarRecord == 0 ? "" : "; truncated or not a CIFAR-10 batch"));
    append_cifar10(set, bytes, path, kCifarPerFile);
  }
  return set;
}

std::vector<std::string> cifar10_files(const std::string& dir, bool train) {
  std::vector<std::string> files;
  if (train)
    for (int i = 1; i <= 5; ++i) files.push_back(dir + "/data_batch_" + std::to_string(i) + ".bin");
  else
    files.push_back(dir + "/test_batch.bin");
  for (const auto& f : files)
    if (!std::filesystem::exists(f))
      throw DataError(f + ": missing (expected the cifar-10-batches-bin layout in " + dir + ")");
  return files;
}

ImageSet read_idx(const std::string& images_path, const std::string& labels_path) {
  const auto img = read_maybe_gzip(images_path);
  const auto lab = read_maybe_gzip(labels_path);
  if (img.size() < 16 || big_endian(img, 0) != 0x00000803)
    throw DataError(images_path + ": not an IDX image file (magic 0x00000803 expected)");
  if (lab.size() < 8 || big_endian(lab, 0) != 0x00000801)
    throw DataError(labels_path + ": not an IDX label file (magic 0x00000801 expected)");
  ImageSet set;
  set.count = big_endian(img, 4);
  set.channels = 1;
  set.height = big_endian(img, 8);
  set.width = big_endian(img, 12);
  // Bounds before the product: three 32-bit header fields can overflow a 64-bit size.
  if (set.count > 100000000 || set.height > 65536 || set.width > 65536 ||
      set.count * set.height * set.width > (std::int64_t(1) << 40))
    throw DataError(images_path + ": header promises " + std::to_string(set.count) + " images of " +
                    std::to_string(set.height) + "×" + std::to_string(set.width) + " (implausible; corrupt?)");
  const std::size_t need = 16 + std::size_t(set.count * set.height * set.width);
  if (img.size() != need)
    throw DataError(images_path + ": " + std::to_string(img.size()) + " bytes, header promises " +
                    std::to_string(need) + " (truncated or corrupt)");
  const std::int64_t nlab = big_endian(lab, 4);
  if (lab.size() != std::size_t(8 + nlab))
    throw DataError(labels_path + ": " + std::to_string(lab.size()) + " bytes, header promises " +
                    std::to_string(8 + nlab) + " (truncated or corrupt)");
  if (nlab != set.count)
    throw DataError(labels_path + ": " + std::to_string(nlab) + " labels for " + std::to_string(set.count) +
                    " images in " + images_path);
  set.pixels.assign(img.begin() + 16, img.end());
  for (std::int64_t i = 0; i < nlab; ++i) {
    if (lab[std::size_t(8 + i)] > 9)
      throw DataError(labels_path + ": label " + std::to_string(i) + " is " + std::to_string(lab[8 + i]) +
                      ", expected 0..9");
    set.labels.push_back(lab[std::size_t(8 + i)]);
  }
  return set;
}

ModularSet make_modular_addition(std::int64_t p, double train_fraction, std::uint64_t seed) {
  if (p < 2) throw std::invalid_argument("modular addition: p must be at least 2");
  if (!(train_fraction > 0 && train_fraction < 1))
    throw std::invalid_argument("modular addition: train fraction must be in (0, 1)");
  std::vector<std::int64_t> order(std::size_t(p * p));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  for (std::size_t i = order.size() - 1; i > 0; --i) {  // Fisher–Yates with our own draws
    const std::size_t j = std::size_t(rng() % (i + 1));
    std::swap(order[i], order[j]);
  }
  ModularSet set;
  set.p = p;
  const std::size_t n_train = std::size_t(std::llround(train_fraction * double(order.size())));
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::int64_t a = order[k] / p, b = order[k] % p;
    auto& tokens = k < n_train ? set.train_tokens : set.test_tokens;
    auto& labels = k < n_train ? set.train_labels : set.test_labels;
    tokens.insert(tokens.end(), {a, b, p});
    labels.push_back((a + b) % p);
  }
  return set;
}

}  // namespace stiefel::training
