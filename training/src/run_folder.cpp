// The run folder: opening and locking --out, a stored record read and resumed, the header, the
// record written at each epoch and on failure.
#include "run.h"

#include <stiefel/io/shell.h>

namespace stiefel::training::run_detail {

// A stored record is read only once it matches run.schema.json; a damaged one is refused naming the
// file and the field.
void check_stored_record(const nlohmann::json& run, const fs::path& run_path) {
  const auto v = schema::run_record().violations(run, 1);
  if (!v.empty())
    throw std::invalid_argument(run_path.string() + ": " + v[0] + " (" + schema::run_record().name() +
                                "); --overwrite starts the run over");
  if (const auto why = schema::run_record_sequence_violation(run); !why.empty())
    throw std::invalid_argument(run_path.string() + ": " + why + "; --overwrite starts the run over");
}

// The epoch whose checkpoint the record names with this SHA-256 (the record keeps the last two), or −1.
std::int64_t recorded_checkpoint_epoch(const nlohmann::json& run, const std::string& sha) {
  std::int64_t epoch = -1;
  if (run.contains("checkpoints"))
    for (const auto& [e, h] : run["checkpoints"].items())
      if (h == sha) epoch = std::stoll(e);
  return epoch;
}

// What OUT already holds, read before anything is written. Without --resume a run there is
// refused (unless --overwrite). With --resume: the stored record (an empty object when there is
// none), once its settings are checked to be this run's.
nlohmann::json read_existing_run(const TrainConfig& c, const fs::path& run_path, const fs::path& ckpt_path,
                                 const nlohmann::json& options) {
  const bool has_run = fs::exists(run_path), has_ckpt = fs::exists(ckpt_path);
  auto parse = [&] {
    nlohmann::json run;
    try {
      run = schema::parse_bounded(io::read_regular_file(run_path, checkpoint::kMaxRecordBytes, "a run record"),
                                  run_path.string());
    } catch (const std::exception& e) {
      throw std::invalid_argument(run_path.string() + ": not a readable run record (" + e.what() +
                                  "); --overwrite starts the run over");
    }
    if (!run.is_object())
      throw std::invalid_argument(run_path.string() + ": not a run record (expected a JSON object)");
    return run;
  };
  if (!c.resume) {
    if ((has_run || has_ckpt) && !c.overwrite) {
      std::string what = "a run";
      if (has_run) {
        try {
          const auto status = parse().value("status", "");
          what = status == "completed"  ? "a completed run"
                 : status == "diverged" ? "a diverged run"
                                        : "an interrupted run";
        } catch (const std::exception&) {
          what = "an unreadable run record";
        }
      }
      throw std::invalid_argument("--out " + c.out + ": holds " + what + " (" +
                                  (has_run ? run_path : ckpt_path).string() +
                                  "); --resume continues or returns it, --overwrite replaces it");
    }
    return nlohmann::json();
  }
  if (!has_run) {
    if (has_ckpt)
      throw std::invalid_argument(ckpt_path.string() +
                                  ": no run record (run.json) to verify this checkpoint against; "
                                  "--overwrite starts the run over");
    return nlohmann::json::object();
  }
  nlohmann::json run = parse();
  check_stored_record(run, run_path);
  if (run.contains("options")) {
    const auto differs = checkpoint::differing_settings(run["options"], options);
    if (!differs.empty())
      throw std::invalid_argument("--resume: " + run_path.string() + " records another run: " + differs +
                                  "; resume with the same options, use another --out, or --overwrite");
  }
  return run;
}

// A record in --out that is already the run's result: diverged, or completed with its final
// checkpoint or with none (results folders do not keep checkpoints). A kill between the final record
// and the checkpoint's commit leaves an older checkpoint it names: null, and the run resumes from it
// and recomputes the last epochs (bit-identically). A checkpoint the record does not name is refused.
std::optional<nlohmann::json> Run::finished_result(const nlohmann::json& run) const {
  if (!run.is_object()) return std::nullopt;
  const std::string status = run.value("status", "");
  if (status == "diverged") return run;
  if (status != "completed") return std::nullopt;
  if (!run.contains("checkpoints") || run["checkpoints"].empty()) return run;  // records before checksums
  if (!fs::exists(fs::symlink_status(ckpt_path_))) return run;
  std::int64_t last = 0;
  for (const auto& [e, h] : run["checkpoints"].items()) last = std::max(last, std::int64_t(std::stoll(e)));
  const std::int64_t held = recorded_checkpoint_epoch(run, io::sha256(checkpoint::read_file(ckpt_path_)));
  if (held == last) return run;
  if (held < 0)
    throw std::invalid_argument(ckpt_path_.string() + ": matches no checkpoint that " + run_path_.string() +
                                " records (damaged, or another run's); the record is complete: `rm " +
                                io::shell_quote(ckpt_path_.string()) +
                                "` keeps it as the result, --overwrite trains the run again");
  return std::nullopt;
}

std::optional<nlohmann::json> Run::open_folder() {
  compute_ = select_compute(c_);
  const fs::path out(c_.out);
  run_path_ = out / "run.json";
  ckpt_path_ = out / "checkpoint.pt";
  if (fs::exists(out) && !fs::is_directory(out)) throw std::invalid_argument("--out " + c_.out + ": not a folder");
  // A finished run is returned before anything is written, locked or checked for writing: a
  // results folder on a read-only file system, or one another process is reading, gives its result.
  if (c_.resume && fs::is_regular_file(fs::symlink_status(run_path_)))
    if (auto result = finished_result(read_existing_run(c_, run_path_, ckpt_path_, options_))) return result;
  io::check_output_path(run_path_);
  io::check_output_path(ckpt_path_);
  // One process at a time writes a run folder (an existing one is locked now, a new one once created).
  if (fs::is_directory(out)) lock_.emplace(out);
  run_ = read_existing_run(c_, run_path_, ckpt_path_, options_);
  io::remove_stale_temporaries(run_path_);  // left by a killed process
  io::remove_stale_temporaries(ckpt_path_);
  if (auto result = finished_result(run_)) return result;
  if (run_.is_object() && run_.value("status", "") == "completed" && !c_.quiet)
    progress_ << ckpt_path_.string() << ": not the final checkpoint the record names; recomputing it\n";
  if (run_.is_object()) {
    stored_config_ = run_.value("config", nlohmann::json::object());
    if (run_.contains("compute") && run_["compute"].is_object()) {
      stored_compute_record_ = run_["compute"];
      stored_compute_ = run_["compute"].value("mode", "");
      stored_attention_ = run_["compute"].value("attention_products", "");
    }
  }
  return std::nullopt;
}

// --resume: the checkpoint the record names restores the model and optimisers, and the record is
// trimmed to the checkpoint's epoch.
void Run::resume() {
  if (c_.resume && fs::exists(ckpt_path_)) {
    // The record names the SHA-256 of the checkpoints it was written with (the last two): a damaged
    // or foreign checkpoint matches none of them. Records from before checksums carry none.
    std::int64_t recorded_epoch = -1;
    const std::string bytes = checkpoint::read_file(ckpt_path_);
    if (run_.contains("checkpoints")) {
      const std::string sha = io::sha256(bytes);
      recorded_epoch = recorded_checkpoint_epoch(run_, sha);
      if (recorded_epoch < 0)
        throw std::invalid_argument(ckpt_path_.string() + ": SHA-256 " + sha.substr(0, 16) +
                                    "… matches no checkpoint that " + run_path_.string() +
                                    " records (damaged, or from another run); --overwrite starts over");
    }
    checkpoint::State state{&model_, opt_.adamw.get(), opt_.frames.get()};
    start_epoch_ = checkpoint::restore(bytes, ckpt_path_.string(), options_, state);
    if (recorded_epoch >= 0 && recorded_epoch != start_epoch_)
      throw std::invalid_argument(ckpt_path_.string() + ": holds epoch " + std::to_string(start_epoch_) + " but " +
                                  run_path_.string() + " records it as epoch " + std::to_string(recorded_epoch));
    if (start_epoch_ >= c_.epochs && run_.value("status", "") != "completed")
      throw std::runtime_error(ckpt_path_.string() + ": the checkpoint is at the last epoch but " + run_path_.string() +
                               " is not completed (a record lost by an interrupted write); rerun without --resume");
  }
  if (start_epoch_ == 0 || !run_.contains("epochs")) {
    run_ = nlohmann::json::object();
    run_["epochs"] = nlohmann::json::array();
  } else {
    auto& epochs = run_["epochs"];
    while (!epochs.empty() && epochs.back()["epoch"].get<std::int64_t>() > start_epoch_)
      epochs.erase(epochs.size() - 1);
    // A record is written with the epoch of each checkpoint it names before the checkpoint is
    // committed: a record without the epoch its checkpoint holds lost it, and a run resumed from there
    // would complete with a gap that every reader of the record refuses.
    if (run_.contains("checkpoints") && (epochs.empty() || epochs.back()["epoch"].get<std::int64_t>() != start_epoch_))
      throw std::invalid_argument(run_path_.string() + ": records no epoch " + std::to_string(start_epoch_) +
                                  ", which " + ckpt_path_.string() +
                                  " holds (the record lost it: damaged or edited); --overwrite starts over");
    if (run_.contains("checkpoints")) {
      nlohmann::json kept = nlohmann::json::object();
      for (const auto& [e, h] : run_["checkpoints"].items())
        if (std::stoll(e) <= start_epoch_) kept[e] = h;
      run_["checkpoints"] = kept;
    }
  }
  if (start_epoch_ > 0) run_["resumed_at_epochs"].push_back(start_epoch_);
  if (run_.contains("failure")) {  // a failed run continues; its failure stays on the record
    run_["earlier_failures"].push_back(run_["failure"]);
    run_.erase("failure");
  }
  global_step_ = start_epoch_ * steps_per_epoch_;
}

// The record's "config": the settings as they ran (the task's defaults made explicit, the arm's rates).
nlohmann::json Run::config_record() const {
  const FrameHyper& fh = opt_.frame_hyper;
  return {{"task", c_.task},
          {"arm", c_.arm},
          {"seed", c_.seed},
          {"n", n_train_},  // the training examples that trained (grok: the pairs of its split)
          {"epochs", c_.epochs},
          {"batch", batch_},
          {"device", c_.device},
          {"adam_lr", c_.adam_lr},
          {"weight_decay", c_.weight_decay},
          {"adam_betas", {0.9, opt_.beta2}},
          {"riemann_lr", fh.lr},
          {"eps", c_.eps},
          {"tau", c_.tau},
          {"cap", arm_.frames_on_manifold && fh.cap_tau.has_value()},
          {"soft_lambda", arm_.soft_penalty ? c_.soft_lambda : 0.0},
          {"schedule", grok_ ? (c_.power_stabilisation ? "10-step warm-up, then constant" : "constant")
                             : "linear warm-up over " + std::to_string(c_.warmup_epochs) +
                                   " epochs, then cosine to zero (both rates)"},
          {"model",
           {{"layers", spec_.layers},
            {"d", spec_.d},
            {"heads", spec_.heads},
            {"r", spec_.r},
            {"ffn", 4 * spec_.d},
            {"pooling", grok_ ? "concat readout" : spec_.pooling},
            {"positional", spec_.positional},
            {"input_dim", spec_.input_dim},
            {"tokens", spec_.tokens},
            {"classes", spec_.classes}}},
          {"init_scale", c_.init_scale},
          {"test_n", data_.test_y.size(0)},
          {"threads", c_.threads},
          {"eval_every", c_.eval_every},
          {"val_n", c_.val_n},
          {"not_read", options_not_read(c_.arm)}};
}

// A resumed record's settings, attention route and BLAS kernels must be this run's: its epochs so far
// came from them.
void Run::check_resumed_settings() const {
  std::string differs;
  for (const auto& [k, v] : run_["config"].items())
    if (stored_config_.contains(k) && stored_config_[k] != v)
      differs += (differs.empty() ? "" : ", ") + k + " (" + stored_config_[k].dump() + " → " + v.dump() + ")";
  if (!stored_compute_.empty() && stored_compute_ != c_.compute)
    differs += std::string(differs.empty() ? "" : ", ") + "compute (" + stored_compute_ + " → " + c_.compute + ")";
  // Its epochs so far came from another attention route (another build): the same function,
  // not the same bits, so the record would not be one run's.
  const auto attention = compute_.value("attention_products", "");
  if (!stored_attention_.empty() && stored_attention_ != attention)
    differs +=
        std::string(differs.empty() ? "" : ", ") + "attention products (" + stored_attention_ + " → " + attention + ")";
  if (!differs.empty())
    throw std::invalid_argument("--resume: " + run_path_.string() + " records another run: " + differs +
                                "; resume with the same options or use another --out");
  // Other BLAS kernels give other bits from the resumed epoch on: the record would mix two kernels.
  const std::string was = blas_kernels(stored_compute_record_), now = blas_kernels(compute_);
  if (!was.empty() && !now.empty() && was != now && !c_.allow_kernel_change)
    throw std::invalid_argument("--resume: " + run_path_.string() + " was computed with OpenBLAS's " + was +
                                " kernels, this process has " + now +
                                " (other bits from here on): run with "
                                "OPENBLAS_CORETYPE=" +
                                was + ", or add --allow-kernel-change to continue under " + now +
                                " (recorded in earlier_compute)");
}

// What computed a resumed record's earlier epochs, where it differs from this process's compute.
void Run::note_earlier_compute() {
  // A run resumed under other kernels (another BLAS core, ATen vector width or thread count: other
  // bits, the same function) keeps the record of what computed its earlier epochs.
  // The compute of epoch start_epoch_ is the record's, unless a process that wrote no checkpoint
  // since (one that failed, or was killed before its first) replaced it: entries from start_epoch_ on
  // name what computed the epochs kept.
  if (start_epoch_ > 0 && stored_compute_record_.is_object()) {
    auto before = stored_compute_record_;
    auto& earlier = run_["earlier_compute"];
    while (earlier.is_array() && !earlier.empty() &&
           earlier.back()["until_epoch"].get<std::int64_t>() >= start_epoch_) {
      before = earlier.back()["compute"];
      earlier.erase(earlier.size() - 1);
    }
    const auto numerics = [](nlohmann::json c) {
      for (const char* k : {"seed_batch", "malloc"}) c.erase(k);  // neither changes a result
      return c;
    };
    if (numerics(before) != numerics(compute_)) {
      earlier.push_back({{"until_epoch", start_epoch_}, {"compute", before}});
      if (blas_kernels(before) != blas_kernels(compute_)) earlier.back()["kernel_change_allowed"] = true;
    }
    if (earlier.is_null() || earlier.empty()) run_.erase("earlier_compute");
  }
}

// The record's environment: LibTorch, threads, the program and the CPU; earlier programs kept.
void Run::write_environment() {
  // The program that wrote the record, and the one before it where a resume changed it.
  const nlohmann::json program = program_provenance();
  if (start_epoch_ > 0 && run_.contains("environment") && run_["environment"].contains("program") &&
      run_["environment"]["program"] != program) {
    auto& earlier = run_["environment"]["earlier_programs"];
    auto kept = earlier.is_array() ? earlier : nlohmann::json::array();
    kept.push_back({{"until_epoch", start_epoch_}, {"program", run_["environment"]["program"]}});
    earlier = kept;
  }
  const nlohmann::json earlier_programs =
      run_.contains("environment") ? run_["environment"].value("earlier_programs", nlohmann::json()) : nlohmann::json();
  run_["environment"] = {{"torch", TORCH_VERSION},
                         {"cuda_available", torch::cuda::is_available()},
                         {"threads", torch::get_num_threads()},
                         {"program", program},
                         {"cpu_model", cpu_model()}};
  if (!earlier_programs.is_null()) run_["environment"]["earlier_programs"] = earlier_programs;
}

// The record's settings ("options" as given, "config" as run); a resume refuses other settings.
void Run::write_header() {
  run_["status"] = "running";
  run_["options"] = options_;
  run_["config"] = config_record();
  if (start_epoch_ > 0) check_resumed_settings();
  if (arm_.codebook_beta) {
    run_["codebook"] = codebook_.record;
    run_["codebook"]["beta"] = *arm_.codebook_beta;
  }
  note_earlier_compute();
  run_["compute"] = compute_;
  run_["dataset"] = data_.record;
  write_environment();
}

// The record replaces run.json only as run.schema.json describes it: a field the schema does not
// know is a bug here, caught before any reader sees it.
void Run::write_record() {
  const auto v = schema::run_record().violations(run_, 1);
  if (!v.empty())
    throw std::logic_error(run_path_.string() + ": the record to write breaks " + schema::run_record().name() + ": " +
                           v[0]);
  io::write_file_atomically(run_path_, run_.dump(2) + "\n");
}

// An error while training or evaluating an epoch is not a result: the record says "failed", with
// the epoch, the step and the error, and keeps the epochs before it; the last checkpoint stays, and
// a rerun with --resume continues from it. Nothing is recorded where the record itself cannot be
// written (a full disk).
void Run::record_failure(std::int64_t epoch, const std::string& error) noexcept {
  try {
    run_["status"] = "failed";
    run_["failure"] = {{"epoch", epoch + 1}, {"step", global_step_ + 1}, {"error", error}};
    run_["stage_seconds"] = stage_seconds_;
    write_record();
  } catch (...) {}
}

}  // namespace stiefel::training::run_detail
