#!/usr/bin/env bash
# The per-epoch training time of every arm of Table 7 (and Table 6's frozen arm, whose cost the
# paper's Table 6 caption compares with A2's), each measured alone on an otherwise idle machine
# under the same conditions: one process, one LibTorch thread, `--compute pinned` (the setting the
# grids run), the arm's own training options from experiments/table7.json and its AdamW reading.
# The committed records' s/epoch are what each run took while sharing the machine with another run
# of its grid, so their ratios mix the arms' costs with the load; these are the arms' costs.
#
# Each round trains every arm in turn (order rotated each round) for EPOCHS epochs on seed 0 with
# the test split evaluated only at the last epoch; an arm's figure is the median over rounds of its
# median epoch time over epochs 2..EPOCHS-1 (the first pays set-up, the last the evaluation), and
# the table gives it beside A2's as a ratio.
# Usage: bench/arm_epoch_time.sh [BUILD_DIR] [DATA] [N] [EPOCHS] [ROUNDS] [PROFILE]
#   DATA: cifar10:DIR (default cifar10:/tmp/cifar10 when it exists, else fashion-mnist);
#   N: training images (default 10000, Table 7's); PROFILE: table7.json's profile whose AdamW
#   reading is used (default paper-adamw-1e-2).
set -euo pipefail
build=${1:-build/default}
default_data=fashion-mnist
[ -f /tmp/cifar10/test_batch.bin ] && default_data=cifar10:/tmp/cifar10
data=${2:-$default_data} n=${3:-10000} epochs=${4:-4} rounds=${5:-2} profile=${6:-paper-adamw-1e-2}
root=$(cd "$(dirname "$0")/.." && pwd)
stiefel="$build/stiefel"
[ -x "$stiefel" ] || { echo "arm_epoch_time.sh: $stiefel is missing (build first)" >&2; exit 2; }
[ "$epochs" -ge 3 ] || { echo "arm_epoch_time.sh: EPOCHS must be at least 3 (the first and last epochs are not timed)" >&2; exit 2; }
[ "$rounds" -ge 1 ] || { echo "arm_epoch_time.sh: ROUNDS must be at least 1" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# "label|options" per arm: Table 7's arms from the definition, then Table 6's frozen arm.
python3 - "$root/experiments/table7.json" "$profile" > "$work/arms" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
if sys.argv[2] not in d["profiles"]:
    sys.exit(f"arm_epoch_time.sh: experiments/table7.json has no profile '{sys.argv[2]}' "
             f"(it has {', '.join(d['profiles'])})")
common = dict(d["profiles"][sys.argv[2]].get("train", {}))
def flags(train):
    return " ".join(f"--{k.replace('_', '-')} {v}" for k, v in train.items())
for arm in d["arms"]:
    print(f"{arm['label'] if 'label' in arm else arm['id']}|{flags({**arm['train'], **common})}")
print(f"Frozen frames (Table 6)|{flags({'arm': 'frozen', **common})}")
PY

export OMP_NUM_THREADS=1
run() {  # run TAG OPTIONS → the run's folder
  # shellcheck disable=SC2086
  "$stiefel" train --task image --seed 0 --data "$data" --n "$n" --epochs "$epochs" --eval-every "$epochs" \
    --compute pinned --threads 1 --quiet --out "$work/$1" $2 > "$work/$1.log" 2>&1 ||
    { echo "arm_epoch_time.sh: $1 failed:" >&2; cat "$work/$1.log" >&2; exit 1; }
}
mapfile -t arms < "$work/arms"
count=${#arms[@]}
for ((round = 0; round < rounds; round++)); do
  for ((k = 0; k < count; k++)); do
    i=$(((k + round) % count))
    run "r$round-a$i" "${arms[$i]#*|}"
  done
done

python3 - "$work" "$rounds" "$count" "$epochs" "$n" "$data" "$profile" "${arms[@]}" <<'PY'
import json, statistics, sys
work, rounds, count, epochs, n, data, profile = sys.argv[1], *map(int, sys.argv[2:5]), *sys.argv[5:8]
arms = [a.split("|")[0] for a in sys.argv[8:]]
times = []
for i in range(count):
    per_round = []
    for r in range(rounds):
        rec = json.load(open(f"{work}/r{r}-a{i}/run.json"))
        per_round.append(statistics.median(e["seconds"] for e in rec["epochs"][1:-1]))
    times.append(statistics.median(per_round))
name = "CIFAR-10 (JPEG copy)" if data.startswith("cifar10") else data
print(f"Per-epoch training time, each arm alone (seed 0, n = {n}, {epochs} epochs, {rounds} rounds, "
      f"one thread, --compute pinned, {name}, Table 7's '{profile}' AdamW reading)")
print("| arm | s/epoch | × A2 |")
print("|---|---|---|")
for arm, t in zip(arms, times):
    print(f"| {arm} | {t:.2f} | {t / times[0]:.2f} |")
PY
