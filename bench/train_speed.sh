#!/usr/bin/env bash
# Training throughput of the whole machine, measured as a ratio in one invocation:
#   reference  the configuration before the program pinned its own: `--compute environment`
#              (OpenBLAS threads and glibc malloc as the environment leaves them, attention
#              products through torch::matmul, test evaluation in chunks of 2048) with the test
#              split evaluated every epoch — two runs side by side, as `stiefel experiment --jobs 2`
#              ran them;
#   default    what `stiefel experiment --jobs 2` runs now: `--compute pinned` (one OpenBLAS thread,
#              glibc keeping freed memory, the small-matrix attention kernel), test evaluation every
#              5 epochs and at the last (Table 6's definition).
# A pair is A2 and B2 on seed 0, n images, E epochs each, started together. Pairs alternate
# (reference, default, …) for R rounds; the figure is the median over rounds of
#   examples/s = 2 · n · E / wall seconds of the pair (set-up, evaluation and checkpoints included),
# and the steady-state rate from the epoch times of run.json. Then the grokking step (full batch of
# 3 764 pairs, B2) in both configurations, and the fraction of this CPU's sgemm roofline
# (stiefel_gemm_roofline) that the default training reaches (its FLOP count is the CIFAR-10 model's:
# input 128; on Fashion-MNIST, input 49, the fraction is overstated by 2–3%). Both configurations
# share the current data pipeline, so the ratio understates the gain over the earlier program.
# Usage: bench/train_speed.sh [BUILD_DIR] [DATA] [N] [EPOCHS] [ROUNDS]
#   DATA: cifar10:DIR (default cifar10:/tmp/cifar10 when it exists, else fashion-mnist).
set -euo pipefail
build=${1:-build/default}
default_data=fashion-mnist
[ -f /tmp/cifar10/test_batch.bin ] && default_data=cifar10:/tmp/cifar10
data=${2:-$default_data} n=${3:-10000} epochs=${4:-5} rounds=${5:-2}
[ "$epochs" -ge 2 ] || { echo "train_speed.sh: EPOCHS must be at least 2 (the first epoch is not timed)" >&2; exit 2; }
stiefel="$build/stiefel" roofline="$build/bench/stiefel_gemm_roofline"
for exe in "$stiefel" "$roofline"; do
  [ -x "$exe" ] || { echo "train_speed.sh: $exe is missing (build first)" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

pair() {  # pair TAG COMPUTE EVAL_EVERY → wall seconds of two runs started together
  local tag=$1 compute=$2 every=$3 start end pids=() arm
  start=$(date +%s.%N)
  for arm in a2 b2; do
    "$stiefel" train --task image --arm "$arm" --seed 0 --data "$data" --n "$n" --epochs "$epochs" \
      --compute "$compute" --eval-every "$every" --quiet --out "$work/$tag-$arm" > "$work/$tag-$arm.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || { echo "train_speed.sh: a run of $tag failed:" >&2; cat "$work/$tag"-*.log >&2; exit 1; }
  done
  end=$(date +%s.%N)
  python3 -c "print($end - $start)" > "$work/$tag.wall"
}

for round in $(seq "$rounds"); do
  echo "round $round/$rounds: reference pair" >&2
  pair "ref-$round" environment 1
  echo "round $round/$rounds: default pair" >&2
  pair "new-$round" pinned 5
done

grok() {  # grok TAG COMPUTE
  "$stiefel" train --task grok --arm b2 --seed 0 --epochs 100 --eval-every 50 --compute "$2" --quiet \
    --out "$work/$1" > "$work/$1.log" 2>&1 || { echo "train_speed.sh: grokking run $1 failed:" >&2; cat "$work/$1.log" >&2; exit 1; }
}
echo "grokking: reference, then default" >&2
grok grok-ref environment
grok grok-new pinned
"$roofline" > "$work/roofline.txt"

python3 - "$work" "$n" "$epochs" "$rounds" "$data" <<'PY'
import json, statistics, sys
work, n, epochs, rounds, data = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
def run(tag):
    r = json.load(open(f"{work}/{tag}/run.json"))
    assert r["status"] == "completed", f"{tag}: run not completed"
    return r
def wall(tag): return float(open(f"{work}/{tag}.wall").read())
def steady(tag):  # examples/s of the pair from epoch seconds after the first epoch
    return sum(n / statistics.median([e["seconds"] for e in run(f"{tag}-{arm}")["epochs"][1:]]) for arm in ("a2", "b2"))
ref = [2 * n * epochs / wall(f"ref-{r}") for r in range(1, rounds + 1)]
new = [2 * n * epochs / wall(f"new-{r}") for r in range(1, rounds + 1)]
ref_s = [steady(f"ref-{r}") for r in range(1, rounds + 1)]
new_s = [steady(f"new-{r}") for r in range(1, rounds + 1)]
fields = {l.split()[0]: float(l.split()[1]) for l in open(f"{work}/roofline.txt") if l.startswith(("roofline", "flops"))}
peak, flops = fields["roofline"], fields["flops_per_example"]
name = run("new-1-b2")["dataset"]["name"]
print(f"data: {name}, n = {n}, {epochs} epochs per run, pairs A2 + B2 side by side, {rounds} rounds")
for tag, w, s in (("reference", ref, ref_s), ("default  ", new, new_s)):
    print(f"{tag}: {statistics.median(w):7.0f} examples/s whole machine (wall, set-up included; rounds: "
          + ", ".join(f"{x:.0f}" for x in w) + f"), steady state {statistics.median(s):.0f}")
print(f"ratio default / reference: {statistics.median(new) / statistics.median(ref):.2f} x (wall), "
      f"{statistics.median(new_s) / statistics.median(ref_s):.2f} x (steady state)")
for tag in ("ref-1", "new-1"):
    st = {}
    for arm in ("a2", "b2"):
        for k, v in run(f"{tag}-{arm}").get("stage_seconds", {}).items(): st[k] = st.get(k, 0) + v
    if st:
        total = sum(st.values())
        print(f"{'reference' if tag == 'ref-1' else 'default  '} time by stage (round 1, both runs): "
              + ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in sorted(st.items(), key=lambda kv: -kv[1])))
per_core = statistics.median(new_s) / 2
print(f"sgemm roofline (one core, float32, torch::mm): {peak:.1f} GFLOP/s; the model's GEMMs: {flops / 1e6:.1f} MFLOP per "
      f"training example; default steady state per core: {per_core * flops / 1e9:.1f} GFLOP/s = "
      f"{100 * per_core * flops / 1e9 / peak:.0f}% of the roofline")
def grok_epoch(tag):
    r = run(tag)
    return statistics.median([e["seconds"] for e in r["epochs"]])
gr, gn = grok_epoch("grok-ref"), grok_epoch("grok-new")
print(f"grokking step (B2, full batch): reference {gr:.3f} s/epoch, default {gn:.3f} s/epoch, {gr / gn:.2f} x")
print(open(f"{work}/roofline.txt").read().strip())
PY
