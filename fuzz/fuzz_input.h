// Shared by the libFuzzer targets: the input as a file (the readers under test take paths).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace stiefel::fuzz {

// A file in the temporary folder holding BYTES; one per process and NAME, rewritten each input.
inline std::string as_file(const std::string& name, const std::uint8_t* data, std::size_t size) {
  const auto path =
      std::filesystem::temp_directory_path() / ("stiefel-fuzz-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return path.string();
}

}  // namespace stiefel::fuzz
