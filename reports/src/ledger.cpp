#include <stiefel/reports/ledger.h>

#include <stiefel/reports/experiment.h>

#include <cmath>
#include <iomanip>
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
  if (std::fabs(v) >= 1e-3 && std::fabs(v) < 1e5) os << std::setprecision(4) << v;
  else os << std::setprecision(3) << v;
  return os.str();
}

struct Evidence {
  std::string verdict = "not run", ours, detail;
};

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
    e.ours = "runs of " + table["epochs"].dump() + " epochs cannot test a claim about " +
             claim["min_epochs"].dump() + "-epoch runs";
    if (std::isfinite(v)) e.ours += " (measured: " + num(v) + ")";
    e.detail = table["experiment"].get<std::string>() + " [" + table["profile"].get<std::string>() + "], " + ds;
    return e;
  }
  if (!std::isfinite(v)) return e;
  const auto& rule = claim["rule"];
  const std::string type = rule["type"];
  e.ours = num(v);
  double compare = v;
  if (type == "ratio_above" || type == "ratio_below") {
    const json* other = find_arm(table, rule["denominator"]);
    if (!other) return e;
    const double w = field(*other, rule["denominator"]["field"]);
    if (!std::isfinite(w) || w == 0) return e;
    compare = v / w;
    e.ours = num(compare) + " (" + num(v) + " / " + num(w) + ")";
  }
  const json c = arm->value("vs_baseline", json::object());
  const bool has_ci = c.contains("ci_low") && c.contains("ci_high");
  if (type == "positive" || type == "negative" || type == "null") {
    if (!has_ci) return e;
    const double lo = c["ci_low"], hi = c["ci_high"];
    e.ours += " pp, CI [" + num(lo) + ", " + num(hi) + "]";
    if (c.contains("t")) e.ours += ", t = " + num(c["t"].get<double>());
    if (c.contains("p")) e.ours += ", p = " + num(c["p"].get<double>());
    e.ours += ", wins " + std::to_string(c["wins"].get<int>()) + "/" + std::to_string(c["pairs"].get<int>());
    const bool pos = lo > 0, neg = hi < 0;
    if (type == "positive") e.verdict = pos ? "confirmed" : neg ? "refuted" : "not confirmed";
    if (type == "negative") e.verdict = neg ? "confirmed" : pos ? "refuted" : "not confirmed";
    if (type == "null") e.verdict = (!pos && !neg) ? "confirmed" : "refuted";
  } else if (type == "below" || type == "ratio_below") {
    e.verdict = compare <= rule["value"].get<double>() ? "confirmed" : "refuted";
  } else if (type == "above" || type == "ratio_above") {
    e.verdict = compare >= rule["value"].get<double>() ? "confirmed" : "refuted";
  } else if (type == "within") {
    e.verdict = std::fabs(compare - rule["value"].get<double>()) <= rule["tolerance"].get<double>() ? "confirmed"
                                                                                                      : "not confirmed";
  } else {
    throw ExperimentError("claims: " + claim["id"].get<std::string>() + ": unknown rule type \"" + type + "\"");
  }
  e.detail = table["experiment"].get<std::string>() + " [" + table["profile"].get<std::string>() + "], " + ds + ", " +
             std::to_string(arm->value("n", 0)) + " seeds";
  return e;
}

}  // namespace

json build_ledger(const json& claims_file, const std::vector<json>& tables, const json& certificate) {
  if (!claims_file.contains("claims") || !claims_file["claims"].is_array())
    throw ExperimentError("claims file: missing array \"claims\"");
  json rows = json::array();
  int n_confirmed = 0, n_refuted = 0, n_not_confirmed = 0, n_not_run = 0;
  for (const auto& claim : claims_file["claims"]) {
    for (const char* k : {"id", "claim", "where", "paper", "kind"})
      if (!claim.contains(k)) throw ExperimentError("claims file: a claim lacks \"" + std::string(k) + "\": " + claim.dump());
    json row = {{"id", claim["id"]}, {"claim", claim["claim"]}, {"where", claim["where"]}, {"paper", claim["paper"]},
                {"kind", claim["kind"]}, {"evidence", json::array()}};
    if (claim.contains("contradiction")) row["contradiction"] = claim["contradiction"];
    if (claim.contains("rule") && claim["rule"].contains("statement")) row["rule"] = claim["rule"]["statement"];
    std::string verdict = "not run";
    if (claim["kind"] == "theory") {
      std::vector<std::string> observed;
      bool all_certified = true, any_refuted = false, any = false;
      for (const auto& cid : claim["certificate"]) {
        if (!certificate.is_object()) break;
        for (const auto& c : certificate["claims"])
          if (c["id"] == cid) {
            any = true;
            const std::string o = c["observed"];
            observed.push_back(cid.get<std::string>() + ": " + o);
            all_certified = all_certified && o == "certified";
            any_refuted = any_refuted || o == "refuted";
          }
      }
      if (any) {
        // Confirmed when every listed entry is certified; refuted when the paper's statement is among
        // the refuted entries.
        verdict = any_refuted ? "refuted" : (all_certified ? "confirmed" : "not confirmed");
        std::string s;
        for (const auto& o : observed) s += (s.empty() ? "" : "; ") + o;
        row["evidence"].push_back({{"source", "reports/certificate.json"}, {"ours", s}, {"verdict", verdict},
                                   {"profile", "certificate"}});
      }
    } else {
      // Empirical: one evidence row per analysed table of the claim's experiment; paper > cpu.
      std::string best_profile;
      for (const auto& t : tables) {
        if (t["experiment"] != claim["experiment"] || t["profile"] == "smoke") continue;
        const auto e = judge_table(claim, t);
        if (e.verdict == "not run") continue;
        row["evidence"].push_back({{"source", e.detail}, {"ours", e.ours}, {"verdict", e.verdict},
                                   {"profile", t["profile"]}});
        if (e.verdict == "untestable") continue;  // shown, but decides nothing
        if (best_profile.empty() || t["profile"] == "paper") {
          best_profile = t["profile"];
          verdict = e.verdict;
        }
      }
    }
    row["verdict"] = verdict;
    n_confirmed += verdict == "confirmed";
    n_refuted += verdict == "refuted";
    n_not_confirmed += verdict == "not confirmed";
    n_not_run += verdict == "not run";
    rows.push_back(row);
  }
  return {{"claims", rows},
          {"summary", {{"claims", rows.size()}, {"confirmed", n_confirmed}, {"not_confirmed", n_not_confirmed},
                       {"refuted", n_refuted}, {"not_run", n_not_run}}},
          {"verdicts", "confirmed: our evidence agrees with the claim by its stated rule; not confirmed: inconclusive "
                       "(e.g. the CI contains 0 where the paper claims an effect); refuted: our evidence contradicts "
                       "it; not run: no non-smoke result or certificate entry, or only runs too short to test the claim (shown as "
                       "untestable evidence). A paper-profile result decides the "
                       "verdict where one exists, else the cpu profile."}};
}

std::string ledger_markdown(const json& l) {
  std::ostringstream md;
  const auto& s = l["summary"];
  md << "# Claims ledger\n\n"
     << "Every numeric claim of the paper, with our value and a verdict. Regenerated by `stiefel report`; theory "
        "claims come from the certificate (`reports/certificate.json`), empirical ones from the runs under "
        "`results/`. Image data is CIFAR-10 (JPEG copy) unless a row says otherwise.\n\n"
     << "Summary: " << s["claims"].get<int>() << " claims — " << s["confirmed"].get<int>() << " confirmed, "
     << s["not_confirmed"].get<int>() << " not confirmed, " << s["refuted"].get<int>() << " refuted, "
     << s["not_run"].get<int>() << " not run.\n\n"
     << l["verdicts"].get<std::string>() << "\n\n"
     << "| # | claim | where | paper | ours (profile: value — source) | verdict |\n|---|---|---|---|---|---|\n";
  auto esc = [](std::string x) {
    std::string o;
    for (char c : x) o += c == '|' ? std::string("\\|") : std::string(1, c);
    return o;
  };
  int i = 0;
  for (const auto& r : l["claims"]) {
    std::string ours;
    for (const auto& e : r["evidence"])
      ours += (ours.empty() ? "" : "<br>") + e["profile"].get<std::string>() + ": " + e["ours"].get<std::string>() +
              " — " + e["source"].get<std::string>();
    if (ours.empty()) ours = "–";
    std::string claim = r["claim"];
    if (r.contains("rule")) claim += " *(rule: " + r["rule"].get<std::string>() + ")*";
    md << "| " << ++i << " | " << esc(claim) << " | " << esc(r["where"]) << " | " << esc(r["paper"]) << " | "
       << esc(ours) << " | **" << r["verdict"].get<std::string>() << "** |\n";
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
