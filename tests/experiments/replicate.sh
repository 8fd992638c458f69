#!/usr/bin/env bash
# stiefel replicate: a smoke grid's records rerun identical (exit 0); a record altered in its last
# bits is named with the field, the epoch and both values (exit 1); --epochs E reruns the first E
# epochs under the whole run's schedule (an image run's cosine: identical, where a run of E epochs
# is not); a folder with no completed record is refused (exit 2).
set -uo pipefail
stiefel=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $1"; exit 1; }
"$stiefel" experiment grok-riemann-lr --profile smoke --arms lr-1,lr-0.3 --jobs 2 --out "$work/grid" > "$work/grid.log" 2>&1 ||
  { cat "$work/grid.log"; fail "the smoke grid did not run"; }
"$stiefel" replicate "$work/grid" --work "$work/r1" > "$work/r1.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] && grep -q "^2 of 2 records identical" "$work/r1.log" || { cat "$work/r1.log"; fail "replicate: exit $rc"; }
python3 - "$work/grid/runs/main/lr-1/seed-0/run.json" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))
r["epochs"][0]["train_loss"] = math.nextafter(r["epochs"][0]["train_loss"], 10.0)
json.dump(r, open(sys.argv[1], "w"), indent=2)
PY
"$stiefel" replicate "$work/grid" --work "$work/r2" > "$work/r2.log" 2>&1
rc=$?
[ "$rc" -eq 1 ] && grep -q "^runs/main/lr-1/seed-0/run.json: DIFFERS at epoch 2, train_loss: .* (record) vs .* (rerun)" "$work/r2.log" &&
  grep -q "^runs/main/lr-0.3/seed-0/run.json: identical" "$work/r2.log" || { cat "$work/r2.log"; fail "an altered record: exit $rc"; }
# The first epoch of a 3-epoch image run (cosine from its first step), rerun under its whole schedule.
image=(train --task image --arm b2 --seed 2 --n 512 --pca-samples 4000 --test-n 500 --warmup-epochs 0 --quiet)
"$stiefel" "${image[@]}" --epochs 3 --out "$work/image/runs/main/b2/seed-2" > /dev/null ||
  fail "the image run did not train"
"$stiefel" replicate "$work/image" --epochs 1 --work "$work/r3" > "$work/r3.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] && grep -q "identical (1 recorded epochs" "$work/r3.log" || { cat "$work/r3.log"; fail "--epochs 1: exit $rc"; }
"$stiefel" "${image[@]}" --epochs 1 --out "$work/short" > /dev/null
python3 - "$work/image/runs/main/b2/seed-2/run.json" "$work/short/run.json" <<'PY' || fail "control: a 1-epoch run had the 3-epoch run's first epoch"
import json, sys
a, b = ({k: v for k, v in json.load(open(p))["epochs"][0].items() if k != "seconds"} for p in sys.argv[1:])
sys.exit(0 if a != b else 1)  # its step norms differ: the schedule of 1 epoch is not that of 3
PY
mkdir -p "$work/empty/runs"
"$stiefel" replicate "$work/empty" > "$work/r4.log" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "no completed run records" "$work/r4.log" || { cat "$work/r4.log"; fail "an empty folder: exit $rc"; }
echo "replicate: identical records confirmed, an altered one named by field and epoch, the first epochs under the whole schedule"
