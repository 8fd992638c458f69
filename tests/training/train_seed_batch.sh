#!/usr/bin/env bash
# Seed batching: runs trained in one process through one batched forward (--batch-seed) write the
# records their own runs write, bit for bit but for timings and "compute" (which names the batch),
# and checkpoints holding the same tensors:
#   1. every arm the grokking task takes, two seeds, alone and batched (and a diverging setting), at
#      the modulus 23 (the batched code does not depend on it; part 3 runs 47);
#   2. a grid through `stiefel experiment --batch-seeds 2` against the same grid run alone (the
#      grokking smoke profile: modulus 23);
#   3. a batched run killed mid-run and resumed batched, one of its runs from scratch (its folder
#      removed), so that the resumed batch holds runs at different epochs.
set -euo pipefail
stiefel=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
compare() {  # RECORD_A RECORD_B: the same run but for timings, compute and the epochs it resumed at
  python3 - "$@" <<'PY'
import json, sys, zipfile, collections, os
def strip(path):
    d = json.load(open(path))
    for k in ("stage_seconds", "checkpoints", "resumed_at_epochs"):
        d.pop(k, None)
    d["compute"] = {k: v for k, v in d.get("compute", {}).items() if k not in ("seed_batch", "malloc")}
    for e in d.get("epochs", []) + ([d["final"]] if "final" in d else []):
        e.pop("seconds", None)
    return d
a, b = sys.argv[1], sys.argv[2]
if strip(a) != strip(b):
    da, db = strip(a), strip(b)
    diff = [k for k in set(da) | set(db) if da.get(k) != db.get(k)]
    sys.exit(f"FAIL: {a} and {b} differ in {diff}")
# Checkpoints: the same tensors (the archive's order and key names vary from process to process).
ca, cb = (os.path.join(os.path.dirname(p), "checkpoint.pt") for p in (a, b))
if os.path.exists(ca) != os.path.exists(cb):
    sys.exit(f"FAIL: one of {ca}, {cb} is missing")
if os.path.exists(ca):
    tensors = lambda p: collections.Counter(zipfile.ZipFile(p).read(n) for n in zipfile.ZipFile(p).namelist() if "/data/" in n)
    if tensors(ca) != tensors(cb):
        sys.exit(f"FAIL: {ca} and {cb} hold different tensors")
PY
}
batch_of() {  # the record names its batch
  python3 -c "import json,sys; b=json.load(open(sys.argv[1]))['compute'].get('seed_batch'); sys.exit(0 if b and b['runs']==int(sys.argv[2]) else 'FAIL: '+sys.argv[1]+': compute.seed_batch '+str(b))" "$@"
}

# 1. Every arm of the grokking task.
for arm in a2 a2-nwf soft b2 b2-mean-moment b2-block b2-column b2-grassmann b2m b2m-can b2-sgd b2-sgd-stiefel frozen \
           "b2 --adam-lr 1e9"; do
  name=${arm// /_}
  common=(train --task grok --modulus 23 --arm $arm --epochs 2 --eval-every 2 --quiet)
  for s in 0 1; do "$stiefel" "${common[@]}" --seed $s --out "$work/$name/alone-$s" > /dev/null 2>&1 || [ $? -eq 3 ]; done
  rc=0
  "$stiefel" "${common[@]}" --seed 0 --out "$work/$name/batch-0" --batch-seed "1=$work/$name/batch-1" \
    > "$work/$name/batch.log" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || { echo "FAIL: $arm: batched exit $rc"; cat "$work/$name/batch.log"; exit 1; }
  for s in 0 1; do
    compare "$work/$name/alone-$s/run.json" "$work/$name/batch-$s/run.json"
    batch_of "$work/$name/batch-$s/run.json" 2
  done
  if [ "$name" = "b2_--adam-lr_1e9" ]; then  # the diverging setting did diverge, batched and alone
    [ "$rc" -eq 3 ] || { echo "FAIL: the diverging batch exited $rc, expected 3"; exit 1; }
    python3 -c "import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))['status']=='diverged' else 'FAIL: not diverged')" \
      "$work/$name/batch-1/run.json"
  fi
done
echo "every grokking arm: batched records equal the runs' own"

# 2. A grid: the grokking smoke grid alone and in seed batches of two.
"$stiefel" experiment grok-5seed --profile smoke --jobs 2 --out "$work/grid-alone" > "$work/grid-alone.log" 2>&1
"$stiefel" experiment grok-5seed --profile smoke --jobs 1 --batch-seeds 2 --out "$work/grid-batch" \
  > "$work/grid-batch.log" 2>&1 || { cat "$work/grid-batch.log"; exit 1; }
n=0
for rec in $(cd "$work/grid-alone" && find runs -name run.json | sort); do
  compare "$work/grid-alone/$rec" "$work/grid-batch/$rec"
  batch_of "$work/grid-batch/$rec" 2
  n=$((n + 1))
done
[ "$n" -eq 8 ] || { echo "FAIL: $n records in the smoke grid, expected 8"; exit 1; }
echo "grok-5seed smoke grid in seed batches: $n records equal the runs' own"

# 3. Kill and resume a batched run; one of its runs restarts from scratch (the modulus 47: a
#    quarter of the work per epoch of the paper's 97; twelve epochs, so that the kill window, epochs
#    2 to 11, lasts about as long as epochs 2 to 5 did at 97).
common=(train --task grok --modulus 47 --arm b2 --epochs 12 --eval-every 1 --quiet)
for s in 0 1; do "$stiefel" "${common[@]}" --seed $s --out "$work/kill/alone-$s" > /dev/null 2>&1; done
"$stiefel" "${common[@]}" --seed 0 --out "$work/kill/batch-0" --batch-seed "1=$work/kill/batch-1" > /dev/null 2>&1 &
pid=$!
epochs_recorded() {
  python3 -c "import json;print(len(json.load(open('$work/kill/batch-0/run.json'))['epochs']))" 2>/dev/null || echo 0
}
# Until two epochs are recorded or the run ends (however slow the build, e.g. under the sanitizers:
# the test's time limit bounds the wait).
while kill -0 $pid 2>/dev/null; do
  [ "$(epochs_recorded)" -ge 2 ] && break
  sleep 0.1
done
kill -9 $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
e=$(epochs_recorded)
[ "$e" -ge 2 ] && [ "$e" -lt 12 ] || { echo "FAIL: the kill came at epoch $e (expected 2 to 11)"; exit 1; }
rm -rf "$work/kill/batch-1"
"$stiefel" "${common[@]}" --resume --seed 0 --out "$work/kill/batch-0" --batch-seed "1=$work/kill/batch-1" \
  > /dev/null 2>&1
for s in 0 1; do compare "$work/kill/alone-$s/run.json" "$work/kill/batch-$s/run.json"; done
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r.get('resumed_at_epochs') else 'FAIL: not resumed')" \
  "$work/kill/batch-0/run.json"
echo "a batched run killed at epoch $e and resumed (one run from scratch) equals the runs' own"

# A member whose folder another process holds stays out; the other trains, and the call fails
# naming the one left out.
mkdir -p "$work/held/b1"
# The holder becomes `sleep` itself (exec), with its output away from the test's: killing it
# releases the lock at once and leaves nothing holding the test's output open.
(exec 9> "$work/held/b1/.lock" && flock 9 && exec sleep 60) > /dev/null 2>&1 &
holder=$!
sleep 0.5
rc=0
"$stiefel" train --task grok --modulus 23 --arm b2 --epochs 2 --eval-every 2 --quiet --seed 0 --out "$work/held/b0" \
  --batch-seed "1=$work/held/b1" > "$work/held.log" 2>&1 || rc=$?
kill $holder 2>/dev/null || true
wait $holder 2>/dev/null || true
[ "$rc" -ne 0 ] && grep -q "held/b1" "$work/held.log" || { echo "FAIL: a held member: exit $rc"; cat "$work/held.log"; exit 1; }
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r['status']=='completed' and 'seed_batch' not in r['compute'] else 'FAIL: '+str(r['status'])+' '+str(r['compute'].get('seed_batch')))" \
  "$work/held/b0/run.json"
[ ! -e "$work/held/b1/run.json" ] || { echo "FAIL: the held member was written"; exit 1; }
echo "a member held by another process left out; the other trained alone"

# Refusals, before anything is written.
for bad in "--batch-seed 1" "--batch-seed x=$work/bad/x" "--batch-seed 0=$work/bad/y" "--batch-seed 1=$work/bad/a"; do
  rc=0
  "$stiefel" train --task grok --arm b2 --epochs 1 --seed 0 --out "$work/bad/a" $bad > "$work/bad.log" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] && grep -q -- "--batch-seed" "$work/bad.log" || { echo "FAIL: '$bad' accepted (exit $rc)"; cat "$work/bad.log"; exit 1; }
  [ ! -e "$work/bad" ] || { echo "FAIL: '$bad' wrote $work/bad"; exit 1; }
done
rc=0
"$stiefel" train --task image --arm b2 --n 256 --epochs 1 --out "$work/bad/img" --batch-seed "1=$work/bad/img1" \
  > "$work/bad.log" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && [ ! -e "$work/bad" ] || { echo "FAIL: an image seed batch was accepted"; exit 1; }
echo "bad --batch-seed arguments refused, nothing written"
