#include <stiefel/training/checkpoint.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace stiefel::training::checkpoint {
namespace {

// A LibTorch error as one line (its full message and backtrace only with STIEFEL_VERBOSE set).
std::string one_line(const c10::Error& e) {
  std::string msg = std::getenv("STIEFEL_VERBOSE") ? e.what() : e.what_without_backtrace();
  if (!std::getenv("STIEFEL_VERBOSE") && msg.find('\n') != std::string::npos) msg = msg.substr(0, msg.find('\n'));
  return msg;
}

using Layout = std::vector<std::tuple<std::string, std::vector<std::int64_t>, c10::ScalarType>>;

Layout layout(Classifier& model) {
  Layout out;
  for (const auto& t : model->named_parameters()) out.emplace_back(t.key(), t.value().sizes().vec(), t.value().scalar_type());
  for (const auto& t : model->named_buffers()) out.emplace_back(t.key(), t.value().sizes().vec(), t.value().scalar_type());
  return out;
}

// torch::nn::Module::load replaces each tensor with the stored one whatever its shape or type:
// the model's layout before the load is compared with the one after.
void check_layout(const Layout& expected, Classifier& model, const std::string& name) {
  std::map<std::string, torch::Tensor> loaded;
  for (const auto& t : model->named_parameters()) loaded[t.key()] = t.value();
  for (const auto& t : model->named_buffers()) loaded[t.key()] = t.value();
  for (const auto& [key, sizes, type] : expected) {
    const torch::Tensor& t = loaded.at(key);
    if (t.sizes().vec() != sizes || t.scalar_type() != type)
      throw std::invalid_argument(name + ": model tensor " + key + " has shape " + c10::str(t.sizes()) + " (" +
                                  c10::toString(t.scalar_type()) + "), the model needs " +
                                  c10::str(c10::IntArrayRef(sizes)) + " (" + c10::toString(type) + ")");
  }
}

std::int64_t scalar_count(const torch::Tensor& t, const std::string& name, const char* key) {
  if (t.numel() != 1 || !c10::isIntegralType(t.scalar_type(), /*includeBool=*/false) || t.item<std::int64_t>() < 0)
    throw std::invalid_argument(name + ": its " + key + " tensor is not a non-negative integer");
  return t.item<std::int64_t>();
}

}  // namespace

std::string frame_key(std::int64_t index, const std::string& field) {
  return "frame" + std::to_string(index) + "_" + field;
}

std::string differing_settings(const nlohmann::json& stored, const nlohmann::json& now) {
  std::string out;
  for (const auto& [k, v] : now.items())
    if (!stored.contains(k) || stored[k] != v)
      out += (out.empty() ? "" : ", ") + k + " (" + (stored.contains(k) ? stored[k].dump() : "absent") + " → " +
             v.dump() + ")";
  for (const auto& [k, v] : stored.items())
    if (!now.contains(k)) out += (out.empty() ? "" : ", ") + k + " (" + v.dump() + " → absent)";
  return out;
}

std::string serialise(const State& state, std::int64_t epoch, std::int64_t global_step, const nlohmann::json& options) {
  torch::serialize::OutputArchive archive, model_archive, adam_archive, frame_archive;
  (*state.model)->save(model_archive);
  state.adamw->save(adam_archive);
  archive.write(kModel, model_archive);
  archive.write(kAdamW, adam_archive);
  if (state.frames) {
    state.frames->save(frame_archive);
    archive.write(kFrames, frame_archive);
  }
  archive.write(kEpoch, torch::tensor(epoch));
  archive.write(kGlobalStep, torch::tensor(global_step));
  archive.write(kOptions, c10::IValue(options.dump()));
  std::ostringstream bytes;
  archive.save_to(bytes);
  return std::move(bytes).str();
}

std::int64_t restore(const std::string& bytes, const std::string& name, const nlohmann::json& options, State& state) {
  try {
    torch::serialize::InputArchive archive;
    std::istringstream in(bytes);
    archive.load_from(in);
    c10::IValue stored_options;
    if (archive.try_read(kOptions, stored_options)) {
      if (!stored_options.isString()) throw std::invalid_argument(name + ": its options entry is not a string");
      nlohmann::json stored = nlohmann::json::parse(stored_options.toStringRef(), nullptr, false);
      if (stored.is_discarded() || !stored.is_object())
        throw std::invalid_argument(name + ": its stored options are not a JSON object");
      const auto differs = differing_settings(stored, options);
      if (!differs.empty()) throw std::invalid_argument("--resume: " + name + " is a checkpoint of another run: " + differs);
    }
    torch::serialize::InputArchive model_archive, adam_archive, frame_archive;
    archive.read(kModel, model_archive);
    const Layout expected = layout(*state.model);
    (*state.model)->load(model_archive);
    check_layout(expected, *state.model, name);
    archive.read(kAdamW, adam_archive);
    state.adamw->load(adam_archive);
    if (state.frames) {
      archive.read(kFrames, frame_archive);
      try {
        state.frames->load(frame_archive);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(name + ": " + e.what());
      }
    }
    torch::Tensor epoch;
    archive.read(kEpoch, epoch);
    return scalar_count(epoch, name, kEpoch);
  } catch (const c10::Error& e) {
    throw std::invalid_argument(name + ": not a readable checkpoint of this run (" + one_line(e) + ")");
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {  // LibTorch's readers also throw std::out_of_range and others
    throw std::invalid_argument(name + ": not a readable checkpoint of this run (" + e.what() + ")");
  }
}

}  // namespace stiefel::training::checkpoint
