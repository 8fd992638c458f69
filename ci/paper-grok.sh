#!/usr/bin/env bash
# The grokking runs still to make at the paper's budget (20 000 full-batch epochs a run), on this
# CPU, two lanes side by side (one LibTorch thread each), each lane one run at a time, in the order
# of ledger rows decided per machine-hour. Every step is `stiefel experiment NAME --profile paper
# --arms ARMS --out results/NAME-paper`: a run already complete is skipped, one with a checkpoint
# resumes from it, so this command also continues the queue where it stopped (after a kill, or on
# another machine from the committed checkpoints). A `--reuse-from` step fills a cell whose settings
# are provably another cell's (checked by the grid, never assumed): a rerun at an identical
# configuration is the same bits on CPU.
#
#   lane 1: grok-weight-decay wd-0.3; grok-riemann-lr lr-0.1, then its rerun cell; grok-5seed-power
#           A2 and B2 (the stabilised study's two claims), then B2-frz and B2m
#   lane 2: table5 B2-sn and B2-comb; Table 4's B2-frz cell, then its rerun cell, B2m and B2m-can;
#           grok-5seed B2m and B2-frz (their seed 0 is Table 4's cell trained again: the records
#           must agree bit for bit, a cross-check the reports show)
#
# Each grid runs under the OpenBLAS kernels it was pinned with (its experiment.json's blas_kernel, or
# its records' for a grid pinned before kernels were; a new grid pins OPENBLAS_CORETYPE, else this
# CPU's own): the records depend on them. Both lanes run at nice 19, in their own session at the lowest
# autogroup weight, so builds and tests on the machine keep priority. The binaries are copied aside
# first, so a rebuild during the queue does not change the program half-way. Nothing is committed:
# ci/commit-results.sh commits each completed record (and the checkpoints of unfinished runs).
#
# Usage: ci/paper-grok.sh [--plan] [BUILD_DIR]
#   --plan   print each lane's commands and exit (nothing runs)
# Logs: $STIEFEL_QUEUE_LOGS (default /tmp/stiefel-paper-grok), lane-1.log and lane-2.log.
set -euo pipefail
mode=start
case "${1:-}" in
  --plan) mode=plan; shift ;;
  --lane) mode=lane; lane=$2; bin=$3; shift 3 ;;  # internal: one lane, with the copied binaries
esac
build=${1:-build/default}
root=$(git -C "$(dirname -- "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
cd "$root"

lane1=(
  "grok-weight-decay wd-0.3"
  "grok-riemann-lr lr-0.1"
  "grok-riemann-lr lr-0.1-rerun reuse"
  "grok-5seed-power a2,b2"
  "grok-5seed-power b2-frz,b2m"
)
lane2=(
  "table5 b2-sn,b2-comb"
  "table4 b2-frz"
  "table4 b2-frz-rerun reuse"
  "table4 b2m,b2m-can"
  "grok-5seed b2m,b2-frz"
)

# step_command STEP STIEFEL: sets envp (its environment) and cmd to the command line of one step
# ("NAME ARMS [reuse]"). A grid that exists chooses its OpenBLAS kernels (the ones it was pinned
# with, else its records'), so OPENBLAS_CORETYPE is unset for it (a value other than the pinned one
# is refused); a new grid pins OPENBLAS_CORETYPE where it is set, else this CPU's own.
step_command() {
  local name arms reuse out
  read -r name arms reuse <<< "$1"
  out="results/$name-paper"
  if [ -f "$out/experiment.json" ]; then envp=(env -u OPENBLAS_CORETYPE); else envp=(env); fi
  cmd=("$2" experiment "$name" --profile paper --arms "$arms" --jobs 1 --out "$out")
  [ -n "$reuse" ] && cmd+=(--reuse-from "$out")
  return 0
}

steps_of() {  # steps_of N: lane N's steps, one a line
  if [ "$1" = 1 ]; then printf '%s\n' "${lane1[@]}"; else printf '%s\n' "${lane2[@]}"; fi
}

case "$mode" in
  plan)
    for n in 1 2; do
      echo "lane $n:"
      while IFS= read -r step; do
        step_command "$step" stiefel
        echo "  ${cmd[*]}"
      done < <(steps_of "$n")
    done
    exit 0 ;;
  lane)
    echo 19 > /proc/self/autogroup 2> /dev/null || true
    while IFS= read -r step; do
      step_command "$step" "$bin/stiefel"
      echo "$(date -u +%FT%TZ) lane $lane: ${cmd[*]}"
      if ! nice -n 19 "${envp[@]}" "${cmd[@]}" < /dev/null; then
        echo "$(date -u +%FT%TZ) lane $lane: stopped at: ${cmd[*]}" >&2
        exit 1
      fi
    done < <(steps_of "$lane")
    echo "$(date -u +%FT%TZ) lane $lane: done"
    exit 0 ;;
esac

[ -x "$build/stiefel" ] && [ -x "$build/stiefel-torch" ] ||
  { echo "paper-grok.sh: $build/stiefel or $build/stiefel-torch is missing (build first)" >&2; exit 2; }
bin=$(mktemp -d "${TMPDIR:-/tmp}/stiefel-paper-grok-bin.XXXXXX")
cp -- "$build/stiefel" "$build/stiefel-torch" "$bin/"
logs=${STIEFEL_QUEUE_LOGS:-/tmp/stiefel-paper-grok}
mkdir -p "$logs"
for n in 1 2; do
  setsid "$root/ci/paper-grok.sh" --lane "$n" "$bin" "$build" > "$logs/lane-$n.log" 2>&1 < /dev/null &
  echo "lane $n: pid $!, log $logs/lane-$n.log"
done
echo "paper-grok.sh: both lanes started; \`ci/commit-results.sh $build\` commits what they finish"
