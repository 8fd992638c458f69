#pragma once
// What made a run record: the program (its sources' commit and state, the binary's digest) and the
// machine's CPU. Recorded in run.json's "environment".

#include <nlohmann/json.hpp>
#include <string>

namespace stiefel::training {

// {"version", "commit" (null outside a git checkout), "tree" ("clean", "modified" or "unknown"),
// "source_diff_sha256" (where modified: the SHA-256 of the sources' difference from the commit),
// "binary_sha256" (the running executable's)}. The binary's digest is computed once per process.
const nlohmann::json& program_provenance();

// The CPU's model name (/proc/cpuinfo), or "unknown".
std::string cpu_model();

}  // namespace stiefel::training
