#!/usr/bin/env bash
# Two-epoch smoke runs of every arm on both tasks at tiny sizes (the grokking task at the modulus 23:
# its arms' code does not depend on it); each must complete and write a run record with the
# per-epoch metrics, and Stiefel arms must keep their frames orthonormal.
set -euo pipefail
stiefel=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
# A synthetic CIFAR-10 layout for the codebook arms (C2 needs patches whitened to d = 128): random
# images in the first 600 records of data_batch_1 and test_batch, the rest of each file zeros.
cifar="$work/synthetic-cifar10"
mkdir -p "$cifar"
python3 - "$cifar" <<'PY'
import os, random, sys
random.seed(1)
for name in ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin"]:
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        f.truncate(3073 * 10000)
        if name in ("data_batch_1.bin", "test_batch.bin"):
            f.seek(0)
            for _ in range(600):
                f.write(bytes([random.randrange(10)]) + random.randbytes(3072))
PY
# Every arm the command accepts (read from its --help), so a new arm cannot miss its smoke run.
mapfile -t arms < <("$stiefel" train --help | sed -n 's/.*--arm TEXT:{\([^}]*\)}.*/\1/p' | tr ',' '\n')
[ "${#arms[@]}" -ge 12 ] || { echo "train_smoke.sh: could not read the arms from stiefel train --help" >&2; exit 1; }
for task in image grok; do
  for arm in "${arms[@]}"; do
    out="$work/$task-$arm"
    if [ "$task" = grok ] && [ "${arm#c2}" != "$arm" ]; then  # the codebook arms need image patches
      set +e
      "$stiefel" train --task grok --arm "$arm" --epochs 2 --quiet --out "$out" 2> "$out.err"; rc=$?
      set -e
      [ "$rc" -eq 2 ] && grep -q -- "--arm: $arm: the codebook prior needs the image task" "$out.err" && [ ! -e "$out" ] ||
        { echo "grok with arm $arm: exit $rc: $(cat "$out.err")"; exit 1; }
      continue
    fi
    if [ "$task" = image ] && [ "${arm#c2}" != "$arm" ]; then  # C2 and C2-nb on CIFAR-10's layout
      set +e
      "$stiefel" train --task image --arm "$arm" --n 512 --epochs 2 --quiet --out "$out" 2> "$out.err"; rc=$?
      set -e
      [ "$rc" -eq 2 ] && grep -q -- "--arm $arm: the codebook is built from the patches (16 per image of dimension 49" "$out.err" &&
        [ ! -e "$out" ] || { echo "Fashion-MNIST with arm $arm: exit $rc: $(cat "$out.err")"; exit 1; }
      for a in "$arm" b2-sgd; do
        codebook=(--codebook-k 8)  # the codebook arm's only: B2-SGD refuses a setting it would not run
        [ "$a" != b2-sgd ] || codebook=()
        "$stiefel" train --task image --data cifar10:"$cifar" --arm "$a" --seed 1 --n 512 --test-n 256 --epochs 2 \
          --batch 128 --pca-samples 4000 --warmup-epochs 1 "${codebook[@]}" --quiet --out "$work/cifar-$a-for-$arm"
      done
      if [ "$arm" = c2 ]; then  # the near miss: C2 at β = 1e-4, a thousandth of its rate
        "$stiefel" train --task image --data cifar10:"$cifar" --arm c2 --codebook-beta 1e-4 --seed 1 --n 512 \
          --test-n 256 --epochs 2 --batch 128 --pca-samples 4000 --warmup-epochs 1 --codebook-k 8 --quiet \
          --out "$work/cifar-c2-near-miss"
      fi
      out="$work/cifar-$arm-for-$arm"
    elif [ "$task" = image ]; then
      "$stiefel" train --task image --arm "$arm" --seed 1 --n 512 --test-n 512 --epochs 2 --batch 128 \
        --pca-samples 4000 --warmup-epochs 1 --quiet --out "$out"
    else
      "$stiefel" train --task grok --modulus 23 --arm "$arm" --seed 1 --epochs 2 --eval-every 1 --quiet --out "$out"
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
# The options the arm does not read are listed: a Euclidean arm reads none of the frames' rates.
not_read = set(run["config"]["not_read"])
reads_riemann_lr = arm.startswith("b2") and not arm.startswith(("b2m", "b2-sgd"))  # the capped Adams
assert ("riemann_lr" in not_read) != reads_riemann_lr and ("tau" in not_read) != reads_riemann_lr, (arm, not_read)
assert ("soft_lambda" in not_read) == (arm != "soft"), (arm, not_read)
PY
  done
done
[ -f "$work/grok-b2/checkpoint.pt" ]
# C2 records its codebook (K-means' objective never rising), and C2-nb (β = 0, the prior kept in the
# loss) trains exactly as PA16 (b2-sgd): the same epochs, bit for bit, but for the wall time; C2 at
# β = 1e-4 (the near miss) does not.
python3 - "$work/cifar-c2-for-c2/run.json" "$work/cifar-c2-nb-for-c2-nb/run.json" "$work/cifar-b2-sgd-for-c2/run.json" \
  "$work/cifar-c2-near-miss/run.json" <<'PY'
import json, sys
c2, nb, pa16, near = (json.load(open(p)) for p in sys.argv[1:])
book = c2["codebook"]
assert book["k"] == 8 and book["points"] == 512 and book["beta"] == 0.1, book
j = book["objective_per_point_and_dimension"]
assert all(b <= a + 1e-15 for a, b in zip(j, j[1:])), j
assert nb["codebook"]["beta"] == 0.0
strip = lambda r: [{k: v for k, v in e.items() if k != "seconds"} for e in r["epochs"]]
assert strip(nb) == strip(pa16), "C2-nb differs from PA16"
assert strip(c2) != strip(pa16), "C2's prior changed nothing"
assert near["codebook"]["beta"] == 1e-4
assert strip(near) != strip(pa16), "C2 at beta = 1e-4 trained as PA16"
PY
echo "smoke runs of ${#arms[@]} arms x 2 tasks completed"
