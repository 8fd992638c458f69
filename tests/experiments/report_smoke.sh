#!/usr/bin/env bash
# `stiefel report` over every smoke result: a table, its JSON and its figures per experiment, and a
# ledger that lists every claim of experiments/claims.json. Smoke runs are far below the paper's
# budget: their tables say so, and they decide no verdict (at the paper's budget or reduced).
set -euo pipefail
# Usage: report_smoke.sh STIEFEL WORK CLAIMS CERTIFICATE...
stiefel=$1 work=$2 claims=$3
shift 3
certificates=()
for c in "$@"; do certificates+=(--certificate "$c"); done
definitions=$(ls "$(dirname "$claims")"/*.json | grep -vc '/claims\.json$')
dirs=()
for d in "$work"/*/; do [ -f "$d/experiment.json" ] && dirs+=("$d"); done
[ "${#dirs[@]}" -ge "$definitions" ] || { echo "FAIL: ${#dirs[@]} smoke results for $definitions definitions"; exit 1; }
rm -rf "$work/../report"
# A second report into a folder another one is writing is refused (the folder's lock, held here by
# flock(1)), and writes nothing.
mkdir -p "$work/../report"
rc=0
flock -n "$work/../report" "$stiefel" report "${dirs[@]}" --out "$work/../report" --resamples 100 --no-plots \
  > "$work/../locked.log" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "another stiefel report is writing into it" "$work/../locked.log" &&
  [ -z "$(ls -A "$work/../report")" ] || { cat "$work/../locked.log"; echo "FAIL: a locked --out (exit $rc)"; exit 1; }
"$stiefel" report "${dirs[@]}" --out "$work/../report" "${certificates[@]}" --resamples 2000
python3 - "$work/../report" "$claims" "$definitions" <<'PY'
import json, os, sys
rep, claims, definitions = sys.argv[1], json.load(open(sys.argv[2]))["claims"], int(sys.argv[3])
ledger = json.load(open(os.path.join(rep, "claims.json")))
assert [c["id"] for c in ledger["claims"]] == [c["id"] for c in claims], "the ledger must list every claim"
for c in ledger["claims"]:
    if c["kind"] == "empirical":
        # smoke results decide nothing and are not shown, not even as reduced-budget evidence
        assert c["verdict"] == "not run", (c["id"], c["verdict"])
        assert c["evidence"] == [] and c["reduced_evidence"] == [] and "reduced_verdict" not in c, c["id"]
    else:
        assert c["verdict"] in ("confirmed", "refuted"), (c["id"], c["verdict"])
assert ledger["summary"]["with_reduced_evidence"] == 0 and ledger["summary"]["interim"] == 0, ledger["summary"]
md = open(os.path.join(rep, "CLAIMS.md")).read()
assert ("| # | claim | where | paper | ours at the paper's budget | verdict | reduced-budget evidence | "
        "reduced-budget verdict |") in md
tables = [f for f in os.listdir(rep) if f.endswith("-smoke.json")]
assert len(tables) >= definitions, tables
for f in tables:
    t = json.load(open(os.path.join(rep, f)))
    assert t["runs_completed"] == t["runs_planned"], f
    assert not t["at_paper_budget"] and t["differs_from_paper"] and t["budget"] != t["paper_budget"], f
    md = open(os.path.join(rep, f[:-5] + ".md")).read()
    assert "Profile: `smoke`" in md, f
    heading = md.splitlines()[0]
    assert heading.startswith("# " + t["title"] + " — run at ") and heading.endswith("(reduced budget)"), heading
    assert "- Budget run: " in md and "are not decided by this table)" in md, f
    for g in t["groups"]:
        for a in g["arms"]:
            assert a["n"] == a["planned"], (f, a["id"])
        if "selection" in g:  # definitions that select on the validation split
            assert g["selection"]["arm"] in [a["id"] for a in g["arms"]], (f, g["selection"])
            assert "Selected on the validation split: " in md, f
    for fig in t.get("figures", []):
        png = open(os.path.join(rep, fig), "rb").read()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000, fig
print(len(tables), "tables,", len(ledger["claims"]), "claims in the ledger")
PY
