// The checks of a LibTorch archive's bytes made before LibTorch reads them (checkpoint.cpp).
#pragma once

#include <functional>
#include <string>

namespace stiefel::training::checkpoint {

// A LibTorch archive is a ZIP file of stored records (the tensors) and deflated ones (its code).
// Its reader allocates each record at the size the central directory declares: a damaged size
// field makes it allocate gigabytes for a 60 kB file. Every record must lie inside the file, at a
// size its method can produce; the archive must have at most 4096 records; every pickle and code
// record must be of the forms LibTorch writes. A violation calls bad(what), which must throw.
void check_archive_bounds(const std::string& bytes, const std::function<void(const std::string&)>& bad);

}  // namespace stiefel::training::checkpoint
