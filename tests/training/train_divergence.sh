#!/usr/bin/env bash
# A run that diverges mid-epoch stops at its first non-finite step, as the record says: the step
# diagnostics live on the device and are read once an epoch, so the steps after the first bad one
# run on non-finite values (their SVDs may fail) and must change neither the step nor the tensor
# named. An AdamW rate of 1e9 makes the second step's loss non-finite in a four-step epoch.
set -euo pipefail
stiefel=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
for arm in b2 a2; do
  rc=0
  "$stiefel" train --task image --arm "$arm" --n 1024 --epochs 2 --adam-lr 1e9 --quiet --out "$work/$arm" \
    > "$work/$arm.log" 2>&1 || rc=$?
  [ "$rc" -eq 3 ] || { echo "FAIL: $arm: exit $rc, expected 3 (diverged)"; cat "$work/$arm.log"; exit 1; }
  python3 - "$work/$arm/run.json" "$arm" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
d = r.get("divergence", {})
want = {"epoch": 1, "step": 2, "tensor": "loss"}
got = {k: d.get(k) for k in want}
if r["status"] != "diverged" or got != want or r["epochs"]:
    sys.exit(f"FAIL: {sys.argv[2]}: status {r['status']}, divergence {got} (expected {want}), {len(r['epochs'])} epochs recorded")
PY
done
echo "first non-finite step recorded for b2 and a2"
