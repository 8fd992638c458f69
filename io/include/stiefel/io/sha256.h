// SHA-256 (FIPS 180-4) of a byte string or a file, as 64 lowercase hex digits. Used to recognise
// data sets and to verify checkpoints against the run record that names them.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace stiefel::io {

std::string sha256(std::string_view bytes);

// Throws IoError naming PATH when it cannot be read.
std::string sha256_file(const std::filesystem::path& path);

}  // namespace stiefel::io
