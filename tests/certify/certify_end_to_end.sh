#!/usr/bin/env bash
# Checks the default group's certificate (the run of tests/certify/certify_default_run.sh, in RUN):
# its exit code and last line, JSON Schema validity, at least 24 claims and controls, the Table 9
# figures, the refuted claims with their counterexamples and proofs, and that a failed write leaves
# an existing file untouched. The same run's JUnit report (--junit) validates against JUNIT_XSD and
# holds one passing test case per claim and per control of the certificate.
set -euo pipefail
stiefel=$1 schema=$2 work=$3 junit_xsd=$4 run=$5
rm -rf "$work" && mkdir -p "$work"
cp "$run/certificate.json" "$run/certificate.xml" "$run/table.txt" "$work/"
cert="$work/certificate.json"

tail -n 1 "$work/table.txt" | grep -Eq '^[0-9]+ passed, 0 failed$'
python3 -m jsonschema -i "$cert" "$schema"

python3 - "$cert" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
s = c["summary"]
assert s["passed"] and s["failed_expectation"] == 0, s
assert s["claims_and_controls"] >= 24, s
assert s["controls_survived"] == 0, s
ids = {k["id"]: k for k in c["claims"]}
rows = ids["prop7-equivariance-scalar"]["figures"]["float64"]["rows"]
assert {r["rule"] for r in rows} >= {"scalar (B2)", "per-column", "elementwise (B2m)", "AdamW (decay 0.05)"}
by = {r["rule"]: r["violation_max_abs"] for r in rows}
assert by["scalar (B2)"] < 1e-12 and by["per-column"] < 1e-12, by
assert by["elementwise (B2m)"] > 1e-6 and by["AdamW (decay 0.05)"] > 1e-6, by
for k in c["claims"]:
    assert k["cases_mp50"] == k["cases"], k["id"]
    if k["expected"] == "refuted":
        ce = k["counterexample"]
        assert ce is not None, k["id"]
        r = ce["float64"]["ratio"]
        assert r is None or r > k["tolerance"]["value"], k["id"]
        assert ce["mp50"]["residual"] is not None, k["id"]
        # every refutation is a proof: its sign re-checked in exact or interval arithmetic, and the
        # same proof on its near miss (where the claim holds) establishes nothing
        assert k["established"] in ("exact", "interval"), k["id"]
        assert ce["proof"]["established"] == k["established"] and ce["proof"]["enclosure"][0] > 0, k["id"]
        assert ce["proof"]["control"]["established"] == "numeric", k["id"]
        assert ce["proof"]["control"]["status"] == "killed", k["id"]
    else:
        assert k["established"] == "numeric", k["id"]
print("certificate ok:", s)
PY

xmllint --noout --schema "$junit_xsd" "$work/certificate.xml"
python3 - "$cert" "$work/certificate.xml" <<'PY'
import json, sys, xml.etree.ElementTree as ET
c = json.load(open(sys.argv[1]))
root = ET.parse(sys.argv[2]).getroot()
suites = {s.get("name"): s for s in root.findall("testsuite")}
assert set(suites) == {"claims", "controls"}, suites
# The claims suite: one test case per claim, then one skipped test case per implementation not run.
run_cases = [t for t in suites["claims"].findall("testcase") if t.find("skipped") is None]
skipped = [t.get("name") for t in suites["claims"].findall("testcase") if t.find("skipped") is not None]
assert skipped == [n["name"] for n in c["run"]["implementations_not_run"]], skipped
claims = [t.get("name") for t in run_cases]
controls = [t.get("name") for t in suites["controls"].findall("testcase")]
assert claims == [k["id"] for k in c["claims"]], (claims, [k["id"] for k in c["claims"]])
assert controls == [k["id"] + "/" + x["id"] for k in c["claims"] for x in k["controls"]], controls
for s in suites.values():
    assert int(s.get("tests")) == len(s.findall("testcase")) and s.get("failures") == "0", s.attrib
assert root.get("tests") == str(len(claims) + len(skipped) + len(controls)) and root.get("failures") == "0", root.attrib
assert root.get("skipped") == str(len(skipped)), root.attrib
assert not root.findall(".//failure"), "failures in a passing certificate"
refuted = [k["id"] for k in c["claims"] if k["observed"] == "refuted"]
for t in run_cases:
    out = t.find("system-out").text
    assert "reproduce: stiefel certify" in out, out
    if t.get("name") in refuted:
        assert "counterexample: {" in out, out
print("JUnit report ok:", len(claims), "claims,", len(controls), "controls")
PY

# A write that cannot complete must leave the previous certificate as it was.
before=$(sha256sum "$cert")
mkdir -p "$work/ro" && cp "$cert" "$work/ro/certificate.json" && chmod 500 "$work/ro"
if [ "$(id -u)" -ne 0 ]; then
  if "$stiefel" certify --cases 2 --claims '^prop8' --out "$work/ro/certificate.json" 2> "$work/err.txt"; then
    echo "write into a read-only folder succeeded"; exit 1
  fi
  grep -q "ro/certificate.json" "$work/err.txt"
fi
chmod 700 "$work/ro"
# A folder that cannot be created (even by root) is reported with the path.
if "$stiefel" certify --cases 2 --claims '^prop8' --out /proc/stiefel-no-such/c.json 2> "$work/err.txt"; then
  echo "write under /proc succeeded"; exit 1
fi
grep -q "/proc/stiefel-no-such/c.json" "$work/err.txt"
[ "$(sha256sum "$cert")" = "$before" ]
