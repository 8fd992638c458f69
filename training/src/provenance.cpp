// The program and the machine a run record was made by (stiefel/training/provenance.h).
#include <stiefel/training/provenance.h>

#include <fstream>
#include <stiefel/io/sha256.h>
#include <stiefel/provenance_values.h>

namespace stiefel::training {

const nlohmann::json& program_provenance() {
  static const nlohmann::json p = [] {
    const std::string commit = STIEFEL_PROVENANCE_COMMIT, tree = STIEFEL_PROVENANCE_TREE;
    nlohmann::json j = {{"version", STIEFEL_VERSION},
                        {"commit", commit.empty() ? nlohmann::json() : nlohmann::json(commit)},
                        {"tree", tree}};
    if (tree == "modified") j["source_diff_sha256"] = STIEFEL_PROVENANCE_DIFF_SHA256;
    try {
      j["binary_sha256"] = io::sha256_file("/proc/self/exe");
    } catch (const std::exception&) {
      j["binary_sha256"] = nullptr;
    }
    return j;
  }();
  return p;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  return "unknown";
}

}  // namespace stiefel::training
