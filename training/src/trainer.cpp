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

std::vector<nlohmann::json> train_seed_batch(const std::vector<TrainConfig>& configs, std::ostream& progress) {
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
  if (configs.size() == 1) return {train(configs.front(), progress)};

  // A member that cannot start (its folder held by another process, its data or resume refused)
  // stays out, the others train, and the call fails at the end naming it.
  const std::size_t n = configs.size();
  std::vector<std::unique_ptr<Run>> runs;
  std::vector<std::optional<nlohmann::json>> results(n);
  std::vector<std::string> errors;
  std::vector<bool> out(n, false);
  const auto leave = [&](std::size_t i, const std::string& error) {
    errors.push_back(configs[i].out + ": " + error);
    out[i] = true;
  };
  for (std::size_t i = 0; i < n; ++i) {
    runs.push_back(std::make_unique<Run>(configs[i], progress));
    try {
      results[i] = runs[i]->open_folder();
    } catch (const std::exception& e) {
      leave(i, e.what());
    }
  }
  std::vector<std::size_t> to_train;
  nlohmann::json to_train_seeds = nlohmann::json::array();
  for (std::size_t i = 0; i < n; ++i)
    if (!results[i] && !out[i]) {
      to_train.push_back(i);
      to_train_seeds.push_back(configs[i].seed);
    }
  const nlohmann::json batch = {{"runs", std::int64_t(to_train.size())}, {"seeds", to_train_seeds}};
  const std::string malloc = keep_every_freed_block();
  std::vector<std::size_t> active;
  std::vector<std::int64_t> epoch(n, 0);
  for (const auto i : to_train) {
    try {
      runs[i]->set_up();
      runs[i]->resume();
      if (to_train.size() > 1) runs[i]->note_seed_batch(batch, malloc);
      runs[i]->write_header();
    } catch (const std::exception& e) {
      leave(i, e.what());
      continue;
    }
    epoch[i] = runs[i]->start_epoch();
    if (epoch[i] >= configs[i].epochs) {
      results[i] = runs[i]->record();  // nothing left to train
      continue;
    }
    active.push_back(i);
  }
  for (const auto i : active) runs[i]->start_clock();
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  while (!active.empty()) {
    std::vector<EpochSums> sums(n);
    std::vector<bool> stopped(n, false);
    const auto stop = [&](std::size_t i, std::optional<nlohmann::json> record) {
      if (!record) return false;
      results[i] = std::move(record);
      stopped[i] = true;
      return true;
    };
    // The shared part of the epoch: an error there is every active run's, recorded as each run's
    // failure at its epoch (each resumes from its last checkpoint).
    try {
      for (const auto i : active) runs[i]->begin_epoch(epoch[i]);
      // The grokking task takes its whole split in one step per epoch: every run has the same steps.
      for (std::int64_t s = 0; s < runs[active.front()]->steps_per_epoch(); ++s) {
        std::vector<std::size_t> stepping;
        std::vector<Classifier> models;
        std::vector<torch::Tensor> inputs;
        for (const auto i : active)
          if (!stopped[i]) {
            stepping.push_back(i);
            models.push_back(runs[i]->model());
            runs[i]->restart_lap();
            inputs.push_back(runs[i]->step_input(s));
          }
        if (stepping.empty()) break;
        // Each run's stage times: its own phases, and the shared forward and backward whole.
        auto t = Clock::now();
        const auto logits = batched_forward(models, inputs);
        const double forward = seconds_since(t);
        torch::Tensor total;
        for (std::size_t k = 0; k < stepping.size(); ++k) {
          const auto i = stepping[k];
          runs[i]->add_stage("forward", forward);
          runs[i]->restart_lap();
          if (stop(i, runs[i]->guarded([&] { return runs[i]->step_loss(logits[k]); }))) continue;
          total = total.defined() ? total + runs[i]->loss() : runs[i]->loss();
        }
        // One backward for all: the sum hands each run's loss the gradient 1, as its own backward does.
        t = Clock::now();
        if (total.defined()) total.backward();
        const double backward = seconds_since(t);
        for (const auto i : stepping)
          if (!stopped[i]) {
            runs[i]->add_stage("backward", backward);
            runs[i]->restart_lap();
            stop(i, runs[i]->guarded([&] { return runs[i]->step_update(); }));
          }
      }
    } catch (const std::exception& e) {
      const std::string msg = "seed batch: " + error_line(e);
      for (const auto i : active)
        if (!results[i]) runs[i]->record_failure(epoch[i], msg);
      throw;
    }
    // Each run's own end of the epoch: an error there is that run's alone (as when it runs alone:
    // its evaluation's error recorded as its failure, a write error leaving its files as they
    // were); it leaves the batch and the others go on.
    std::vector<std::size_t> still;
    for (const auto i : active) {
      if (stopped[i]) continue;
      try {
        runs[i]->restart_lap();
        if (stop(i, runs[i]->end_epoch(sums[i]))) continue;
      } catch (const std::exception& e) {
        runs[i]->record_failure(epoch[i], e.what());
        leave(i, e.what());
        continue;
      }
      try {
        runs[i]->close_epoch(epoch[i], sums[i]);
      } catch (const std::exception& e) {
        leave(i, e.what());
        continue;
      }
      if (++epoch[i] < configs[i].epochs)
        still.push_back(i);
      else
        results[i] = runs[i]->record();
    }
    active = still;
  }
  if (!errors.empty()) {
    std::string all;
    for (const auto& e : errors) all += (all.empty() ? "" : "; ") + e;
    throw std::runtime_error("seed batch: " + std::to_string(errors.size()) + " of " + std::to_string(n) +
                             " runs did not finish (the others did): " + all);
  }
  std::vector<nlohmann::json> records;
  for (auto& r : results) records.push_back(*r);
  return records;
}

}  // namespace stiefel::training
