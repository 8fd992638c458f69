// Reusing finished runs of another results folder: a cell of this grid whose run is missing takes
// a completed record of FROM that is provably the same run (reports::cell_mismatch finds no
// setting that differs, the seed included, and FROM ran on the same --data). The record is copied
// as it is, its log with a line saying where it came from; nothing is assumed from names.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "grid.h"

namespace stiefel::runner {

// Copies into GRID's missing cells among CELLS (indices into grid.runs: the runs this invocation
// takes, a shard's or some arms') the matching completed records of the results folder FROM;
// returns how many. Throws std::invalid_argument naming --reuse-from when FROM is not a results
// folder of `stiefel experiment` or ran on other data.
std::size_t reuse_records(const Grid& grid, const std::filesystem::path& from, const std::vector<std::size_t>& cells,
                          std::ostream& progress);

}  // namespace stiefel::runner
