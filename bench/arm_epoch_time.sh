#!/usr/bin/env bash
# The per-epoch training time of every arm of Table 7 (and Table 6's frozen arm, whose cost the
# paper's Table 6 caption compares with A2's), each measured alone on an otherwise idle machine
# under the same conditions: one process, one LibTorch thread, `--compute pinned` (the setting the
# grids run), the arm's own training options from experiments/table7.json and its AdamW reading.
# The committed records' s/epoch are what each run took while sharing the machine with another run
# of its grid, so their ratios mix the arms' costs with the load; these are the arms' costs.
#
# Each round trains every arm in turn (order rotated each round) for EPOCHS epochs on seed 0 with
# the test split evaluated only at the last epoch. An arm's epoch time is its run's recorded stage
# seconds (data, forward, backward, frame update, AdamW, diagnostics; not the evaluation or the
# checkpoint writes) over its epochs; its figure is the median over rounds, given beside the
# definition's baseline (A2) as a ratio.
# Usage: bench/arm_epoch_time.sh [BUILD_DIR] [DATA] [N] [EPOCHS] [ROUNDS] [PROFILE]
#   DATA: cifar10:DIR (default cifar10:/tmp/cifar10 when it exists, else fashion-mnist);
#   N: training images (default 10000, Table 7's); PROFILE: table7.json's profile whose AdamW
#   reading is used (default paper-adamw-1e-2).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/default}
default_data=fashion-mnist
[ -f /tmp/cifar10/test_batch.bin ] && default_data=cifar10:/tmp/cifar10
data=${2:-$default_data} n=${3:-10000} epochs=${4:-4} rounds=${5:-2} profile=${6:-paper-adamw-1e-2}
stiefel="$build/stiefel"
[ -x "$stiefel" ] || { echo "arm_epoch_time.sh: $stiefel is missing (build first)" >&2; exit 2; }
[[ "$epochs" =~ ^[0-9]+$ && "$epochs" -ge 1 ]] || { echo "arm_epoch_time.sh: EPOCHS must be a positive integer (got '$epochs')" >&2; exit 2; }
[[ "$rounds" =~ ^[0-9]+$ && "$rounds" -ge 1 ]] || { echo "arm_epoch_time.sh: ROUNDS must be a positive integer (got '$rounds')" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Each arm's `stiefel train` arguments, one per line, in $work/arm-I.args, and its label in
# $work/arm-I.label: the definition's train settings, then the arm's, then the profile's (the grid's
# order of precedence), with this benchmark's own data, size, epochs, evaluation and compute over them.
python3 - "$root/experiments/table7.json" "$profile" "$work" "$data" "$n" "$epochs" <<'PY' || exit 2
import json, sys
path, profile, work, data, n, epochs = sys.argv[1:7]
d = json.load(open(path))
if profile not in d["profiles"]:
    sys.exit(f"arm_epoch_time.sh: experiments/table7.json has no profile '{profile}' "
             f"(it has {', '.join(d['profiles'])})")
bench = {"task": "image", "seed": 0, "data": data, "n": int(n), "epochs": int(epochs),
         "eval_every": int(epochs), "compute": "pinned", "threads": 1, "device": "cpu"}
arms = [(a["label"], a["id"], a["train"]) for a in d["arms"]]
arms.append(("Frozen frames (Table 6's arm)", "frozen", {"arm": "frozen"}))
baseline = d.get("baseline", arms[0][1])
for i, (label, arm_id, train) in enumerate(arms):
    t = {**d.get("train", {}), **train, **d["profiles"][profile].get("train", {}), **bench}
    args = []
    for k, v in t.items():
        flag = "--" + k.replace("_", "-")
        if isinstance(v, bool):
            args += [flag] if v else []
        else:
            args += [flag, v if isinstance(v, str) else json.dumps(v)]
    open(f"{work}/arm-{i}.args", "w").write("".join(a + "\n" for a in args))
    open(f"{work}/arm-{i}.label", "w").write(label)
    if arm_id == baseline:
        open(f"{work}/baseline", "w").write(str(i))
open(f"{work}/count", "w").write(str(len(arms)))
PY

export OMP_NUM_THREADS=1
run() {  # run TAG I → the run's folder $work/TAG, trained with arm I's arguments
  local args
  mapfile -t args < "$work/arm-$2.args"
  "$stiefel" train "${args[@]}" --quiet --out "$work/$1" > "$work/$1.log" 2>&1 ||
    { echo "arm_epoch_time.sh: $(cat "$work/arm-$2.label") failed:" >&2; cat "$work/$1.log" >&2; exit 1; }
}
count=$(cat "$work/count")
for ((round = 0; round < rounds; round++)); do
  for ((k = 0; k < count; k++)); do
    i=$(((k + round) % count))
    run "r$round-a$i" "$i"
  done
done

python3 - "$work" "$rounds" "$epochs" "$n" "$data" "$profile" <<'PY'
import json, statistics, sys
work, rounds, epochs, n, data, profile = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:7]
count, baseline = int(open(f"{work}/count").read()), int(open(f"{work}/baseline").read())
# An epoch's training time: every stage of the run but its evaluation and checkpoint writes.
def per_epoch(rec):
    stages = rec["stage_seconds"]
    return sum(v for k, v in stages.items() if k not in ("evaluation", "checkpoint")) / len(rec["epochs"])
times = [statistics.median(per_epoch(json.load(open(f"{work}/r{r}-a{i}/run.json"))) for r in range(rounds))
         for i in range(count)]
name = "CIFAR-10 (JPEG copy)" if data.startswith("cifar10") else data
print(f"Per-epoch training time, each arm alone (seed 0, n = {n}, {epochs} epochs, median of {rounds} "
      f"rounds; one thread, --compute pinned, {name}; Table 7's '{profile}' settings; evaluation and "
      "checkpoints excluded)")
print(f"| arm | s/epoch | × {open(f'{work}/arm-{baseline}.label').read()} |")
print("|---|---|---|")
for i, t in enumerate(times):
    print(f"| {open(f'{work}/arm-{i}.label').read()} | {t:.2f} | {t / times[baseline]:.2f} |")
PY
