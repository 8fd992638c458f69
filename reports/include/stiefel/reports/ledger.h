// The claims ledger: every numeric claim of the paper (experiments/claims.json) with our value and a
// verdict — theory claims read from the certificate, empirical ones from the analysed tables. A
// verdict is confirmed, not confirmed, refuted or not run; each rule is stated in the claim.
// Verdicts never cross budgets: an empirical claim is decided only by a table run at the paper's
// budget (or at the settings the claim lists in "budget", with the same seeds) that has completed
// every seed of the arms the claim reads; such a table with seeds missing is interim evidence, and a
// reduced-budget table gets its own "reduced_verdict" beside the claim's.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace stiefel::reports {

// tables: analysed tables (analyse_results) of any experiments and profiles; certificate: the JSON
// certificate (or null); source: the claims file's name, for errors (a malformed "budget" list throws
// ExperimentError naming it and the claim). Smoke-profile tables are not shown.
nlohmann::json build_ledger(const nlohmann::json& claims, const std::vector<nlohmann::json>& tables,
                            const nlohmann::json& certificate, const std::string& source = "claims file");

std::string ledger_markdown(const nlohmann::json& ledger);

// Every empirical claim of CLAIMS (already checked by build_ledger) names an experiment with a
// definition in the folder DEFINITIONS, and a group, arm or contrast (and a ratio's denominator arm)
// that definition has: a name that is not there would leave its row "not run" for ever. Throws
// ExperimentError("SOURCE: claim ID: what is missing (what there is)").
void check_claim_references(const nlohmann::json& claims, const std::string& definitions,
                            const std::string& source = "claims file");

}  // namespace stiefel::reports
