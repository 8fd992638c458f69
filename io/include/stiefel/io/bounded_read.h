// Checked, bounded file input: every file the project reads from a results folder, a definition or
// a data set goes through here. Only a regular file is read (a FIFO, device node, socket or folder
// is refused before anything blocks or grows), and never more bytes than its format allows.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "atomic_file.h"

namespace stiefel::io {

// The whole of PATH, which must be a regular file (a link to one is followed) of at most MAX_BYTES.
// Throws IoError naming PATH and WHAT it was expected to be ("a run record", "an IDX file", …).
std::string read_regular_file(const std::filesystem::path& path, std::uintmax_t max_bytes, const std::string& what);

// Throws IoError unless PATH is a regular file (a link to one is followed) of at most MAX_BYTES;
// returns its size. For readers that stream the file themselves (gzip, LibTorch archives).
std::uintmax_t check_regular_file(const std::filesystem::path& path, std::uintmax_t max_bytes, const std::string& what);

// "256 MiB": a byte count as the messages above state it.
std::string byte_count(std::uintmax_t bytes);

}  // namespace stiefel::io
