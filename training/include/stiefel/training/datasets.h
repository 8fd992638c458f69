// Readers for the data sets of §3.3 and §4.3. Every malformed input raises DataError naming the
// file and what is wrong; nothing is returned half-read.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace stiefel::training {

struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Images as bytes, [count][channels][height][width], with integer labels.
struct ImageSet {
  std::int64_t count = 0, channels = 0, height = 0, width = 0;
  std::vector<std::uint8_t> pixels;
  std::vector<std::int64_t> labels;
  std::int64_t classes = 10;
};

// The CIFAR-10 binary layout: records of 1 label byte + 3072 bytes (1024 red, 1024 green, 1024
// blue, row-major); each standard file holds 10,000 records. Reads the files in order.
ImageSet read_cifar10(const std::vector<std::string>& files);

// Appends RECORDS CIFAR-10 records held in BYTES (read from PATH, which errors name) to SET: the
// body of read_cifar10 for one file, with the record count a parameter (the fuzz target's entry).
void append_cifar10(ImageSet& set, const std::vector<std::uint8_t>& bytes, const std::string& path,
                    std::int64_t records);

// `dir`/data_batch_1..5.bin (train) or `dir`/test_batch.bin (test).
std::vector<std::string> cifar10_files(const std::string& dir, bool train);

// An IDX image file and its label file, gzip-compressed or not (Fashion-MNIST's layout).
ImageSet read_idx(const std::string& images_path, const std::string& labels_path);

// c = (a + b) mod p over all p² pairs, as token triples (a, b, "=") with "=" = p; a split of
// train_fraction fixed by `seed` (Power et al. 2022; §4.3).
struct ModularSet {
  std::int64_t p = 97;
  std::vector<std::int64_t> train_tokens, train_labels, test_tokens, test_labels;  // tokens: 3 per example
};
ModularSet make_modular_addition(std::int64_t p, double train_fraction, std::uint64_t seed);

}  // namespace stiefel::training
