#!/usr/bin/env bash
# Seed batching on this CPU: per-seed throughput of the grokking step (B2, the full batch of 3 764
# pairs, test evaluation every 100 epochs as the paper evaluates) for S seeds trained
#   alone    as S processes of one LibTorch thread each, J at a time (`--jobs J`), and
#   batched  as ceil(S / B) processes of B seeds each (`--batch-seed`), J at a time,
# with the same total wall clock measured from the first start to the last exit (set-up, evaluation
# and checkpoints included). The figure is seconds per seed-epoch = wall / (S · E). The records of
# the two ways are the same bits (tests/training/train_seed_batch.sh); only the time differs. On a
# CPU the GEMMs already run at the BLAS rate alone, so batching is worth little there; on a GPU it
# is what fills the device (one batched product per layer instead of S small ones).
# Usage: bench/seed_batch.sh [BUILD_DIR] [SEEDS] [EPOCHS] [JOBS] [BATCH]
set -euo pipefail
build=${1:-build/default} seeds=${2:-4} epochs=${3:-40} jobs=${4:-2} batch=${5:-2}
stiefel="$build/stiefel"
[ -x "$stiefel" ] || { echo "seed_batch.sh: $stiefel is missing (build first)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(train --task grok --arm b2 --epochs "$epochs" --quiet)
exec 3>&1 1>/dev/null 2>&1
run_queue() {  # run_queue LABEL COMMAND...: the commands (one per line on stdin), J at a time
  local start end
  start=$(date +%s.%N)
  xargs -P "$jobs" -I{} sh -c '{}'
  end=$(date +%s.%N)
  python3 -c "import sys; w=float(sys.argv[2])-float(sys.argv[1]); print(f'{sys.argv[3]:8s} wall {w:7.1f} s  {w/(int(sys.argv[4])*int(sys.argv[5])):.3f} s per seed-epoch')" \
    "$start" "$end" "$1" "$seeds" "$epochs" >&3
}
echo "grokking B2, $seeds seeds × $epochs epochs, $jobs processes at a time; batches of $batch" >&3
for s in $(seq 0 $((seeds - 1))); do echo "$stiefel ${common[*]} --seed $s --out $work/alone-$s"; done |
  run_queue alone
for first in $(seq 0 "$batch" $((seeds - 1))); do
  line="$stiefel ${common[*]} --seed $first --out $work/batch-$first"
  for s in $(seq $((first + 1)) $((first + batch - 1))); do
    [ "$s" -lt "$seeds" ] && line+=" --batch-seed $s=$work/batch-$s"
  done
  echo "$line"
done | run_queue batched
