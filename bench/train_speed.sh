#!/usr/bin/env bash
# Training speed of the image model (d = 128, H = 8, r = 16, 2 layers, batch 256):
#   1. examples/s of A2 and B2, run alternately (A2, B2, A2, B2) in one invocation, and the ratio
#      of B2's to A2's epoch time (the cost of the constraint);
#   2. the same model with 1 and 2 LibTorch intra-op threads.
# Usage: bench/train_speed.sh [BUILD_DIR] [DATA] [N] [EPOCHS]
#   DATA: cifar10:DIR or fashion-mnist (default); epochs after the first are timed.
set -euo pipefail
build=${1:-build/default} data=${2:-fashion-mnist} n=${3:-10000} epochs=${4:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {  # run ARM THREADS TAG
  "$build/stiefel" train --task image --arm "$1" --threads "$2" --data "$data" --n "$n" --epochs "$epochs" \
    --seed 0 --quiet --out "$work/$3" 2>/dev/null
}
for round in 1 2; do
  run a2 1 "a2-$round"
  run b2 1 "b2-$round"
done
run b2 2 "b2-threads2"
python3 - "$work" "$n" <<'PY'
import json, sys, statistics
work, n = sys.argv[1], int(sys.argv[2])
def epoch_seconds(tag):
    run = json.load(open(f"{work}/{tag}/run.json"))
    return [e["seconds"] for e in run["epochs"][1:]], run["dataset"]["name"]
a2 = [s for r in (1, 2) for s in epoch_seconds(f"a2-{r}")[0]]
b2 = [s for r in (1, 2) for s in epoch_seconds(f"b2-{r}")[0]]
t2, name = epoch_seconds("b2-threads2")
a, b = statistics.median(a2), statistics.median(b2)
print(f"data: {name}, n = {n}, batch 256, epochs timed per run: {len(a2) // 2}")
print(f"A2: {a:.2f} s/epoch, {n / a:.0f} examples/s (1 thread)")
print(f"B2: {b:.2f} s/epoch, {n / b:.0f} examples/s (1 thread)")
print(f"B2 / A2 epoch time: {b / a:.3f}")
print(f"B2 with 2 threads: {statistics.median(t2):.2f} s/epoch ({statistics.median(t2) / b:.2f} x the 1-thread time)")
PY
