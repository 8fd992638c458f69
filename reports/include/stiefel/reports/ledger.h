// The claims ledger: every numeric claim of the paper (experiments/claims.json) with our value and a
// verdict — theory claims read from the certificate, empirical ones from the analysed tables. A
// verdict is confirmed, not confirmed, refuted or not run; each rule is stated in the claim.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace stiefel::reports {

// tables: analysed tables (analyse_results) of any experiments and profiles; certificate: the JSON
// certificate (or null). Smoke-profile tables never decide a verdict.
nlohmann::json build_ledger(const nlohmann::json& claims, const std::vector<nlohmann::json>& tables,
                            const nlohmann::json& certificate);

std::string ledger_markdown(const nlohmann::json& ledger);

}  // namespace stiefel::reports
