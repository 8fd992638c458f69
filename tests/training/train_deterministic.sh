#!/usr/bin/env bash
# stiefel train --deterministic on the CPU: LibTorch's deterministic algorithms asked for and recorded
# (options.deterministic, compute.deterministic); two such runs give the same record, and the same
# epochs as a run without it (the CPU kernels this program uses are deterministic already); a run
# without the flag records neither key (older records stay as they were); resuming a deterministic
# run without the flag is refused, naming the setting; `experiment --deterministic` passes it to
# every run and pins it with the grid.
set -euo pipefail
stiefel=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
grok=(train --task grok --modulus 47 --arm b2 --seed 3 --epochs 6 --eval-every 2 --quiet)
env -u CUBLAS_WORKSPACE_CONFIG "$stiefel" "${grok[@]}" --deterministic --out "$work/det-1"
env -u CUBLAS_WORKSPACE_CONFIG "$stiefel" "${grok[@]}" --deterministic --out "$work/det-2"
"$stiefel" "${grok[@]}" --out "$work/plain"
rc=0
"$stiefel" "${grok[@]}" --resume --out "$work/det-1" > "$work/resume.log" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "records another run: deterministic (true → absent)" "$work/resume.log" ||
  { cat "$work/resume.log"; echo "FAIL: a deterministic run resumed without --deterministic (exit $rc)"; exit 1; }
# The experiment runner: --deterministic reaches every run and is pinned with the grid.
"$stiefel" experiment grok-riemann-lr --profile smoke --arms lr-1 --deterministic --jobs 1 --out "$work/grid" > /dev/null
rc=0
"$stiefel" experiment grok-riemann-lr --profile smoke --arms lr-1 --jobs 1 --out "$work/grid" > "$work/grid.log" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "the grid was pinned with --deterministic" "$work/grid.log" ||
  { cat "$work/grid.log"; echo "FAIL: a deterministic grid resumed without --deterministic (exit $rc)"; exit 1; }
python3 - "$work" "$(dirname "$0")" <<'PY'
import glob, json, sys
work = sys.argv[1]
[grid_run] = glob.glob(f"{work}/grid/runs/**/run.json", recursive=True)
assert json.load(open(grid_run))["options"]["deterministic"] is True, grid_run
assert json.load(open(f"{work}/grid/experiment.json"))["deterministic"] is True
sys.path.insert(0, sys.argv[2])
import run_records  # noqa: E402
def load(tag): return run_records.load(work, tag)
a, b, plain = load("det-1"), load("det-2"), load("plain")
assert a["options"]["deterministic"] is True, a["options"]
assert a["compute"]["deterministic"] == {"algorithms": True, "cudnn": "not used", "cublas_workspace_config": None}, \
    a["compute"]["deterministic"]
assert "deterministic" not in plain["options"] and "deterministic" not in plain["compute"], plain["options"]
assert a == b, "two deterministic runs gave different records"
assert a["epochs"] == plain["epochs"], "--deterministic changed the CPU run's epochs"
print(f"deterministic: recorded, two runs identical, the same {len(a['epochs'])} epochs as without it")
PY
