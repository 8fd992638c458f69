#!/usr/bin/env bash
# Two-epoch smoke runs of every arm on both tasks at tiny sizes; each must complete and write a
# run record with the per-epoch metrics, and Stiefel arms must keep their frames orthonormal.
set -euo pipefail
stiefel=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
# Every arm the command accepts (read from its --help), so a new arm cannot miss its smoke run.
mapfile -t arms < <("$stiefel" train --help | sed -n 's/.*--arm TEXT:{\([^}]*\)}.*/\1/p' | tr ',' '\n')
[ "${#arms[@]}" -ge 12 ] || { echo "train_smoke.sh: could not read the arms from stiefel train --help" >&2; exit 1; }
for task in image grok; do
  for arm in "${arms[@]}"; do
    out="$work/$task-$arm"
    if [ "$task" = image ]; then
      "$stiefel" train --task image --arm "$arm" --seed 1 --n 512 --epochs 2 --batch 128 --pca-samples 4000 \
        --warmup-epochs 1 --quiet --out "$out"
    else
      "$stiefel" train --task grok --arm "$arm" --seed 1 --epochs 2 --eval-every 1 --quiet --out "$out"
    fi
    python3 - "$out/run.json" "$arm" <<'PY'
import json, sys
run = json.load(open(sys.argv[1])); arm = sys.argv[2]
assert run["status"] == "completed", run["status"]
assert len(run["epochs"]) == 2
e = run["epochs"][-1]
for key in ["train_loss", "train_acc", "test_acc", "isometry_error", "tangent_grad_norm", "step_norm",
            "cap_active_fraction", "gauge_fraction", "step_per_gradient", "seconds"]:
    assert key in e, key
if arm.startswith("b2") or arm == "frozen":
    assert e["isometry_error_max"] <= 1e-6, e["isometry_error_max"]
assert run["dataset"]["name"], run["dataset"]
PY
  done
done
[ -f "$work/grok-b2/checkpoint.pt" ]
echo "smoke runs of ${#arms[@]} arms x 2 tasks completed"
