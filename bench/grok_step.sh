#!/usr/bin/env bash
# The grokking step (§4.3's model, full batch of 3 764 pairs, evaluation every 100 epochs as the
# paper evaluates): epoch time of A2 and of B2 on one core (one run alone) and on the whole machine
# (A2 and B2 started together, one per core), the model's GEMM FLOPs per epoch, and the fraction of
# this CPU's sgemm roofline (stiefel_gemm_roofline, one thread) each reaches. The epoch time is the
# wall time of the last 100-epoch window of run.json (its evaluation included), so set-up and the
# first window's warm-up are not counted. With a second stiefel executable (REFERENCE), every
# measurement is taken for both, alternating, and the ratio is printed: before/after in one call.
# Usage: bench/grok_step.sh [BUILD_DIR] [EPOCHS] [REFERENCE]
set -euo pipefail
build=${1:-build/default} epochs=${2:-200} reference=${3:-}
stiefel="$build/stiefel" roofline="$build/bench/stiefel_gemm_roofline"
for exe in "$stiefel" "$roofline" ${reference:+"$reference"}; do
  [ -x "$exe" ] || { echo "grok_step.sh: $exe is missing (build first)" >&2; exit 2; }
done
[ "$epochs" -ge 200 ] && [ $((epochs % 100)) -eq 0 ] ||
  { echo "grok_step.sh: EPOCHS must be a multiple of 100, at least 200 (the first window is not timed)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run() {  # run EXE TAG ARM: one grokking run into $work/TAG
  "$1" train --task grok --arm "$3" --seed 0 --epochs "$epochs" --eval-every 100 --quiet --out "$work/$2" \
    > "$work/$2.log" 2>&1 || { echo "grok_step.sh: run $2 failed:" >&2; cat "$work/$2.log" >&2; exit 1; }
}
measure() {  # measure EXE PREFIX: each arm alone, then both together
  local arm
  for arm in a2 b2; do run "$1" "$2-alone-$arm" "$arm"; done
  run "$1" "$2-pair-a2" a2 & local p1=$!
  run "$1" "$2-pair-b2" b2 & local p2=$!
  wait "$p1" && wait "$p2"
}
"$roofline" > "$work/roofline.txt"
if [ -n "$reference" ]; then
  echo "grok_step.sh: reference $reference, then $stiefel" >&2
  measure "$reference" ref
fi
echo "grok_step.sh: $stiefel ($epochs epochs per run)" >&2
measure "$stiefel" new

python3 - "$work" "$reference" <<'PY'
import json, os, sys
work, reference = sys.argv[1], sys.argv[2]
fields = {line.split()[0]: line.split()[1] for line in open(os.path.join(work, "roofline.txt"))
          if line.split() and line.split()[0] in ("roofline", "grok_flops_per_epoch")}
roof, flops = float(fields["roofline"]), float(fields["grok_flops_per_epoch"])
def epoch(tag):
    r = json.load(open(os.path.join(work, tag, "run.json")))
    return r["epochs"][-1]["seconds"], r.get("compute", {}).get("attention_products", "?")
print(f"sgemm roofline (one thread): {roof:.1f} GFLOP/s; GEMM work of a grokking epoch: {flops / 1e9:.2f} GFLOP")
for prefix in (["ref"] if reference else []) + ["new"]:
    for mode in ("alone", "pair"):
        for arm in ("a2", "b2"):
            sec, att = epoch(f"{prefix}-{mode}-{arm}")
            line = (f"{prefix} {arm.upper()} {'one core ' if mode == 'alone' else 'two runs '}: {sec:.3f} s/epoch, "
                    f"{flops / sec / 1e9:.1f} GFLOP/s, {100 * flops / sec / 1e9 / roof:.0f} % of the roofline")
            if prefix == "new" and reference:
                line += f", {epoch(f'ref-{mode}-{arm}')[0] / sec:.2f} x the reference"
            print(line + f"  [{att}]")
PY
