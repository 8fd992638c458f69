// What every group's claim definitions share: the common fields of a claim, and the binding of a
// check template to its named controls.
#pragma once

#include <initializer_list>
#include <string>
#include <stiefel/certificates/claim.h>
#include <stiefel/multiprecision.h>

#include "../generators.h"

namespace stiefel::certificates {

namespace gen = generators;
using mp50 = stiefel::mp50;

inline constexpr const char* kRoundoff =
    "ratio = residual / (normaliser * u * factor), u the unit roundoff of the working type; "
    "pass at ratio <= 30 (LAPACK's test threshold)";

// A claim with its identity and the roundoff tolerance's meaning; the rest is filled in by its group.
inline Claim make_claim(std::string id, std::string source, std::string kind, std::string statement) {
  Claim c;
  c.id = std::move(id);
  c.source = std::move(source);
  c.kind = std::move(kind);
  c.statement = std::move(statement);
  c.factor = kRoundoff;
  return c;
}

// A non-vacuity control: the claim's check run with `mutant`, reported as `id`.
template <class Mutant>
struct MutantControl {
  Mutant mutant;
  const char* id;
  const char* description;
};

template <class Mutant>
using CheckOf = CheckResult (*)(const Case&, Mutant);

// Sets the claim's check (its check template in both precisions, run with Mutant::kNone) and one
// control per listed mutant. The controls' type is the check's mutant type, so a control can only
// name a mutant that the check implements.
template <class Mutant>
void set_check(Claim& claim, CheckOf<Mutant> in_double, CheckOf<Mutant> in_mp50,
               std::initializer_list<MutantControl<Mutant>> controls) {
  const auto bind = [in_double, in_mp50](Mutant m) {
    return Check{[in_double, m](const Case& c) { return in_double(c, m); },
                 [in_mp50, m](const Case& c) { return in_mp50(c, m); }};
  };
  claim.check = bind(Mutant::kNone);
  claim.controls.clear();
  for (const auto& ctl : controls) claim.controls.push_back({ctl.id, ctl.description, bind(ctl.mutant)});
}

}  // namespace stiefel::certificates
