// `stiefel certify --checkpoint FILE`: checks a trained model's frames with the certificate's
// residual ratios — every W_Q, W_K frame on St(d,r) (the float64 master copy at the roundoff of
// float64, the model's copy at the roundoff of its own type) and every stored first moment tangent
// at its frame (sym(Wᵀm) = 0).
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <stiefel/certificates/runner.h>
#include <stiefel/io/atomic_file.h>
#include <stiefel/io/bounded_read.h>
#include <stiefel/io/sha256.h>
#include <stiefel/schema.h>
#include <stiefel/properties/residual.h>
#include <stiefel/scalar.h>
#include <stiefel/training/checkpoint.h>
#include <torch/torch.h>

#include "commands.h"

namespace stiefel::cli {
namespace {

Matrix<double> to_eigen(const torch::Tensor& t) {
  const auto c = t.to(torch::kFloat64).contiguous();
  Matrix<double> m(c.size(0), c.size(1));
  for (Index i = 0; i < m.rows(); ++i)
    for (Index j = 0; j < m.cols(); ++j) m(i, j) = c[i][j].item<double>();
  return m;
}

// A checkpoint that cannot be certified: the message follows "stiefel certify: PATH: ".
struct NotCertifiable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The checks in the order the certificate lists them, each passed when its ratio is within the
// certificate's threshold.
struct Checks {
  nlohmann::json list = nlohmann::json::array();
  int failed = 0;

  void record(const std::string& what, const std::string& frame, double ratio, double value) {
    const double tol = properties::kRatioThreshold;
    const bool ok = ratio <= tol;
    failed += !ok;
    list.push_back({{"check", what},
                    {"frame", frame},
                    {"ratio", ratio},
                    {"tolerance", tol},
                    {"value", value},
                    {"status", ok ? "passed" : "failed"}});
  }
};

// The run record beside a checkpoint names the SHA-256 of the checkpoints it was written with: a
// checkpoint that matches none is damaged or another run's. Returns what was checked, in words.
std::string check_against_record(const std::string& path, const std::string& bytes) {
  namespace fs = std::filesystem;
  const fs::path record = fs::path(path).parent_path() / "run.json";
  if (!fs::exists(fs::symlink_status(record))) return "no run.json beside it: its SHA-256 was not checked";
  nlohmann::json run;
  try {
    run = schema::parse_bounded(io::read_regular_file(record, training::checkpoint::kMaxRecordBytes, "a run record"),
                                record.string());
  } catch (const std::exception& e) {
    throw NotCertifiable("the run record beside it cannot be read (" + brief_message(e.what()) + ")");
  }
  if (!run.is_object() || !run.contains("checkpoints") || !run["checkpoints"].is_object() || run["checkpoints"].empty())
    return record.string() + " names no checkpoint SHA-256 (a record from before checksums): not checked";
  const std::string sha = io::sha256(bytes);
  for (const auto& [epoch, h] : run["checkpoints"].items())
    if (h == sha) return "SHA-256 " + sha.substr(0, 16) + "… is epoch " + epoch + "'s in " + record.string();
  throw NotCertifiable("its SHA-256 " + sha.substr(0, 16) + "… matches no checkpoint that " + record.string() +
                       " records (damaged, or another run's)");
}

// The checkpoint's archive and, within it, the model's; INTEGRITY says what of the file was verified.
void load_checkpoint(const std::string& path, torch::serialize::InputArchive& archive,
                     torch::serialize::InputArchive& model, nlohmann::json& integrity) {
  try {
    const std::string bytes = training::checkpoint::read_file(path);
    training::checkpoint::check_archive(bytes, path);
    integrity["archive"] = "every ZIP record within the file and matching its CRC-32";
    integrity["record"] = check_against_record(path, bytes);
    std::istringstream stream(bytes);
    archive.load_from(stream);
    archive.read(training::checkpoint::kModel, model);
  } catch (const NotCertifiable&) {
    throw;
  } catch (const std::exception& e) {
    throw NotCertifiable("not a stiefel checkpoint (" + brief_message(e.what()) + ")");
  }
}

// Calls VISIT(i, attn) for each layer's attention archive, layers.<i>.attn, in the model's order.
template <class Visit>
void for_each_attention(torch::serialize::InputArchive& model, Visit&& visit) {
  torch::serialize::InputArchive layers;
  if (!model.try_read("layers", layers)) return;
  for (int i = 0;; ++i) {
    torch::serialize::InputArchive layer, attn;
    if (!layers.try_read(std::to_string(i), layer) || !layer.try_read("attn", attn)) break;
    visit(i, attn);
  }
}

// The frame parameters are the layers' W_Q and W_K, in the model's order: frame 2i is layer i's
// W_Q, frame 2i + 1 its W_K.
std::int64_t count_frame_params(torch::serialize::InputArchive& model) {
  std::int64_t frame_params = 0;
  for_each_attention(model, [&](int, torch::serialize::InputArchive&) { frame_params += 2; });
  return frame_params;
}

// The float64 master copy of each frame: isometry at the roundoff of float64, and its first moment
// tangent at the frame.
void check_master_frames(torch::serialize::InputArchive& frames, std::int64_t frame_params, Checks& checks) {
  for (std::int64_t k = 0; k < frame_params; ++k) {
    torch::Tensor master, m;
    if (!frames.try_read(training::checkpoint::frame_key(k, "master"), master)) continue;
    if (!frames.try_read(training::checkpoint::frame_key(k, "m"), m) || m.sizes() != master.sizes() ||
        master.dim() != 3)
      throw NotCertifiable("frame " + std::to_string(k) + "'s first moment is missing or not of its frame's shape");
    for (std::int64_t h = 0; h < master.size(0); ++h) {
      const std::string name = "param " + std::to_string(k) + " frame " + std::to_string(h);
      const Matrix<double> w = to_eigen(master[h]), mm = to_eigen(m[h]);
      const double iso = isometry_error(w);
      checks.record("isometry (float64 master)", name, properties::residual_ratio<double>(iso, 1.0, double(w.rows())),
                    iso);
      const double tangency = sym(Matrix<double>(w.transpose() * mm)).norm();
      const double mnorm = mm.norm();
      checks.record("first moment tangent", name,
                    mnorm > 0 ? properties::residual_ratio<double>(tangency, mnorm, double(w.rows())) : 0.0, tangency);
    }
  }
}

// The model's own copies (float32 in training), layers.<i>.attn.{wq,wk}: isometry at the
// roundoff of their own type.
void check_model_copies(torch::serialize::InputArchive& model, Checks& checks) {
  for_each_attention(model, [&](int i, torch::serialize::InputArchive& attn) {
    for (const char* which : {"wq", "wk"}) {
      torch::Tensor w;
      if (!attn.try_read(which, w)) continue;
      if (w.dim() != 3)
        throw NotCertifiable("layer " + std::to_string(i) + " " + which + " is not an [H, d, r] frame tensor");
      const double u = w.scalar_type() == torch::kFloat32 ? std::numeric_limits<float>::epsilon() / 2
                                                          : std::numeric_limits<double>::epsilon() / 2;
      for (std::int64_t h = 0; h < w.size(0); ++h) {
        const double iso = isometry_error(to_eigen(w[h]));
        checks.record("isometry (model copy)",
                      "layer " + std::to_string(i) + " " + which + " head " + std::to_string(h),
                      iso / (u * double(w.size(1))), iso);
      }
    }
  });
}

}  // namespace

int certify_checkpoint(const std::string& path, const std::string& out) {
  Checks checks;
  nlohmann::json integrity = nlohmann::json::object();
  try {
    torch::serialize::InputArchive archive, model, frames;
    load_checkpoint(path, archive, model, integrity);
    const bool has_frames = archive.try_read(training::checkpoint::kFrames, frames);
    const std::int64_t frame_params = count_frame_params(model);
    if (has_frames) {
      check_master_frames(frames, frame_params, checks);
      check_model_copies(model, checks);
    }
    if (checks.list.empty()) throw NotCertifiable("no Stiefel frames in this checkpoint (a Euclidean arm?)");
  } catch (const NotCertifiable& e) {
    std::cerr << "stiefel certify: " << path << ": " << e.what() << "\n";
    return 2;
  }
  const nlohmann::json cert = {
      {"checkpoint", path},
      {"integrity", integrity},
      {"checks", checks.list},
      {"summary", {{"checks", checks.list.size()}, {"failed", checks.failed}, {"passed", checks.failed == 0}}}};
  io::write_file_atomically(out, cert.dump(2) + "\n");
  std::cerr << "integrity: " << integrity["archive"].get<std::string>() << "; "
            << integrity["record"].get<std::string>() << "\n";
  std::cerr << checks.list.size() - std::size_t(checks.failed) << " passed, " << checks.failed << " failed\n";
  return checks.failed == 0 ? 0 : 1;
}

}  // namespace stiefel::cli
