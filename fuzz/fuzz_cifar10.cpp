// CIFAR-10 records: any bytes either parse or raise DataError; nothing else (no crash, no other
// exception, no sanitizer report). The record count is the input's, so small inputs reach the
// label and pixel paths that the full 10,000-record files would.
#include <stiefel/training/datasets.h>

#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::uint8_t> bytes(data, data + size);
  stiefel::training::ImageSet set;
  try {
    stiefel::training::append_cifar10(set, bytes, "fuzz.bin", std::int64_t(size / 3073));
    if (set.labels.size() != std::size_t(set.count) || set.pixels.size() != std::size_t(set.count) * 3072)
      __builtin_trap();
  } catch (const stiefel::training::DataError&) {}
  return 0;
}
