// The JSON Schema validator keyword by keyword, the shipped schemas against every file of their kind
// in the repository, and the validator against python3-jsonschema (the reference implementation the
// certificate's schema is checked with) on mutated documents.
#include <gtest/gtest.h>

#include <stiefel/schema.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using stiefel::schema::SchemaError;
using stiefel::schema::Validator;

const fs::path kSource = STIEFEL_SOURCE_DIR;

json read(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

bool valid(const Validator& v, const json& x) { return v.violations(x).empty(); }

std::string first(const Validator& v, const json& x) {
  const auto e = v.violations(x, 1);
  return e.empty() ? "" : e[0];
}

TEST(Validator, Types) {
  const Validator v(json::parse(R"({"type": "integer"})"), "t");
  EXPECT_TRUE(valid(v, 3));
  EXPECT_TRUE(valid(v, 3.0));  // 2020-12: an integral number is an integer
  EXPECT_FALSE(valid(v, 3.5));
  EXPECT_FALSE(valid(v, "3"));
  const Validator n(json::parse(R"({"type": ["number", "null"]})"), "t");
  EXPECT_TRUE(valid(n, 2.5));
  EXPECT_TRUE(valid(n, nullptr));
  EXPECT_FALSE(valid(n, std::nan("")));  // JSON has no NaN
  EXPECT_FALSE(valid(n, true));
  EXPECT_EQ(first(n, "x"), "(document): expected number or null, found a string");
}

TEST(Validator, ObjectsNameTheUnknownField) {
  const Validator v(json::parse(R"({"type": "object", "required": ["a"], "additionalProperties": false,
                                    "properties": {"a": {"type": "object", "properties": {"b~/c": {"const": 1}}}}})"),
                    "t");
  EXPECT_TRUE(valid(v, json::parse(R"({"a": {}})")));
  EXPECT_EQ(first(v, json::parse(R"({})")), "(document): missing \"a\"");
  EXPECT_EQ(first(v, json::parse(R"({"a": {}, "ab": 1})")), "/ab: unknown field \"ab\" (known here: a)");
  EXPECT_EQ(first(v, json::parse(R"({"a": {"b~/c": 2}})")), "/a/b~0~1c: expected 1, found 2");
}

TEST(Validator, PatternPropertiesPropertyNamesAndAdditionalSchemas) {
  const Validator v(json::parse(R"({"patternProperties": {"^x": {"type": "string"}},
                                    "propertyNames": {"pattern": "^[a-z]+$"},
                                    "additionalProperties": {"type": "integer"}})"),
                    "t");
  EXPECT_TRUE(valid(v, json::parse(R"({"xa": "s", "b": 2})")));
  EXPECT_FALSE(valid(v, json::parse(R"({"xa": 1})")));
  EXPECT_FALSE(valid(v, json::parse(R"({"b": "s"})")));
  EXPECT_FALSE(valid(v, json::parse(R"({"B": 1})")));
}

TEST(Validator, NumbersStringsArrays) {
  const Validator v(json::parse(R"({"type": "array", "minItems": 1, "maxItems": 2,
                                    "items": {"anyOf": [{"type": "number", "minimum": 0, "exclusiveMaximum": 1},
                                                        {"type": "string", "minLength": 2, "pattern": "^a"}]}})"),
                    "t");
  EXPECT_TRUE(valid(v, json::parse(R"([0, "ab"])")));
  EXPECT_FALSE(valid(v, json::parse(R"([])")));
  EXPECT_FALSE(valid(v, json::parse(R"([0, 0, 0])")));
  EXPECT_FALSE(valid(v, json::parse(R"([1])")));
  EXPECT_FALSE(valid(v, json::parse(R"([-0.1])")));
  EXPECT_FALSE(valid(v, json::parse(R"(["a"])")));
  EXPECT_FALSE(valid(v, json::parse(R"(["ba"])")));
  EXPECT_TRUE(valid(v, json::parse(R"(["aé"])")));  // two characters, three bytes
}

TEST(Validator, OneOfReportsTheNearestForm) {
  const Validator v(json::parse(R"({"$defs": {"p": {"type": "object", "required": ["x"],
                                                     "properties": {"x": {"type": "integer"}}}},
                                    "oneOf": [{"$ref": "#/$defs/p"}, {"type": "string"}, {"type": "integer"}]})"),
                    "t");
  EXPECT_TRUE(valid(v, json::parse(R"({"x": 1})")));
  EXPECT_TRUE(valid(v, "s"));
  EXPECT_NE(first(v, json::parse(R"({"x": "1"})")).find("nearest: /x: expected integer"), std::string::npos);
  const Validator both(json::parse(R"({"oneOf": [{"type": "number"}, {"type": "integer"}]})"), "t");
  EXPECT_TRUE(valid(both, 1.5));
  EXPECT_FALSE(valid(both, 1));  // matches two forms of a oneOf
  const Validator all(json::parse(R"({"allOf": [{"minimum": 0}, {"maximum": 1}], "enum": [0, 0.5, 2]})"), "t");
  EXPECT_TRUE(valid(all, 0.5));
  EXPECT_FALSE(valid(all, 2));
  EXPECT_FALSE(valid(all, 0.25));
}

TEST(Validator, SchemasItCannotApplyAreRefusedWhenLoaded) {
  EXPECT_THROW(Validator(json::parse(R"({"tpye": "object"})"), "t"), SchemaError);
  EXPECT_THROW(Validator(json::parse(R"({"properties": {"a": {"maxLength": 3}}})"), "t"), SchemaError);
  EXPECT_THROW(Validator(json::parse(R"({"type": "float"})"), "t"), SchemaError);
  EXPECT_THROW(Validator(json::parse(R"({"$ref": "#/$defs/none"})"), "t"), SchemaError);
  EXPECT_THROW(Validator(json::parse(R"({"$ref": "other.json"})"), "t"), SchemaError);
  EXPECT_THROW(Validator(json::parse(R"({"pattern": "(["})"), "t"), SchemaError);
  EXPECT_THROW(Validator(json::parse(R"({"minItems": -1})"), "t"), SchemaError);
  EXPECT_THROW(Validator(json::parse(R"([])"), "t"), SchemaError);
  try {
    Validator(json::parse(R"({"properties": {"a": {"tpye": 1}}})"), "x.schema.json");
  } catch (const SchemaError& e) {
    EXPECT_EQ(std::string(e.what()), "x.schema.json: /properties/a/tpye: unknown keyword \"tpye\"");
  }
}

// Every file of each kind that the repository holds is valid against its schema.
std::vector<fs::path> files_named(const fs::path& root, const std::string& name) {
  std::vector<fs::path> out;
  if (!fs::exists(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().filename() == name) out.push_back(e.path());
  return out;
}

std::vector<fs::path> definitions() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kSource / "experiments"))
    if (e.path().extension() == ".json" && e.path().filename() != "claims.json") out.push_back(e.path());
  for (const char* dir : {"tests/experiments", "tests/slurm"})
    for (const auto& e : fs::directory_iterator(kSource / dir))
      if (e.path().extension() == ".json") out.push_back(e.path());
  return out;
}

TEST(ShippedSchemas, EveryCommittedFileOfTheirKindIsValid) {
  std::size_t records = 0;
  for (const char* root : {"results", "reports/runs"})
    for (const auto& p : files_named(kSource / root, "run.json")) {
      EXPECT_EQ(first(stiefel::schema::run_record(), read(p)), "") << p;
      ++records;
    }
  EXPECT_GT(records, 100u);
  for (const auto& p : definitions()) EXPECT_EQ(first(stiefel::schema::experiment_definition(), read(p)), "") << p;
  EXPECT_EQ(first(stiefel::schema::claims(), read(kSource / "experiments/claims.json")), "");
}

// Visits every object member (pointer, parent object, key).
void each_member(json& x, const std::string& ptr,
                 const std::function<void(const std::string&, json&, const std::string&)>& f) {
  if (x.is_object()) {
    std::vector<std::string> keys;
    for (const auto& [k, _] : x.items()) keys.push_back(k);
    for (const auto& k : keys) {
      f(ptr, x, k);
      each_member(x[k], ptr + "/" + k, f);
    }
  } else if (x.is_array()) {
    for (std::size_t i = 0; i < x.size(); ++i) each_member(x[i], ptr + "/" + std::to_string(i), f);
  }
}

// A misspelt field anywhere in a run record is refused at its own pointer: every object of the
// record is closed, except the checkpoint map (epoch → SHA-256), whose keys are epochs.
TEST(ShippedSchemas, AMisspeltFieldAnywhereInARunRecordIsRefusedWhereItIs) {
  const auto& v = stiefel::schema::run_record();
  std::size_t tried = 0;
  for (const auto& p : {kSource / "results/table6-paper/runs/main/b2-block/seed-3/run.json",
                        kSource / "results/grok-5seed-cpu/runs/main/b2/seed-0/run.json"}) {
    if (!fs::exists(p)) continue;
    json record = read(p);
    each_member(record, "", [&](const std::string& ptr, json& parent, const std::string& key) {
      if (ptr == "/checkpoints" || ptr.rfind("/epochs/", 0) == 0) return;  // epochs: one entry stands for all
      json value = parent[key];
      parent.erase(key);
      parent[key + "s"] = value;
      // A required field renamed is also missing, and inside a oneOf the error is the nearest form's:
      // either way the renamed one is named.
      const auto errors = v.violations(record, 10);
      const std::string want = ptr + "/" + key + "s: unknown field \"" + key + "s\"";
      EXPECT_TRUE(std::any_of(errors.begin(), errors.end(),
                              [&](const std::string& e) { return e.find(want) != std::string::npos; }))
          << want << " not among " << nlohmann::json(errors).dump();
      parent.erase(key + "s");
      parent[key] = value;
      ++tried;
    });
  }
  EXPECT_GT(tried, 50u);
}

// Mutations of valid documents, judged by this validator and by python3-jsonschema: the verdicts
// agree on every one.
json mutate(json x, std::mt19937& rng) {
  std::vector<std::pair<json*, std::string>> members;
  std::function<void(json&)> collect = [&](json& y) {
    if (y.is_object())
      for (auto& [k, v] : y.items()) {
        members.push_back({&y, k});
        collect(v);
      }
    else if (y.is_array())
      for (auto& v : y) collect(v);
  };
  collect(x);
  if (members.empty()) return x;
  auto [parent, key] = members[std::uniform_int_distribution<std::size_t>(0, members.size() - 1)(rng)];
  json& v = (*parent)[key];
  switch (std::uniform_int_distribution<int>(0, 6)(rng)) {
    case 0:
      parent->erase(key);
      break;
    case 1:
      v = v.is_string() ? json(1) : json("x");
      break;
    case 2:
      v = v.is_number() ? json(-v.get<double>() - 1) : json(nullptr);
      break;
    case 3:
      v = json::array();
      break;
    case 4:
      (*parent)[key + "_"] = v;
      break;
    case 5:
      v = v.is_number() ? json(v.get<double>() + 0.5) : json(true);
      break;
    default:
      if (v.is_array() && !v.empty())
        v.erase(v.size() - 1);
      else
        v = json::object();
      break;
  }
  return x;
}

TEST(ShippedSchemas, VerdictsAgreeWithPythonJsonschema) {
  // The tests' python3 (STIEFEL_TEST_PYTHON, first on the tests' PATH) has jsonschema: ci/setup
  // installs python3-jsonschema. Without it the comparison cannot run, and that is a failure.
  ASSERT_EQ(std::system("python3 -c 'import jsonschema' > /dev/null 2>&1"), 0)
      << "python3 cannot import jsonschema (ci/setup installs python3-jsonschema)";
  const fs::path work = fs::temp_directory_path() / ("stiefel-schema-test-" + std::to_string(::getpid()));
  fs::create_directories(work);
  std::mt19937 rng(20261201);
  struct Kind {
    const Validator* v;
    fs::path schema;
    std::vector<json> docs;
  };
  std::vector<Kind> kinds = {
      {&stiefel::schema::run_record(), kSource / "schema/run.schema.json", {}},
      {&stiefel::schema::experiment_definition(), kSource / "schema/experiment.schema.json", {}},
      {&stiefel::schema::claims(), kSource / "schema/claims.schema.json", {read(kSource / "experiments/claims.json")}}};
  for (const auto& p : files_named(kSource / "results/table6-paper/runs/main/b2", "run.json"))
    kinds[0].docs.push_back(read(p));
  for (const auto& p : definitions()) kinds[1].docs.push_back(read(p));
  std::ofstream list(work / "list.txt");
  std::vector<bool> ours;
  int n = 0;
  for (const auto& k : kinds)
    for (int i = 0; i < 150 && !k.docs.empty(); ++i) {
      json doc = k.docs[std::size_t(i) % k.docs.size()];
      for (int m = 0; m <= i % 3; ++m) doc = mutate(doc, rng);
      const auto path = work / ("doc-" + std::to_string(n++) + ".json");
      std::ofstream(path) << doc.dump();
      list << k.schema.string() << "\t" << path.string() << "\n";
      ours.push_back(valid(*k.v, doc));
    }
  list.close();
  const std::string script =
      "import json,sys,jsonschema\n"
      "for line in open(sys.argv[1]):\n"
      "  s,d=line.rstrip('\\n').split('\\t')\n"
      "  v=jsonschema.Draft202012Validator(json.load(open(s)))\n"
      "  print(1 if v.is_valid(json.load(open(d))) else 0)\n";
  std::ofstream(work / "check.py") << script;
  const std::string cmd = "python3 " + (work / "check.py").string() + " " + (work / "list.txt").string() + " > " +
                          (work / "verdicts.txt").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream verdicts(work / "verdicts.txt");
  std::size_t i = 0, invalid = 0;
  for (int theirs; verdicts >> theirs; ++i) {
    ASSERT_LT(i, ours.size());
    EXPECT_EQ(ours[i], theirs == 1) << (work / ("doc-" + std::to_string(i) + ".json"));
    invalid += theirs == 0;
  }
  EXPECT_EQ(i, ours.size());
  EXPECT_GT(invalid, ours.size() / 3);  // the mutations do break documents
  if (!HasFailure()) fs::remove_all(work);
}

// Every field a claim may name is one that the report tables write (reports/src/table_*.cpp, run_summary.cpp or the
// paired statistics): a field listed in the schema but never written would be a silent "not run".
TEST(ShippedSchemas, EveryClaimFieldIsOneTheTablesWrite) {
  std::string sources;
  for (const char* f : {"reports/src/run_summary.cpp", "reports/src/table_analysis.cpp",
                        "reports/src/table_markdown.cpp", "reports/src/paired_statistics.cpp"}) {
    std::ifstream in(kSource / f);
    sources.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_FALSE(stiefel::schema::claim_fields().empty());
  for (const auto& f : stiefel::schema::claim_fields()) {
    const auto leaf = f.substr(f.rfind('.') + 1);
    EXPECT_NE(sources.find("\"" + leaf + "\""), std::string::npos) << f;
  }
}

}  // namespace
