#include <stiefel/schema.h>

#include <cmath>
#include <map>
#include <algorithm>
#include <memory>
#include <regex>
#include <set>

namespace stiefel::schema {
namespace {

using nlohmann::json;

const std::set<std::string>& keywords() {
  static const std::set<std::string> k = {"type",
                                          "enum",
                                          "const",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "patternProperties",
                                          "propertyNames",
                                          "items",
                                          "minItems",
                                          "maxItems",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum",
                                          "minLength",
                                          "pattern",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "$ref",
                                          "$schema",
                                          "$id",
                                          "$defs",
                                          "$comment",
                                          "title",
                                          "description",
                                          "default",
                                          "task_defaults"};
  return k;
}

const std::set<std::string>& type_names() {
  static const std::set<std::string> t = {"null", "boolean", "object", "array", "number", "integer", "string"};
  return t;
}

// "~" and "/" escaped as a JSON pointer's reference token needs them.
std::string token(const std::string& key) {
  std::string out;
  for (const char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string shown(const std::string& pointer) { return pointer.empty() ? "(document)" : pointer; }

bool is_integer(const json& x) {
  if (x.is_number_integer()) return true;  // signed and unsigned
  if (!x.is_number_float()) return false;
  const double v = x.get<double>();
  return std::isfinite(v) && v == std::floor(v);
}

bool has_type(const json& x, const std::string& t) {
  if (t == "null") return x.is_null();
  if (t == "boolean") return x.is_boolean();
  if (t == "object") return x.is_object();
  if (t == "array") return x.is_array();
  // JSON has no NaN or infinity; a document built in memory can hold one, and it is not a number.
  if (t == "number") return x.is_number() && (!x.is_number_float() || std::isfinite(x.get<double>()));
  if (t == "integer") return is_integer(x);
  return x.is_string();
}

std::string type_of(const json& x) {
  if (x.is_null()) return "null";
  if (x.is_boolean()) return "a boolean";
  if (x.is_object()) return "an object";
  if (x.is_array()) return "an array";
  if (x.is_number_float() && !std::isfinite(x.get<double>())) return "a non-finite number";
  if (x.is_number()) return is_integer(x) ? "an integer" : "a number";
  return "a string";
}

std::string brief(const json& x) {
  std::string s = x.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (const unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

struct Sink {
  std::vector<std::string> errors;
  std::size_t limit;
  bool full() const { return errors.size() >= limit; }
  void add(const std::string& pointer, const std::string& what) {
    if (!full()) errors.push_back(shown(pointer) + ": " + what);
  }
};

// The pointer depth of an error ("/a/b: ..." → 2): the alternative of anyOf/oneOf whose error lies
// deepest is the one the instance meant, and its error is the one reported.
std::size_t depth(const std::string& error) {
  const auto colon = error.find(": ");
  const std::string p = error.substr(0, colon);
  return p == "(document)" ? 0 : std::size_t(std::count(p.begin(), p.end(), '/'));
}

}  // namespace

struct Compiled {
  json schema;
  std::string name;
  std::map<std::string, std::regex> patterns;
  const json* root = &schema;

  Compiled(json s, std::string n) : schema(std::move(s)), name(std::move(n)) { compile(schema, ""); }
  Compiled(const Compiled&) = delete;
  Compiled& operator=(const Compiled&) = delete;

  [[noreturn]] void bad(const std::string& where, const std::string& what) const {
    throw SchemaError(name + ": " + shown(where) + ": " + what);
  }

  const json& resolve(const std::string& ref, const std::string& where) const {
    const std::string prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) != 0) bad(where, "$ref \"" + ref + "\": only \"#/$defs/NAME\" is supported");
    const std::string key = ref.substr(prefix.size());
    if (!root->contains("$defs") || !(*root)["$defs"].contains(key)) bad(where, "$ref \"" + ref + "\" names nothing");
    return (*root)["$defs"][key];
  }

  void compile(const json& s, const std::string& where) {
    if (s.is_boolean()) return;
    if (!s.is_object()) bad(where, "a schema is an object or a boolean");
    for (const auto& [k, v] : s.items()) {
      const std::string at = where + "/" + token(k);
      if (!keywords().count(k)) bad(at, "unknown keyword \"" + k + "\"");
      if (k == "type") {
        const json types = v.is_array() ? v : json::array({v});
        for (const auto& t : types)
          if (!t.is_string() || !type_names().count(t.get<std::string>())) bad(at, "unknown type " + t.dump());
      } else if (k == "properties" || k == "patternProperties" || k == "$defs") {
        if (!v.is_object()) bad(at, "expected an object of schemas");
        for (const auto& [pk, pv] : v.items()) {
          if (k == "patternProperties") add_pattern(pk, at);
          compile(pv, at + "/" + token(pk));
        }
      } else if (k == "additionalProperties" || k == "items" || k == "propertyNames") {
        compile(v, at);
      } else if (k == "anyOf" || k == "oneOf" || k == "allOf") {
        if (!v.is_array() || v.empty()) bad(at, "expected a non-empty array of schemas");
        for (std::size_t i = 0; i < v.size(); ++i) compile(v[i], at + "/" + std::to_string(i));
      } else if (k == "required") {
        if (!v.is_array()) bad(at, "expected an array of names");
        for (const auto& r : v)
          if (!r.is_string()) bad(at, "expected an array of names");
      } else if (k == "enum") {
        if (!v.is_array() || v.empty()) bad(at, "expected a non-empty array");
      } else if (k == "minItems" || k == "maxItems" || k == "minLength") {
        if (!v.is_number_unsigned()) bad(at, "expected a non-negative integer");
      } else if (k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum") {
        if (!v.is_number()) bad(at, "expected a number");
      } else if (k == "pattern") {
        if (!v.is_string()) bad(at, "expected a regular expression");
        add_pattern(v.get<std::string>(), at);
      } else if (k == "$ref") {
        if (!v.is_string()) bad(at, "expected a reference");
        resolve(v.get<std::string>(), at);
      }
    }
  }

  void add_pattern(const std::string& p, const std::string& where) {
    if (patterns.count(p)) return;
    try {
      patterns.emplace(p, std::regex(p, std::regex::ECMAScript));
    } catch (const std::regex_error& e) {
      bad(where, "pattern \"" + p + "\": " + e.what());
    }
  }

  bool matches(const std::string& pattern, const std::string& s) const {
    return std::regex_search(s, patterns.at(pattern));
  }

  void validate(const json& s, const json& x, const std::string& ptr, Sink& out) const;
  void validate_object(const json& s, const json& x, const std::string& ptr, Sink& out) const;
  void validate_alternatives(const json& s, const json& x, const std::string& ptr, Sink& out) const;
};

void Compiled::validate(const json& s, const json& x, const std::string& ptr, Sink& out) const {
  if (out.full()) return;
  if (s.is_boolean()) {
    if (!s.get<bool>()) out.add(ptr, "not allowed here");
    return;
  }
  if (s.contains("$ref")) validate(resolve(s["$ref"], ptr), x, ptr, out);
  if (s.contains("type")) {
    const json types = s["type"].is_array() ? s["type"] : json::array({s["type"]});
    bool ok = false;
    std::string wanted;
    for (const auto& t : types) {
      ok = ok || has_type(x, t.get<std::string>());
      wanted += (wanted.empty() ? "" : " or ") + t.get<std::string>();
    }
    if (!ok) {
      out.add(ptr, "expected " + wanted + ", found " + type_of(x));
      return;  // the other keywords would only repeat it
    }
  }
  if (s.contains("const") && x != s["const"]) out.add(ptr, "expected " + brief(s["const"]) + ", found " + brief(x));
  if (s.contains("enum")) {
    const auto& e = s["enum"];
    if (std::find(e.begin(), e.end(), x) == e.end()) {
      std::string list;
      for (std::size_t i = 0; i < e.size() && i < 12; ++i) list += (i ? ", " : "") + e[i].dump();
      if (e.size() > 12) list += ", ... (" + std::to_string(e.size()) + " in all)";
      out.add(ptr, brief(x) + " is not one of " + list);
    }
  }
  if (x.is_number()) {
    const double v = x.get<double>();
    if (s.contains("minimum") && !(v >= s["minimum"].get<double>()))
      out.add(ptr, brief(x) + " is below the minimum " + s["minimum"].dump());
    if (s.contains("maximum") && !(v <= s["maximum"].get<double>()))
      out.add(ptr, brief(x) + " is above the maximum " + s["maximum"].dump());
    if (s.contains("exclusiveMinimum") && !(v > s["exclusiveMinimum"].get<double>()))
      out.add(ptr, brief(x) + " must be greater than " + s["exclusiveMinimum"].dump());
    if (s.contains("exclusiveMaximum") && !(v < s["exclusiveMaximum"].get<double>()))
      out.add(ptr, brief(x) + " must be less than " + s["exclusiveMaximum"].dump());
  }
  if (x.is_string()) {
    const auto& str = x.get_ref<const std::string&>();
    if (s.contains("minLength") && code_points(str) < s["minLength"].get<std::size_t>())
      out.add(ptr, "expected at least " + s["minLength"].dump() + " characters");
    if (s.contains("pattern") && !matches(s["pattern"], str))
      out.add(ptr, brief(x) + " does not match " + s["pattern"].dump());
  }
  if (x.is_array()) {
    if (s.contains("minItems") && x.size() < s["minItems"].get<std::size_t>())
      out.add(ptr, "expected at least " + s["minItems"].dump() + " entries, found " + std::to_string(x.size()));
    if (s.contains("maxItems") && x.size() > s["maxItems"].get<std::size_t>())
      out.add(ptr, "expected at most " + s["maxItems"].dump() + " entries, found " + std::to_string(x.size()));
    if (s.contains("items"))
      for (std::size_t i = 0; i < x.size() && !out.full(); ++i)
        validate(s["items"], x[i], ptr + "/" + std::to_string(i), out);
  }
  if (x.is_object()) validate_object(s, x, ptr, out);
  if (s.contains("allOf"))
    for (const auto& sub : s["allOf"]) validate(sub, x, ptr, out);
  if (s.contains("anyOf") || s.contains("oneOf")) validate_alternatives(s, x, ptr, out);
}

void Compiled::validate_object(const json& s, const json& x, const std::string& ptr, Sink& out) const {
  if (s.contains("required"))
    for (const auto& r : s["required"])
      if (!x.contains(r.get<std::string>())) out.add(ptr, "missing \"" + r.get<std::string>() + "\"");
  for (const auto& [k, v] : x.items()) {
    const std::string at = ptr + "/" + token(k);
    if (s.contains("propertyNames")) validate(s["propertyNames"], json(k), at, out);
    bool known = false;
    if (s.contains("properties") && s["properties"].contains(k)) {
      known = true;
      validate(s["properties"][k], v, at, out);
    }
    if (s.contains("patternProperties"))
      for (const auto& [p, sub] : s["patternProperties"].items())
        if (matches(p, k)) {
          known = true;
          validate(sub, v, at, out);
        }
    if (!known && s.contains("additionalProperties")) {
      const auto& extra = s["additionalProperties"];
      if (extra.is_boolean() && !extra.get<bool>()) {
        std::string list;
        if (s.contains("properties"))
          for (const auto& [name, _] : s["properties"].items()) list += (list.empty() ? "" : ", ") + name;
        out.add(at, "unknown field \"" + k + "\"" + (list.empty() ? "" : " (known here: " + list + ")"));
      } else {
        validate(extra, v, at, out);
      }
    }
  }
}

// anyOf / oneOf. Where no form matches, the error reported is that of the form the instance meant:
// the one whose first error lies deepest, a form of another type counting least.
void Compiled::validate_alternatives(const json& s, const json& x, const std::string& ptr, Sink& out) const {
  for (const char* key : {"anyOf", "oneOf"}) {
    if (!s.contains(key)) continue;
    std::size_t passed = 0, best_rank = 0;
    std::vector<std::string> nearest;
    for (const auto& sub : s[key]) {
      Sink branch{{}, 3};
      validate(sub, x, ptr, branch);
      if (branch.errors.empty()) {
        ++passed;
        continue;
      }
      const std::string& e = branch.errors[0];
      const bool other_type = e.rfind(shown(ptr) + ": expected ", 0) == 0 && e.find(", found ") != std::string::npos;
      const std::size_t rank = 2 * depth(e) + (other_type ? 0 : 1);
      if (nearest.empty() || rank > best_rank) {
        nearest = branch.errors;
        best_rank = rank;
      }
    }
    if (passed == 0) {
      std::string why;
      for (const auto& e : nearest) why += (why.empty() ? "" : "; ") + e;
      out.add(ptr, "matches none of the " + std::to_string(s[key].size()) + " forms allowed here; nearest: " + why);
    } else if (std::string(key) == "oneOf" && passed > 1) {
      out.add(ptr, "matches " + std::to_string(passed) + " of the forms of a oneOf");
    }
  }
}

Validator::Validator(json schema, std::string name)
    : compiled_(std::make_shared<const Compiled>(std::move(schema), std::move(name))) {}

const json& Validator::schema() const { return compiled_->schema; }
const std::string& Validator::name() const { return compiled_->name; }

std::vector<std::string> Validator::violations(const json& instance, std::size_t limit) const {
  Sink out{{}, limit};
  compiled_->validate(compiled_->schema, instance, "", out);
  return out.errors;
}

void Validator::check(const json& instance, const std::string& source) const {
  const auto v = violations(instance, 1);
  if (!v.empty()) throw std::invalid_argument(source + ": " + v.front() + " (" + compiled_->name + ")");
}

nlohmann::json parse_bounded(const std::string& text, const std::string& source) {
  struct TooDeep {};
  const nlohmann::json::parser_callback_t bound = [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxDepth) throw TooDeep{};
    return true;
  };
  try {
    return nlohmann::json::parse(text, bound);
  } catch (const TooDeep&) {
    throw std::invalid_argument(source + ": nested more than " + std::to_string(kMaxDepth) +
                                " levels deep (no file of stiefel is)");
  } catch (const nlohmann::json::exception& e) {  // a syntax error, or a number beyond double
    throw std::invalid_argument(source + ": not valid JSON (" + e.what() + ")");
  }
}

std::string run_record_sequence_violation(const nlohmann::json& run) {
  const auto& epochs = run.at("epochs");
  const auto& config = run.at("config");
  const auto& planned = config.at("epochs");
  if (!planned.is_number_integer() || planned.get<std::int64_t>() < 1) return "/config/epochs: " + planned.dump();
  const std::int64_t total = planned.get<std::int64_t>();
  // The image task records every epoch, the grokking task its evaluated ones (every eval_every-th
  // and the last); a record from before eval_every was recorded is held to the stride of its first.
  std::int64_t every = 1;
  if (config.contains("eval_every") && config["eval_every"].is_number_integer())
    every = std::max<std::int64_t>(1, config["eval_every"].get<std::int64_t>());
  else if (!epochs.empty() && epochs[0].at("epoch").is_number_integer())
    every = std::max<std::int64_t>(1, epochs[0]["epoch"].get<std::int64_t>());
  const auto expected = [&](std::size_t i, std::int64_t stride) {  // min((i + 1)·stride, total), no overflow
    return std::int64_t(i + 1) > total / stride ? total : std::min(total, std::int64_t(i + 1) * stride);
  };
  bool all = true, evaluated = true;
  std::int64_t last = 0;
  for (std::size_t i = 0; i < epochs.size(); ++i) {
    const auto& e = epochs[i].at("epoch");
    const std::string where = "/epochs/" + std::to_string(i) + "/epoch: " + e.dump();
    if (!e.is_number_integer() || e.get<std::int64_t>() <= last || e.get<std::int64_t>() > total)
      return where + " (a record's epochs increase from 1 to config.epochs " + std::to_string(total) + ")";
    last = e.get<std::int64_t>();
    all = all && last == std::int64_t(i) + 1;
    evaluated = evaluated && last == expected(i, every) && (i == 0 || last != expected(i - 1, every));
    if (!all && !evaluated)
      return where + ", expected " + std::to_string(i + 1) + " (every epoch) or " + std::to_string(expected(i, every)) +
             " (every " + std::to_string(every) + "th and the last): an epoch is missing, repeated or renumbered";
  }
  if (run.at("status") != "completed") return "";
  if (last != total)
    return "/epochs: a completed run of " + std::to_string(total) + " epochs whose records end at epoch " +
           std::to_string(last);
  if (!run.at("final").contains("test_acc"))
    return "/final/test_acc: missing in a completed run (its last epoch is always evaluated)";
  return "";
}

}  // namespace stiefel::schema
