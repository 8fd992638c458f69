#!/usr/bin/env bash
# Bad experiment and report input: a clear error naming the argument or file, exit 2, nothing written.
set -uo pipefail
stiefel=$1 work=$2
rm -rf "$work"; mkdir -p "$work"
expect() {  # expect CODE PATTERN -- command...
  local code=$1 pattern=$2; shift 3
  local out; out=$("$@" 2>&1); local rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -q -- "$pattern" <<<"$out"; then
    echo "FAIL: $* -> rc $rc, output: $out"; exit 1
  fi
}
expect 2 "no-such.json: cannot be read" -- "$stiefel" experiment no-such --profile smoke --out "$work/a"
expect 2 "\-\-profile gpu" -- "$stiefel" experiment table6 --profile gpu --out "$work/a"
expect 2 "\-\-arms zz: not an arm of table6's smoke profile (its arms: " -- "$stiefel" experiment table6 --profile smoke --arms a2,zz --out "$work/a"
expect 2 "\-\-arms: not with --status or --slurm" -- "$stiefel" experiment table6 --profile smoke --arms a2 --status --out "$work/a"
expect 2 "\-\-shard 3/2" -- "$stiefel" experiment table6 --profile smoke --shard 3/2 --out "$work/a"
expect 2 "\-\-shard x" -- "$stiefel" experiment table6 --profile smoke --shard x --out "$work/a"
expect 2 "\-\-shard 1/2x" -- "$stiefel" experiment table6 --profile smoke --shard 1/2x --out "$work/a"
expect 2 "\-\-shard -1/2" -- "$stiefel" experiment table6 --profile smoke --shard -1/2 --out "$work/a"
[ ! -e "$work/a" ] || { echo "FAIL: a refused command wrote $work/a"; exit 1; }
printf '{"name": "x", "title": "x", "task": "image", "analysis": "paired", "seeds": 2,\n "arms": [{"id": "a", "train": {"arm": "a2", "lr": 1}}], "profiles": {"paper": {}, "cpu": {"reductions": "r", "seeds": 6}, "smoke": {}}}' > "$work/typo.json"
expect 2 'typo.json: /arms/0/train/lr: unknown field "lr"' -- "$stiefel" experiment "$work/typo.json" --out "$work/b"
# A misspelt arm is refused at load (the arm registry), not after the grid has started.
printf '{"name": "x", "title": "x", "task": "image", "analysis": "paired", "seeds": 2,\n "arms": [{"id": "a", "train": {"arm": "b2-sgdd"}}], "profiles": {"paper": {}, "cpu": {"reductions": "r", "seeds": 6}, "smoke": {}}}' > "$work/arm.json"
expect 2 "arm.json: arms\[0\].train.arm: b2-sgdd: unknown arm (one of a2, " -- "$stiefel" experiment "$work/arm.json" --out "$work/b"
printf '{"name": "x", "title": "x", "task": "image", "analysis": "paired", "seeds": 12,\n "arms": [{"id": "a", "train": {"arm": "a2"}}], "profiles": {"paper": {}, "cpu": {"reductions": "r", "seeds": 3}, "smoke": {}}}' > "$work/few.json"
expect 2 "at least 6 paired seeds" -- "$stiefel" experiment "$work/few.json" --out "$work/b"
# grok_definition FILE NAME TOP ARM: a grok definition with NAME, extra top-level keys TOP and arm ARM.
grok_definition() {
  printf '{"name": "%s", "title": "x", "task": "grok", "analysis": "grok", "seeds": 2%s,\n "arms": [%s], "profiles": {"paper": {}, "cpu": {"reductions": "r", "seeds": 6}, "smoke": {}}}' \
    "$2" "$3" "$4" > "$work/$1"
}
grok_definition escape.json ../escaped "" '{"id": "a", "train": {"arm": "a2"}}'
expect 2 'escape.json: /name: "../escaped" does not match' -- "$stiefel" experiment "$work/escape.json" --out "$work/b"
grok_definition unknown.json x ', "seed": 3' '{"id": "a", "train": {"arm": "a2"}}'
expect 2 'unknown.json: /seed: unknown field "seed"' -- "$stiefel" experiment "$work/unknown.json" --out "$work/b"
grok_definition dotdot.json x "" '{"id": "..", "train": {"arm": "a2"}}'
expect 2 'dotdot.json: /arms/0/id: ".." does not match' -- "$stiefel" experiment "$work/dotdot.json" --out "$work/b"
grok_definition arm-seeds.json x "" '{"id": "a", "seeds": {"arm": "a2"}, "train": {"arm": "a2"}}'
expect 2 'arm-seeds.json: /arms/0/seeds: expected integer, found an object' -- "$stiefel" experiment "$work/arm-seeds.json" --out "$work/b"
printf '{"name": "x", "seeds": 1e408}' > "$work/overflow.json"
expect 2 "overflow.json: not valid JSON" -- "$stiefel" experiment "$work/overflow.json" --out "$work/b"
printf '{"name": ' > "$work/broken.json"
expect 2 "broken.json: not valid JSON" -- "$stiefel" experiment "$work/broken.json" --out "$work/b"
[ ! -e "$work/b" ] || { echo "FAIL: a refused definition wrote $work/b"; exit 1; }
# A results folder holding another grid is refused, not mixed.
mkdir -p "$work/c"
printf '{"experiment": "table6", "profile": "smoke", "grid": [{"id": "main/a2/seed-0", "train": {"arm": "a2", "epochs": 99}}], "data": ""}' > "$work/c/experiment.json"
expect 2 "holds a different grid" -- "$stiefel" experiment table6 --profile smoke --out "$work/c"
expect 2 "not-a-folder: not a results folder" -- "$stiefel" report "$work/not-a-folder" --out "$work/r"
expect 2 "experiment.json: not written by" -- "$stiefel" report "$work/c" --out "$work/r"
expect 2 "claims.json: cannot be read" -- "$stiefel" report --out "$work/r" --claims "$work/claims.json"
# A claim's "budget" names settings of `stiefel train`: a typo would let other budgets decide it.
printf '{"claims": [{"id": "k", "claim": "x", "where": "s", "paper": "p", "kind": "empirical", "experiment": "table6",\n "budget": ["epoch"], "ref": {"arm": "b2", "field": "vs_baseline.diff_mean"}, "rule": {"type": "positive"}}]}' > "$work/budget.json"
expect 2 'budget.json: claim k: "budget" "epoch" is not a `stiefel train` setting' -- \
  "$stiefel" report --out "$work/r" --claims "$work/budget.json"
# A misspelt field of a report table is refused at load, never read as "not run".
printf '{"claims": [{"id": "k", "claim": "x", "where": "s", "paper": "p", "kind": "empirical", "experiment": "table6",\n "ref": {"arm": "b2", "field": "vs_baseline.diff"}, "rule": {"type": "positive"}}]}' > "$work/field.json"
expect 2 'field.json: claim k: /claims/0/ref/field: "vs_baseline.diff" is not one of' -- \
  "$stiefel" report --out "$work/r" --claims "$work/field.json"
printf '{"claims": [], "summary": "x"}' > "$work/not-cert.json"
expect 2 "not-cert.json: not a certificate" -- "$stiefel" report --out "$work/r" --certificate "$work/not-cert.json"
printf '[1, 2]' > "$work/not-cert2.json"
expect 2 "not-cert2.json: not a certificate" -- "$stiefel" report --out "$work/r" --certificate "$work/not-cert2.json"
printf '{"claims": [{"id": "c", "observed": "certified"}], "summary": {}}' > "$work/cert-a.json"
cp "$work/cert-a.json" "$work/cert-b.json"
expect 2 "cert-b.json: claim c is also in .*cert-a.json" -- \
  "$stiefel" report --out "$work/r" --certificate "$work/cert-a.json" --certificate "$work/cert-b.json"
[ ! -e "$work/r" ] || { echo "FAIL: a refused report wrote $work/r"; exit 1; }
echo "bad input refused"
# The options a definition may set (schema/experiment.schema.json's "train") are the options of
# `stiefel train`, both ways.
schema="$(dirname "$0")/../../schema/experiment.schema.json"
python3 - "$schema" "$("$stiefel" train --help)" <<'PY' || exit 1
import json, re, sys
keys = set(json.load(open(sys.argv[1]))["$defs"]["train"]["properties"])
flags = {f[2:].replace("-", "_") for f in re.findall(r"--[a-z][a-z-]*", sys.argv[2])}
cli_only = {"out", "resume", "overwrite", "quiet", "help", "threads", "device", "compute", "seed", "batch_seed",
            "allow_kernel_change", "stop_after_epoch"}
missing, extra = keys - flags, flags - keys - cli_only
if missing or extra:
    print("FAIL: experiment.schema.json's train options and `stiefel train --help` differ:",
          "only in the schema:", sorted(missing), "only in the CLI:", sorted(extra))
    sys.exit(1)
PY
echo "bad experiment and report input: all refused, nothing written"
