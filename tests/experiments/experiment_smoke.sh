#!/usr/bin/env bash
# The smoke profile of one experiment, end to end: its grid runs (two at a time), every run completes,
# and a shard split covers the grid exactly once.
set -euo pipefail
stiefel=$1 name=$2 work=$3
rm -rf "$work/$name"
"$stiefel" experiment "$name" --profile smoke --jobs 2 --shard 1/2 --out "$work/$name"
"$stiefel" experiment "$name" --profile smoke --jobs 2 --shard 2/2 --out "$work/$name"
planned=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["grid"]))' "$work/$name/experiment.json")
completed=$(grep -l '"status": "completed"' "$work/$name"/runs/*/*/*/run.json | wc -l || true)
[ "$planned" -eq "$completed" ] || { echo "FAIL: $completed of $planned runs completed"; exit 1; }
again=$("$stiefel" experiment "$name" --profile smoke --out "$work/$name" 2>&1)
grep -q "; $planned already finished (skipped), 0 to run" <<<"$again" || { echo "FAIL: a rerun did not skip: $again"; exit 1; }
echo "$name: $completed smoke runs"
