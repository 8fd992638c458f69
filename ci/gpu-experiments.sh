#!/usr/bin/env bash
# The grokking suite at the paper's budget (20 000 full-batch epochs), seed-batched, and the update
# claims through the trainer on CUDA, on one CUDA machine in one command of at most 10 minutes.
#
#   ci/gpu-experiments.sh DEPS_DIR RESULTS_DIR [SECONDS]
#
# Needs python3 with a CUDA build of PyTorch (its LibTorch is built against), CMake, Ninja and a C++20
# compiler. The headers and static libraries the build needs beyond those come from
# DEPS_DIR/deps.tar.xz, made here by ci/gpu-deps.sh (ci/gpu-build.sh builds). SECONDS (default 560) is the wall-clock budget
# from start to packed results. In order:
#   1. build `stiefel` without the certificate suite (the shortest path to training);
#   2. the estimate: 200 epochs of the five-seed B2 and A2 batches side by side, timed, and the
#      20 000-epoch time it predicts;
#   3. two identical 200-epoch B2 runs with --deterministic, compared record against record;
#   4. the experiments (with --deterministic), in the order of the ledger rows they decide, each started only where the
#      estimate says it ends inside the budget: grok-5seed (4 arms x 5 seeds, one process per arm,
#      `--batch-seeds 5`), grok-5seed-power, then table5, grok-weight-decay and grok-riemann-lr,
#      then table4;
#   5. meanwhile, at low priority, a second build with the certificate suite, and
#      `stiefel certify --group all` for the `-trainer-cuda` and `-trainer-cuda-f32` claims.
# RESULTS_DIR receives gpu-log.txt, grok-results.tar.gz (every run record and log, no checkpoints),
# certificate-cuda.json and certify.log, and build.log where a build failed. Runs unfinished at the
# budget are stopped; only completed run records are reportable.
# For a dry run of this script's logic on a machine without a GPU: STIEFEL_GPU_DEVICE=cpu,
# STIEFEL_GPU_BIN=path/to/stiefel (no build, no certificate run), STIEFEL_GPU_ESTIMATE_EPOCHS=N.
set -uo pipefail
cd "$(dirname "$0")/.."
deps_dir=$(realpath "${1:?usage: gpu-experiments.sh DEPS_DIR RESULTS_DIR [SECONDS]}")
results=$(realpath -m "${2:?RESULTS_DIR}")
budget=${3:-560}
mkdir -p "$results"
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
exec > >(tee "$results/gpu-log.txt") 2>&1

device=${STIEFEL_GPU_DEVICE:-cuda}
estimate_epochs=${STIEFEL_GPU_ESTIMATE_EPOCHS:-200}
gpu_stat() { nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader 2>/dev/null || true; }
if [ "$device" = cuda ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch; assert torch.cuda.is_available(), "no CUDA device"; print("torch", torch.__version__)' || exit 1
fi
echo "compiler: $(c++ --version | head -1); cmake $(cmake --version | head -1 | cut -d' ' -f3); $(nproc) cores"

gpu_logs=$results
. ci/gpu-build.sh
[ -n "${STIEFEL_GPU_BIN:-}" ] || gpu_prepare "$deps_dir" || exit 1
certify_cuda() {  # the update claims through the trainer on CUDA, float64 and float32
  timeout -k 5 $(( budget - $(elapsed) - 20 )) "$1" certify --group all --jobs 4 \
    --claims '-trainer-cuda(-f32)?$' --out "$results/certificate-cuda.json" > "$results/certify.log" 2>&1
  echo "certify rc=$? at $(elapsed) s"
}
cert=
if [ -n "${STIEFEL_GPU_BIN:-}" ]; then
  bin=$(realpath "$STIEFEL_GPU_BIN")
elif gpu_build build/gpu OFF "$(nproc)"; then
  bin=$PWD/build/gpu/stiefel
  # The certificate build and the CUDA claims, at low priority beside the runs.
  ( renice -n 19 "$BASHPID" > /dev/null; gpu_build build/gpu-cert ON 8 && certify_cuda build/gpu-cert/stiefel ) &
  cert=$!
elif gpu_build build/gpu-cert ON "$(nproc)"; then
  bin=$PWD/build/gpu-cert/stiefel
  certify_cuda "$bin" &
  cert=$!
else
  exit 1
fi

# Many small-kernel processes share the GPU better through MPS; fall back to plain sharing.
if command -v nvidia-cuda-mps-control >/dev/null && nvidia-cuda-mps-control -d 2>/dev/null; then
  if python3 -c 'import torch; torch.zeros(1).cuda(); torch.cuda.synchronize()' 2>/dev/null; then
    echo "MPS on"
  else
    echo quit | nvidia-cuda-mps-control; echo "MPS off (clients could not connect)"
  fi
fi

# The estimate: the five-seed A2 and B2 batches, 200 epochs, side by side.
work=/tmp/stiefel-gpu
mkdir -p "$work/definitions" "$work/results"
python3 - "$work/definitions/grok-5seed.json" "$estimate_epochs" <<'PY'
import json, sys
d = json.load(open("experiments/grok-5seed.json"))
d["profiles"]["paper"] = {"train": {"epochs": int(sys.argv[2])}, "arms": ["a2", "b2"]}
json.dump(d, open(sys.argv[1], "w"))
PY
t0=$(date +%s.%N)
timeout -k 5 150 "$bin" experiment grok-5seed --definitions "$work/definitions" --profile paper --device "$device" --batch-seeds 5 --jobs 2 \
  --out "$work/estimate" > "$work/estimate.log" 2>&1 || { echo "estimate failed"; tail -20 "$work/estimate.log"; cat "$work"/estimate/runs/*/*/seed-0/log.txt; }
t1=$(date +%s.%N)
# Seconds per epoch of the last window of each record (the steady state, start-up left out).
per_epoch=$(python3 - "$work/estimate" "$t1 - $t0" "$estimate_epochs" <<'PY'
import glob, json, sys
last = [json.load(open(f))["epochs"][-1]["seconds"] for f in glob.glob(sys.argv[1] + "/runs/*/*/seed-*/run.json")]
print(max(last) if last else eval(sys.argv[2]) / int(sys.argv[3]))
PY
)
full=$(python3 -c "print(int($per_epoch * 20000))")
echo "estimate: $(python3 -c "print(f'{$t1 - $t0:.1f}')") s for $estimate_epochs epochs of two 5-seed batches side by side," \
     "$(python3 -c "print(f'{1000 * $per_epoch:.1f}')") ms per epoch in the last window: 20 000 epochs ≈ $full s"

# Determinism: one B2 seed, 200 epochs, trained twice with --deterministic (deterministic algorithms,
# CUBLAS_WORKSPACE_CONFIG=:4096:8, deterministic cuDNN); the records must be identical, or the first
# differing field is named (and an operation without a deterministic CUDA kernel names itself in
# the run's error). The experiments below run with --deterministic unless STIEFEL_GPU_DETERMINISTIC=0.
for copy in a b; do
  timeout -k 5 120 "$bin" train --task grok --arm b2 --seed 0 --epochs "$estimate_epochs" --eval-every 50 --quiet \
    --device "$device" --deterministic --out "$work/determinism-$copy" > "$work/determinism-$copy.log" 2>&1 ||
    { echo "determinism run $copy failed:"; tail -5 "$work/determinism-$copy.log"; }
done
python3 - "$work/determinism-a/run.json" "$work/determinism-b/run.json" <<'PY'
import json, sys
try:
    a, b = (json.load(open(p)) for p in sys.argv[1:])
except (OSError, ValueError) as e:
    sys.exit(print(f"determinism: no record to compare ({e})"))
for x, y in zip(a.get("epochs", []), b.get("epochs", [])):
    for k in x:
        if k not in ("seconds", "stage_seconds") and x[k] != y.get(k):
            sys.exit(print(f"determinism: the two runs differ first at epoch {x['epoch']}, {k}: {x[k]!r} vs {y.get(k)!r}"))
print(f"determinism: identical records over {len(a.get('epochs', []))} evaluations "
      f"({a.get('compute', {}).get('deterministic')})")
PY
deterministic=()
[ "${STIEFEL_GPU_DETERMINISTIC:-1}" = 0 ] || deterministic=(--deterministic)

# The experiments, each started where its runs are predicted to end inside the budget.
pids=()
launch() {  # launch FACTOR NAME [OPTIONS...]: start NAME if FACTOR x the 20 000-epoch estimate fits
  local factor=$1 name=$2; shift 2
  local left=$(( budget - $(elapsed) - 25 ))
  if python3 -c "import sys; sys.exit(0 if $factor * $full < $left else 1)"; then
    echo "start $name at $(elapsed) s ($left s left)"
    timeout -k 10 "$left" "$bin" experiment "$name" --profile paper --device "$device" "${deterministic[@]}" "$@" \
      --out "$work/results/$name-paper-cuda" > "$work/$name.log" 2>&1 &
    pids+=($!)
  else
    echo "not started: $name (predicted ${factor} x $full s, $left s left)"
  fi
}
launch 1.0 grok-5seed --batch-seeds 5 --jobs 4
launch 1.5 grok-5seed-power --batch-seeds 5 --jobs 4
launch 2.0 table5 --jobs 4
launch 2.0 grok-weight-decay --jobs 3
launch 2.0 grok-riemann-lr --jobs 4
launch 2.5 table4 --jobs 7
gpu_stat
[ ${#pids[@]} -gt 0 ] && sleep 30 && gpu_stat
for p in "${pids[@]}"; do wait "$p"; echo "experiment pid $p rc=$? at $(elapsed) s"; done
[ -n "$cert" ] && wait "$cert"
for f in "$work"/*.log; do echo "== $f"; tail -4 "$f"; done
( cd "$work" && find results estimate -name run.json | sort | while read -r r; do
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); e=r['epochs']; print(sys.argv[1], 'epochs', e[-1]['epoch'] if e else 0)" "$r"
  done )
tar -C "$work" --exclude=checkpoint.pt --exclude='*.lock' -czf "$results/grok-results.tar.gz" results estimate \
  determinism-a determinism-b
echo "total: $(elapsed) s"
