// The epoch loop: the steps (rates, batch, forward, loss, backward, update), divergence caught at
// its first bad step, the evaluation and each epoch's record and checkpoint.
#include "run.h"

namespace stiefel::training::run_detail {

// The first non-finite tensor among NAMED (its gradient when `grad`), or "" when all are finite. One
// float64 reduction per tensor and one synchronisation in all.
std::string first_non_finite(const std::vector<std::pair<std::string, torch::Tensor>>& named, bool grad) {
  std::vector<torch::Tensor> sums;
  for (const auto& [name, t] : named) {
    const auto& x = grad ? t.grad() : t;
    sums.push_back(x.defined() ? x.detach().sum(torch::kFloat64)
                               : torch::zeros({}, t.options().dtype(torch::kFloat64)));
  }
  if (sums.empty() || std::isfinite(torch::stack(sums).sum().item<double>())) return "";
  for (std::size_t i = 0; i < named.size(); ++i) {
    const auto& x = grad ? named[i].second.grad() : named[i].second;
    if (x.defined() && !torch::isfinite(x.detach()).all().item<bool>())
      return (grad ? "gradient of " : "parameter ") + named[i].first;
  }
  return grad ? "gradients (sum overflows float64)" : "parameters (sum overflows float64)";
}

double schedule_factor(std::int64_t step, std::int64_t warmup, std::int64_t total, bool cosine) {
  if (warmup > 0 && step < warmup) return double(step + 1) / double(warmup);
  if (!cosine) return 1.0;
  const double t = double(step - warmup) / double(std::max<std::int64_t>(1, total - warmup));
  return 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, t)));
}

namespace {

struct Accuracy {
  double loss = 0, acc = 0;
};

// Evaluates in chunks of `chunk` examples: 256 keeps every activation below glibc's mmap threshold
// (an FFN activation of 2048 images is 64 MiB, mapped and faulted in afresh on every call).
Accuracy evaluate(Classifier& model, const torch::Tensor& x, const torch::Tensor& y, torch::Device dev,
                  std::int64_t chunk) {
  torch::NoGradGuard guard;
  model->eval();
  // Summed on the device (float64 additions in chunk order, as a host sum would) and read once.
  auto loss = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(dev));
  auto correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(dev));
  for (std::int64_t i = 0; i < x.size(0); i += chunk) {
    const auto xb = x.slice(0, i, std::min(x.size(0), i + chunk)).to(dev);
    const auto yb = y.slice(0, i, std::min(y.size(0), i + chunk)).to(dev);
    const auto logits = model->forward(xb);
    loss += torch::cross_entropy_loss(logits, yb, {}, at::Reduction::Sum).to(torch::kFloat64);
    correct += logits.argmax(1).eq(yb).sum();
  }
  model->train();
  return {loss.to(torch::kCPU).item<double>() / double(x.size(0)),
          double(correct.to(torch::kCPU).item<std::int64_t>()) / double(x.size(0))};
}

}  // namespace

std::string format_seconds(double s) {
  std::ostringstream os;
  const long t = long(std::lround(s));
  os << t / 3600 << ":" << std::setw(2) << std::setfill('0') << (t / 60) % 60 << ":" << std::setw(2) << t % 60;
  return os.str();
}

// Whether the gradients of NAMED are finite, per tensor (a float64 sum of a tensor is finite exactly
// when its entries are, but for a float64 tensor whose finite entries overflow the sum) and in all
// (the sum of those sums, which may overflow where no tensor does).
std::pair<torch::Tensor, torch::Tensor> gradient_finiteness(
    const std::vector<std::pair<std::string, torch::Tensor>>& named, torch::Device dev) {
  std::vector<torch::Tensor> sums;
  for (const auto& [name, t] : named)
    sums.push_back(t.grad().defined() ? t.grad().detach().sum(torch::kFloat64)
                                      : torch::zeros({}, t.options().dtype(torch::kFloat64)));
  if (sums.empty())
    return {torch::zeros({1}, torch::TensorOptions().dtype(torch::kBool).device(dev)),
            torch::zeros({}, torch::TensorOptions().dtype(torch::kBool).device(dev))};
  const auto stacked = torch::stack(sums);
  return {stacked.isfinite().logical_not(), stacked.sum().isfinite().logical_not()};
}

// An error as a record states it: LibTorch's message without its backtrace, one line; any other
// error's message as it is.
std::string error_line(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) {
    const std::string msg = c10->what_without_backtrace();
    return msg.substr(0, msg.find('\n'));
  }
  return e.what();
}

torch::Tensor Run::stacked_frames(bool grad) const {
  std::vector<torch::Tensor> parts;
  for (const auto& w : fparams_)
    parts.push_back(to_frames((grad ? w.grad() : w.detach()).to(torch::kFloat64), arm_.layout));
  return torch::cat(parts);
}

void Run::lap(const char* stage) {
  const auto now = std::chrono::steady_clock::now();
  stage_seconds_[stage] += std::chrono::duration<double>(now - lap_start_).count();
  lap_start_ = now;
}

// Divergence is a result: the first non-finite loss, gradient or parameter ends the run with status
// "diverged", recorded with the epoch, the step and the tensor; the last good checkpoint stays.
nlohmann::json Run::diverged(const std::string& what, std::int64_t epoch) {
  run_["status"] = "diverged";
  run_["divergence"] = {{"epoch", epoch + 1},
                        {"step", global_step_ + 1},
                        {"tensor", what},
                        {"note", "a non-finite value; the run stopped at this step (recorded epochs are before it)"}};
  run_["stage_seconds"] = stage_seconds_;
  write_record();
  if (!c_.quiet)
    progress_ << (tty_ ? "\n" : "") << "diverged at epoch " << epoch + 1 << ", step " << global_step_ + 1
              << ": non-finite " << what << "\n";
  return run_;
}

void Run::print_progress(std::int64_t epoch) const {
  const double done = double(global_step_ + 1 - start_epoch_ * steps_per_epoch_) /
                      double(total_steps_ - start_epoch_ * steps_per_epoch_);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start_).count();
  const int width = 30, filled = int(done * width);
  progress_ << "\r[" << std::string(filled, '#') << std::string(width - filled, '.') << "] epoch " << epoch + 1 << "/"
            << c_.epochs << " ETA " << format_seconds(elapsed / done - elapsed) << "   " << std::flush;
}

void Run::begin_epoch(std::int64_t epoch) {
  auto shuffle_gen = at::detail::createCPUGenerator(c_.seed * 1000003 + std::uint64_t(epoch));
  auto order = torch::randperm(n_train_, shuffle_gen, torch::kLong);
  ep_.emplace(EpochState{epoch, std::move(order), DeviceEpoch(dev_, named_.size()), {}, {}, {}, {}});
  ++window_epochs_;
  lap_start_ = std::chrono::steady_clock::now();
}

// The epoch's first non-finite value, read from the device: the run stops there as it always did
// (the record and the step are those of the first bad step; on a GPU the steps after it ran on
// non-finite values and are discarded with the epoch).
std::optional<nlohmann::json> Run::stop_if_diverged() {
  const auto& acc = ep_->acc;
  const auto at = acc.bad_step.to(torch::kCPU).item<std::int64_t>();
  if (at < 0) return std::nullopt;
  global_step_ = at;
  const auto which = acc.bad_check.to(torch::kCPU).item<std::int64_t>();
  if (which == DeviceEpoch::kLossCheck) return diverged("loss", ep_->epoch);
  if (which == DeviceEpoch::kFrames) return diverged("W_Q/W_K frames after the step", ep_->epoch);
  const auto tensors = acc.bad_tensors.to(torch::kCPU);
  for (std::size_t i = 0; i < named_.size(); ++i)
    if (tensors[std::int64_t(i)].item<bool>()) return diverged("gradient of " + named_[i].first, ep_->epoch);
  return diverged("gradients (sum overflows float64)", ep_->epoch);
}

// On the CPU a read costs no waiting, so the run stops at the bad step itself and never hands
// non-finite frames to LAPACK; on a GPU the epoch runs on and the read waits for its end.
#define STIEFEL_STOP_NOW \
  if (dev_.is_cpu() && ep_->acc.bad_step.item<std::int64_t>() >= 0) return stop_if_diverged()

torch::Tensor Run::step_input(std::int64_t s) {
  const double f = schedule_factor(global_step_, warmup_, total_steps_, !grok_);
  for (auto& g : opt_.adamw->param_groups()) g.options().set_lr(c_.adam_lr * f);
  if (opt_.frames) opt_.frames->param_groups().front().options().set_lr(opt_.frame_hyper.lr * f);
  ep_->idx = ep_->order.slice(0, s * batch_, std::min(n_train_, (s + 1) * batch_));
  const auto xb = data_.train_x.index_select(0, ep_->idx).to(dev_);
  ep_->yb = data_.train_y.index_select(0, ep_->idx).to(dev_);
  opt_.adamw->zero_grad();
  if (opt_.frames) opt_.frames->zero_grad();
  lap("data");
  return xb;
}

std::optional<nlohmann::json> Run::step_loss(const torch::Tensor& logits) {
  auto& acc = ep_->acc;
  ep_->logits = logits;
  auto loss = torch::cross_entropy_loss(logits, ep_->yb);
  if (arm_.soft_penalty)
    for (auto& w : fparams_) loss = loss + soft_penalty(w, c_.soft_lambda);
  // C2-nb keeps the prior in the graph at β = 0: its runs equal PA16's bit for bit only if the prior adds
  // exactly nothing and the codebook's draws leave the run's own draws alone (train_smoke.sh checks both).
  if (arm_.codebook_beta)
    for (auto& w : fparams_) loss = loss + codebook_prior(w, codebook_.centroids, *arm_.codebook_beta);
  {
    torch::NoGradGuard guard;
    const auto loss64 = loss.detach().to(torch::kFloat64);
    acc.check(loss64.isfinite().logical_not(), global_step_, DeviceEpoch::kLossCheck);
    acc.add(DeviceEpoch::kLoss, loss64 * double(ep_->idx.size(0)));
  }
  STIEFEL_STOP_NOW;
  lap("forward");
  ep_->loss = loss;
  return std::nullopt;
}

std::optional<nlohmann::json> Run::step_update() {
  auto& acc = ep_->acc;
  ep_->loss = torch::Tensor();  // its graph is spent
  {
    const auto [per_tensor, overall] = gradient_finiteness(named_, dev_);
    acc.check(overall, global_step_, DeviceEpoch::kGradients, per_tensor);
  }
  STIEFEL_STOP_NOW;
  lap("backward");
  torch::Tensor before;
  {
    torch::NoGradGuard guard;
    const auto w64 = stacked_frames(false), g64 = stacked_frames(true);
    const auto pg_norm = tangent_gradient_norm(w64, g64);
    acc.add(DeviceEpoch::kTangent, pg_norm.sum());
    const auto gauge = batched_gauge_component(w64, g64).pow(2).sum({-2, -1}).sqrt();
    acc.add(DeviceEpoch::kGauge, (gauge / pg_norm.clamp_min(1e-300)).sum());
    frames_seen_ += double(w64.size(0));
    before = w64;
  }
  lap("diagnostics");
  opt_.adamw->step();
  lap("adamw");
  if (opt_.frames) {
    opt_.frames->step();
    acc.add(DeviceEpoch::kCapped, opt_.frames->last_report().capped.to(torch::kFloat64).sum());
    acc.add(DeviceEpoch::kPolar, opt_.frames->last_report().polar_fallback.to(torch::kFloat64).sum());
  }
  lap("frames");
  {
    torch::NoGradGuard guard;
    const auto moved = (stacked_frames(false) - before).pow(2).sum({-2, -1}).sqrt().sum();
    acc.check(moved.isfinite().logical_not(), global_step_, DeviceEpoch::kFrames);
    acc.add(DeviceEpoch::kStep, moved);
    acc.correct += ep_->logits.detach().argmax(1).eq(ep_->yb).sum();
  }
  ep_->logits = torch::Tensor();
  STIEFEL_STOP_NOW;
  lap("diagnostics");
  if (tty_) print_progress(ep_->epoch);
  ++global_step_;
  return std::nullopt;
}

#undef STIEFEL_STOP_NOW

std::optional<nlohmann::json> Run::end_epoch(EpochSums& sums) {
  if (auto stopped = stop_if_diverged()) return stopped;
  const auto host = ep_->acc.sums.to(torch::kCPU);
  const auto h = host.accessor<double, 1>();
  sums.loss = h[DeviceEpoch::kLoss];
  sums.tangent = h[DeviceEpoch::kTangent];
  sums.gauge = h[DeviceEpoch::kGauge];
  sums.capped = h[DeviceEpoch::kCapped];
  sums.polar_fallbacks = h[DeviceEpoch::kPolar];
  sums.step = h[DeviceEpoch::kStep];
  sums.correct = ep_->acc.correct.to(torch::kCPU).item<std::int64_t>();
  sums.frames_seen = frames_seen_;
  frames_seen_ = 0;
  const auto epoch = ep_->epoch;
  ep_.reset();
  if (const auto bad = first_non_finite(named_, false); !bad.empty()) return diverged(bad + " after the epoch", epoch);
  return std::nullopt;
}

std::optional<nlohmann::json> Run::train_epoch(std::int64_t epoch, EpochSums& sums) {
  begin_epoch(epoch);
  for (std::int64_t s = 0; s < steps_per_epoch_; ++s) {
    const auto stopped = guarded([&]() -> std::optional<nlohmann::json> {
      const auto xb = step_input(s);
      if (auto st = step_loss(model_->forward(xb))) return st;
      ep_->loss.backward();
      return step_update();
    });
    if (stopped) return stopped;
  }
  return end_epoch(sums);
}

// The epoch's record: training loss and accuracy, test (and validation) accuracy at the evaluated
// epochs, the frames' isometry and the step diagnostics.
nlohmann::json Run::evaluate_epoch(std::int64_t epoch, const EpochSums& sums) {
  nlohmann::json metrics = {{"epoch", epoch + 1},
                            {"train_loss", sums.loss / double(n_train_)},
                            {"train_acc", double(sums.correct) / double(n_train_)}};
  const std::int64_t eval_chunk = c_.compute == "pinned" ? 256 : 2048;
  const bool evaluated = (epoch + 1) % c_.eval_every == 0 || epoch + 1 == c_.epochs;
  if (evaluated) {
    metrics["test_acc"] = evaluate(model_, data_.test_x, data_.test_y, dev_, eval_chunk).acc;
    if (data_.val_x.defined()) metrics["val_acc"] = evaluate(model_, data_.val_x, data_.val_y, dev_, eval_chunk).acc;
    lap("evaluation");
  }
  std::vector<double> iso;
  {
    const auto e = isometry_error(stacked_frames(false));
    for (std::int64_t i = 0; i < e.size(0); ++i) iso.push_back(e[i].item<double>());
  }
  metrics["isometry_error"] = iso;
  metrics["isometry_error_max"] = *std::max_element(iso.begin(), iso.end());
  const double frame_steps = std::max(1.0, sums.frames_seen);
  metrics["tangent_grad_norm"] = sums.tangent / frame_steps;
  metrics["step_norm"] = sums.step / frame_steps;
  metrics["step_per_gradient"] = sums.tangent > 0 ? sums.step / sums.tangent : 0.0;
  metrics["cap_active_fraction"] = sums.capped / frame_steps;
  metrics["gauge_fraction"] = sums.gauge / frame_steps;
  // Frame steps whose polar factor came from the Gram route after the SVD failed (batched_polar);
  // recorded only where there were any, so that every other record stays as before.
  if (sums.polar_fallbacks > 0) metrics["polar_gram_fallbacks"] = std::int64_t(sums.polar_fallbacks);
  const double window = std::chrono::duration<double>(std::chrono::steady_clock::now() - window_start_).count();
  metrics["seconds"] = window / double(window_epochs_);  // wall seconds per epoch since the last record
  window_start_ = std::chrono::steady_clock::now();
  window_epochs_ = 0;
  return metrics;
}

// The record and the checkpoint of one epoch, as one unit: the checkpoint is written and hashed,
// the record naming its hash replaces the old record, then the checkpoint replaces the old
// checkpoint. A kill in between leaves a record one epoch ahead of a checkpoint it still names; a
// resume recomputes that epoch bit-identically and trims the record to match.
void Run::commit_epoch(std::int64_t epoch, const nlohmann::json& metrics) {
  run_["epochs"].push_back(metrics);
  if (epoch + 1 == c_.epochs) {
    run_["status"] = "completed";
    run_["final"] = metrics;
  }
  run_["stage_seconds"] = stage_seconds_;
  // Serialised in memory, written by io's checked writer: LibTorch's own file writer cannot report
  // a full disk (its destructor throws again while unwinding, which terminates the process).
  const checkpoint::State state{&model_, opt_.adamw.get(), opt_.frames.get()};
  io::PendingFile pending(ckpt_path_, checkpoint::serialise(state, epoch + 1, global_step_, options_));
  auto& hashes = run_["checkpoints"];
  if (!hashes.is_object()) hashes = nlohmann::json::object();
  hashes[std::to_string(epoch + 1)] = io::sha256_file(pending.temporary());
  while (hashes.size() > 2) {  // the last two: the one committed and the one about to be
    std::string oldest = hashes.begin().key();
    for (const auto& [e, h] : hashes.items())
      if (std::stoll(e) < std::stoll(oldest)) oldest = e;
    hashes.erase(oldest);
  }
  write_record();
  pending.commit();
  lap("checkpoint");
  if (c_.quiet) return;
  if (tty_) progress_ << "\r";
  progress_ << "epoch " << epoch + 1 << "/" << c_.epochs << "  loss " << std::setprecision(4)
            << metrics["train_loss"].get<double>() << "  train " << metrics["train_acc"].get<double>();
  if (metrics.contains("test_acc")) progress_ << "  test " << metrics["test_acc"].get<double>();
  progress_ << "  iso " << std::setprecision(2) << metrics["isometry_error_max"].get<double>() << "  "
            << std::setprecision(3) << metrics["seconds"].get<double>() << " s" << std::string(tty_ ? 20 : 0, ' ')
            << "\n";
}

// After a trained epoch: its evaluation where due, then its record and checkpoint.
void Run::close_epoch(std::int64_t epoch, const EpochSums& sums) {
  const bool evaluated = (epoch + 1) % c_.eval_every == 0 || epoch + 1 == c_.epochs;
  if (!evaluated && grok_) return;
  nlohmann::json metrics;
  try {  // a write error of commit_epoch leaves the files as they were
    metrics = evaluate_epoch(epoch, sums);
  } catch (const std::exception& e) {
    record_failure(epoch, error_line(e));
    throw;
  }
  commit_epoch(epoch, metrics);
}

// The image task records every epoch (test accuracy at the evaluated epochs and the last); the
// grokking task records and checkpoints at its evaluated epochs only, so a 20 000-epoch run writes
// 200 of each.
nlohmann::json Run::run_epochs() {
  start_clock();
  for (std::int64_t epoch = start_epoch_; epoch < c_.epochs; ++epoch) {
    if (c_.stop_after_epoch > 0 && epoch >= c_.stop_after_epoch) break;  // the record stays "running"
    EpochSums sums;
    try {
      if (auto stopped = train_epoch(epoch, sums)) return *stopped;
    } catch (const std::exception& e) {
      record_failure(epoch, error_line(e));
      throw;
    }
    close_epoch(epoch, sums);
  }
  return run_;
}

}  // namespace stiefel::training::run_detail
