#!/usr/bin/env bash
# `stiefel` where LibTorch is built: a front end without LibTorch (cli/commands_front.cpp). It does
# not link LibTorch; it runs `report` and `experiment` itself and hands every other command line to
# stiefel-torch beside it, and says so by name where that is missing; a local experiment's runs
# execute the stiefel-torch it opened at its start, even where the file is replaced meanwhile.
set -euo pipefail
stiefel=$1 complete=$2 work=$3
rm -rf "$work" && mkdir -p "$work/alone" "$work/bin"
fail() { echo "FAIL: $*"; exit 1; }
if readelf -d "$stiefel" | grep -E "NEEDED.*(libtorch|libc10)"; then fail "the front end links LibTorch"; fi
readelf -d "$complete" | grep -q "NEEDED.*libtorch" || fail "$complete does not link LibTorch"
# Commands it hands over: the complete executable's help and options.
help=$("$stiefel" --help) && grep -q "^  train " <<<"$help" || fail "stiefel --help does not list train: $help"
help=$("$stiefel" --verbose train --help) && grep -q -- "--arm" <<<"$help" || fail "stiefel train --help is not train's: $help"
# Without stiefel-torch beside it: its own commands work, the others name what is missing.
cp "$stiefel" "$work/alone/stiefel"
"$work/alone/stiefel" report --help > /dev/null || fail "report needs stiefel-torch"
"$work/alone/stiefel" experiment --list > /dev/null || fail "experiment --list needs stiefel-torch"
set +e
out=$("$work/alone/stiefel" train --epochs 1 --out "$work/alone/run" 2>&1); rc=$?
set -e
[ "$rc" -eq 1 ] && grep -q "cannot run $work/alone/stiefel-torch (the complete stiefel" <<<"$out" ||
  fail "train without stiefel-torch: exit $rc: $out"
[ ! -e "$work/alone/run" ] || fail "train without stiefel-torch wrote $work/alone/run"
# A rebuild during a local experiment does not reach its later runs.
cp "$stiefel" "$complete" "$work/bin/"
printf '{"name": "front", "title": "front end", "task": "grok", "analysis": "grok", "seeds": 3,
 "train": {"epochs": 2, "eval_every": 1, "modulus": 23}, "arms": [{"id": "a2", "train": {"arm": "a2"}}],
 "profiles": {"paper": {}, "cpu": {"seeds": 6, "reductions": "none"}, "smoke": {}}}\n' > "$work/front.json"
"$work/bin/stiefel" experiment "$work/front.json" --profile smoke --jobs 1 --out "$work/x" > "$work/x.log" 2>&1 &
pid=$!
for _ in $(seq 600); do [ -e "$work/x/runs/main/a2/seed-0/log.txt" ] && break; sleep 0.1; done
[ -e "$work/x/runs/main/a2/seed-0/log.txt" ] || fail "the first run did not start: $(cat "$work/x.log")"
printf '#!/bin/sh\ntouch "%s"\nexit 3\n' "$work/replacement-ran" > "$work/bin/stiefel-torch.new"
chmod +x "$work/bin/stiefel-torch.new" && mv -f "$work/bin/stiefel-torch.new" "$work/bin/stiefel-torch"
wait "$pid" || fail "the experiment failed: $(cat "$work/x.log")"
[ ! -e "$work/replacement-ran" ] || fail "a run executed the replaced stiefel-torch"
for s in 0 1 2; do
  grep -q '"status": "completed"' "$work/x/runs/main/a2/seed-$s/run.json" || fail "seed $s did not complete"
done
# Commands started afterwards execute the file that is there now.
set +e
"$work/bin/stiefel" train --help > /dev/null 2>&1; rc=$?
set -e
[ "$rc" -eq 3 ] && [ -e "$work/replacement-ran" ] || fail "a new command did not execute the new stiefel-torch (exit $rc)"
echo "front end ok"
