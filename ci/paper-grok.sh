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
#           A2 and B2 (the stabilised study's two claims), then B2-frz
#   lane 2: table5 B2-sn and B2-comb; grok-5seed's B2-frz seed 0, which fills Table 4's B2-frz cell
#           and its rerun cell, then B2m seed 0, which fills Table 4's B2m cell; Table 4's B2m-can;
#           grok-5seed's other B2m and B2-frz seeds; grok-5seed-power B2m
#
# A reuse step first checks that every cell it would copy is complete and its own cells untouched; a
# step that fails that check, or fails, is skipped and the lane goes on (a reuse with nothing to
# copy would train the runs itself), the lane then exiting 1: running the queue again retries it.
# Each grid runs under the OpenBLAS kernels it was pinned with (its experiment.json's blas_kernel, or
# its records' for a grid pinned before kernels were; a new grid pins OPENBLAS_CORETYPE, else this
# CPU's own): the records depend on them. The committed grokking grids are pinned to Cooperlake;
# start the queue with OPENBLAS_CORETYPE=Cooperlake to pin grok-5seed-power's the same way. Both lanes run at nice 19, in their own session at the lowest
# autogroup weight, so builds and tests on the machine keep priority. The binaries are copied aside
# first, so a rebuild during the queue does not change the program half-way. Nothing is committed:
# ci/commit-results.sh commits each completed record (and the checkpoints of unfinished runs).
#
# Usage: ci/paper-grok.sh [--plan | --status] [BUILD_DIR]
#   --plan    print each lane's commands and exit (nothing runs)
#   --status  print where each step's runs stand (completed, the epoch a checkpoint holds, not
#             started) from the records in results/, and exit
# Logs: $STIEFEL_QUEUE_LOGS (default /tmp/stiefel-paper-grok), lane-1.log and lane-2.log (appended).
set -euo pipefail
mode=start
case "${1:-}" in
  --plan) mode=plan; shift ;;
  --status) mode=status; shift ;;
  --lane) mode=lane; lane=$2; bin=$3; shift 3 ;;  # internal: one lane, with the copied binaries
esac
build=$(realpath -m -- "${1:-build/default}")
logs=$(realpath -m -- "${STIEFEL_QUEUE_LOGS:-/tmp/stiefel-paper-grok}")
root=$(git -C "$(dirname -- "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
cd "$root"

# A step: "NAME ARMS [OPTION ...]", the options passed on (--shard i/N picks one seed's cell of a
# grid: the grid lists its runs seed by seed, each seed's arms in the definition's order).
lane1=(
  "grok-weight-decay wd-0.3"
  "grok-riemann-lr lr-0.1"
  "grok-riemann-lr lr-0.1-rerun --reuse-from results/grok-riemann-lr-paper"
  "grok-5seed-power a2,b2"
  "grok-5seed-power b2-frz"
)
lane2=(
  "table5 b2-sn,b2-comb"
  "grok-5seed b2-frz --shard 4/20"
  "table4 b2-frz,b2-frz-rerun --reuse-from results/grok-5seed-paper"
  "grok-5seed b2m --shard 3/20"
  "table4 b2m --reuse-from results/grok-5seed-paper"
  "table4 b2m-can"
  "grok-5seed b2m,b2-frz"
  "grok-5seed-power b2m"
)

# step_command STEP STIEFEL: sets envp (its environment), cmd (its command line) and reuse (the
# folder a --reuse-from step copies from, else empty) for one step. A grid that exists chooses its
# OpenBLAS kernels (the ones it was pinned with, else its records'), so OPENBLAS_CORETYPE is unset
# for it (a value other than the pinned one is refused); a new grid pins OPENBLAS_CORETYPE where it
# is set, else this CPU's own.
step_command() {
  local name arms out
  local -a words rest
  read -r -a words <<< "$1"
  name=${words[0]} arms=${words[1]} rest=("${words[@]:2}")
  out="results/$name-paper"
  if [ -f "$out/experiment.json" ]; then envp=(env -u OPENBLAS_CORETYPE); else envp=(env); fi
  cmd=("$2" experiment "$name" --profile paper --arms "$arms" --jobs 1 --out "$out" "${rest[@]}")
  reuse=""
  local k
  for ((k = 0; k + 1 < ${#rest[@]}; ++k)); do [ "${rest[k]}" = --reuse-from ] && reuse=${rest[k + 1]}; done
  return 0
}

# reuse_ready STEP: every cell of the step's arms in its pinned grid is complete already, or is
# untouched (no record, no log: a started cell would be resumed, not copied) and has a complete cell
# with the same settings and seed in the folder it copies from.
reuse_ready() {
  local name arms
  read -r name arms _ <<< "$1"
  python3 - "results/$name-paper" "$arms" "$reuse" <<'PY'
import json, os, sys
out, arms, src = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
def complete(folder, run_id):
    path = os.path.join(folder, "runs", run_id, "run.json")
    try:
        return json.load(open(path)).get("status") == "completed"
    except (OSError, ValueError):
        return False
def untouched(folder, run_id):
    cell = os.path.join(folder, "runs", run_id)
    return not any(os.path.exists(os.path.join(cell, f)) for f in ("run.json", "log.txt"))
grids = {}
for folder in (out, src):
    try:
        grids[folder] = json.load(open(os.path.join(folder, "experiment.json")))["grid"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"{folder}/experiment.json: no pinned grid to reuse with ({e})")
missing = [r["id"] for r in grids[out] if r["id"].split("/")[-2] in arms and not complete(out, r["id"]) and
           not (untouched(out, r["id"]) and any(s["train"] == r["train"] and complete(src, s["id"]) for s in grids[src]))]
if missing:
    sys.exit(f"{out}: nothing to copy from {src} into " + ", ".join(missing) +
             " (not complete there, or already started here): the step is skipped, since it would train them")
PY
}

steps_of() {  # steps_of N: lane N's steps, one a line
  if [ "$1" = 1 ]; then printf '%s\n' "${lane1[@]}"; else printf '%s\n' "${lane2[@]}"; fi
}

case "$mode" in
  status)
    for n in 1 2; do
      echo "lane $n:"
      while IFS= read -r step; do
        step_command "$step" stiefel
        read -r name arms _ <<< "$step"
        python3 - "$name" "$arms" "$step" <<'PY'
import json, os, sys
name, arms, step = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
out = f"results/{name}-paper"
pin = os.path.join(out, "experiment.json")
grid = [r["id"] for r in json.load(open(pin))["grid"]] if os.path.isfile(pin) else []
words = step.split()
shard = words[words.index("--shard") + 1] if "--shard" in words else "1/1"
i, n = (int(x) for x in shard.split("/"))
cells = [r for k, r in enumerate(grid) if k % n == i - 1 and r.split("/")[-2] in arms]
states = []
for rid in cells:
    try:
        r = json.load(open(os.path.join(out, "runs", rid, "run.json")))
    except (OSError, ValueError):
        states.append(f"{rid} not started")
        continue
    if r.get("status") in ("completed", "diverged"):
        states.append(f"{rid} {r['status']}")
    else:
        done = max((int(k) for k in r.get("checkpoints", {}) or {}), default=None)
        total = (r.get("config") or {}).get("epochs", "?")
        states.append(f"{rid} at epoch {done} of {total} (checkpoint)" if done is not None
                      else f"{rid} started, no checkpoint yet")
print(f"  {step}: " + ("; ".join(states) if states else "grid not pinned yet, nothing started"))
PY
      done < <(steps_of "$n")
    done
    exit 0 ;;
  plan)
    for n in 1 2; do
      echo "lane $n:"
      while IFS= read -r step; do
        step_command "$step" stiefel
        printf ' '
        printf ' %q' "${envp[@]}" "${cmd[@]}"
        printf '\n'
      done < <(steps_of "$n")
    done
    exit 0 ;;
  lane)
    echo 19 > /proc/self/autogroup 2> /dev/null || true
    # A step that fails, or a reuse with nothing to copy yet, is skipped and the lane goes on (its
    # later steps do not depend on it); the lane then exits 1, and running the queue again retries
    # what was skipped.
    skipped=0
    while IFS= read -r step; do
      step_command "$step" "$bin/stiefel"
      echo "$(date -u +%FT%TZ) lane $lane: ${cmd[*]}"
      if [ -n "$reuse" ] && ! reuse_ready "$step" < /dev/null; then
        skipped=$((skipped + 1))
        continue
      fi
      if ! nice -n 19 "${envp[@]}" "${cmd[@]}" < /dev/null; then
        echo "$(date -u +%FT%TZ) lane $lane: failed, skipped: ${cmd[*]}" >&2
        skipped=$((skipped + 1))
      fi
    done < <(steps_of "$lane")
    echo "$(date -u +%FT%TZ) lane $lane: done ($skipped steps skipped)"
    [ "$skipped" = 0 ] || exit 1
    exit 0 ;;
esac

[ -x "$build/stiefel" ] && [ -x "$build/stiefel-torch" ] ||
  { echo "paper-grok.sh: $build/stiefel or $build/stiefel-torch is missing (build first)" >&2; exit 2; }
bin=$(mktemp -d "${TMPDIR:-/tmp}/stiefel-paper-grok-bin.XXXXXX")
cp -- "$build/stiefel" "$build/stiefel-torch" "$bin/"
mkdir -p "$logs"
for n in 1 2; do
  setsid "$BASH" "$root/ci/paper-grok.sh" --lane "$n" "$bin" "$build" >> "$logs/lane-$n.log" 2>&1 < /dev/null &
  echo "lane $n: process group $!, log $logs/lane-$n.log (stop it and its runs: kill -- -$!)"
done
echo "paper-grok.sh: both lanes started; \`ci/commit-results.sh $build\` commits what they finish"
