#!/usr/bin/env bash
# The grokking step on a CUDA machine: seconds per epoch for S = 1, 5 and 20 seeds trained in one
# process (`--batch-seeds`, here `stiefel train --batch-seed`), for A2 and B2, in both compute modes (one seed under `--compute environment`, which does not batch),
# and the per-stage profile with every kernel synchronised (CUDA_LAUNCH_BLOCKING=1: the stage times
# are then the GPU's, at the price of the launch overlap). Builds like ci/gpu-experiments.sh.
#
#   ci/gpu-bench.sh DEPS_DIR RESULTS_DIR [EPOCHS]
#
# RESULTS_DIR receives gpu-bench.txt (the table) and gpu-bench.tar.gz (every run record).
set -uo pipefail
cd "$(dirname "$0")/.."
deps_dir=$(realpath "${1:?usage: gpu-bench.sh DEPS_DIR RESULTS_DIR [EPOCHS]}")
results=$(realpath -m "${2:?RESULTS_DIR}")
epochs=${3:-60}
mkdir -p "$results"
start=$(date +%s)
exec > >(tee "$results/gpu-bench.txt") 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
. ci/gpu-build.sh
gpu_logs=$results
gpu_prepare "$deps_dir" && gpu_build build/gpu OFF "$(nproc)" || exit 1
work=/tmp/stiefel-bench
mkdir -p "$work"
run() {  # run LABEL ARM SEEDS COMPUTE [VAR=VALUE...]
  local label=$1 arm=$2 seeds=$3 compute=$4; shift 4
  local extra=() s
  for (( s = 1; s < seeds; ++s )); do extra+=(--batch-seed "$s=$work/$label/seed-$s"); done
  env "$@" timeout 90 build/gpu/stiefel train --task grok --arm "$arm" --device cuda --epochs "$epochs" \
    --eval-every $(( epochs / 2 )) --compute "$compute" --quiet --out "$work/$label/seed-0" "${extra[@]}" \
    > "$work/$label.log" 2>&1 || { echo "$label failed"; tail -5 "$work/$label.log"; return; }
  python3 - "$work/$label/seed-0/run.json" "$label" "$seeds" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["epochs"][-1]["seconds"]
st = r["stage_seconds"]
n = r["epochs"][-1]["epoch"]
stages = " ".join(f"{k} {1000 * v / n:.1f}" for k, v in sorted(st.items()) if k != "checkpoint")
print(f"{sys.argv[2]:<28} {1000 * s:8.1f} ms/epoch  {1000 * s / int(sys.argv[3]):7.1f} ms per seed-epoch"
      f"  stages (ms/epoch): {stages}  test acc {r['final']['test_acc']:.4f}")
PY
}
echo "label                        per epoch (last window of $epochs epochs)"
run a2-s1 a2 1 pinned
run a2-s5 a2 5 pinned
run a2-s20 a2 20 pinned
run b2-s1 b2 1 pinned
run b2-s5 b2 5 pinned
run b2-s20 b2 20 pinned
run a2-s1-environment a2 1 environment
run b2-s1-environment b2 1 environment
run a2-s5-blocking a2 5 pinned CUDA_LAUNCH_BLOCKING=1
run b2-s5-blocking b2 5 pinned CUDA_LAUNCH_BLOCKING=1
tar -C "$work" --exclude=checkpoint.pt -czf "$results/gpu-bench.tar.gz" .
echo "total: $(( $(date +%s) - start )) s"
