#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <utility>
#include <stiefel/certificates/claim.h>
#include <stiefel/certificates/junit.h>
#include <stiefel/certificates/runner.h>
#include <stiefel/certificates/update_rule.h>
#ifdef STIEFEL_WITH_TORCH
#include <stiefel/training/script_rule.h>
#include <stiefel/training/trainer_rule.h>

#include "rule_sandbox.h"
#endif

#include <stiefel/io/shell.h>

#include "commands.h"

namespace stiefel::cli {
namespace {

struct CertifyArgs {
  std::string out = "reports/certificate.json";
  certificates::RunOptions run;
  std::string precision = "both";
  std::vector<std::string> swap;
  std::string checkpoint;
  std::string junit;
  std::string rule, rule_config;
  double rule_timeout = 60;
  bool list = false, list_rule_properties = false;
};

void add_certify_options(CLI::App* cmd, CertifyArgs& args) {
  cmd->add_option("--out", args.out,
                  "certificate path (written atomically; with --rule the default is NAME.cert.json, NAME the "
                  "rule's claims' suffix)")
      ->capture_default_str();
  cmd->add_option("--cases", args.run.cases, "random cases per randomised claim")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--seed", args.run.seed, "master seed; every case replays from it")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--claims", args.run.claims, "regular expression selecting claim ids")->capture_default_str();
  cmd->add_option("--group", args.run.group,
                  "claims' group: default, paper-size (every implementation's update rule at the paper's sizes "
                  "over thousands of steps, timed on its own), or all")
      ->check(CLI::IsMember({"default", "paper-size", "all"}))
      ->capture_default_str();
  cmd->add_option("--precision", args.precision, "float64, 50-digit, or both on the same inputs")
      ->check(CLI::IsMember({"double", "mp50", "both"}))
      ->capture_default_str();
  cmd->add_option("--jobs", args.run.jobs, "worker threads (0: one per hardware thread)")->check(CLI::Range(0, 256));
  cmd->add_option("--checkpoint", args.checkpoint,
                  "check a training checkpoint's frames instead (isometry, tangent first moments)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--junit", args.junit,
                  "also write the result as JUnit XML (one test case per claim and per control; written atomically)");
  cmd->add_option("--rule", args.rule,
                  "certify a user's frame rule: a TorchScript module whose forward(w, g, state, settings) takes one "
                  "step (docs/certify.md, 'Certify your own rule'); only its claims run unless --claims is given");
  cmd->add_option("--rule-config", args.rule_config,
                  "JSON object for --rule: name (claim id suffix), rule (the core rule it implements, default b2), "
                  "dtype (float64, the default, or float32), or properties, reference, "
                  "settings (docs/certify.md, 'Certify your own rule')");
  cmd->add_option("--rule-timeout", args.rule_timeout,
                  "seconds one call of the --rule module's forward may take before the run is stopped (exit 2, "
                  "the call named)")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_flag("--list", args.list, "list the registered claims and their controls, then exit");
  cmd->add_flag("--list-rule-properties", args.list_rule_properties,
                "list the properties a --rule may declare, each with the stem of the claim that certifies it "
                "(its id is STEM-NAME), then exit");
  cmd->add_option("--swap-control", args.swap,
                  "CLAIM:CONTROL — run that control in place of the claim (the certificate must then fail); "
                  "repeatable, one per claim")
      ->group("");
}

void list_claims() {
  for (const auto& c : certificates::registry()) {
    std::cout << c.id << "  [" << c.source << "]  expected "
              << (c.expected == certificates::Expected::kRefuted ? "refuted" : "certified")
              << (c.group == "default" ? std::string() : "  group " + c.group) << "\n";
    for (const auto& ctl : c.controls) std::cout << "    control " << ctl.id << ": " << ctl.description << "\n";
  }
}

// `--checkpoint FILE`: the frame checks of a trained model in place of the suite.
int certify_checkpoint_file(const CertifyArgs& args) {
#ifdef STIEFEL_WITH_TORCH
  try {
    return certify_checkpoint(args.checkpoint, args.out);
  } catch (const std::exception& e) {
    std::cerr << "stiefel certify: " << brief_message(e.what()) << "\n";
    return 1;
  }
#else
  std::cerr << "stiefel certify: --checkpoint needs a build with LibTorch (STIEFEL_WITH_TORCH)\n";
  return 2;
#endif
}

// The command as the certificate records it: every option given, with its values.
std::string command_line(const CLI::App& cmd) {
  std::string line = "stiefel certify";
  for (const auto& o : cmd.get_options())
    if (o->count() > 0 && o->get_name() != "--help")
      for (const auto& r : o->results()) line.append(" ").append(o->get_name()).append(" ").append(r);
  return line;
}

// A case as one line: its named parameters, the fields a reader recognises first.
std::string case_line(const nlohmann::json& c) {
  std::string out;
  for (const auto& [key, value] : c.items()) {
    if (key == "seed" || key == "x" || (value.is_number() && value.get<double>() == 0)) continue;
    out += (out.empty() ? "" : ", ") + key + " " + (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return out;
}

// Each claim that failed its expectation, in a few lines: what was observed, its shrunk
// counterexample with the worst ratio, the controls that survived, and the command that replays it.
void print_failures(const nlohmann::json& certificate, std::ostream& log) {
  for (const auto& k : certificate.at("claims")) {
    if (k.value("meets_expectation", true)) continue;
    log << "\nFAILED " << k.value("id", "") << ": " << k.value("observed", "") << " (expected "
        << k.value("expected", "") << ")\n";
    if (const auto& ce = k.value("counterexample", nlohmann::json()); ce.is_object()) {
      log << "  counterexample (shrunk in " << ce.value("shrink_steps", 0) << " steps): " << case_line(ce.at("case"))
          << "\n";
      for (const char* slot : {"float64", "mp50"})
        if (ce.contains(slot) && ce[slot].is_object() &&
            !(slot == std::string("mp50") && ce[slot] == ce.value("float64", nlohmann::json())))
          log << "    " << slot << ": ratio " << ce[slot].value("ratio", nlohmann::json()).dump() << ", residual "
              << ce[slot].value("residual", nlohmann::json()).dump() << " (tolerance "
              << k.at("tolerance").value("value", nlohmann::json()).dump() << ")"
              << (ce[slot].contains("detail") && !ce[slot]["detail"].empty() ? " " + ce[slot]["detail"].dump() : "")
              << "\n";
    }
    if (const auto& ce = k.value("counterexample", nlohmann::json()); ce.is_object() && ce.contains("float64") &&
                                                                      ce["float64"].contains("detail") &&
                                                                      ce["float64"]["detail"].contains("diagnosis"))
      log << "  first stage that differs from the reference: "
          << ce["float64"]["detail"]["diagnosis"].value("first_stage_differing", "") << "\n";
    if (k.contains("precision_behaviour") && k["precision_behaviour"].is_string())
      log << "  " << k["precision_behaviour"].get<std::string>() << "; established: " << k.value("established", "")
          << "\n";
    for (const auto& ctl : k.value("controls", nlohmann::json::array()))
      if (ctl.value("status", "") != "killed") log << "  control " << ctl.value("id", "") << ": survived\n";
    log << "  replay: " << k.value("reproduce", "") << "\n";
  }
}

// The certificate suite: every registered claim and its controls, written to --out.
int run_suite(CertifyArgs& args, const CLI::App& cmd) {
  auto& run = args.run;
  run.precision = args.precision == "double" ? certificates::Precision::kDouble
                  : args.precision == "mp50" ? certificates::Precision::kMp50
                                             : certificates::Precision::kBoth;
  run.swap_controls = args.swap;
  run.command_line = command_line(cmd);
  try {
    const auto result = certificates::run_certificate(run, std::cerr);
    io::write_file_atomically(args.out, result.certificate.dump(2) + "\n");
    std::cerr << "certificate written to " << args.out << "\n";
    if (!args.junit.empty()) {
      io::write_file_atomically(args.junit, certificates::junit_xml(result.certificate));
      std::cerr << "JUnit report written to " << args.junit << "\n";
    }
    print_failures(result.certificate, std::cerr);
    std::cerr << result.passed << " passed, " << result.failed << " failed\n";
    return result.failed == 0 ? 0 : 1;
  } catch (const std::invalid_argument& e) {
    std::cerr << "stiefel certify: " << e.what() << "\n";
    return 2;
  } catch (const certificates::RuleError& e) {  // the user's rule could not be run: no verdict
    std::cerr << "stiefel certify: " << e.what() << "\n  nothing was written\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "stiefel certify: " << e.what() << "\n";
    return 1;
  }
}

// Whether two paths name the same file (the same inode where both exist, else the same normal form).
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec)) return std::filesystem::equivalent(a, b, ec);
  return std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec);
}

// `path` with ".replay" before its extension: where a reproduce command writes its certificate.
std::string replay_path(const std::string& path) {
  std::filesystem::path p = std::filesystem::absolute(path);
  const std::string ext = p.has_extension() ? p.extension().string() : std::string(".json");
  return p.replace_extension().string() + ".replay" + ext;
}

#ifdef STIEFEL_WITH_TORCH
// `--rule FILE [--rule-config CONFIG]`: the module is loaded, probed and registered before the
// registry is first read, and only its claims are selected unless --claims is given. Throws
// std::invalid_argument for what the user must change.
void register_user_rule(CertifyArgs& args, const CLI::App& cmd) {
  training::ScriptRuleConfig config;
  if (!args.rule_config.empty()) config = training::read_script_rule_config(args.rule_config);
  const bool named_in_config = !config.name.empty();
  auto impl = training::script_rule_implementation(args.rule, config);
  const std::string name = impl.name;
  if (cmd.count("--claims") == 0) args.run.claims = certificates::rule_claims_pattern(name);
  // Without --out the certificate is the rule's own, in the current folder: never the suite's.
  if (cmd.count("--out") == 0) args.out = name + ".cert.json";
  try {
    certificates::add_rule_implementation(std::move(impl));
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument(
        "--rule " + args.rule + ": its claims' name '" + name + "' " +
        (named_in_config ? "(\"name\" in --rule-config " + args.rule_config + ")" : "(the file's stem)") +
        " is taken by a built-in implementation (core, trainer, trainer-f32, trainer-cuda, trainer-cuda-f32): "
        "set another \"name\" in --rule-config");
  }
  // The reproduce command replays from any folder and writes beside the certificate, not over it.
  std::string replay = " --rule " + io::shell_quote(std::filesystem::absolute(args.rule).string());
  if (!args.rule_config.empty())
    replay += " --rule-config " + io::shell_quote(std::filesystem::absolute(args.rule_config).string());
  args.run.reproduce_options = replay + " --out " + io::shell_quote(replay_path(args.out));
}
#endif

// The whole command once its options are parsed: the exit code.
int certify(CertifyArgs& args, const CLI::App& cmd) {
  if (!args.rule_config.empty() && args.rule.empty()) {
    std::cerr << "stiefel certify: --rule-config needs --rule\n";
    return 2;
  }
  if (!args.rule.empty()) {
#ifdef STIEFEL_WITH_TORCH
    try {
      register_user_rule(args, cmd);
    } catch (const std::exception& e) {
      std::cerr << "stiefel certify: " << e.what() << "\n";
      return 2;
    }
#else
    std::cerr << "stiefel certify: --rule needs a build with LibTorch (STIEFEL_WITH_TORCH)\n";
    return 2;
#endif
  }
  if (args.list) {
    list_claims();
    return 0;
  }
  if (args.list_rule_properties) {
    for (const auto& p : rules::rule_property_names())
      for (const auto& s : certificates::rule_claim_stems())
        if (s.property == p) std::cout << p << "\t" << s.stem << "\n";
    return 0;
  }
  // --out is checked before any work: a folder, a symbolic link or an unwritable path is refused
  // now, not after the whole suite has run; and neither it nor --junit may be one of the inputs.
  for (const auto& [name, path] : {std::pair<std::string, std::string>{"--out", args.out}, {"--junit", args.junit}}) {
    if (path.empty()) continue;
    for (const auto& [input_name, input] :
         {std::pair<std::string, std::string>{"--rule", args.rule}, {"--rule-config", args.rule_config}})
      if (!input.empty() && same_file(path, input)) {
        std::cerr << "stiefel certify: " << name << " " << path << " is the " << input_name
                  << " file: the certificate would overwrite it\n";
        return 2;
      }
    try {
      io::check_output_path(path);
      // The folder is made now, so that a path no file can be written to fails before the suite
      // runs, not after the certificate has been written and the report could not be.
      const auto folder = std::filesystem::path(path).parent_path();
      std::error_code ec;
      if (!folder.empty() && !std::filesystem::create_directories(folder, ec) && ec)
        throw std::runtime_error(path + ": cannot create its folder " + folder.string() + " (" + ec.message() + ")");
    } catch (const std::exception& e) {
      std::cerr << "stiefel certify: " << name << " " << e.what() << "\n";
      return 2;
    }
  }
  if (!args.junit.empty() && !args.checkpoint.empty()) {
    std::cerr << "stiefel certify: --junit reports the claim suite; it does not apply to --checkpoint\n";
    return 2;
  }
  if (!args.junit.empty() && same_file(args.junit, args.out)) {
    std::cerr << "stiefel certify: --junit and --out name the same file (" << args.out << ")\n";
    return 2;
  }
  return args.checkpoint.empty() ? run_suite(args, cmd) : certify_checkpoint_file(args);
}

}  // namespace

void add_certify_command(CLI::App& app, int& exit_code) {
#ifdef STIEFEL_WITH_TORCH
  // The code that trains is certified beside core/: the update claims through the trainer's
  // FrameOptimizer::step, with float64 parameters and with float32 ones (the model's dtype), on the
  // CPU and, where a GPU is present, on CUDA.
  // Where no GPU is present, the CUDA implementations are named as not run, with the reason.
  const bool cuda = torch::cuda::is_available();
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    certificates::add_rule_implementation(training::trainer_rule_implementation(torch::kCPU, dtype));
    const std::string cuda_name = dtype == torch::kFloat64 ? "trainer-cuda" : "trainer-cuda-f32";
    if (cuda)
      certificates::add_rule_implementation(training::trainer_rule_implementation(torch::kCUDA, dtype));
    else
      certificates::add_skipped_implementation(
          {cuda_name,
           "no CUDA device: torch::cuda::is_available() is false (no GPU, or a LibTorch built without "
           "CUDA); ci/gpu-check.sh runs these claims on a GPU machine"});
  }
#else
  for (const char* name : {"trainer", "trainer-f32", "trainer-cuda", "trainer-cuda-f32"})
    certificates::add_skipped_implementation(
        {name, "this build has no LibTorch (STIEFEL_WITH_TORCH=OFF): the training core is not compiled in"});
#endif
  auto* cmd = app.add_subcommand("certify",
                                 "Check every registered claim of the paper and write a "
                                 "JSON certificate (exit 0 iff every claim meets its "
                                 "expected outcome and every control is killed)");
  auto args = std::make_shared<CertifyArgs>();
  add_certify_options(cmd, *args);
  cmd->callback([args, cmd, &exit_code] {
#ifdef STIEFEL_WITH_TORCH
    // A user's rule runs in a child process, so that a forward that never returns or that crashes
    // the process ends in a message naming the call (rule_sandbox.h).
    if (!args->rule.empty()) {
      exit_code = run_in_rule_sandbox("--rule " + args->rule, args->rule_timeout, [&] { return certify(*args, *cmd); });
      return;
    }
#endif
    exit_code = certify(*args, *cmd);
  });
}

}  // namespace stiefel::cli
