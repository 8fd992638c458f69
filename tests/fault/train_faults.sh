#!/usr/bin/env bash
# Fault injection on real runs (LD_PRELOAD shim, fault_inject.cpp): a SIGKILL just before every
# rename of a run, a full disk on the record and on the checkpoint, a bit flip in a checkpoint,
# a non-finite loss, and outputs that are not regular files. Each outcome is asserted: nothing
# written before is lost, nothing half-written is kept, and the run resumes to the same result.
set -euo pipefail
stiefel=$1 shim=$2 work=$3
# A sanitized build (the sanitize preset) refuses to start unless AddressSanitizer's runtime comes
# first in the preload list.
asan_runtime=$(ldd "$stiefel" | awk '/libasan/ {print $3}')
shim="${asan_runtime:+$asan_runtime:}$shim"
rm -rf "$work" && mkdir -p "$work"
# The modulus 23 keeps each run short (the files written do not depend on it); part 8 needs a
# long run and trains at §4.3's 97.
args=(train --task grok --modulus 23 --arm b2 --seed 5 --epochs 3 --eval-every 1 --quiet)
fail() { echo "FAIL: $*"; exit 1; }
same_as_straight() {  # the record in $1 equals the uninterrupted run's in every result
  python3 - "$work/straight/run.json" "$1/run.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert b["status"] == "completed", b["status"]
keys = ["epoch", "train_loss", "train_acc", "test_acc", "isometry_error", "tangent_grad_norm", "step_norm",
        "gauge_fraction", "cap_active_fraction"]
assert [e["epoch"] for e in a["epochs"]] == [e["epoch"] for e in b["epochs"]] == [1, 2, 3], b["epochs"]
for x, y in zip(a["epochs"], b["epochs"]):
    for k in keys:
        assert x.get(k) == y.get(k), (x["epoch"], k, x.get(k), y.get(k))
PY
}
no_temporaries() { ! ls "$1" | grep -q '\.tmp\.' || fail "temporary files left in $1: $(ls "$1")"; }

"$stiefel" "${args[@]}" --out "$work/straight"
no_temporaries "$work/straight"

# 1. SIGKILL before each of the 6 renames (record, checkpoint at epochs 1, 2, 3), then resume: the
#    resume starts where the committed checkpoint is (k = 3, 4: epoch 1; k = 5, 6: epoch 2), and the
#    final checkpoint on disk is the one the record names (k = 6 recomputes it).
resumed_at=(none none none 1 1 2 2)
for k in 1 2 3 4 5 6; do
  dir="$work/kill-$k"
  set +e
  STIEFEL_FAULT_KILL_AT_RENAME=$k LD_PRELOAD="$shim" "$stiefel" "${args[@]}" --out "$dir" 2>/dev/null; rc=$?
  set -e
  [ "$rc" -eq 137 ] || fail "kill at rename $k: exit $rc, expected 137 (SIGKILL)"
  "$stiefel" "${args[@]}" --out "$dir" --resume 2> "$dir.err" || { cat "$dir.err"; fail "resume after kill at rename $k"; }
  same_as_straight "$dir"
  no_temporaries "$dir"
  python3 - "$dir/run.json" "$dir/checkpoint.pt" "${resumed_at[$k]}" <<'PY'
import hashlib, json, sys
r = json.load(open(sys.argv[1]))
want = None if sys.argv[3] == "none" else [int(sys.argv[3])]
assert r.get("resumed_at_epochs") == want, (r.get("resumed_at_epochs"), want)
last = max(r["checkpoints"], key=int)
assert last == "3" and hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest() == r["checkpoints"][last], \
    "the final checkpoint is not the one the record names"
PY
done
echo "a SIGKILL before any of the 6 renames resumes to the uninterrupted result, no temporaries left"

# 2. A write fault on the record, then on the checkpoint: a full disk (ENOSPC on write), and a lost
#    write reported at fsync, then at close (EIO). Each: exit non-zero with one line naming the file
#    and why, the files on disk exactly the ones before, no temporary left; a later resume completes.
write_fault_loses_nothing() {  # VARIABLE TARGET WHY-PATTERN
  local variable=$1 target=$2 why=$3 dir="$work/fault-$1-$2" rc
  set +e
  STIEFEL_FAULT_KILL_AT_RENAME=3 LD_PRELOAD="$shim" "$stiefel" "${args[@]}" --out "$dir" 2>/dev/null
  set -e
  before=$(cd "$dir" && sha256sum run.json checkpoint.pt)
  set +e
  env "$variable=$target.tmp" LD_PRELOAD="$shim" "$stiefel" "${args[@]}" --out "$dir" --resume 2> "$dir.err"; rc=$?
  set -e
  [ "$rc" -ne 0 ] || fail "$variable on $target: exit 0"
  grep -q "$target" "$dir.err" || fail "$variable on $target: message does not name the file: $(cat "$dir.err")"
  grep -qi "$why" "$dir.err" || fail "$variable on $target: message does not say why: $(cat "$dir.err")"
  [ "$(wc -l < "$dir.err")" -eq 1 ] || fail "$variable on $target: expected one line, got: $(cat "$dir.err")"
  [ "$before" = "$(cd "$dir" && sha256sum run.json checkpoint.pt)" ] || fail "$variable on $target changed the files"
  no_temporaries "$dir"
  "$stiefel" "${args[@]}" --out "$dir" --resume
  same_as_straight "$dir"
}
for target in run.json checkpoint.pt; do
  write_fault_loses_nothing STIEFEL_FAULT_ENOSPC "$target" "no space left"
  write_fault_loses_nothing STIEFEL_FAULT_EIO_FSYNC "$target" "fsync of .*input/output error"
  write_fault_loses_nothing STIEFEL_FAULT_EIO_CLOSE "$target" "close of .*input/output error"
done
echo "a full disk, or a lost write reported at fsync or at close, on the record or the checkpoint loses nothing and says which file"

# 3. A bit flip in the checkpoint: refused (SHA-256 against the record), files untouched.
dir="$work/flip"
set +e
STIEFEL_FAULT_KILL_AT_RENAME=5 LD_PRELOAD="$shim" "$stiefel" "${args[@]}" --out "$dir" 2>/dev/null
set -e
python3 - "$dir/checkpoint.pt" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0x10
open(p, "wb").write(bytes(b))
PY
before=$(cd "$dir" && sha256sum run.json checkpoint.pt)
set +e
"$stiefel" "${args[@]}" --out "$dir" --resume 2> "$dir.err"; rc=$?
set -e
[ "$rc" -ne 0 ] || fail "a bit-flipped checkpoint was resumed"
grep -q "checkpoint.pt: SHA-256 .* matches no checkpoint" "$dir.err" || fail "bit flip: $(cat "$dir.err")"
[ "$before" = "$(cd "$dir" && sha256sum run.json checkpoint.pt)" ] || fail "bit flip: files changed"
"$stiefel" "${args[@]}" --out "$dir" --overwrite
same_as_straight "$dir"
echo "a bit-flipped checkpoint is refused; --overwrite starts over"

# 4. Divergence is a result: status diverged with epoch, step and tensor, exit 3; a resume returns it.
dir="$work/diverged"
set +e
"$stiefel" train --task grok --arm a2 --adam-lr 1e10 --epochs 20 --eval-every 2 --quiet --out "$dir" 2> "$dir.err"; rc=$?
set -e
[ "$rc" -eq 3 ] || fail "divergence: exit $rc, expected 3: $(cat "$dir.err")"
grep -q "run diverged: .*non-finite" "$dir.err" || fail "divergence message: $(cat "$dir.err")"
python3 - "$dir/run.json" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "diverged", r["status"]
d = r["divergence"]
assert d["epoch"] >= 1 and d["step"] >= 1 and d["tensor"], d
def finite(x, where):  # every recorded metric is a finite number (JSON null would be a NaN)
    if isinstance(x, dict):
        for k, v in x.items(): finite(v, where + "." + k)
    elif isinstance(x, list):
        for i, v in enumerate(x): finite(v, f"{where}[{i}]")
    else:
        assert x is not None and not (isinstance(x, float) and not math.isfinite(x)), where
finite(r["epochs"], "epochs")
PY
set +e
"$stiefel" train --task grok --arm a2 --adam-lr 1e10 --epochs 20 --eval-every 2 --quiet --out "$dir" --resume 2>/dev/null; rc=$?
set -e
[ "$rc" -eq 3 ] || fail "resuming a diverged run: exit $rc, expected 3"
echo "a diverging run stops with status diverged (exit 3)"

# 5. LAPACK stops converging. The SVD of the polar retraction first: the Gram route takes over and
#    the record counts its steps. Then the Gram route's eigendecomposition too, at epoch 3: the run
#    fails with one line, its record says "failed" (epoch, step, error) and keeps epochs 1 and 2 and the
#    checkpoint; a resume continues from there to the uninterrupted result and keeps the failure.
dir="$work/svd-fails"
STIEFEL_FAULT_NO_CONVERGENCE=gesdd LD_PRELOAD="$shim" "$stiefel" "${args[@]}" --out "$dir"
python3 - "$dir/run.json" "$work/straight/run.json" <<'PY'
import json, sys
r, straight = (json.load(open(p)) for p in sys.argv[1:])
assert r["status"] == "completed", r["status"]
assert all(e.get("polar_gram_fallbacks", 0) > 0 for e in r["epochs"]), [e.get("polar_gram_fallbacks") for e in r["epochs"]]
assert all(e["isometry_error_max"] < 1e-6 for e in r["epochs"])
assert not any("polar_gram_fallbacks" in e for e in straight["epochs"])
PY
dir="$work/lapack-fails"
set +e
STIEFEL_FAULT_NO_CONVERGENCE=gesdd,syevd STIEFEL_FAULT_NO_CONVERGENCE_SKIP=40 LD_PRELOAD="$shim" \
  "$stiefel" "${args[@]}" --out "$dir" 2> "$dir.err"; rc=$?
set -e
[ "$rc" -eq 1 ] || fail "a LAPACK failure: exit $rc, expected 1: $(cat "$dir.err")"
grep -q "linalg.eigh: .*failed to converge" "$dir.err" && [ "$(wc -l < "$dir.err")" -eq 1 ] || fail "LAPACK failure message: $(cat "$dir.err")"
python3 - "$dir/run.json" "$dir/checkpoint.pt" <<'PY'
import hashlib, json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "failed", r["status"]
f = r["failure"]
assert f["epoch"] == 3 and f["step"] == 3 and "failed to converge" in f["error"], f
assert [e["epoch"] for e in r["epochs"]] == [1, 2], r["epochs"]
assert hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest() == r["checkpoints"]["2"]
PY
"$stiefel" "${args[@]}" --out "$dir" --resume
same_as_straight "$dir"
python3 - "$dir/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert "failure" not in r and [f["epoch"] for f in r["earlier_failures"]] == [3] and r["resumed_at_epochs"] == [2], r
PY
echo "an SVD that does not converge takes the Gram route; a LAPACK failure is recorded as failed and resumes"

# 6. Outputs that are not regular files are refused and left as they were.
mkdir -p "$work/links"
echo keep > "$work/links/target.txt"
ln -s target.txt "$work/links/cert.json"
set +e
"$stiefel" certify --claims 'prop1-joint-gauge' --cases 2 --precision double --out "$work/links/cert.json" 2> "$work/links.err"; rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "symbolic link" "$work/links.err" || fail "certify --out symlink: exit $rc: $(cat "$work/links.err")"
[ -L "$work/links/cert.json" ] && [ "$(cat "$work/links/target.txt")" = keep ] || fail "the symlink was replaced"
mkfifo "$work/links/fifo.json"
set +e
"$stiefel" certify --checkpoint "$work/straight/checkpoint.pt" --out "$work/links/fifo.json" 2> "$work/fifo.err"; rc=$?
"$stiefel" certify --checkpoint "$work/straight/checkpoint.pt" --out "$work/links" 2> "$work/dir.err"; rc2=$?
set -e
[ "$rc" -eq 2 ] && grep -q "FIFO" "$work/fifo.err" || fail "certify --out FIFO: exit $rc: $(cat "$work/fifo.err")"
[ -p "$work/links/fifo.json" ] || fail "the FIFO was replaced"
[ "$rc2" -eq 2 ] && grep -q "a folder" "$work/dir.err" || fail "certify --out DIR: exit $rc2: $(cat "$work/dir.err")"
mkdir -p "$work/linked-run" && ln -s ../straight/run.json "$work/linked-run/run.json"
set +e
"$stiefel" "${args[@]}" --out "$work/linked-run" --overwrite 2> "$work/linked.err"; rc=$?
set -e
[ "$rc" -ne 0 ] && grep -q "symbolic link" "$work/linked.err" || fail "run.json symlink: exit $rc: $(cat "$work/linked.err")"
[ -L "$work/linked-run/run.json" ] || fail "the run.json symlink was replaced"
echo "symbolic links, FIFOs and folders are never replaced"

# 7. A temporary left by a dead process is removed by the next write to the same file.
dir="$work/stale"
mkdir -p "$dir" && head -c 100000 /dev/zero > "$dir/run.json.tmp.999999999"
"$stiefel" "${args[@]}" --out "$dir"
[ ! -e "$dir/run.json.tmp.999999999" ] || fail "a stale temporary survived"
echo "stale temporaries of dead processes are removed"

# 8. One process at a time writes a run folder: a second one is refused while the first runs.
dir="$work/locked"
"$stiefel" train --task grok --arm b2 --seed 5 --epochs 400 --eval-every 2 --quiet --out "$dir" &
first=$!
for _ in $(seq 300); do [ -f "$dir/run.json" ] && break; sleep 0.1; done
set +e
"$stiefel" train --task grok --arm b2 --seed 5 --epochs 400 --eval-every 2 --quiet --out "$dir" --resume 2> "$dir.err"; rc=$?
set -e
kill -9 "$first" 2>/dev/null || true
wait "$first" 2>/dev/null || true
[ "$rc" -ne 0 ] && grep -q "another process is writing this folder" "$dir.err" || fail "a second writer: exit $rc: $(cat "$dir.err")"
echo "a second process on the same run folder is refused"
