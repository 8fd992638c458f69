#include <stiefel/reports/ledger.h>

#include <stiefel/reports/experiment.h>
#include <stiefel/reports/tables.h>

#include <stiefel/schema.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace stiefel::reports {
namespace {

using nlohmann::json;

// The arm (or, with "contrast", the named contrast) a claim's reference points at.
const json* find_arm(const json& table, const json& ref) {
  for (const auto& g : table["groups"])
    if (g["id"] == ref.value("group", "main")) {
      if (ref.contains("contrast")) {
        for (const auto& c : g["contrasts"])
          if (c["id"] == ref["contrast"]) return &c;
      } else {
        for (const auto& a : g["arms"])
          if (a["id"] == ref["arm"]) return &a;
      }
    }
  return nullptr;
}

// Looks up "a.b.c" in an arm; NaN when absent.
double field(const json& arm, const std::string& path) {
  const json* cur = &arm;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const auto key = path.substr(start, dot - start);
    if (!cur->is_object() || !cur->contains(key)) return std::nan("");
    cur = &(*cur)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur->is_number() ? cur->get<double>() : std::nan("");
}

std::string num(double v) {
  std::ostringstream os;
  if (std::fabs(v) >= 1e-3 && std::fabs(v) < 1e5)
    os << std::setprecision(4) << v;
  else
    os << std::setprecision(3) << v;
  return os.str();
}

struct Evidence {
  std::string verdict = "not run", ours, detail;
};

// A rule's bounds are decimals it includes ("≤", "≥", "within"), so a value on a bound meets it
// whatever the binary rounding of the decimals and of the arithmetic that made the value: 3 of 5
// seeds is within 0.2 of 0.8, though |0.6 − 0.8| rounds to 0.2 + 7e-17. The slack, a few units in
// the last place of the operands, is far below any figure a claim states.
bool at_most(double a, double b, double magnitude) {
  return a <= b + 8 * std::numeric_limits<double>::epsilon() * magnitude;
}

// A sign rule (positive, negative, null) on the arm's paired difference against the baseline: its
// verdict into E, or nothing where the table has no CI. False where the table decides nothing.
bool judge_sign(Evidence& e, const std::string& type, const json& table, const json& c) {
  const bool has_ci = c.contains("ci_low") && c.contains("ci_high");
  if (!has_ci) return false;
  const double lo = c["ci_low"], hi = c["ci_high"];
  // Image tables' accuracies are percentages, so their differences are percentage points; the
  // grokking tables' tail means are fractions, and so are their differences.
  const bool percent = table.value("metric", std::string()).find("(%)") != std::string::npos;
  e.ours += std::string(percent ? " pp" : "") + ", CI [" + num(lo) + ", " + num(hi) + "]";
  if (c.contains("t")) e.ours += ", t = " + num(c["t"].get<double>());
  if (c.contains("p")) e.ours += ", p = " + num(c["p"].get<double>());
  e.ours += ", wins " + std::to_string(c["wins"].get<int>()) + "/" + std::to_string(c["pairs"].get<int>());
  // A difference is significant when both of the paper's tests say so: the 95% bootstrap CI
  // excludes 0 and the paired t-test rejects at the 5% level. With three to five pairs the
  // percentile interval is little more than the range of the differences (3 pairs, all of one
  // sign, clear 0 at p = 0.22), so the interval alone would decide claims the t-test does not.
  // Without a t (differences identical on every seed) the interval decides.
  const bool t_rejects = !c.contains("p") || c["p"].get<double>() < 0.05;
  const bool pos = lo > 0 && t_rejects, neg = hi < 0 && t_rejects;
  if (type == "positive") e.verdict = pos ? "confirmed" : neg ? "refuted" : "not confirmed";
  if (type == "negative") e.verdict = neg ? "confirmed" : pos ? "refuted" : "not confirmed";
  if (type == "null") e.verdict = (!pos && !neg) ? "confirmed" : "refuted";
  return true;
}

// A value rule (below, above, within and their ratios) on COMPARE: its verdict into E. False where
// the table decides nothing.
bool judge_value(Evidence& e, const std::string& type, const json& rule, const json& c, double compare) {
  const double bound = rule["value"].get<double>();
  const double magnitude = std::max(std::fabs(compare), std::fabs(bound));
  // "value ± tolerance": a value outside contradicts the claim.
  const auto within = [&](double value) {
    return at_most(std::fabs(compare - value), rule["tolerance"].get<double>(),
                   std::max(std::fabs(compare), std::fabs(value)));
  };
  bool met = false;
  if (type == "below" || type == "ratio_below") met = at_most(compare, bound, magnitude);
  if (type == "above" || type == "ratio_above") met = at_most(bound, compare, magnitude);
  if (type == "within") met = within(bound);
  // A flatness criterion that also asks the paired t-test not to tell the arms apart (§4.7: |Δ| <
  // 0.2 pp and p > 0.5): both halves must hold, under every reading. Without a t statistic (the
  // same difference on every seed) p is 1 where that difference is 0, else 0.
  bool p_holds = true;
  if (type == "within" && rule.contains("p_above")) {
    if (!c.contains("diff_mean")) return false;
    const double p = c.contains("p") ? c["p"].get<double>() : c["diff_mean"].get<double>() == 0 ? 1.0 : 0.0;
    e.ours += ", p = " + num(p);
    p_holds = p > rule["p_above"].get<double>();
    met = met && p_holds;
  }
  e.verdict = met ? "confirmed" : "refuted";
  // Where the paper gives the value more than once, each comparison is shown, the claim's own first.
  const auto shown = [&](double value, const std::string& where) {
    return "; against " + num(value) + " (" + where + "): " + (within(value) ? "within" : "outside");
  };
  if (type == "within" && (rule.contains("readings") || rule.contains("runs"))) e.ours += shown(bound, "as claimed");
  // The paper's other statements of the same value (its readings: "± 0.50" in a table, "± 0.61" in
  // its text): judged the same way against each, a verdict that differs between them settles
  // nothing.
  if (type == "within" && rule.contains("readings")) {
    for (const auto& reading : rule["readings"]) {
      const double other = reading["value"].get<double>();
      e.ours += shown(other, reading["where"].get<std::string>());
      if ((within(other) && p_holds) != met) e.verdict = "not confirmed";
    }
  }
  // The paper's other runs at the same configuration (its rerun ending at 97.3% beside Table 4's
  // 61.1%): run-to-run spread, not two statements of one value, so our run agrees with the claim
  // where it is within the tolerance of any of the paper's runs, and contradicts it only outside
  // every one.
  if (type == "within" && rule.contains("runs")) {
    for (const auto& run : rule["runs"]) {
      const double other = run["value"].get<double>();
      e.ours += shown(other, run["where"].get<std::string>());
      if (within(other) && p_holds) e.verdict = "confirmed";
    }
  }
  return true;
}

// The count of an arm's runs that reached the grokking event whose median epoch FIELD is (memorized,
// grokked, sustained), or nullptr where FIELD is no such epoch.
const char* event_count(const std::string& field) {
  if (field == "median_memorized_epoch") return "memorized_count";
  if (field == "median_grok_epoch") return "grokked_count";
  if (field == "median_sustained_epoch") return "sustained_count";
  return nullptr;
}

// "in 20000 epochs": the length of the table's runs.
std::string in_epochs(const json& table) {
  return table.contains("epochs") ? " in " + table["epochs"].dump() + " epochs" : std::string();
}

// "2 of 5 runs": K of an arm's N completed runs.
std::string runs_of(std::int64_t k, std::int64_t n) {
  return std::to_string(k) + " of " + std::to_string(n) + (n == 1 ? " run" : " runs");
}

// An event's epoch is a median over the runs that reached it. Where no completed run of the arm
// reached it the median is absent, and that is a result: the event did not happen in the E epochs
// run. It refutes a claim that the event happens by an epoch the runs went past ("below" X, or
// "within" X ± t, with X (+ t) ≤ E); a bound beyond E, or a claim that it happens only after an
// epoch ("above"), is not confirmed, since the event may come later. False where COUNT is not 0 or
// the arm has no completed run.
bool judge_never(Evidence& e, const std::string& type, const json& rule, const json& arm, const std::string& count,
                 const json& table) {
  const auto n = arm.value("n", std::int64_t(0));
  if (!arm.contains(count) || arm[count] != 0 || n < 1) return false;
  e.ours = "never (" + runs_of(0, n) + in_epochs(table) + ")";
  double by = rule["value"].get<double>();
  if (type == "within") by += rule["tolerance"].get<double>();
  const bool past = table.contains("epochs") && at_most(by, table["epochs"].get<double>(), by);
  e.verdict = (type == "within" || type == "below") && past ? "refuted" : "not confirmed";
  // A paper run that never reached the event either ("never_agrees": B2-frz's first run never groks,
  // its rerun at epoch 12 600): never is one of the paper's own outcomes.
  if (rule.contains("never_agrees")) {
    e.ours += ", as " + rule["never_agrees"].get<std::string>();
    e.verdict = "confirmed";
  }
  return true;
}

// The slingshot field, shallowest_collapse: the largest over an arm's runs that memorised of each
// run's lowest training accuracy after memorising. Where none of its completed runs memorised there
// is nothing to judge a collapse on: not confirmed. False where some did (the field is then missing,
// not absent by design) or the arm has no completed run.
bool judge_none_memorised(Evidence& e, const json& arm, const json& table) {
  const auto n = arm.value("n", std::int64_t(0));
  if (n < 1 || arm.value("memorized_count", n) != 0) return false;
  e.ours = "no run memorised (" + runs_of(0, n) + in_epochs(table) + ")";
  e.verdict = "not confirmed";
  return true;
}

// A grokking record holds the evaluated epochs only (every 100th at the paper's budget), so each
// run's low is an upper bound on its minimum: a "below" bound the field meets is met, and one it
// misses may be met between two records, which is not refuted. Over fewer runs than the arm
// completed (the others never memorised) a claim about every seed is not confirmed.
void qualify_collapse(Evidence& e, const json& arm, const json& table) {
  const auto n = arm.value("n", std::int64_t(0)), k = arm.value("memorized_count", n);
  if (e.verdict == "refuted") {
    e.ours += " (read at the evaluated epochs: the lowest may lie between two of them)";
    e.verdict = "not confirmed";
  }
  if (k < n) {
    e.ours += " (over " + runs_of(k, n) + "; the others never memorised" + in_epochs(table) + ")";
    if (e.verdict == "confirmed") e.verdict = "not confirmed";
  }
}

// "table6 [paper], D, 12 seeds": where a verdict's evidence comes from.
std::string evidence_detail(const json& table, const std::string& datasets, std::int64_t seeds) {
  return table["experiment"].get<std::string>() + " [" + table["profile"].get<std::string>() + "], " + datasets + ", " +
         std::to_string(seeds) + (seeds == 1 ? " seed" : " seeds");
}

Evidence judge_table(const json& claim, const json& table) {
  Evidence e;
  const auto& ref = claim["ref"];
  const json* arm = find_arm(table, ref);
  if (!arm) return e;
  const std::string f = ref["field"];
  const double v = field(*arm, f);
  std::string ds;
  for (const auto& d : table["datasets"]) ds += (ds.empty() ? "" : ", ") + d.get<std::string>();
  // A claim about long runs (e.g. grokking by epoch 20 000) is not tested by shorter ones: the
  // measurement is shown, and decides nothing.
  if (claim.contains("min_epochs") && table.contains("epochs") &&
      table["epochs"].get<double>() < claim["min_epochs"].get<double>()) {
    e.verdict = "untestable";
    e.ours = "runs of " + table["epochs"].dump() + " epochs cannot test a claim about " + claim["min_epochs"].dump() +
             "-epoch runs";
    if (std::isfinite(v))
      e.ours += " (measured: " + (ref.contains("scale") ? num(ref["scale"].get<double>() * v) : num(v)) + ")";
    e.detail = table["experiment"].get<std::string>() + " [" + table["profile"].get<std::string>() + "], " + ds;
    return e;
  }
  const auto& rule = claim["rule"];
  const std::string type = rule["type"];
  const char* count = event_count(f);
  if ((count || (rule.contains("denominator") && event_count(rule["denominator"].value("field", "")))) &&
      (type == "ratio_above" || type == "ratio_below"))
    throw ExperimentError("claims: " + claim["id"].get<std::string>() +
                          ": a ratio of a grokking event's epoch is undefined where the event never happened; "
                          "state the claim on the epoch itself");
  const bool collapse = f == "shallowest_collapse";
  if (collapse && type != "below")
    throw ExperimentError("claims: " + claim["id"].get<std::string>() +
                          ": shallowest_collapse is an upper bound on the runs' lowest training accuracy (read at the "
                          "recorded epochs); only a \"below\" rule can judge it");
  if (!std::isfinite(v)) {  // absent: an event no run reached is a result, any other field decides nothing
    const bool decided =
        collapse ? judge_none_memorised(e, *arm, table) : count && judge_never(e, type, rule, *arm, count, table);
    if (decided) e.detail = evidence_detail(table, ds, arm->value("n", std::int64_t(0)));
    return e;
  }
  e.ours = num(v);
  double compare = v;
  if (ref.contains("scale") && (type == "positive" || type == "negative" || type == "null"))
    throw ExperimentError("claims: " + claim["id"].get<std::string>() +
                          ": a scale applies to a value rule (within, above, below, ratio), not to the sign of a "
                          "paired difference's CI");
  if (rule.contains("denominator") && rule["denominator"].contains("scale"))
    throw ExperimentError("claims: " + claim["id"].get<std::string>() +
                          ": scale the numerator of a ratio, not its "
                          "denominator");
  if (ref.contains("scale")) {  // a normalisation the claim states: the field times the factor is judged
    const double k = ref["scale"].get<double>();
    compare = k * v;
    e.ours = num(compare) + " (" + num(k) + " × " + num(v) + ")";
  }
  // A median over the runs that reached the event, where some did not: how many it is over.
  if (count && arm->contains(count) && (*arm)[count].get<std::int64_t>() < arm->value("n", std::int64_t(0)))
    e.ours += " (" + runs_of((*arm)[count].get<std::int64_t>(), arm->value("n", std::int64_t(0))) +
              "; the others never" + in_epochs(table) + ")";
  if (type == "ratio_above" || type == "ratio_below") {
    const json* other = find_arm(table, rule["denominator"]);
    if (!other) return e;
    const double w = field(*other, rule["denominator"]["field"]);
    if (!std::isfinite(w) || w == 0) return e;
    compare /= w;
    e.ours = num(compare) + " (" + e.ours + " / " + num(w) + ")";
  }
  // A value that overflowed (a scale times a large field, a ratio over a tiny denominator) meets
  // every bound and none: it decides nothing.
  if (!std::isfinite(compare)) {
    e.ours += " (not finite: decides nothing)";
    return e;
  }
  const json c = arm->value("vs_baseline", json::object());
  if (type == "positive" || type == "negative" || type == "null") {
    if (!judge_sign(e, type, table, c)) return e;
  } else if (type == "below" || type == "ratio_below" || type == "above" || type == "ratio_above" || type == "within") {
    if (!judge_value(e, type, rule, c, compare)) return e;
    if (collapse) qualify_collapse(e, *arm, table);
  } else {
    throw ExperimentError("claims: " + claim["id"].get<std::string>() + ": unknown rule type \"" + type + "\"");
  }
  e.detail = evidence_detail(table, ds, arm->value("n", std::int64_t(0)));
  return e;
}

// The arms whose seeds a reference reads: the arm (and the table's baseline when the field is a
// difference against it), or a named contrast's arm and baseline.
void referenced_arms(const json& table, const json& ref, std::vector<const json*>& out) {
  for (const auto& g : table["groups"]) {
    if (g["id"] != ref.value("group", "main")) continue;
    auto add = [&](const json& id) {
      for (const auto& a : g["arms"])
        if (a["id"] == id) out.push_back(&a);
    };
    if (ref.contains("contrast")) {
      for (const auto& c : g["contrasts"])
        if (c["id"] == ref["contrast"]) {
          add(c["arm"]);
          add(c["baseline"]);
        }
    } else {
      add(ref["arm"]);
      const std::string f = ref.value("field", "");
      if (f.rfind("vs_baseline", 0) == 0 && !table.value("baseline", "").empty()) add(table["baseline"]);
    }
  }
}

// Seeds completed by the arms a claim reads: the fewest completed (k) of the most planned (N); complete
// when every such arm has completed every seed of its grid.
struct SeedCount {
  std::int64_t completed = 0, planned = 0, diverged = 0;
  bool complete = false;
};

SeedCount claim_seeds(const json& claim, const json& table) {
  std::vector<const json*> arms;
  referenced_arms(table, claim["ref"], arms);
  const auto& rule = claim["rule"];
  if (rule.contains("denominator")) referenced_arms(table, rule["denominator"], arms);
  SeedCount s;
  if (arms.empty()) return s;
  s.complete = true;
  s.completed = std::numeric_limits<std::int64_t>::max();
  for (const json* a : arms) {
    // A diverged run is finished (a result, counted in the table), so it does not hold a verdict open.
    const auto n = a->value("n", std::int64_t(0)), planned = a->value("planned", std::int64_t(0));
    const auto finished = a->value("finished", n);
    s.diverged += std::int64_t(a->value("diverged", json::array()).size());
    s.completed = std::min(s.completed, n);
    s.planned = std::max(s.planned, planned);
    s.complete = s.complete && planned > 0 && finished >= planned;
  }
  return s;
}

// Whether a table was run at the budget a claim is stated at: the paper profile's grid in every train
// setting but data and device, with the same seeds; or, for a claim that lists in "budget" the only
// settings it depends on, the paper's values of those settings and the same seeds.
bool at_claim_budget(const json& claim, const json& table) {
  if (!claim.contains("budget")) return table.value("at_paper_budget", false);
  if (!table.contains("differs_from_paper")) return false;
  for (const auto& d : table["differs_from_paper"]) {
    // "runs": the profile has runs the paper's grid lacks, whose settings were compared with nothing.
    if (d == "seeds" || d == "runs") return false;
    for (const auto& k : claim["budget"])
      if (k == d) return false;
  }
  return true;
}

// What claims.schema.json cannot say of a claim's "budget": its entries are settings of `stiefel
// train` (or "seeds") that make a budget, not where a run ran.
void check_claim_budget(const json& claim, const std::string& source) {
  if (!claim.contains("budget")) return;
  const std::string where = source + ": claim " + claim["id"].get<std::string>() + ": \"budget\" ";
  for (const auto& k : claim["budget"]) {
    const std::string key = k;
    if (key == "data" || key == "device")
      throw ExperimentError(where + "\"" + key + "\" says where a run ran, not its budget");
    if (key != "seeds" && !is_train_option(key))
      throw ExperimentError(where + "\"" + key + "\" is not a `stiefel train` setting");
  }
}

// The claims file against claims.schema.json: every key known, every field the ledger reads present
// with its type, every "field" one that report tables have. Throws ExperimentError("SOURCE: claim ID:
// POINTER: what"), naming the claim where the pointer lies inside one.
void check_claims_file(const json& claims_file, const std::string& source) {
  const auto v = schema::claims().violations(claims_file, 1);
  if (v.empty()) return;
  std::string where = source + ": ";
  const std::string prefix = "/claims/";
  if (v[0].rfind(prefix, 0) == 0) {
    const std::size_t index = std::stoul(v[0].substr(prefix.size()));
    const auto& c = claims_file["claims"][index];
    if (c.is_object() && c.contains("id") && c["id"].is_string()) where += "claim " + c["id"].get<std::string>() + ": ";
  }
  throw ExperimentError(where + v[0] + " (" + schema::claims().name() + ")");
}

// Each claim once: two rows of one id (with contradictory verdicts, perhaps) would make the ledger
// say two things of one claim.
void check_unique_ids(const json& claims_file, const std::string& source) {
  std::set<std::string> ids;
  for (const auto& c : claims_file["claims"])
    if (!ids.insert(c["id"].get<std::string>()).second)
      throw ExperimentError(source + ": claim " + c["id"].get<std::string>() +
                            " appears twice (each claim is one row of the ledger)");
}

// "a, b" ("none" for an empty list).
std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? std::string("none") : s;
}

// The names one experiment gives: its groups, and for each group the ids of its arms or contrasts.
struct ExperimentNames {
  std::string subject;  // "experiment t has", "the paper-profile results of t (results/t-paper) have"
  std::vector<std::string> groups;
  std::function<std::vector<std::string>(const std::string& group, const char* list)> ids;
};

// REF (a claim's "ref", or a ratio's denominator) names a group of NAMES and an arm or contrast of
// that group; otherwise ExperimentError("WHERE experiment E has no arm \"X\" (its arms: a, b)").
void check_reference(const std::string& where, const ExperimentNames& names, const json& ref) {
  const std::string group = ref.value("group", "main");
  if (std::find(names.groups.begin(), names.groups.end(), group) == names.groups.end())
    throw ExperimentError(where + names.subject + " no group \"" + group + "\" (its groups: " + joined(names.groups) +
                          ")");
  const char* list = ref.contains("contrast") ? "contrasts" : "arms";
  const std::string id = ref.contains("contrast") ? ref["contrast"] : ref["arm"];
  const auto have = names.ids(group, list);
  if (std::find(have.begin(), have.end(), id) == have.end())
    throw ExperimentError(where + names.subject + " no " + (list[0] == 'c' ? "contrast" : "arm") + " \"" + id +
                          "\" (its " + list + ": " + joined(have) + ")");
}

// The references of an empirical CLAIM (its ref, and a ratio's denominator) against NAMES.
void check_references(const json& claim, const ExperimentNames& names, const std::string& source) {
  const std::string where = source + ": claim " + claim["id"].get<std::string>() + ": ";
  check_reference(where, names, claim["ref"]);
  if (claim["rule"].contains("denominator")) check_reference(where, names, claim["rule"]["denominator"]);
}

// An empirical claim against the analysed tables of its experiment at a paper profile ("paper", or a
// reading of it such as "paper-adamw-1e-2"), whose groups, arms and contrasts are the paper's: a name
// they lack would leave the row "not run" for ever, beside results that exist. A reduced profile may
// run fewer groups, arms or contrasts, and a table analysed with the definition stored with its
// results (the current one does not extend that grid) may predate an arm: neither is read for this.
void check_names_in_tables(const json& claim, const std::vector<json>& tables, const std::string& source) {
  for (const auto& t : tables) {
    const std::string profile = t["profile"];
    if (t["experiment"] != claim["experiment"] || (profile != "paper" && profile.rfind("paper-", 0) != 0) ||
        t.value("definition", "") == "stored with the results")
      continue;
    const std::string experiment = t["experiment"];
    const std::string folder = t.contains("results") ? " (" + t["results"].get<std::string>() + ")" : "";
    ExperimentNames names{"the " + profile + "-profile results of " + experiment + folder + " have",
                          {},
                          [&t](const std::string& g, const char* list) {
                            std::vector<std::string> out;
                            for (const auto& x : t["groups"])
                              if (x["id"] == g)
                                for (const auto& a : x.value(list, json::array())) out.push_back(a["id"]);
                            return out;
                          }};
    for (const auto& g : t["groups"]) names.groups.push_back(g["id"]);
    check_references(claim, names, source);
  }
}

// "cpu (n = 5000, 12 epochs, 6 seeds)": the profile and the budget it ran.
std::string budget_label(const json& table) {
  std::string label = table["profile"];
  if (table.contains("budget"))
    label += " (" + budget_phrase(table["budget"], false, table.value("paper_budget", json())) + ")";
  return label;
}

// A claim's row of the ledger before its evidence is read: what the paper states, where.
json claim_row(const json& claim) {
  json row = {{"id", claim["id"]},       {"claim", claim["claim"]}, {"where", claim["where"]},
              {"paper", claim["paper"]}, {"kind", claim["kind"]},   {"evidence", json::array()}};
  if (claim.contains("contradiction")) row["contradiction"] = claim["contradiction"];
  if (claim.contains("rule") && claim["rule"].contains("statement")) row["rule"] = claim["rule"]["statement"];
  if (claim.contains("budget")) row["budget_settings"] = claim["budget"];
  return row;
}

// A theory claim's verdict from the certificate entries it lists, and their observations as its
// evidence ("not run" when the certificate has none of them). `refuted_by` lists corrected forms of
// the paper's statement: certified, such an entry refutes it.
std::string theory_verdict(const json& claim, const json& certificate, json& row) {
  std::vector<std::string> observed, files;
  bool all_certified = true, any_refuted = false, any = false;
  const auto read = [&](const json& ids, bool corrected) {
    for (const auto& cid : ids) {
      if (!certificate.is_object()) return;
      for (const auto& c : certificate["claims"])
        if (c["id"] == cid) {
          any = true;
          const std::string file = c.value("certificate_file", std::string("reports/certificate.json"));
          if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
          const std::string o = c["observed"];
          observed.push_back(cid.get<std::string>() + (corrected ? " (corrected form)" : "") + ": " + o);
          if (corrected) {
            any_refuted = any_refuted || o == "certified";
            all_certified = all_certified && o == "certified";
          } else {
            all_certified = all_certified && o == "certified";
            any_refuted = any_refuted || o == "refuted";
          }
        }
    }
  };
  if (claim.contains("certificate")) read(claim["certificate"], false);
  if (claim.contains("refuted_by")) read(claim["refuted_by"], true);
  if (!any) return "not run";
  // Confirmed when every listed entry is certified; refuted when the paper's statement is among
  // the refuted entries or a corrected form that contradicts it is certified.
  const std::string verdict = any_refuted ? "refuted" : (all_certified ? "confirmed" : "not confirmed");
  std::string s;
  for (const auto& o : observed) s += (s.empty() ? "" : "; ") + o;
  std::string source;
  for (const auto& f : files) source += (source.empty() ? "" : ", ") + f;
  row["evidence"].push_back({{"source", source}, {"ours", s}, {"verdict", verdict}, {"profile", "certificate"}});
  return verdict;
}

// One table's evidence for an empirical claim, and whether it may decide a verdict.
struct TableEvidence {
  json row;
  bool decides = false;
};

TableEvidence table_evidence(const json& claim, const json& t, const Evidence& e) {
  TableEvidence ev;
  ev.row = {{"source", e.detail},
            {"ours", e.ours},
            {"verdict", e.verdict},
            {"profile", t["profile"]},
            {"budget", budget_label(t)}};
  ev.decides = e.verdict != "untestable";  // a run too short for the claim is shown, and decides nothing
  if (!ev.decides) return ev;
  const auto seeds = claim_seeds(claim, t);
  if (!seeds.complete) {
    ev.row["verdict"] =
        "interim (" + std::to_string(seeds.completed) + " of " + std::to_string(seeds.planned) + " seeds)";
    ev.row["interim"] = true;
    ev.decides = false;
  } else if (seeds.diverged > 0) {
    // The surviving seeds are a selected sample: no verdict from them.
    ev.row["verdict"] = "undecided (" + std::to_string(seeds.diverged) + " of the runs it reads diverged)";
    ev.row["diverged"] = seeds.diverged;
    ev.decides = false;
  }
  return ev;
}

// Empirical: one evidence row per analysed table of the claim's experiment. Verdicts never cross
// budgets: only a table at the claim's budget with every seed of the arms the claim reads decides
// the verdict; the same rule on a reduced-budget table gives that budget's own verdict.
std::string empirical_verdict(const json& claim, const std::vector<json>& tables, json& row) {
  row["reduced_evidence"] = json::array();
  std::set<std::string> decided;
  std::string reduced_verdict;
  for (const auto& t : tables) {
    if (t["experiment"] != claim["experiment"] || t["profile"] == "smoke") continue;
    const auto e = judge_table(claim, t);
    if (e.verdict == "not run") continue;
    const bool at_budget = at_claim_budget(claim, t);
    auto [ev, decides] = table_evidence(claim, t, e);
    if (at_budget && t.contains("reading")) {
      // The paper's budget under the other reading of a protocol the paper states two ways: it
      // decides as the paper profile does, and two complete readings that disagree settle nothing.
      ev["reading"] = t["reading"];
      ev["verdict"] = "reading: " + ev["verdict"].get<std::string>();
      row["evidence"].push_back(ev);
      if (decides) decided.insert(e.verdict);
    } else if (at_budget) {
      row["evidence"].push_back(ev);
      if (decides) decided.insert(e.verdict);
    } else {
      row["reduced_evidence"].push_back(ev);
      if (decides) {
        if (!reduced_verdict.empty()) reduced_verdict += "; ";
        reduced_verdict += ev["budget"].get<std::string>() + ": " + e.verdict;
      }
    }
  }
  if (!reduced_verdict.empty()) row["reduced_verdict"] = reduced_verdict;
  if (decided.size() == 1) return *decided.begin();
  if (decided.size() > 1) {
    // Two complete tables at the paper's budget (its two readings of a protocol, or repeats) that
    // disagree settle nothing.
    row["note"] = "results at the paper's budget disagree";
    return "not confirmed";
  }
  return "not run";
}

// The ledger's summary: claims by verdict, and those with interim or reduced-budget evidence.
struct VerdictCounts {
  int confirmed = 0, refuted = 0, not_confirmed = 0, not_run = 0, interim = 0, reduced = 0, reduced_verdict = 0;

  void count(const json& row) {
    const std::string verdict = row["verdict"];
    confirmed += verdict == "confirmed";
    refuted += verdict == "refuted";
    not_confirmed += verdict == "not confirmed";
    not_run += verdict == "not run";
    bool any_interim = false;
    for (const auto& ev : row["evidence"]) any_interim = any_interim || ev.value("interim", false);
    interim += any_interim;
    reduced += !row.value("reduced_evidence", json::array()).empty();
    reduced_verdict += row.contains("reduced_verdict");
  }
};

const char* const kVerdictRules =
    "Verdicts never cross budgets. confirmed: our evidence at the paper's budget agrees with the claim by its "
    "stated rule; not confirmed: inconclusive (e.g. the paired difference is not significant where the paper claims an "
    "effect: a difference is significant when its 95% bootstrap CI excludes 0 and the paired t-test gives p < "
    "0.05), or "
    "two complete results at the paper's budget disagree (the paper's two readings of a protocol it states "
    "two ways, e.g. AdamW at 1e-3 in Table 1 and 1e-2 in §3.3, each decide); refuted: our evidence at the paper's "
    "budget "
    "contradicts it; not run: no certificate entry, and no complete result at the paper's budget. An "
    "empirical claim's verdict is decided only by a table run at the paper's budget — the paper profile's "
    "grid in every train setting except data and device, with the same seeds (a claim that lists in "
    "\"budget\" the only settings it depends on: the paper's values of those settings and the same "
    "seeds) — in which every seed of the grid has completed for each arm the claim reads (its arm, a "
    "contrast's arm and baseline, a ratio's denominator arm, and the table's baseline for differences "
    "against it). Such a table with seeds still missing is shown as interim (k of N seeds) and decides "
    "nothing. Tables run at a reduced budget (e.g. the cpu profiles) are shown in their own columns, with "
    "the verdict the same rule gives on them, labelled with the budget run; they never set the verdict. "
    "Runs shorter than a claim's min_epochs are shown as untestable and decide nothing; smoke results are "
    "not shown. A grokking event's epoch (memorized, grokked, sustained) is the median over the runs that "
    "reached it, shown with how many did; where no run reached it, \"never\" is the result: it refutes a claim "
    "that the event happens by an epoch the runs went past, and confirms only a claim whose paper runs include one "
    "that never reached it either. The lowest training accuracy after "
    "memorising (the slingshot) is read at the evaluated epochs, an upper bound on the lowest: a bound it misses is "
    "not confirmed, never refuted. A value the paper states two ways (its readings) must agree under both, else "
    "not confirmed; a value of which the paper reports several runs at one configuration agrees with any of them "
    "within the tolerance, and contradicts the claim only outside every one.";

}  // namespace

json build_ledger(const json& claims_file, const std::vector<json>& tables, const json& certificate,
                  const std::string& source) {
  check_claims_file(claims_file, source);
  check_unique_ids(claims_file, source);
  json rows = json::array();
  VerdictCounts n;
  for (const auto& claim : claims_file["claims"]) {
    check_claim_budget(claim, source);
    if (claim["kind"] == "empirical") check_names_in_tables(claim, tables, source);
    json row = claim_row(claim);
    const std::string verdict =
        claim["kind"] == "theory" ? theory_verdict(claim, certificate, row) : empirical_verdict(claim, tables, row);
    row["verdict"] = verdict;
    n.count(row);
    rows.push_back(row);
  }
  return {{"claims", rows},
          {"summary",
           {{"claims", rows.size()},
            {"confirmed", n.confirmed},
            {"not_confirmed", n.not_confirmed},
            {"refuted", n.refuted},
            {"not_run", n.not_run},
            {"interim", n.interim},
            {"with_reduced_evidence", n.reduced},
            {"with_reduced_verdict", n.reduced_verdict}}},
          {"verdicts", kVerdictRules}};
}

void check_claim_references(const json& claims, const std::string& definitions, const std::string& source) {
  std::map<std::string, json> loaded;
  for (const auto& c : claims["claims"]) {
    if (c.value("kind", "") != "empirical") continue;
    const std::string name = c["experiment"];
    auto it = loaded.find(name);
    if (it == loaded.end()) {
      const auto path = std::filesystem::path(definitions) / (name + ".json");
      if (!std::filesystem::is_regular_file(path))
        throw ExperimentError(source + ": claim " + c["id"].get<std::string>() + ": experiment \"" + name +
                              "\" has no definition (" + path.string() + ")");
      it = loaded.emplace(name, load_definition(path.string())).first;
    }
    const json& d = it->second;
    // A definition's arms and contrasts are every group's; a definition without groups has "main".
    ExperimentNames names{"experiment " + name + " has", {}, [&d](const std::string&, const char* list) {
                            std::vector<std::string> out;
                            for (const auto& x : d.value(list, json::array())) out.push_back(x["id"]);
                            return out;
                          }};
    for (const auto& g : d.value("groups", json::array())) names.groups.push_back(g["id"]);
    if (names.groups.empty()) names.groups.push_back("main");
    check_references(c, names, source);
  }
}

std::string ledger_markdown(const json& l) {
  std::ostringstream md;
  const auto& s = l["summary"];
  md << "# Claims ledger\n\n"
     << "Every numeric claim of the paper, with our value and a verdict. Regenerated by `stiefel report`; theory "
        "claims come from the certificate (`reports/certificate.json`), empirical ones from the runs under "
        "`results/`. Image data is CIFAR-10 (JPEG copy) unless a row says otherwise.\n\n"
     << "Summary (verdicts at the paper's budget only): " << s["claims"].get<int>() << " claims — "
     << s["confirmed"].get<int>() << " confirmed, " << s["not_confirmed"].get<int>() << " not confirmed, "
     << s["refuted"].get<int>() << " refuted, " << s["not_run"].get<int>() << " not run. Interim evidence at the "
     << "paper's budget (seeds still missing): " << s.value("interim", 0) << " claims. Reduced-budget evidence, "
     << "which decides no verdict: " << s.value("with_reduced_evidence", 0) << " claims ("
     << s.value("with_reduced_verdict", 0) << " with a reduced-budget verdict).\n\n"
     << l["verdicts"].get<std::string>() << "\n\n"
     << "| # | claim | where | paper | ours at the paper's budget | verdict | reduced-budget evidence | reduced-budget "
        "verdict |\n|---|---|---|---|---|---|---|---|\n";
  // A cell of one row: '|' escaped, and a line break (a claim's text may hold one) written as a space.
  auto esc = [](std::string x) {
    std::string o;
    for (char c : x) o += c == '|' ? std::string("\\|") : c == '\n' || c == '\r' ? std::string(" ") : std::string(1, c);
    return o;
  };
  // "cpu (n = 5000, 12 epochs, 6 seeds): value — source"; certificate evidence has no budget.
  auto list = [](const json& evidence) {
    std::string out;
    for (const auto& e : evidence) {
      out += (out.empty() ? "" : "<br>") + e.value("budget", e["profile"].get<std::string>()) + ": " +
             e["ours"].get<std::string>() + " — " + e["source"].get<std::string>();
      if (e.contains("reading")) out += " — reading: " + e["reading"].get<std::string>();
      if (e.value("interim", false) || e["verdict"] == "untestable" || e.contains("reading"))
        out += " — *" + e["verdict"].get<std::string>() + "*";
    }
    return out.empty() ? std::string("–") : out;
  };
  int i = 0;
  for (const auto& r : l["claims"]) {
    std::string claim = r["claim"];
    if (r.contains("rule")) claim += " *(rule: " + r["rule"].get<std::string>() + ")*";
    std::string verdict = "**" + r["verdict"].get<std::string>() + "**";
    if (r.contains("note")) verdict += " (" + r["note"].get<std::string>() + ")";
    md << "| " << ++i << " | " << esc(claim) << " | " << esc(r["where"]) << " | " << esc(r["paper"]) << " | "
       << esc(list(r["evidence"])) << " | " << esc(verdict) << " | "
       << esc(list(r.value("reduced_evidence", json::array()))) << " | " << esc(r.value("reduced_verdict", "–"))
       << " |\n";
  }
  bool any = false;
  for (const auto& r : l["claims"]) any = any || r.contains("contradiction");
  if (any) {
    md << "\n## Where the paper contradicts itself\n\n";
    for (const auto& r : l["claims"])
      if (r.contains("contradiction"))
        md << "- **" << r["id"].get<std::string>() << "**: " << r["paper"].get<std::string>() << " ("
           << r["where"].get<std::string>() << ") versus " << r["contradiction"].get<std::string>() << "\n";
  }
  return md.str();
}

}  // namespace stiefel::reports
