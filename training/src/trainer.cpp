// train() and train_seed_batch(): a Run taken through its stages (run.h): configuration, folder,
// set-up, resume, header, epochs.
#include "run.h"

namespace stiefel::training {

using namespace run_detail;

nlohmann::json train(const TrainConfig& config, std::ostream& progress) {
  validate(config);
  Run run(config, progress);
  if (auto result = run.open_folder()) return *result;
  run.set_up();
  run.resume();
  run.write_header();
  return run.run_epochs();
}

namespace {

// The runs of a seed batch must differ only in their seed and folder, and train the grokking model
// under --compute pinned (the model seed_batch.h batches).
void check_seed_batch(const std::vector<TrainConfig>& configs) {
  if (configs.empty()) throw std::invalid_argument("seed batch: no runs");
  std::set<std::uint64_t> seeds;
  std::set<std::string> outs;
  for (const auto& c : configs) {
    validate(c);
    auto options = run_options(c), first = run_options(configs.front());
    options.erase("seed");
    first.erase("seed");
    if (options != first || c.resume != configs.front().resume || c.overwrite != configs.front().overwrite)
      throw std::invalid_argument("--batch-seed: the runs of a seed batch differ only in their seed and folder");
    if (!seeds.insert(c.seed).second)
      throw std::invalid_argument("--batch-seed: seed " + std::to_string(c.seed) + " twice");
    if (!outs.insert(fs::weakly_canonical(c.out).string()).second)
      throw std::invalid_argument("--batch-seed: folder " + c.out + " twice");
  }
  if (configs.front().task != "grok" || attention_route(configs.front()) != "packed")
    throw std::invalid_argument(
        "--batch-seed: seed batching trains the grokking model under --compute pinned (the model seed_batch.h "
        "batches); "
        "task " +
        configs.front().task + ", compute " + configs.front().compute);
}

// Many runs of the grokking model through one batched forward and one backward per step. A member
// that cannot start (its folder held by another process, its data or resume refused) stays out,
// the others train, and the batch fails at the end naming it.
class SeedBatch {
 public:
  SeedBatch(const std::vector<TrainConfig>& configs, std::ostream& progress)
      : configs_(configs), n_(configs.size()), results_(n_), out_(n_, false), epoch_(n_, 0) {
    for (std::size_t i = 0; i < n_; ++i) runs_.push_back(std::make_unique<Run>(configs_[i], progress));
  }

  // Opens every folder, then sets up, resumes and writes the header of each run left to train.
  void start() {
    for (std::size_t i = 0; i < n_; ++i) try {
        results_[i] = runs_[i]->open_folder();
      } catch (const std::exception& e) {
        leave(i, e.what());
      }
    std::vector<std::size_t> to_train;
    nlohmann::json seeds = nlohmann::json::array();
    for (std::size_t i = 0; i < n_; ++i)
      if (!results_[i] && !out_[i]) {
        to_train.push_back(i);
        seeds.push_back(configs_[i].seed);
      }
    const nlohmann::json batch = {{"runs", std::int64_t(to_train.size())}, {"seeds", seeds}};
    const std::string malloc = keep_every_freed_block();
    for (const auto i : to_train) {
      try {
        runs_[i]->set_up();
        runs_[i]->resume();
        if (to_train.size() > 1) runs_[i]->note_seed_batch(batch, malloc);
        runs_[i]->write_header();
      } catch (const std::exception& e) {
        leave(i, e.what());
        continue;
      }
      epoch_[i] = runs_[i]->start_epoch();
      if (epoch_[i] >= configs_[i].epochs) {
        results_[i] = runs_[i]->record();  // nothing left to train
        continue;
      }
      active_.push_back(i);
    }
    for (const auto i : active_) runs_[i]->start_clock();
  }

  // Epoch after epoch until every active run has finished or left.
  void train_epochs() {
    while (!active_.empty()) {
      sums_.assign(n_, EpochSums{});
      stopped_.assign(n_, false);
      shared_epoch();
      end_epochs();
    }
  }

  // The records, in the order of the configurations; a run that did not finish fails the batch.
  std::vector<nlohmann::json> records() const {
    if (!errors_.empty()) {
      std::string all;
      for (const auto& e : errors_) all += (all.empty() ? "" : "; ") + e;
      throw std::runtime_error("seed batch: " + std::to_string(errors_.size()) + " of " + std::to_string(n_) +
                               " runs did not finish (the others did): " + all);
    }
    std::vector<nlohmann::json> records;
    for (const auto& r : results_) records.push_back(*r);
    return records;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

  void leave(std::size_t i, const std::string& error) {
    errors_.push_back(configs_[i].out + ": " + error);
    out_[i] = true;
  }
  // Run I's record, where a phase ended it (diverged): it stops stepping.
  bool stop(std::size_t i, std::optional<nlohmann::json> record) {
    if (!record) return false;
    results_[i] = std::move(record);
    stopped_[i] = true;
    return true;
  }

  // The shared part of the epoch: an error there is every active run's, recorded as each run's
  // failure at its epoch (each resumes from its last checkpoint).
  void shared_epoch() {
    try {
      for (const auto i : active_) runs_[i]->begin_epoch(epoch_[i]);
      // The grokking task takes its whole split in one step per epoch: every run has the same steps.
      for (std::int64_t s = 0; s < runs_[active_.front()]->steps_per_epoch(); ++s)
        if (!shared_step(s)) break;
    } catch (const std::exception& e) {
      const std::string msg = "seed batch: " + error_line(e);
      for (const auto i : active_)
        if (!results_[i]) runs_[i]->record_failure(epoch_[i], msg);
      throw;
    }
  }

  // Step S of every run still stepping: one batched forward, each run's loss, one backward for all,
  // each run's update. Returns false where no run steps any more.
  bool shared_step(std::int64_t s) {
    std::vector<std::size_t> stepping;
    std::vector<Classifier> models;
    std::vector<torch::Tensor> inputs;
    for (const auto i : active_)
      if (!stopped_[i]) {
        stepping.push_back(i);
        models.push_back(runs_[i]->model());
        runs_[i]->restart_lap();
        inputs.push_back(runs_[i]->step_input(s));
      }
    if (stepping.empty()) return false;
    // Each run's stage times: its own phases, and the shared forward and backward whole.
    auto t = Clock::now();
    const auto logits = batched_forward(models, inputs);
    const double forward = seconds_since(t);
    torch::Tensor total;
    for (std::size_t k = 0; k < stepping.size(); ++k) {
      const auto i = stepping[k];
      runs_[i]->add_stage("forward", forward);
      runs_[i]->restart_lap();
      if (stop(i, runs_[i]->guarded([&] { return runs_[i]->step_loss(logits[k]); }))) continue;
      total = total.defined() ? total + runs_[i]->loss() : runs_[i]->loss();
    }
    // One backward for all: the sum hands each run's loss the gradient 1, as its own backward does.
    t = Clock::now();
    if (total.defined()) total.backward();
    const double backward = seconds_since(t);
    for (const auto i : stepping)
      if (!stopped_[i]) {
        runs_[i]->add_stage("backward", backward);
        runs_[i]->restart_lap();
        stop(i, runs_[i]->guarded([&] { return runs_[i]->step_update(); }));
      }
    return true;
  }

  // Each run's own end of the epoch: an error there is that run's alone (as when it runs alone: its
  // evaluation's error recorded as its failure, a write error leaving its files as they were); it
  // leaves the batch and the others go on.
  void end_epochs() {
    std::vector<std::size_t> still;
    for (const auto i : active_) {
      if (stopped_[i]) continue;
      try {
        runs_[i]->restart_lap();
        if (stop(i, runs_[i]->end_epoch(sums_[i]))) continue;
      } catch (const std::exception& e) {
        runs_[i]->record_failure(epoch_[i], e.what());
        leave(i, e.what());
        continue;
      }
      try {
        runs_[i]->close_epoch(epoch_[i], sums_[i]);
      } catch (const std::exception& e) {
        leave(i, e.what());
        continue;
      }
      if (++epoch_[i] < configs_[i].epochs)
        still.push_back(i);
      else
        results_[i] = runs_[i]->record();
    }
    active_ = still;
  }

  const std::vector<TrainConfig>& configs_;
  const std::size_t n_;
  std::vector<std::unique_ptr<Run>> runs_;
  std::vector<std::optional<nlohmann::json>> results_;
  std::vector<std::string> errors_;
  std::vector<bool> out_, stopped_;
  std::vector<std::int64_t> epoch_;
  std::vector<std::size_t> active_;
  std::vector<EpochSums> sums_;
};

}  // namespace

std::vector<nlohmann::json> train_seed_batch(const std::vector<TrainConfig>& configs, std::ostream& progress) {
  check_seed_batch(configs);
  if (configs.size() == 1) return {train(configs.front(), progress)};
  SeedBatch batch(configs, progress);
  batch.start();
  batch.train_epochs();
  return batch.records();
}

}  // namespace stiefel::training
