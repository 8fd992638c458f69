#!/usr/bin/env bash
# JUnit reports for CI dashboards, validated against certificates/junit.xsd:
#  - `stiefel certify --junit` when a claim fails (a control swapped in): the failing test case names
#    the claim, its message carries the reproduce command, the counts agree;
#  - bad --junit arguments are refused before any work, naming the argument;
#  - CTest's own report (the `default` test preset writes it), on a project with a passing, a
#    failing and a skipped test.
# (certify_end_to_end validates the report of a passing run of every claim.)
set -euo pipefail
stiefel=$1 xsd=$2 work=$3
rm -rf "$work" && mkdir -p "$work"

claim=prop2-orthogonal-projector control=projector-without-sym
if "$stiefel" certify --cases 6 --claims "^$claim\$" --swap-control "$claim:$control" \
     --out "$work/c.json" --junit "$work/failing.xml" 2> "$work/log.txt"; then
  echo "certify passed with a control swapped in"; exit 1
fi
xmllint --noout --schema "$xsd" "$work/failing.xml"
python3 - "$work/failing.xml" "$claim" "$work/c.json" <<'PY'
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
claim = sys.argv[2]
# The update claims' implementations not run here (the trainer on CUDA without a GPU; every trainer
# implementation in a build without LibTorch): each a skipped test case with the certificate's reason.
not_run = {n["name"]: n["reason"] for n in json.load(open(sys.argv[3]))["run"]["implementations_not_run"]}
skipped = {t.get("name"): t.find("skipped") for t in root.iter("testcase") if t.find("skipped") is not None}
assert set(skipped) == set(not_run), (sorted(skipped), sorted(not_run))
for name, s in skipped.items():
    assert s.get("message") == not_run[name] and name in s.text, (name, s.attrib, s.text)
assert root.get("skipped") == str(len(skipped)), root.attrib
for s in root.findall("testsuite"):
    assert s.get("skipped") == str(len(s.findall("testcase/skipped"))), s.attrib
cases = root.findall("testsuite/testcase")
failed = [t for t in cases if t.find("failure") is not None]
assert [t.get("name") for t in failed] == [claim], [t.get("name") for t in failed]
f = failed[0].find("failure")
assert f.get("message").startswith(claim + ": expected certified, observed refuted"), f.get("message")
assert "reproduce: stiefel certify --seed" in f.get("message"), f.get("message")
assert "reproduce: stiefel certify" in f.text, f.text
assert root.get("failures") == "1" and root.get("tests") == str(len(cases)), root.attrib
for s in root.findall("testsuite"):
    assert s.get("tests") == str(len(s.findall("testcase"))), s.attrib
    assert s.get("failures") == str(len(s.findall("testcase/failure"))), s.attrib
print("failing report ok")
PY

# Bad --junit arguments: refused at once (exit 2), naming the argument; nothing is written.
refuse() {
  local what=$1; shift
  if "$stiefel" certify --cases 2 --claims '^prop8' "$@" 2> "$work/err.txt"; then
    echo "accepted: $what"; exit 1
  fi
  grep -q -- "--junit" "$work/err.txt" || { echo "$what: error does not name --junit:"; cat "$work/err.txt"; exit 1; }
}
refuse "a folder that cannot be created" --out "$work/ok.json" --junit /proc/stiefel-no-such/r.xml
refuse "a folder as --junit" --out "$work/ok.json" --junit "$work"
refuse "--junit naming --out's file" --out "$work/same.json" --junit "$work/./same.json"
touch "$work/fake.pt"
refuse "--junit with --checkpoint" --checkpoint "$work/fake.pt" --out "$work/ok.json" --junit "$work/r.xml"
[ ! -e "$work/ok.json" ] && [ ! -e "$work/same.json" ] && [ ! -e "$work/r.xml" ]

# CTest's report: the `default` test preset writes one, and it validates.
python3 - "$(dirname "$0")/../../CMakePresets.json" <<'PY'
import json, sys
presets = {p["name"]: p for p in json.load(open(sys.argv[1]))["testPresets"]}
assert presets["default"]["output"].get("outputJUnitFile"), "the default test preset writes no JUnit report"
PY
mkdir -p "$work/ctest"
cat > "$work/ctest/CTestTestfile.cmake" <<'CT'
add_test(passes "/bin/sh" "-c" "echo fine")
add_test(fails "/bin/sh" "-c" "echo 'broken <&> \"quoted\"'; exit 1")
add_test(skipped "/bin/sh" "-c" "exit 77")
set_tests_properties(skipped PROPERTIES SKIP_RETURN_CODE 77)
CT
if ctest --test-dir "$work/ctest" --output-junit "$work/ctest/report.xml" > "$work/ctest.log" 2>&1; then
  echo "ctest passed a failing test"; exit 1
fi
xmllint --noout --schema "$xsd" "$work/ctest/report.xml"
python3 - "$work/ctest/report.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = {t.get("name"): t for t in root.iter("testcase")}
assert set(cases) == {"passes", "fails", "skipped"}, cases
assert cases["fails"].find("failure") is not None and cases["passes"].find("failure") is None
print("ctest report ok")
PY
echo "JUnit reports validate"
