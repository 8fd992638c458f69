#!/usr/bin/env bash
# Kills a real run mid-way (SIGKILL), resumes it, and requires the result to be bit-identical to
# an uninterrupted run of the same configuration; bad arguments and bad data are refused.
set -euo pipefail
stiefel=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
# The grokking task at p = 47 (a quarter of p = 97's work per epoch), long enough to be killed mid-way.
args=(train --task grok --modulus 47 --arm b2 --seed 3 --epochs 30 --eval-every 2 --quiet)
"$stiefel" "${args[@]}" --out "$work/straight"

"$stiefel" "${args[@]}" --out "$work/killed" &
pid=$!
for _ in $(seq 600); do
  if [ -f "$work/killed/run.json" ] && python3 -c "import json,sys; sys.exit(0 if len(json.load(open('$work/killed/run.json'))['epochs']) >= 5 else 1)" 2>/dev/null; then
    break
  fi
  sleep 0.1
done
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
python3 -c "import json; r=json.load(open('$work/killed/run.json')); assert r['status']=='running', r['status']; print('killed after epoch', len(r['epochs']))"
cp -r "$work/killed" "$work/killed-copy"
"$stiefel" "${args[@]}" --out "$work/killed" --resume
python3 - "$work/straight/run.json" "$work/killed/run.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
keys = ["epoch", "train_loss", "train_acc", "isometry_error", "tangent_grad_norm", "step_norm", "gauge_fraction"]
for x, y in zip(a["epochs"], b["epochs"]):
    for k in keys:
        assert x[k] == y[k], (x["epoch"], k, x[k], y[k])
    assert x.get("test_acc") == y.get("test_acc")
assert len(a["epochs"]) == len(b["epochs"]) == 15  # records at the evaluated epochs
print("resumed run is bit-identical to the uninterrupted one")
PY
# Checkpoints are canonical (the AdamW moments keyed by parameter name, not by memory address): the
# run killed and resumed in another process ends with the same checkpoint bytes as the uninterrupted
# one, and its record names the same hash.
cmp "$work/straight/checkpoint.pt" "$work/killed/checkpoint.pt" ||
  { echo "FAIL: the resumed run's last checkpoint differs from the uninterrupted run's"; exit 1; }
python3 - "$work/straight/run.json" "$work/killed/run.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["checkpoints"] for p in sys.argv[1:])
assert a and a == b, (a, b)
PY
echo "identical runs write identical checkpoints"

# A record that lost the epoch its checkpoint holds (damaged or edited) is refused on resume, never
# resumed into a completed record with a gap; the folder is left as it was.
cp -r "$work/killed-copy" "$work/lost-epoch"
python3 - "$work/lost-epoch/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["epochs"].pop()
json.dump(r, open(sys.argv[1], "w"), indent=2)
PY
before=$(sha256sum "$work/lost-epoch/run.json" "$work/lost-epoch/checkpoint.pt")
set +e
"$stiefel" "${args[@]}" --out "$work/lost-epoch" --resume 2> "$work/err-lost"; rc=$?
set -e
[ "$rc" -ne 0 ] && grep -q "records no epoch .*, which .*checkpoint.pt holds" "$work/err-lost" ||
  { cat "$work/err-lost"; echo "FAIL: a record without its checkpoint's epoch was resumed"; exit 1; }
[ "$before" = "$(sha256sum "$work/lost-epoch/run.json" "$work/lost-epoch/checkpoint.pt")" ]
echo "a record without its checkpoint's epoch is refused"

# The advice to remove a foreign checkpoint beside a completed record is a command a shell runs as
# shown, whatever the folder's name (a tab, a space, a quote).
odd="$work/odd	name 'q'"
"$stiefel" train --task grok --arm b2 --seed 3 --epochs 2 --eval-every 2 --quiet --out "$odd"
head -c 100 /dev/urandom > "$odd/checkpoint.pt"
set +e
"$stiefel" train --task grok --arm b2 --seed 3 --epochs 2 --eval-every 2 --quiet --out "$odd" --resume 2> "$work/err-odd"; rc=$?
set -e
[ "$rc" -ne 0 ] || { echo "FAIL: a foreign checkpoint beside a completed record was accepted"; exit 1; }
advice=$(sed -n 's/.*`\(rm [^`]*\)`.*/\1/p' "$work/err-odd")
[ -n "$advice" ] || { cat "$work/err-odd"; echo "FAIL: no rm advice"; exit 1; }
bash -c "$advice" && [ ! -e "$odd/checkpoint.pt" ] && [ -f "$odd/run.json" ] ||
  { echo "FAIL: the advice '$advice' did not remove the checkpoint"; exit 1; }
echo "the rm advice runs as shown"

# A resume with other settings than the interrupted run's is refused, and the run is left as it was.
"$stiefel" "${args[@]}" --out "$work/other" &
pid=$!
for _ in $(seq 600); do
  [ -f "$work/other/checkpoint.pt" ] && break
  sleep 0.1
done
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
before=$(sha256sum "$work/other/run.json" "$work/other/checkpoint.pt")
set +e
"$stiefel" "${args[@]}" --riemann-lr 0.5 --out "$work/other" --resume 2> "$work/err-other"; rc=$?
set -e
[ "$rc" -ne 0 ] && grep -q "records another run: riemann_lr" "$work/err-other"
[ "$before" = "$(sha256sum "$work/other/run.json" "$work/other/checkpoint.pt")" ]
echo "a resume with other settings is refused"
# A record whose epochs came from another attention route (an older build: the same function, other
# bits) is not continued by this one.
cp -r "$work/other" "$work/other-route"
python3 - "$work/other-route/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["compute"]["attention_products"] = "small-matrix kernel"
json.dump(r, open(sys.argv[1], "w"), indent=2)
PY
set +e
"$stiefel" "${args[@]}" --out "$work/other-route" --resume 2> "$work/err-route"; rc=$?
set -e
[ "$rc" -ne 0 ] && grep -q "records another run: attention products (small-matrix kernel → one \[Q|K|V\] GEMM" \
  "$work/err-route"
echo "a resume across attention routes is refused"
# A resume under other BLAS kernels (here: a record written under another core) is refused, naming
# both and how to rerun the record's; asked (--allow-kernel-change), it continues and keeps the
# compute of its earlier epochs, the change marked as asked; a resume under the same kernels adds
# nothing.
cp -r "$work/other" "$work/other-kernels"
python3 - "$work/other-kernels/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["compute"]["blas"]["kernels"] = "AnotherCore"
json.dump(r, open(sys.argv[1], "w"), indent=2)
PY
set +e
"$stiefel" "${args[@]}" --out "$work/other-kernels" --resume 2> "$work/err-kernels"; rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "was computed with OpenBLAS's AnotherCore kernels, this process has .*OPENBLAS_CORETYPE=AnotherCore" \
  "$work/err-kernels" || { cat "$work/err-kernels"; echo "FAIL: a resume under other BLAS kernels was not refused"; exit 1; }
"$stiefel" "${args[@]}" --out "$work/other-kernels" --resume --allow-kernel-change
python3 - "$work/other-kernels/run.json" "$work/killed/run.json" <<'PY'
import json, sys
r, plain = (json.load(open(p)) for p in sys.argv[1:])
assert r["status"] == "completed", r["status"]
(entry,) = r["earlier_compute"]
assert entry["until_epoch"] == r["resumed_at_epochs"][0] > 0, entry
assert entry["compute"]["blas"]["kernels"] == "AnotherCore", entry
assert entry["kernel_change_allowed"] is True, entry
assert r["compute"]["blas"].get("kernels") != "AnotherCore"
assert "earlier_compute" not in plain, plain["earlier_compute"]
print("a resume under other kernels records the earlier epochs' compute")
PY
# A resume under other kernels that wrote no checkpoint (it failed, or was killed before its first)
# computed none of the epochs kept: resumed under the first kernels again, the record names none.
cp -r "$work/other" "$work/other-back"
python3 - "$work/other-back/run.json" <<'PY'
import copy, json, sys
r = json.load(open(sys.argv[1]))
r["earlier_compute"] = [{"until_epoch": r["epochs"][-1]["epoch"], "compute": copy.deepcopy(r["compute"])}]
r["compute"]["blas"]["kernels"] = "AnotherCore"
json.dump(r, open(sys.argv[1], "w"), indent=2)
PY
"$stiefel" "${args[@]}" --out "$work/other-back" --resume --allow-kernel-change
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['status']=='completed' and 'earlier_compute' not in r, r.get('earlier_compute'); print('a resume that computed no kept epoch leaves no earlier compute')" \
  "$work/other-back/run.json"

# A finished run is never replaced or extended silently: without --resume it is refused, a resume
# with other settings (more epochs, another arm) is refused naming them; --overwrite replaces it.
before=$(sha256sum "$work/straight/run.json")
set +e
"$stiefel" "${args[@]}" --out "$work/straight" 2> "$work/err-again"; rc_again=$?
"$stiefel" train --task grok --modulus 47 --arm b2 --seed 3 --epochs 34 --eval-every 2 --quiet --out "$work/straight" --resume \
  2> "$work/err-more"; rc_more=$?
"$stiefel" train --task grok --modulus 47 --arm b2m --seed 3 --epochs 30 --eval-every 2 --quiet --out "$work/straight" --resume \
  2> "$work/err-arm"; rc_arm=$?
set -e
[ "$rc_again" -eq 2 ] && grep -q "holds a completed run" "$work/err-again"
[ "$rc_more" -eq 2 ] && grep -q "records another run: epochs (30 → 34)" "$work/err-more"
[ "$rc_arm" -eq 2 ] && grep -q "records another run: arm" "$work/err-arm"
[ "$before" = "$(sha256sum "$work/straight/run.json")" ]
echo "a finished run is neither overwritten nor extended without --overwrite"

# Options are validated where they are read: no silent default, no wrap-around.
for bad in "--adam-lr -1" "--adam-lr inf" "--adam-lr nan" "--weight-decay -0.5" "--eps -1" "--riemann-lr -1" \
           "--tau -0.1" "--seed -1" "--pca-samples 0" "--sgd-lr 1e999"; do
  set +e
  # shellcheck disable=SC2086
  "$stiefel" train --task grok --epochs 1 $bad --out "$work/bad-option" 2> "$work/err-option"; rc=$?
  set -e
  opt=${bad%% *}
  [ "$rc" -eq 2 ] && grep -q -- "$opt" "$work/err-option" || { echo "FAIL: $bad -> rc $rc: $(cat "$work/err-option")"; exit 1; }
  [ ! -e "$work/bad-option" ] || { echo "FAIL: $bad wrote $work/bad-option"; exit 1; }
done
echo "out-of-range options refused"

# Refusals: an unknown arm, a missing data folder, a truncated file; nothing is written.
set +e
"$stiefel" train --task image --arm nope --out "$work/bad1" 2> "$work/err1"; rc1=$?
"$stiefel" train --task image --data cifar10:"$work/none" --epochs 1 --out "$work/bad2" 2> "$work/err2"; rc2=$?
mkdir -p "$work/cifar"; head -c 1000 /dev/zero > "$work/cifar/data_batch_1.bin"
for i in 2 3 4 5; do cp "$work/cifar/data_batch_1.bin" "$work/cifar/data_batch_$i.bin"; done
cp "$work/cifar/data_batch_1.bin" "$work/cifar/test_batch.bin"
"$stiefel" train --task image --data cifar10:"$work/cifar" --epochs 1 --out "$work/bad3" 2> "$work/err3"; rc3=$?
set -e
[ "$rc1" -ne 0 ] && grep -q -- "--arm" "$work/err1"
[ "$rc2" -ne 0 ] && grep -q "data_batch_1.bin: missing" "$work/err2"
[ "$rc3" -ne 0 ] && grep -q "data_batch_1.bin: 1000 bytes" "$work/err3"
[ ! -e "$work/bad2" ] && [ ! -e "$work/bad3" ]
echo "bad arguments and bad data refused"

# The trained frames pass the checkpoint certificate; a damaged checkpoint is refused.
"$stiefel" certify --checkpoint "$work/straight/checkpoint.pt" --out "$work/ckpt-cert.json"
python3 -c "import json; c=json.load(open('$work/ckpt-cert.json')); assert c['summary']['passed'] and c['summary']['checks'] >= 32, c['summary']"
head -c 5000 "$work/straight/checkpoint.pt" > "$work/broken.pt"
if "$stiefel" certify --checkpoint "$work/broken.pt" --out "$work/broken.json" 2> "$work/err4"; then
  echo "a truncated checkpoint was certified"; exit 1
fi
grep -q "broken.pt" "$work/err4"
[ "$(wc -l < "$work/err4")" -eq 1 ] || { echo "FAIL: a torch error took more than one line: $(cat "$work/err4")"; exit 1; }
echo "checkpoint certificate ok"
