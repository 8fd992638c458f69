#!/usr/bin/env bash
# The smoke profile of one experiment, end to end: its grid runs (two at a time), every run completes,
# a shard split covers the grid exactly once, and --arms runs only the named arm's runs.
set -euo pipefail
stiefel=$1 name=$2 work=$3
rm -rf "$work/$name"
"$stiefel" experiment "$name" --profile smoke --jobs 2 --shard 1/2 --out "$work/$name"
# --arms runs only the named arm's runs (here of shard 2/2); the rest of the shard then follows.
arm=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["grid"][-1]["id"].split("/")[-2])' \
  "$work/$name/experiment.json")
"$stiefel" experiment "$name" --profile smoke --jobs 2 --shard 2/2 --arms "$arm" --out "$work/$name"
python3 - "$work/$name" "$arm" <<'PY'
import json, os, sys
out, arm = sys.argv[1:]
grid = json.load(open(os.path.join(out, "experiment.json")))["grid"]
for k, run in enumerate(grid):
    if k % 2 == 1:  # shard 2/2
        ran = os.path.exists(os.path.join(out, "runs", run["id"], "run.json"))
        assert ran == (run["id"].split("/")[-2] == arm), (run["id"], ran)
PY
"$stiefel" experiment "$name" --profile smoke --jobs 2 --shard 2/2 --out "$work/$name"
planned=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["grid"]))' "$work/$name/experiment.json")
completed=$(grep -l '"status": "completed"' "$work/$name"/runs/*/*/*/run.json | wc -l || true)
[ "$planned" -eq "$completed" ] || { echo "FAIL: $completed of $planned runs completed"; exit 1; }
again=$("$stiefel" experiment "$name" --profile smoke --out "$work/$name" 2>&1)
grep -q "; $planned already finished (skipped), 0 to run" <<<"$again" || { echo "FAIL: a rerun did not skip: $again"; exit 1; }
echo "$name: $completed smoke runs"
