// JSON Schema validation (the 2020-12 keywords stiefel's schemas use) and the schemas of the files
// stiefel reads: run records (run.json), experiment definitions (experiments/*.json) and the claims
// file (experiments/claims.json). Every reader checks its file against its schema before it reads a
// field, so an unknown, misspelt or mistyped field is an error that names the file and the field,
// never a value silently taken as absent.
//
// Keywords: type, enum, const, properties, required, additionalProperties, patternProperties,
// propertyNames, items, minItems, maxItems, minimum, maximum, exclusiveMinimum, exclusiveMaximum,
// minLength, pattern, anyOf, oneOf, allOf, $ref (to "#/$defs/NAME"), and the annotations $schema,
// $id, $defs, $comment, title, description, default, task_defaults (stiefel's: a setting's value per
// task where its default stands for the task's). A schema using any other keyword is refused when it is
// loaded (SchemaError), so a misspelt keyword cannot switch a check off.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace stiefel::schema {

// A schema that this validator cannot apply (unknown keyword, a keyword's value of the wrong type,
// a $ref to nothing).
struct SchemaError : std::logic_error {
  using std::logic_error::logic_error;
};

struct Compiled;

class Validator {
 public:
  // NAME is how errors refer to the schema ("run.schema.json"). Throws SchemaError.
  Validator(nlohmann::json schema, std::string name);

  // The instance's violations, at most LIMIT of them, each "POINTER: what" where POINTER is the JSON
  // pointer of the offending value ("/epochs/3/train_acc"; "(document)" for the whole document).
  // Empty when the instance is valid.
  std::vector<std::string> violations(const nlohmann::json& instance, std::size_t limit = 10) const;

  // Throws std::invalid_argument("SOURCE: POINTER: what (NAME)") at the first violation.
  void check(const nlohmann::json& instance, const std::string& source) const;

  const nlohmann::json& schema() const;
  const std::string& name() const;

 private:
  std::shared_ptr<const Compiled> compiled_;  // immutable: copies share it, threads may too
};

// The files a schema describes are a few levels deep (a run record 4, a results folder's
// experiment.json fewer than 10); anything deeper than this is refused while it is parsed.
inline constexpr int kMaxDepth = 64;

// TEXT parsed as JSON, with its nesting bounded by kMaxDepth before any recursive consumer (the
// validator, its messages) meets it. Throws std::invalid_argument("SOURCE: ...") for a syntax
// error, a number beyond double, or a document nested too deeply.
nlohmann::json parse_bounded(const std::string& text, const std::string& source);

// The schemas stiefel ships (compiled in from schema/*.schema.json).
const Validator& run_record();             // run.schema.json: what `stiefel train` writes
const Validator& experiment_definition();  // experiment.schema.json: experiments/*.json
const Validator& claims();                 // claims.schema.json: experiments/claims.json

// What run.schema.json cannot say about a valid run record RUN, as "POINTER: what", or "" when it
// holds: its epochs are 1, 2, 3, … in order (none missing, repeated or renumbered), a completed run
// holds exactly config.epochs of them, and a completed run was evaluated at its end.
std::string run_record_sequence_violation(const nlohmann::json& run);

// The arm-summary fields of a report table that a claim may name (claims.schema.json's "field").
const std::vector<std::string>& claim_fields();

}  // namespace stiefel::schema
