#!/usr/bin/env bash
# --reuse-from: a grid's missing cells take the provably identical completed records of another
# results folder (copied as they are, the log saying where from), only among the cells this
# invocation takes (--arms, --shard); a folder that is not a results folder is refused.
set -euo pipefail
stiefel=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
"$stiefel" experiment grok-5seed --profile smoke --jobs 2 --out "$work/from" 2> "$work/from.log"
"$stiefel" experiment grok-5seed --profile smoke --jobs 2 --arms a2 --reuse-from "$work/from" --out "$work/to" \
  2> "$work/to-a2.log"
grep -q "runs reused from $work/from" "$work/to-a2.log"
python3 - "$work" a2 <<'PY'
import glob, json, os, sys
work, only = sys.argv[1:]
grid = json.load(open(os.path.join(work, "to", "experiment.json")))["grid"]
for run in grid:
    arm = run["id"].split("/")[-2]
    to = os.path.join(work, "to", "runs", run["id"])
    if arm != only:
        assert not os.path.exists(os.path.join(to, "run.json")), run["id"] + ": not one of --arms, yet filled"
        continue
    assert open(os.path.join(to, "run.json")).read() == open(os.path.join(work, "from", "runs", run["id"], "run.json")).read()
    assert "this run's record was reused from" in open(os.path.join(to, "log.txt")).read()
print("--reuse-from with --arms filled only that arm's cells, each with its identical record")
PY
"$stiefel" experiment grok-5seed --profile smoke --jobs 2 --reuse-from "$work/from" --out "$work/to" 2> "$work/to.log"
grep -q "0 to run" "$work/to.log" || { echo "FAIL: the rest was not reused"; cat "$work/to.log"; exit 1; }
for f in "$work"/from/runs/*/*/*/run.json; do cmp -s "$f" "$work/to/${f#"$work"/from/}" || { echo "FAIL: $f differs"; exit 1; }; done
echo "--reuse-from filled every cell"
mkdir -p "$work/not-results"
set +e
"$stiefel" experiment grok-5seed --profile smoke --reuse-from "$work/not-results" --out "$work/other" 2> "$work/bad.log"
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "reuse-from $work/not-results: not a results folder" "$work/bad.log" ||
  { echo "FAIL: rc $rc"; cat "$work/bad.log"; exit 1; }
echo "a folder that is not a results folder is refused"
