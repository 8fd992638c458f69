#!/usr/bin/env bash
# A diverging run is a result: the grid goes on, a rerun skips it, the report counts it and keeps
# it out of the statistics.
set -euo pipefail
stiefel=$1 work=$2 definition=$3
rm -rf "$work"; mkdir -p "$work"
out=$work/results
"$stiefel" experiment "$definition" --profile paper --jobs 2 --out "$out" 2> "$work/first.log" \
  || { cat "$work/first.log"; echo "FAIL: a grid with diverged runs exits non-zero"; exit 1; }
grep -q "2 runs diverged" "$work/first.log" || { cat "$work/first.log"; echo "FAIL: divergence not reported"; exit 1; }
for s in 0 1; do
  grep -q '"status": "diverged"' "$out/runs/main/a2-huge/seed-$s/run.json"
  grep -q '"status": "completed"' "$out/runs/main/b2/seed-$s/run.json"
done
"$stiefel" experiment "$definition" --profile paper --jobs 2 --out "$out" 2> "$work/second.log"
grep -q "; 4 already finished (skipped), 0 to run" "$work/second.log" || { cat "$work/second.log"; echo "FAIL: rerun"; exit 1; }
"$stiefel" report "$out" --out "$work/report" --no-plots --definitions "$(dirname "$definition")" 2> "$work/report.log" \
  || { cat "$work/report.log"; echo "FAIL: report"; exit 1; }
python3 - "$work/report/diverge-paper.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
assert t["runs_diverged"] == 2 and t["runs_completed"] == 2, (t["runs_diverged"], t["runs_completed"])
arms = {a["id"]: a for g in t["groups"] for a in g["arms"]}
assert arms["a2-huge"]["n"] == 0 and len(arms["a2-huge"]["diverged"]) == 2, arms["a2-huge"]
assert all(d["tensor"] for d in arms["a2-huge"]["diverged"])
PY
grep -q "diverged (a non-finite" "$work/report/diverge-paper.md"
echo "diverged runs are results: skipped on rerun, counted by the report"
