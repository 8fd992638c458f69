#!/usr/bin/env bash
# `stiefel report` over every smoke result: a table, its JSON and its figures per experiment, and a
# ledger that lists every claim of experiments/claims.json (smoke never decides a verdict).
set -euo pipefail
stiefel=$1 work=$2 claims=$3 certificate=$4
dirs=()
for d in "$work"/*/; do [ -f "$d/experiment.json" ] && dirs+=("$d"); done
[ "${#dirs[@]}" -ge 13 ] || { echo "FAIL: only ${#dirs[@]} smoke results"; exit 1; }
rm -rf "$work/../report"
"$stiefel" report "${dirs[@]}" --out "$work/../report" --certificate "$certificate" --resamples 2000
python3 - "$work/../report" "$claims" <<'PY'
import json, os, sys
rep, claims = sys.argv[1], json.load(open(sys.argv[2]))["claims"]
ledger = json.load(open(os.path.join(rep, "claims.json")))
assert [c["id"] for c in ledger["claims"]] == [c["id"] for c in claims], "the ledger must list every claim"
for c in ledger["claims"]:
    if c["kind"] == "empirical":
        assert c["verdict"] == "not run", (c["id"], c["verdict"])   # smoke results never decide
    else:
        assert c["verdict"] in ("confirmed", "refuted"), (c["id"], c["verdict"])
tables = [f for f in os.listdir(rep) if f.endswith("-smoke.json")]
assert len(tables) >= 13, tables
for f in tables:
    t = json.load(open(os.path.join(rep, f)))
    assert t["runs_completed"] == t["runs_planned"], f
    md = open(os.path.join(rep, f[:-5] + ".md")).read()
    assert "Profile: `smoke`" in md, f
    for fig in t.get("figures", []):
        png = open(os.path.join(rep, fig), "rb").read()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000, fig
print(len(tables), "tables,", len(ledger["claims"]), "claims in the ledger")
PY
