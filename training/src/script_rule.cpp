#include <stiefel/training/script_rule.h>

#include <torch/script.h>
#include <torch/version.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <tuple>
#include <stiefel/training/compute.h>
#include <stiefel/training/trainer_rule.h>

namespace stiefel::training {
namespace {

using rules::RuleSettings;

// forward's settings: the claim's (lr, eps, the betas, the cap and weight decay where the rule takes
// them) and the numbers the rule's config passes through.
c10::Dict<std::string, double> settings_dict(const RuleSettings& s, const std::map<std::string, double>& extra = {}) {
  c10::Dict<std::string, double> d;
  for (const auto& [key, value] : extra) d.insert(key, value);
  d.insert_or_assign("lr", s.lr);
  d.insert_or_assign("beta1", s.beta1);
  d.insert_or_assign("beta2", s.beta2);
  d.insert_or_assign("eps", s.eps);
  if (s.cap_tau) d.insert_or_assign("cap_tau", *s.cap_tau);
  if (s.weight_decay) d.insert_or_assign("weight_decay", *s.weight_decay);
  return d;
}

std::atomic<ForwardWatch*> forward_watch{nullptr};

// What a call is, for the messages that name it: where it runs (a claim, or the probe at load), the
// step of its run, the frames' shape and the settings.
std::string call_text(int step, const torch::Tensor& w, const c10::Dict<std::string, double>& settings) {
  const std::string& claim = rules::call_context();
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
// that fails throws rules::RuleError naming the file and the call (the probe at load turns
// it into std::invalid_argument).
struct Stepper {
  torch::jit::Module module;
  std::string file;
  torch::ScalarType dtype;
  std::map<std::string, double> extra;  // settings the config passes through

  // The next frames, the next state, and the step the call retracted where forward returns it as a
  // third result (an undefined tensor where it does not).
  struct Result {
    torch::Tensor next;
    c10::List<torch::Tensor> state;
    torch::Tensor step;
  };

  Result call(const torch::Tensor& w, const torch::Tensor& g, const c10::List<torch::Tensor>& state,
              const c10::Dict<std::string, double>& settings, int step) {
    const std::string what = call_text(step, w, settings);
    const auto fail = [&](const std::string& why) { return rules::RuleError(file + ": " + why + " (" + what + ")"); };
    c10::IValue out;
    try {
      const Announced announced(what);
      out = module.forward({w, g, state, settings});
    } catch (const c10::Error& e) {
      throw fail("forward(w, g, state, settings) failed: " + rule_error_text(e.what_without_backtrace()));
    } catch (const std::exception& e) {  // a `raise` in the script (torch::jit::JITException)
      throw fail("forward(w, g, state, settings) raised: " + rule_error_text(e.what()));
    }
    const std::size_t n = out.isTuple() ? out.toTupleRef().elements().size() : 0;
    if (n != 2 && n != 3) throw fail("forward must return a tuple (frames, state) or (frames, state, step)");
    const auto& elems = out.toTupleRef().elements();
    if (!elems[0].isTensor()) throw fail("forward's first result is not a tensor");
    if (!elems[1].isTensorList()) throw fail("forward's second result is not a List[Tensor]");
    Result r{elems[0].toTensor(), elems[1].toTensorList(), {}};
    const auto check_shape = [&](const torch::Tensor& t, const char* which) {
      if (t.sizes() != w.sizes())
        throw fail(std::string("forward returned ") + which + " of shape " + c10::str(t.sizes()) +
                   " for frames of shape " + c10::str(w.sizes()));
      if (t.scalar_type() != dtype)
        throw fail(std::string("forward returned ") + which + " of dtype " +
                   std::string(c10::toString(t.scalar_type())) + ", configured " + std::string(c10::toString(dtype)));
    };
    check_shape(r.next, "frames");
    if (n == 3) {
      if (!elems[2].isTensor()) throw fail("forward's third result (the step) is not a tensor");
      r.step = elems[2].toTensor();
      check_shape(r.step, "a step");
    }
    return r;
  }

  // What a component's call is, for the messages that name it.
  std::string component_text(const std::string& name, const torch::Tensor& w) const {
    return rules::call_context().empty()
               ? "the load-time probe of " + name
               : "claim " + rules::call_context() + ", " + name + " on w " + c10::str(w.sizes());
  }

  // An exposed component called on `args`; what it returns, checked to be a tensor.
  torch::Tensor invoke(const std::string& name, const std::string& signature, std::vector<c10::IValue> args,
                       const std::string& what) {
    const auto fail = [&](const std::string& why) { return rules::RuleError(file + ": " + why + " (" + what + ")"); };
    c10::IValue out;
    try {
      const Announced announced(what);
      out = module.get_method(name)(std::move(args));
    } catch (const c10::Error& e) {
      throw fail(signature + " failed: " + rule_error_text(e.what_without_backtrace()));
    } catch (const std::exception& e) {
      throw fail(signature + " raised: " + rule_error_text(e.what()));
    }
    if (!out.isTensor()) throw fail(signature + " must return a tensor");
    return out.toTensor();
  }

  // An exposed component, NAME(w, x) -> Tensor of w's shape and dtype (project, retract, rgrad), or
  // NAME(w, w_new, x) (transport).
  torch::Tensor component(const std::string& name, const std::vector<torch::Tensor>& args) {
    const std::string what = component_text(name, args[0]);
    const std::string signature = name + (args.size() == 3 ? "(w, w_new, x)" : "(w, x)");
    torch::Tensor r = invoke(name, signature, {args.begin(), args.end()}, what);
    if (r.sizes() != args[0].sizes() || r.scalar_type() != dtype)
      throw rules::RuleError(file + ": " + signature + " returned " + std::string(c10::toString(r.scalar_type())) +
                             " " + c10::str(r.sizes()) + " for " + std::string(c10::toString(dtype)) + " " +
                             c10::str(args[0].sizes()) + " (" + what + ")");
    return r;
  }

  // metric(w, x, y) -> one number per frame: a tensor [H] (or [H, 1, 1]) of any floating dtype.
  std::vector<double> metric(const torch::Tensor& w, const torch::Tensor& x, const torch::Tensor& y) {
    const std::string what = component_text("metric", w);
    torch::Tensor r = invoke("metric", "metric(w, x, y)", {w, x, y}, what);
    if (!r.is_floating_point() || r.numel() != w.size(0))
      throw rules::RuleError(file + ": metric(w, x, y) returned " + std::string(c10::toString(r.scalar_type())) + " " +
                             c10::str(r.sizes()) + "; it must return one number per frame, a floating tensor [" +
                             std::to_string(w.size(0)) + "] (" + what + ")");
    const torch::Tensor flat = r.to(torch::kFloat64).reshape({-1}).contiguous();
    return {flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel()};
  }
};

// Module::clone registers a new class type in the module's compilation unit: one at a time.
Stepper clone(const Stepper& loaded) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  return Stepper{loaded.module.clone(), loaded.file, loaded.dtype, loaded.extra};
}

// Each rule under test steps its own clone of the module: a module that keeps anything in its
// attributes cannot leak it between the claims' runs, which run on several threads.
class ScriptRule final : public rules::UpdateRule {
 public:
  explicit ScriptRule(const Stepper& loaded) : stepper_(std::make_shared<Stepper>(clone(loaded))) {}

  void start(const Frames<double>&, const RuleSettings& s) override {
    settings_ = settings_dict(s, stepper_->extra);
    state_ = c10::List<torch::Tensor>();
    steps_ = 0;
  }

  Frames<double> step(const Frames<double>& w, const Frames<double>& g) override {
    auto r = stepper_->call(frames_to_tensor(w, stepper_->dtype), frames_to_tensor(g, stepper_->dtype), state_,
                            settings_, ++steps_);
    state_ = std::move(r.state);
    last_step_ = r.step.defined() ? std::optional<Frames<double>>(tensor_to_frames(r.step)) : std::nullopt;
    return tensor_to_frames(r.next);
  }

  const Frames<double>* last_step() const override { return last_step_ ? &*last_step_ : nullptr; }

  void set_rate(double lr) override { settings_.insert_or_assign("lr", lr); }

 private:
  std::shared_ptr<Stepper> stepper_;
  c10::Dict<std::string, double> settings_;
  c10::List<torch::Tensor> state_;
  std::optional<Frames<double>> last_step_;
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

// "properties" and "reference" of a rule that declares what it is (its settings default to the
// reference's, else to an uncapped Riemannian Adam's).
void read_properties(const nlohmann::json& j, const std::string& where, ScriptRuleConfig& c) {
  const auto& known = rules::rule_property_names();
  for (const auto& p : j["properties"]) {
    if (!p.is_string() || std::find(known.begin(), known.end(), p.get<std::string>()) == known.end()) {
      std::string list;
      for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
      throw std::invalid_argument(where + ": 'properties' holds " + p.dump() + ", not one of " + list);
    }
    if (std::find(c.properties.begin(), c.properties.end(), p.get<std::string>()) == c.properties.end())
      c.properties.push_back(p);
  }
  if (j.contains("reference")) {
    c.reference = j["reference"];
    // A declared rule may also refer to the Grassmann B2 (its cases keep r < d).
    std::vector<std::string> refs = certifiable_rules();
    refs.push_back("b2-grassmann");
    if (std::find(refs.begin(), refs.end(), c.reference) == refs.end()) {
      std::string list;
      for (const auto& n : refs) list += (list.empty() ? "" : ", ") + n;
      throw std::invalid_argument(where + ": 'reference' '" + c.reference + "' is not one of " + list);
    }
    c.settings = rules::rule_settings(c.reference, 1.0);
  } else {
    c.settings = rules::RuleSettings{};
    c.settings.cap_tau.reset();  // uncapped unless the settings say otherwise
  }
}

// One key of "settings": the betas, the cap, weight decay, adaptive, or a number passed through.
void read_setting(const std::string& key, const nlohmann::json& value, const std::string& where, ScriptRuleConfig& c) {
  const std::string at = where + ": settings '" + key + "'";
  if (key == "adaptive") {
    if (!value.is_boolean()) throw std::invalid_argument(at + " must be true or false");
    c.settings.adaptive = value.get<bool>();
    return;
  }
  if (key == "map") {
    if (value != "stiefel" && value != "grassmann")
      throw std::invalid_argument(at + " must be \"stiefel\" (W^T eta skew) or \"grassmann\" (W^T eta = 0)");
    c.settings.map = value == "grassmann" ? TangentMap::kGrassmann : TangentMap::kStiefel;
    return;
  }
  if (key == "cap_tau" && value.is_null()) {
    c.settings.cap_tau.reset();
    return;
  }
  if (!value.is_number() || !std::isfinite(value.get<double>()))
    throw std::invalid_argument(at + " must be a finite number");
  const double v = value.get<double>();
  if (key == "lr" || key == "eps")
    throw std::invalid_argument(
        at + ": each claim sets lr and eps (docs/certify.md, 'Certify your own rule': the ranges it draws them from)");
  if (key == "beta1" || key == "beta2") {
    if (!(v >= 0 && v < 1)) throw std::invalid_argument(at + " must be in [0, 1)");
    (key == "beta1" ? c.settings.beta1 : c.settings.beta2) = v;
  } else if (key == "cap_tau") {
    if (!(v > 0)) throw std::invalid_argument(at + " must be > 0 (null: uncapped)");
    c.settings.cap_tau = v;
  } else if (key == "weight_decay") {
    if (!(v >= 0)) throw std::invalid_argument(at + " must be >= 0");
    c.settings.weight_decay = v;
  } else {
    c.extra_settings[key] = v;
  }
}

void read_declaration(const nlohmann::json& j, const std::string& where, ScriptRuleConfig& c) {
  read_properties(j, where, c);
  if (j.contains("settings"))
    for (const auto& [key, value] : j["settings"].items()) read_setting(key, value, where, c);
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
    if (key == "settings") {
      if (!value.is_object()) throw std::invalid_argument(where + ": 'settings' must be a JSON object");
    } else if (key == "properties") {
      if (!value.is_array()) throw std::invalid_argument(where + ": 'properties' must be a list of names");
    } else if (key == "name" || key == "rule" || key == "dtype" || key == "reference") {
      if (!value.is_string()) throw std::invalid_argument(where + ": '" + key + "' must be a string");
    } else {
      throw std::invalid_argument(where + ": unknown key '" + key +
                                  "' (name, dtype, rule; or properties, reference, settings)");
    }
  }
  if (j.contains("name")) {
    c.name = j["name"];
    if (c.name.empty()) throw std::invalid_argument(where + ": 'name' is empty (leave it out for the file's stem)");
  }
  if (j.contains("rule")) c.rule = j["rule"];
  if (j.contains("dtype")) c.dtype = j["dtype"];
  c.declared = j.contains("properties");
  if (!c.declared && (j.contains("reference") || j.contains("settings")))
    throw std::invalid_argument(where +
                                ": 'reference' and 'settings' belong to a rule that declares its "
                                "'properties' (add them; or name a paper rule with 'rule')");
  if (c.declared && j.contains("rule"))
    throw std::invalid_argument(where +
                                ": 'rule' names a paper rule, whose claims are fixed; a rule that declares "
                                "'properties' names its reference with 'reference'");
  if (c.declared) read_declaration(j, where, c);
  return c;
}

namespace {

// The rule's name, dtype and paper rule checked before anything is loaded.
void check_config(const std::string& where, const std::filesystem::path& file, ScriptRuleConfig& config) {
  if (config.name.empty()) config.name = stem_name(file);
  if (!std::regex_match(config.name, std::regex("[a-z0-9][a-z0-9-]{0,47}")))
    throw std::invalid_argument(where + ": name '" + config.name +
                                "' must match [a-z0-9][a-z0-9-]* and have at most 48 characters");
  if (config.dtype != "float64" && config.dtype != "float32")
    throw std::invalid_argument(where + ": dtype '" + config.dtype + "' must be float64 or float32");
  const auto& names = certifiable_rules();
  if (!config.declared && std::find(names.begin(), names.end(), config.rule) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    const auto all = rules::rule_names();
    const bool known = std::find(all.begin(), all.end(), config.rule) != all.end();
    throw std::invalid_argument(where + ": rule '" + config.rule + "' " +
                                (known ? "has no update claims for a single rule yet (fixed-step and frozen "
                                         "rules, and the horizontal map, whose space is {0} at r = d); "
                                       : "is not a frame rule; ") +
                                "--rule certifies " + list);
  }
}

// The module loaded from FILE, with the errors a user's archive gives named for them.
std::shared_ptr<Stepper> load_stepper(const std::string& where, const std::filesystem::path& file,
                                      const ScriptRuleConfig& config) {
  auto stepper = std::make_shared<Stepper>();
  stepper->file = where;
  stepper->extra = config.extra_settings;
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
  return stepper;
}

// A probe: two steps on three frames of St(5, 2) with the rule's settings at rate 0.1, on a clone
// (what the module keeps in its attributes is left as loaded for the claims' clones). Returns whether
// forward returns its step (frames, state, step).
bool probe_rule(const std::string& where, const Stepper& stepper, const ScriptRuleConfig& config) {
  bool reports_step = false;
  Stepper probe = clone(stepper);
  torch::NoGradGuard guard;
  auto gen = at::detail::createCPUGenerator(20260916);
  const auto q =
      std::get<0>(torch::linalg_qr(torch::randn({3, 5, 2}, gen, torch::dtype(torch::kFloat64)))).to(stepper.dtype);
  RuleSettings probe_settings = config.declared ? config.settings : rules::rule_settings(config.rule, 0.1);
  probe_settings.lr = 0.1;
  probe_settings.eps = 1e-8;
  const auto settings = settings_dict(probe_settings, config.extra_settings);
  c10::List<torch::Tensor> state;
  torch::Tensor w = q;
  for (int t = 0; t < 2; ++t) {
    const auto g = torch::randn({3, 5, 2}, gen, torch::dtype(torch::kFloat64)).to(stepper.dtype);
    Stepper::Result r;
    try {
      r = probe.call(w, g, state, settings, t + 1);
    } catch (const rules::RuleError& e) {
      throw std::invalid_argument(e.what());
    }
    if (!torch::isfinite(r.next).all().item<bool>())
      throw std::invalid_argument(where + ": forward returned frames that are not finite on a probe step");
    if (t == 0) reports_step = r.step.defined();
    if (r.step.defined() != reports_step)
      throw std::invalid_argument(where + ": forward returned its step on one probe step and not on another");
    w = r.next;
    state = r.state;
  }
  return reports_step;
}

// A declared rule's declaration: its settings and properties, and the components it exposes, each
// called on a clone of its own, one call at a time; a property declared without its component is
// refused.
rules::RuleDeclaration declaration_of(const std::string& where, const std::shared_ptr<Stepper>& stepper,
                                      const ScriptRuleConfig& config, bool reports_step) {
  rules::RuleDeclaration decl;
  decl.settings = config.settings;
  decl.reference = config.reference;
  decl.properties = config.properties;
  decl.reports_step = reports_step;
  // The exposed components: each called on a clone of its own, one call at a time.
  const auto owned = [&] {
    auto owner = std::make_shared<std::pair<std::mutex, Stepper>>();
    owner->second = clone(*stepper);
    return owner;
  };
  for (const char* name : {"project", "retract", "rgrad"}) {
    if (!stepper->module.find_method(name)) continue;
    rules::FramesMap map = [owner = owned(), name = std::string(name)](const Frames<double>& w,
                                                                       const Frames<double>& x) {
      std::lock_guard lock(owner->first);
      torch::NoGradGuard guard;
      const auto dtype = owner->second.dtype;
      return tensor_to_frames(owner->second.component(name, {frames_to_tensor(w, dtype), frames_to_tensor(x, dtype)}));
    };
    (std::string(name) == "project"   ? decl.project
     : std::string(name) == "retract" ? decl.retract
                                      : decl.rgrad) = std::move(map);
  }
  if (stepper->module.find_method("transport"))
    decl.transport = [owner = owned()](const Frames<double>& w, const Frames<double>& w_new, const Frames<double>& x) {
      std::lock_guard lock(owner->first);
      torch::NoGradGuard guard;
      const auto dtype = owner->second.dtype;
      return tensor_to_frames(owner->second.component(
          "transport", {frames_to_tensor(w, dtype), frames_to_tensor(w_new, dtype), frames_to_tensor(x, dtype)}));
    };
  if (stepper->module.find_method("metric"))
    decl.metric = [owner = owned()](const Frames<double>& w, const Frames<double>& x, const Frames<double>& y) {
      std::lock_guard lock(owner->first);
      torch::NoGradGuard guard;
      const auto dtype = owner->second.dtype;
      return owner->second.metric(frames_to_tensor(w, dtype), frames_to_tensor(x, dtype), frames_to_tensor(y, dtype));
    };
  struct Needs {
    const char* property;
    bool exposed;
    const char* what;
  };
  for (const Needs& n :
       {Needs{"projection", bool(decl.project), "exposes no project(w, x) method (@torch.jit.export)"},
        Needs{"riemannian-gradient", bool(decl.rgrad), "exposes no rgrad(w, g) method (@torch.jit.export)"},
        Needs{"retraction", bool(decl.retract), "exposes no retract(w, eta) method (@torch.jit.export)"},
        Needs{"retraction-second-order", bool(decl.retract), "exposes no retract(w, eta) method (@torch.jit.export)"},
        Needs{"transport", bool(decl.transport), "exposes no transport(w, w_new, x) method (@torch.jit.export)"},
        Needs{"metric", bool(decl.metric), "exposes no metric(w, x, y) method (@torch.jit.export)"},
        Needs{"tangent-step", decl.reports_step,
              "its forward returns no step: return (frames, state, step), the step retracted"}})
    if (std::find(decl.properties.begin(), decl.properties.end(), n.property) != decl.properties.end() && !n.exposed)
      throw std::invalid_argument(where + ": declares '" + n.property + "' but " + n.what);
  if (std::find(decl.properties.begin(), decl.properties.end(), "agrees-with-reference") != decl.properties.end() &&
      decl.reference.empty())
    throw std::invalid_argument(where + ": declares 'agrees-with-reference' but names no 'reference'");
  return decl;
}

}  // namespace

rules::RuleImplementation script_rule_implementation(const std::filesystem::path& file, ScriptRuleConfig config) {
  const std::string where = "--rule " + file.string();
  check_config(where, file, config);
  const auto stepper = load_stepper(where, file, config);
  const bool reports_step = probe_rule(where, *stepper, config);
  const double u = config.dtype == "float32" ? 0x1p-24 : 0x1p-53;
  rules::RuleImplementation impl{.name = config.name,
                                 .description = "a TorchScript rule (" + file.filename().string() + ", implementing " +
                                                config.rule + "), LibTorch, CPU, " + config.dtype,
                                 .unit_roundoff = u,
                                 .io_roundoff = u,
                                 .make =
                                     [stepper] {
                                       static const bool configured = (configure_cpu_compute(1), true);
                                       (void)configured;
                                       return std::make_unique<ScriptRule>(*stepper);
                                     },
                                 .only_rule = config.rule,
                                 .declaration = {}};
  if (!config.declared) return impl;
  rules::RuleDeclaration decl = declaration_of(where, stepper, config, reports_step);
  impl.description = "a TorchScript rule (" + file.filename().string() +
                     (decl.reference.empty() ? std::string() : ", reference " + decl.reference) + "), LibTorch, CPU, " +
                     config.dtype;
  impl.only_rule = decl.reference.empty() ? "b2" : decl.reference;  // the agreement claim's reference
  impl.declaration = std::move(decl);
  return impl;
}

}  // namespace stiefel::training
