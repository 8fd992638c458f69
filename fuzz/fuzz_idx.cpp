// IDX image + label files (plain or gzip): the first two bytes give where the image file ends and
// the label file begins. Any bytes either parse or raise DataError.
#include <stiefel/training/datasets.h>

#include <cstdint>

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t split = std::min<std::size_t>(size - 2, (std::size_t(data[0]) << 8) | data[1]);
  const auto images = stiefel::fuzz::as_file("images", data + 2, split);
  const auto labels = stiefel::fuzz::as_file("labels", data + 2 + split, size - 2 - split);
  try {
    const auto set = stiefel::training::read_idx(images, labels);
    if (set.labels.size() != std::size_t(set.count) ||
        set.pixels.size() != std::size_t(set.count * set.height * set.width))
      __builtin_trap();
  } catch (const stiefel::training::DataError&) {}
  return 0;
}
