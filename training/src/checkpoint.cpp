// A run's checkpoint: its canonical bytes (serialise) and their checked restore into a live run.
#include <stiefel/training/checkpoint.h>

#include "archive_bounds.h"

#include <stiefel/io/bounded_read.h>
#include <stiefel/schema.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace stiefel::training::checkpoint {
namespace {

// This module's own refusals (each names the file); anything else thrown while reading is wrapped.
struct Refusal : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// A LibTorch error as one line (its full message and backtrace only with STIEFEL_VERBOSE set).
std::string one_line(const c10::Error& e) {
  std::string msg = std::getenv("STIEFEL_VERBOSE") ? e.what() : e.what_without_backtrace();
  if (!std::getenv("STIEFEL_VERBOSE") && msg.find('\n') != std::string::npos) msg = msg.substr(0, msg.find('\n'));
  return msg;
}

// A loaded tensor must own its memory: LibTorch sizes a storage by the count the pickle declares,
// not by its record, so a damaged count or stride could point a tensor past its buffer.
bool owns_its_storage(const torch::Tensor& t) {
  return t.is_contiguous() && t.storage_offset() == 0 &&
         t.storage().nbytes() >= std::size_t(t.numel()) * std::size_t(t.element_size());
}

bool all_finite(const torch::Tensor& t) {
  return !t.defined() || !t.is_floating_point() || torch::isfinite(t).all().item<bool>();
}

// torch::nn::Module::load hands each stored tensor to Tensor::set_ on the live parameter, whatever
// its shape or type; a damaged one then corrupts the parameter itself (LibTorch 1.13 frees a pointer
// it never allocated when the model is destroyed). Each stored tensor is read into a fresh tensor
// and checked; the live parameters and buffers are written only once every check of the checkpoint
// has passed (see restore).
using Pending = std::vector<std::pair<torch::Tensor, torch::Tensor>>;  // (live tensor, stored value)

void read_module(torch::nn::Module& module, torch::serialize::InputArchive& archive, const std::string& prefix,
                 const std::string& name, Pending& pending) {
  const auto read_tensor = [&](const std::string& key, const torch::Tensor& into, bool is_buffer) {
    torch::Tensor stored;
    archive.read(key, stored, is_buffer);
    if (!stored.defined() || stored.sizes() != into.sizes() || stored.scalar_type() != into.scalar_type() ||
        !owns_its_storage(stored))
      throw Refusal(name + ": model tensor " + prefix + key + " has shape " +
                    (stored.defined() ? c10::str(stored.sizes()) + " (" + c10::toString(stored.scalar_type()) + ")"
                                      : std::string("(undefined)")) +
                    ", the model needs " + c10::str(into.sizes()) + " (" + c10::toString(into.scalar_type()) + ")");
    if (!all_finite(stored)) throw Refusal(name + ": model tensor " + prefix + key + " holds a non-finite value");
    pending.emplace_back(into, stored);
  };
  for (const auto& p : module.named_parameters(/*recurse=*/false)) read_tensor(p.key(), p.value(), false);
  for (const auto& b : module.named_buffers(/*recurse=*/false)) read_tensor(b.key(), b.value(), true);
  for (const auto& child : module.named_children()) {
    torch::serialize::InputArchive child_archive;
    archive.read(child.key(), child_archive);
    read_module(*child.value(), child_archive, prefix + child.key() + ".", name, pending);
  }
}

using AdamHyper = std::tuple<std::tuple<double, double>, double, double, bool>;

std::vector<AdamHyper> adamw_hyper(torch::optim::AdamW& adamw) {
  std::vector<AdamHyper> out;
  for (auto& group : adamw.param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    out.emplace_back(o.betas(), o.eps(), o.weight_decay(), o.amsgrad());
  }
  return out;
}

// AdamW's load replaces its hyper-parameters and moments with the stored ones whatever they are:
// the hyper-parameters must be the run's (the rate is set at every step) and every moment must be
// of its parameter's shape and type, or the first step fails inside LibTorch.
void check_adamw(const std::vector<AdamHyper>& expected, torch::optim::AdamW& adamw, const std::string& name) {
  if (adamw_hyper(adamw) != expected)
    throw Refusal(name + ": its AdamW hyper-parameters (betas, eps, weight decay, amsgrad) are not this run's");
  for (auto& group : adamw.param_groups())
    for (auto& p : group.params()) {
      const auto it = adamw.state().find(optimizer_state_key(adamw.state(), p));
      if (it == adamw.state().end()) continue;
      const auto& st = static_cast<const torch::optim::AdamWParamState&>(*it->second);
      const auto fits = [&](const torch::Tensor& t) {
        return t.defined() && t.sizes() == p.sizes() && t.scalar_type() == p.scalar_type() &&
               t.device() == p.device() && owns_its_storage(t);
      };
      if (!fits(st.exp_avg()) || !fits(st.exp_avg_sq()) ||
          (st.max_exp_avg_sq().defined() && !fits(st.max_exp_avg_sq())))
        throw Refusal(name + ": an AdamW moment does not have its parameter's shape " + c10::str(p.sizes()) +
                      " and type " + c10::toString(p.scalar_type()));
      if (st.step() < 0) throw Refusal(name + ": an AdamW step count is negative");
    }
}

std::int64_t scalar_count(const torch::Tensor& t, const std::string& name, const char* key) {
  if (t.numel() != 1 || !c10::isIntegralType(t.scalar_type(), /*includeBool=*/false) || t.item<std::int64_t>() < 0)
    throw Refusal(name + ": its " + key + " tensor is not a non-negative integer");
  return t.item<std::int64_t>();
}

// AdamW's state in a canonical form: LibTorch's own save keys each parameter's moments by its memory
// address, so that two identical runs never write the same bytes. Here each parameter's moments are
// a sub-archive named by the parameter's name in the model ('.' written as "__"), in the optimiser's
// parameter order, and each group's hyper-parameters are tensors of a "groupG" sub-archive.
std::string archive_name(const std::string& parameter) {
  std::string out;
  for (const char c : parameter) out += c == '.' ? std::string("__") : std::string(1, c);
  return out;
}

std::map<const void*, std::string> parameter_names(Classifier& model) {
  std::map<const void*, std::string> names;
  for (const auto& item : model->named_parameters()) names.emplace(item.value().unsafeGetTensorImpl(), item.key());
  return names;
}

torch::Tensor float64_tensor(std::initializer_list<double> values) {
  return torch::tensor(std::vector<double>(values), torch::kFloat64);
}

void save_adamw(torch::optim::AdamW& adamw, Classifier& model, torch::serialize::OutputArchive& out) {
  const auto names = parameter_names(model);
  std::int64_t g = 0;
  for (auto& group : adamw.param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    torch::serialize::OutputArchive hyper;
    hyper.write("lr", float64_tensor({o.lr()}));
    hyper.write("betas", float64_tensor({std::get<0>(o.betas()), std::get<1>(o.betas())}));
    hyper.write("eps", float64_tensor({o.eps()}));
    hyper.write("weight_decay", float64_tensor({o.weight_decay()}));
    hyper.write("amsgrad", torch::tensor(std::int64_t(o.amsgrad())));
    out.write("group" + std::to_string(g++), hyper);
    for (auto& p : group.params()) {
      const auto it = adamw.state().find(optimizer_state_key(adamw.state(), p));
      if (it == adamw.state().end()) continue;
      const auto name = names.find(p.unsafeGetTensorImpl());
      if (name == names.end()) throw std::logic_error("checkpoint: an AdamW parameter is not a parameter of the model");
      const auto& st = static_cast<const torch::optim::AdamWParamState&>(*it->second);
      torch::serialize::OutputArchive moments;
      moments.write("step", torch::tensor(st.step()));
      moments.write("exp_avg", st.exp_avg());
      moments.write("exp_avg_sq", st.exp_avg_sq());
      if (st.max_exp_avg_sq().defined()) moments.write("max_exp_avg_sq", st.max_exp_avg_sq());
      out.write(archive_name(name->second), moments);
    }
  }
}

void load_adamw(torch::optim::AdamW& adamw, Classifier& model, torch::serialize::InputArchive& in,
                const std::string& name) {
  const auto names = parameter_names(model);
  std::int64_t g = 0;
  for (auto& group : adamw.param_groups()) {
    auto& o = static_cast<torch::optim::AdamWOptions&>(group.options());
    torch::serialize::InputArchive hyper;
    in.read("group" + std::to_string(g++), hyper);
    torch::Tensor lr, betas, eps, weight_decay, amsgrad;
    hyper.read("lr", lr);
    hyper.read("betas", betas);
    hyper.read("eps", eps);
    hyper.read("weight_decay", weight_decay);
    hyper.read("amsgrad", amsgrad);
    const auto one = [&](const torch::Tensor& t, std::int64_t n) {
      if (t.numel() != n || t.scalar_type() != torch::kFloat64)
        throw Refusal(name + ": an AdamW hyper-parameter is not a float64 tensor of " + std::to_string(n) +
                      " value(s)");
    };
    one(lr, 1);
    one(betas, 2);
    one(eps, 1);
    one(weight_decay, 1);
    const AdamHyper stored{{betas[0].item<double>(), betas[1].item<double>()},
                           eps.item<double>(),
                           weight_decay.item<double>(),
                           scalar_count(amsgrad, name, "amsgrad") != 0};
    if (stored != AdamHyper{o.betas(), o.eps(), o.weight_decay(), o.amsgrad()})
      throw Refusal(name + ": its AdamW hyper-parameters (betas, eps, weight decay, amsgrad) are not this run's");
    o.lr(lr.item<double>());
    for (auto& p : group.params()) {
      const auto key = names.find(p.unsafeGetTensorImpl());
      if (key == names.end()) throw std::logic_error("checkpoint: an AdamW parameter is not a parameter of the model");
      torch::serialize::InputArchive moments;
      if (!in.try_read(archive_name(key->second), moments)) continue;
      torch::Tensor step, exp_avg, exp_avg_sq, max_exp_avg_sq;
      moments.read("step", step);
      moments.read("exp_avg", exp_avg);
      moments.read("exp_avg_sq", exp_avg_sq);
      auto st = std::make_unique<torch::optim::AdamWParamState>();
      st->step(scalar_count(step, name, "AdamW step"));
      st->exp_avg(exp_avg);
      st->exp_avg_sq(exp_avg_sq);
      if (moments.try_read("max_exp_avg_sq", max_exp_avg_sq)) st->max_exp_avg_sq(max_exp_avg_sq);
      adamw.state()[optimizer_state_key(adamw.state(), p)] = std::move(st);
    }
  }
}

}  // namespace

void check_archive(const std::string& bytes, const std::string& name) {
  check_archive_bounds(bytes, [&](const std::string& what) {
    throw Refusal(name + ": not a readable checkpoint of this run (" + what + ")");
  });
}

std::string read_file(const std::filesystem::path& path) {
  try {
    return io::read_regular_file(path, kMaxCheckpointBytes, "a checkpoint");
  } catch (const io::IoError& e) {
    throw std::invalid_argument(e.what());
  }
}

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
  save_adamw(*state.adamw, *state.model, adam_archive);
  archive.write(kModel, model_archive);
  archive.write(kAdamWByName, adam_archive);
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
    check_archive(bytes, name);
    torch::serialize::InputArchive archive;
    std::istringstream in(bytes);
    archive.load_from(in);
    c10::IValue stored_options;
    if (archive.try_read(kOptions, stored_options)) {
      if (!stored_options.isString()) throw Refusal(name + ": its options entry is not a string");
      nlohmann::json stored;
      try {
        stored = schema::parse_bounded(stored_options.toStringRef(), name + ": its stored options");
      } catch (const std::invalid_argument& e) {
        throw Refusal(e.what());
      }
      if (!stored.is_object()) throw Refusal(name + ": its stored options are not a JSON object");
      const auto differs = differing_settings(stored, options);
      if (!differs.empty()) throw Refusal("--resume: " + name + " is a checkpoint of another run: " + differs);
    }
    torch::serialize::InputArchive model_archive, adam_archive, frame_archive;
    archive.read(kModel, model_archive);
    Pending model_tensors;
    read_module(**state.model, model_archive, "", name, model_tensors);
    const auto hyper = adamw_hyper(*state.adamw);
    if (archive.try_read(kAdamWByName, adam_archive)) {
      load_adamw(*state.adamw, *state.model, adam_archive, name);
    } else {  // a checkpoint written before the canonical form: LibTorch's own layout
      archive.read(kAdamW, adam_archive);
      state.adamw->load(adam_archive);
    }
    check_adamw(hyper, *state.adamw, name);
    if (state.frames) {
      archive.read(kFrames, frame_archive);
      try {
        state.frames->load(frame_archive);
      } catch (const std::invalid_argument& e) {
        throw Refusal(name + ": " + e.what());
      }
      for (const auto& [key, st] : state.frames->state()) {
        const auto& f = static_cast<const FrameParamState&>(*st);
        if (!owns_its_storage(f.master) || !owns_its_storage(f.frame.m) || !owns_its_storage(f.frame.v))
          throw Refusal(name + ": a frame state tensor does not own its memory (damaged sizes or strides)");
        if (!all_finite(f.master) || !all_finite(f.frame.m) || !all_finite(f.frame.v))
          throw Refusal(name + ": a frame state tensor holds a non-finite value");
        // The trainer writes frames on St(d, r) to float64 roundoff; a damaged one is refused here,
        // not left to fail inside the first step's SVD.
        if (isometry_error(f.master).max().item<double>() > 1e-6)
          throw Refusal(name + ": a frame's float64 master copy is not on the Stiefel manifold");
      }
    }
    for (auto& group : state.adamw->param_groups())
      for (auto& p : group.params()) {
        const auto it = state.adamw->state().find(optimizer_state_key(state.adamw->state(), p));
        if (it == state.adamw->state().end()) continue;
        const auto& st = static_cast<const torch::optim::AdamWParamState&>(*it->second);
        if (!all_finite(st.exp_avg()) || !all_finite(st.exp_avg_sq()))
          throw Refusal(name + ": an AdamW moment holds a non-finite value");
      }
    torch::Tensor epoch;
    archive.read(kEpoch, epoch);
    const std::int64_t epochs_done = scalar_count(epoch, name, kEpoch);
    torch::NoGradGuard no_grad;
    for (auto& [live, stored] : model_tensors) live.copy_(stored);
    return epochs_done;
  } catch (const Refusal&) {
    throw;
  } catch (const c10::Error& e) {
    throw std::invalid_argument(name + ": not a readable checkpoint of this run (" + one_line(e) + ")");
  } catch (const std::exception& e) {  // LibTorch's readers also throw std::invalid_argument, std::out_of_range, …
    throw std::invalid_argument(name + ": not a readable checkpoint of this run (" + e.what() + ")");
  }
}

}  // namespace stiefel::training::checkpoint
