// A run's summary as the tables read it: its final figures, late means, grokking epochs, mean
// curves, and the record's shape checked before any of it is read.
#include "table_detail.h"

namespace stiefel::reports {
namespace table_detail {

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const auto n = x.size();
  return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

// Mean of FIELD over the records in the last quarter of the run (epoch > 0.75·epochs).
double late_mean(const json& run, const char* field) {
  const auto& ep = run["epochs"];
  const double epochs = run["config"]["epochs"].get<double>();
  double s = 0;
  int k = 0;
  for (const auto& e : ep)
    if (e["epoch"].get<double>() > 0.75 * epochs && e.contains(field)) {
      s += e[field].get<double>();
      ++k;
    }
  return k ? s / k : std::nan("");
}

double mean_field(const json& run, const char* field) {
  double s = 0;
  int k = 0;
  for (const auto& e : run["epochs"])
    if (e.contains(field)) {
      s += e[field].get<double>();
      ++k;
    }
  return k ? s / k : std::nan("");
}

json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

Summary summarise(const json& run, const std::string& analysis) {
  Summary s;
  json r;
  s.completed = run.value("status", "") == "completed";
  if (!s.completed) return s;
  const auto& f = run["final"];
  r["test_acc"] = 100 * f["test_acc"].get<double>();
  r["train_acc"] = 100 * f["train_acc"].get<double>();
  // Accuracy on the held-out validation split of the training images (runs with val_n > 0).
  if (f.contains("val_acc") && f["val_acc"].is_number()) r["val_acc"] = 100 * f["val_acc"].get<double>();
  r["iso_final"] = f["isometry_error_max"];
  double iso_max = 0;
  for (const auto& e : run["epochs"]) iso_max = std::max(iso_max, e["isometry_error_max"].get<double>());
  r["iso_max_run"] = iso_max;
  r["seconds_per_epoch"] = number_or_null(mean_field(run, "seconds"));
  r["late_step_per_gradient"] = number_or_null(late_mean(run, "step_per_gradient"));
  r["late_tangent_grad_norm"] = number_or_null(late_mean(run, "tangent_grad_norm"));
  r["gauge_fraction"] = number_or_null(mean_field(run, "gauge_fraction"));
  r["step_norm_mean"] = number_or_null(mean_field(run, "step_norm"));
  r["cap_active_fraction"] = number_or_null(mean_field(run, "cap_active_fraction"));
  s.metric = r["test_acc"];
  if (analysis == "grok") {
    const auto g = grok_metrics(run);
    auto opt = [](const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); };
    r["memorized"] = opt(g.memorized);
    r["grokked"] = opt(g.grokked);
    r["sustained"] = opt(g.sustained);
    r["end_acc"] = g.end_acc;
    r["tail_mean"] = g.tail_mean;
    r["min_train_after_memorized"] = number_or_null(g.min_train_after_memorized);
    s.metric = g.tail_mean;
  }
  s.record = r;
  return s;
}

// Mean curve over seeds at the epochs every completed run recorded. Test (and validation) accuracy
// exist only at evaluated epochs: they are null elsewhere, and so is the min–max band of the test
// accuracy over seeds.
json mean_curve(const std::vector<json>& runs) {
  struct Point {
    double train = 0, test = 0, val = 0, iso = 0;
    double test_min = std::numeric_limits<double>::infinity(), test_max = -std::numeric_limits<double>::infinity();
    int count = 0, tests = 0, vals = 0;
  };
  std::map<std::int64_t, Point> acc;
  bool any_val = false;
  for (const auto& run : runs)
    for (const auto& e : run["epochs"]) {
      auto& a = acc[e["epoch"].get<std::int64_t>()];
      a.train += e["train_acc"].get<double>();
      a.iso += e["isometry_error_max"].get<double>();
      ++a.count;
      if (e.contains("test_acc") && e["test_acc"].is_number()) {
        const double v = e["test_acc"].get<double>();
        a.test += v;
        a.test_min = std::min(a.test_min, v);
        a.test_max = std::max(a.test_max, v);
        ++a.tests;
      }
      if (e.contains("val_acc") && e["val_acc"].is_number()) {
        a.val += e["val_acc"].get<double>();
        ++a.vals;
        any_val = true;
      }
    }
  json c = {{"epoch", json::array()},        {"train_acc", json::array()},    {"test_acc", json::array()},
            {"test_acc_min", json::array()}, {"test_acc_max", json::array()}, {"isometry_error_max", json::array()}};
  if (any_val) c["val_acc"] = json::array();
  for (const auto& [ep, a] : acc) {
    if (a.count < int(runs.size())) continue;
    const bool tested = a.tests == a.count;
    c["epoch"].push_back(ep);
    c["train_acc"].push_back(a.train / a.count);
    c["test_acc"].push_back(tested ? json(a.test / a.count) : json(nullptr));
    c["test_acc_min"].push_back(tested ? json(a.test_min) : json(nullptr));
    c["test_acc_max"].push_back(tested ? json(a.test_max) : json(nullptr));
    c["isometry_error_max"].push_back(a.iso / a.count);
    if (any_val) c["val_acc"].push_back(a.vals == a.count ? json(a.val / a.count) : json(nullptr));
  }
  return c;
}

std::string dataset_name(const json& run) {
  if (run.contains("dataset") && run["dataset"].contains("name")) return run["dataset"]["name"];
  return run["config"].value("task", "") == "grok" ? "modular addition (a + b) mod 97" : "unknown";
}

// A run's wall time as its record states it: each epoch record's seconds per epoch times the epochs
// since the record before it (one for the image task, eval_every for the grokking task).
double recorded_seconds(const json& rec) {
  double total = 0, last = 0;
  for (const auto& e : rec.at("epochs")) {
    const double epoch = e.at("epoch").get<double>();
    if (e.contains("seconds") && e["seconds"].is_number()) total += e["seconds"].get<double>() * (epoch - last);
    last = epoch;
  }
  return total;
}

// The numeric values of field K over the summaries that hold one.
std::vector<double> values_of(const std::vector<json>& records, const char* k) {
  std::vector<double> v;
  for (const auto& r : records)
    if (r.contains(k) && r[k].is_number()) v.push_back(r[k].get<double>());
  return v;
}

}  // namespace table_detail

using namespace table_detail;

void check_run_record(const json& run, const std::string& path) {
  auto bad = [&](const std::string& what) { throw ExperimentError(path + ": " + what); };
  const auto v = schema::run_record().violations(run, 1);
  if (!v.empty()) bad(v[0] + " (" + schema::run_record().name() + "; not a run record of `stiefel train`?)");
  if (const auto why = schema::run_record_sequence_violation(run); !why.empty()) bad(why);
  // Its parts agree: the final metrics are its last epoch's (as `stiefel train` writes them), and the
  // settings its options state as given are the ones its config states as run, where the trainer
  // resolves nothing between them. An edited arm or a forged final result is refused, never averaged.
  const auto& epochs = run["epochs"];
  if (run.contains("final") && (epochs.empty() || run["final"] != epochs.back()))
    bad("its final metrics are not its last epoch's (final is the last epoch's record, as `stiefel train` writes it)");
  if (run.contains("options"))
    for (const char* k : {"task", "arm", "seed", "epochs", "device", "init_scale", "threads", "val_n"})
      if (run["options"].contains(k) && run["config"].contains(k) && run["options"][k] != run["config"][k])
        bad(std::string("its options state ") + k + " " + run["options"][k].dump() + " but its config ran " +
            run["config"][k].dump());
}

GrokMetrics grok_metrics(const json& run, int sustained_windows) {
  GrokMetrics g;
  const auto& ep = run.at("epochs");
  const double epochs = run.at("config").at("epochs").get<double>();
  int streak = 0;
  std::int64_t streak_start = 0;
  double tail = 0;
  int tail_n = 0;
  for (const auto& e : ep) {
    const auto epoch = e.at("epoch").get<std::int64_t>();
    const double train = e.at("train_acc").get<double>();
    if (!g.memorized && train >= 0.99) g.memorized = epoch;
    if (g.memorized && epoch > *g.memorized)
      g.min_train_after_memorized =
          std::isnan(g.min_train_after_memorized) ? train : std::min(g.min_train_after_memorized, train);
    if (!e.contains("test_acc")) continue;
    const double test = e["test_acc"].get<double>();
    if (test >= 0.95) {
      if (!g.grokked) g.grokked = epoch;
      if (streak++ == 0) streak_start = epoch;
      if (streak == sustained_windows && !g.sustained) g.sustained = streak_start;
    } else {
      streak = 0;
    }
    g.end_acc = test;
    if (double(epoch) > 0.75 * epochs) {
      tail += test;
      ++tail_n;
    }
  }
  g.tail_mean = tail_n ? tail / tail_n : std::nan("");
  return g;
}

}  // namespace stiefel::reports
