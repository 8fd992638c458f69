#include <stiefel/training/script_rule.h>

#include <torch/script.h>
#include <torch/version.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <tuple>
#include <stiefel/certificates/runner.h>
#include <stiefel/training/compute.h>
#include <stiefel/training/trainer_rule.h>

namespace stiefel::training {
namespace {

using certificates::RuleSettings;

c10::Dict<std::string, double> settings_dict(const RuleSettings& s) {
  c10::Dict<std::string, double> d;
  d.insert("lr", s.lr);
  d.insert("beta1", s.beta1);
  d.insert("beta2", s.beta2);
  d.insert("eps", s.eps);
  if (s.cap_tau) d.insert("cap_tau", *s.cap_tau);
  return d;
}

std::atomic<ForwardWatch*> forward_watch{nullptr};

// What a call is, for the messages that name it: where it runs (a claim, or the probe at load), the
// step of its run, the frames' shape and the settings.
std::string call_text(int step, const torch::Tensor& w, const c10::Dict<std::string, double>& settings) {
  const std::string& claim = certificates::claim_in_progress();
  std::string text = (claim.empty() ? std::string("the load-time probe") : "claim " + claim) + ", step " +
                     std::to_string(step) + " of its run, w " + c10::str(w.sizes()) + ", settings {";
  bool first = true;
  for (const auto& kv : settings) {
    text += (first ? "" : ", ") + kv.key() + ": " + c10::str(kv.value());
    first = false;
  }
  return text + "}";
}

// Announces a call to the watch, if any, for as long as it runs.
class Announced {
 public:
  explicit Announced(const std::string& what) : watch_(forward_watch.load()) {
    if (!watch_) return;
    thread_local const int slot = watch_->threads++ % ForwardWatch::kSlots;
    slot_ = &watch_->slots[slot];
    const std::size_t n = std::min(what.size(), sizeof slot_->what - 1);
    std::memcpy(slot_->what, what.data(), n);
    slot_->what[n] = '\0';
    ++watch_->calls;
    slot_->started_ns.store(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count(),
        std::memory_order_release);
  }
  ~Announced() {
    if (slot_) slot_->started_ns.store(0, std::memory_order_release);
  }
  Announced(const Announced&) = delete;
  Announced& operator=(const Announced&) = delete;

 private:
  ForwardWatch* watch_;
  ForwardWatch::Slot* slot_ = nullptr;
};

// One call of the module's forward; what it returns is checked against what was passed in. A call
// that fails throws certificates::RuleError naming the file and the call (the probe at load turns
// it into std::invalid_argument).
struct Stepper {
  torch::jit::Module module;
  std::string file;
  torch::ScalarType dtype;

  std::pair<torch::Tensor, c10::List<torch::Tensor>> call(const torch::Tensor& w, const torch::Tensor& g,
                                                          const c10::List<torch::Tensor>& state,
                                                          const c10::Dict<std::string, double>& settings, int step) {
    const std::string what = call_text(step, w, settings);
    const auto fail = [&](const std::string& why) {
      return certificates::RuleError(file + ": " + why + " (" + what + ")");
    };
    c10::IValue out;
    try {
      const Announced announced(what);
      out = module.forward({w, g, state, settings});
    } catch (const c10::Error& e) {
      throw fail("forward(w, g, state, settings) failed: " + rule_error_text(e.what_without_backtrace()));
    } catch (const std::exception& e) {  // a `raise` in the script (torch::jit::JITException)
      throw fail("forward(w, g, state, settings) raised: " + rule_error_text(e.what()));
    }
    if (!out.isTuple() || out.toTupleRef().elements().size() != 2)
      throw fail("forward must return a tuple (frames, state)");
    const auto& elems = out.toTupleRef().elements();
    if (!elems[0].isTensor()) throw fail("forward's first result is not a tensor");
    if (!elems[1].isTensorList()) throw fail("forward's second result is not a List[Tensor]");
    torch::Tensor next = elems[0].toTensor();
    if (next.sizes() != w.sizes())
      throw fail("forward returned frames of shape " + c10::str(next.sizes()) + " for frames of shape " +
                 c10::str(w.sizes()));
    if (next.scalar_type() != dtype)
      throw fail("forward returned frames of dtype " + std::string(c10::toString(next.scalar_type())) +
                 ", configured " + std::string(c10::toString(dtype)));
    return {next, elems[1].toTensorList()};
  }
};

// Module::clone registers a new class type in the module's compilation unit: one at a time.
Stepper clone(const Stepper& loaded) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  return Stepper{loaded.module.clone(), loaded.file, loaded.dtype};
}

// Each rule under test steps its own clone of the module: a module that keeps anything in its
// attributes cannot leak it between the claims' runs, which run on several threads.
class ScriptRule final : public certificates::UpdateRule {
 public:
  explicit ScriptRule(const Stepper& loaded) : stepper_(std::make_shared<Stepper>(clone(loaded))) {}

  void start(const Frames<double>&, const RuleSettings& s) override {
    settings_ = settings_dict(s);
    state_ = c10::List<torch::Tensor>();
    steps_ = 0;
  }

  Frames<double> step(const Frames<double>& w, const Frames<double>& g) override {
    auto [next, state] = stepper_->call(frames_to_tensor(w, stepper_->dtype), frames_to_tensor(g, stepper_->dtype),
                                        state_, settings_, ++steps_);
    state_ = std::move(state);
    return tensor_to_frames(next);
  }

  void set_rate(double lr) override { settings_.insert_or_assign("lr", lr); }

 private:
  std::shared_ptr<Stepper> stepper_;
  c10::Dict<std::string, double> settings_;
  c10::List<torch::Tensor> state_;
  int steps_ = 0;
};

// The file's stem as a claim-id suffix: lower case, every other character a '-', none leading or
// trailing, at most 48 characters.
std::string stem_name(const std::filesystem::path& file) {
  std::string s;
  for (const char c : file.stem().string()) {
    const char l = char(std::tolower(static_cast<unsigned char>(c)));
    s += std::isalnum(static_cast<unsigned char>(l)) ? l : '-';
  }
  const auto first = s.find_first_not_of('-');
  if (first == std::string::npos) return "user";
  s = s.substr(first, 48);
  return s.substr(0, s.find_last_not_of('-') + 1);
}

// The rules whose claims a --rule module can meet: the adaptive rules (the controls are sized for
// adaptive steps) that move at every r <= d (the horizontal map's space is {0} at r = d).
const std::vector<std::string>& certifiable_rules() {
  static const std::vector<std::string> rules{"b2", "b2-mean-moment", "b2-column", "b2m", "b2m-can"};
  return rules;
}

// What `path` is, where it is not a regular file: "no such file", "a folder", "a FIFO", ...
std::string not_a_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  switch (st.type()) {
    case std::filesystem::file_type::not_found:
      return "no such file";
    case std::filesystem::file_type::directory:
      return "is a folder, not a file";
    case std::filesystem::file_type::fifo:
      return "is a FIFO (named pipe), not a file";
    case std::filesystem::file_type::socket:
      return "is a socket, not a file";
    case std::filesystem::file_type::block:
    case std::filesystem::file_type::character:
      return "is a device, not a file";
    default:
      return ec ? "cannot be read (" + ec.message() + ")" : "is not a regular file";
  }
}

}  // namespace

void watch_forward_calls(ForwardWatch* watch) { forward_watch = watch; }

std::string rule_error_text(const std::string& what) {
  std::string text = what;
  // LibTorch's C++ backtrace follows its message: not the user's concern.
  if (const auto at = text.find("\nException raised from "); at != std::string::npos) text.resize(at);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  constexpr std::size_t kHead = 600, kTail = 2400;
  if (text.size() > kHead + kTail + 100)
    text = text.substr(0, kHead) + "\n  [... " + std::to_string(text.size() - kHead - kTail) + " characters ...]\n" +
           text.substr(text.size() - kTail);
  return text;
}

ScriptRuleConfig read_script_rule_config(const std::filesystem::path& file) {
  const std::string where = "--rule-config " + file.string();
  if (!std::filesystem::is_regular_file(file)) throw std::invalid_argument(where + ": " + not_a_file(file));
  std::ifstream in(file);
  if (!in) throw std::invalid_argument(where + ": cannot be read");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(where + ": not JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw std::invalid_argument(where + ": must be a JSON object");
  ScriptRuleConfig c;
  for (const auto& [key, value] : j.items()) {
    if (key != "name" && key != "rule" && key != "dtype")
      throw std::invalid_argument(where + ": unknown key '" + key + "' (name, rule, dtype)");
    if (!value.is_string()) throw std::invalid_argument(where + ": '" + key + "' must be a string");
  }
  if (j.contains("name")) {
    c.name = j["name"];
    if (c.name.empty()) throw std::invalid_argument(where + ": 'name' is empty (leave it out for the file's stem)");
  }
  if (j.contains("rule")) c.rule = j["rule"];
  if (j.contains("dtype")) c.dtype = j["dtype"];
  return c;
}

certificates::RuleImplementation script_rule_implementation(const std::filesystem::path& file,
                                                            ScriptRuleConfig config) {
  const std::string where = "--rule " + file.string();
  if (config.name.empty()) config.name = stem_name(file);
  if (!std::regex_match(config.name, std::regex("[a-z0-9][a-z0-9-]{0,47}")))
    throw std::invalid_argument(where + ": name '" + config.name +
                                "' must match [a-z0-9][a-z0-9-]* and have at most 48 characters");
  if (config.dtype == "float32")
    throw std::invalid_argument(where +
                                ": dtype 'float32': the update claims are not yet sized to float32 (their "
                                "controls fall below its rounding at small steps); script the rule in float64");
  if (config.dtype != "float64") throw std::invalid_argument(where + ": dtype '" + config.dtype + "' must be float64");
  const auto& names = certifiable_rules();
  if (std::find(names.begin(), names.end(), config.rule) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    const auto all = certificates::rule_names();
    const bool known = std::find(all.begin(), all.end(), config.rule) != all.end();
    throw std::invalid_argument(where + ": rule '" + config.rule + "' " +
                                (known ? "has no update claims for a single rule yet (fixed-step and frozen "
                                         "rules, and the horizontal map, whose space is {0} at r = d); "
                                       : "is not a frame rule; ") +
                                "--rule certifies " + list);
  }
  auto stepper = std::make_shared<Stepper>();
  stepper->file = where;
  stepper->dtype = config.dtype == "float32" ? torch::kFloat32 : torch::kFloat64;
  if (!std::filesystem::is_regular_file(file)) throw std::invalid_argument(where + ": " + not_a_file(file));
  try {
    stepper->module = torch::jit::load(file.string(), torch::kCPU);
  } catch (const c10::Error& e) {
    throw std::invalid_argument(where + ": not a TorchScript archive (torch.jit.save of a scripted module): " +
                                rule_error_text(e.what_without_backtrace()));
  } catch (const std::exception& e) {  // the archive's code does not compile here (torch::jit::ErrorReport)
    throw std::invalid_argument(
        where + ": its TorchScript code does not compile with this LibTorch (" + std::string(TORCH_VERSION) +
        "; save the rule with the same PyTorch, Debian's python3-torch): " + rule_error_text(e.what()));
  }
  stepper->module.eval();
  if (!stepper->module.find_method("forward"))
    throw std::invalid_argument(where + ": the module has no forward method");
  // A probe: two steps on three frames of St(5, 2) with the rule's settings at rate 0.1, on a clone
  // (what the module keeps in its attributes is left as loaded for the claims' clones).
  {
    Stepper probe = clone(*stepper);
    torch::NoGradGuard guard;
    auto gen = at::detail::createCPUGenerator(20260916);
    const auto q =
        std::get<0>(torch::linalg_qr(torch::randn({3, 5, 2}, gen, torch::dtype(torch::kFloat64)))).to(stepper->dtype);
    const auto settings = settings_dict(certificates::rule_settings(config.rule, 0.1));
    c10::List<torch::Tensor> state;
    torch::Tensor w = q;
    for (int t = 0; t < 2; ++t) {
      const auto g = torch::randn({3, 5, 2}, gen, torch::dtype(torch::kFloat64)).to(stepper->dtype);
      torch::Tensor next;
      c10::List<torch::Tensor> s;
      try {
        std::tie(next, s) = probe.call(w, g, state, settings, t + 1);
      } catch (const certificates::RuleError& e) {
        throw std::invalid_argument(e.what());
      }
      if (!torch::isfinite(next).all().item<bool>())
        throw std::invalid_argument(where + ": forward returned frames that are not finite on a probe step");
      w = next;
      state = s;
    }
  }
  const double u = config.dtype == "float32" ? 0x1p-24 : 0x1p-53;
  return {.name = config.name,
          .description = "a TorchScript rule (" + file.filename().string() + ", implementing " + config.rule +
                         "), LibTorch, CPU, " + config.dtype,
          .unit_roundoff = u,
          .io_roundoff = u,
          .make =
              [stepper] {
                static const bool configured = (configure_cpu_compute(1), true);
                (void)configured;
                return std::make_unique<ScriptRule>(*stepper);
              },
          .only_rule = config.rule};
}

}  // namespace stiefel::training
