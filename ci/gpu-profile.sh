#!/usr/bin/env bash
# Where the grokking step's GPU time goes: Nsight Compute's duration of every kernel
# of the grokking run (A2, five seeds batched; B2, one seed: set-up, one epoch and its evaluation),
# summed per kernel name into ncu-LABEL.txt (the raw CSV beside it, compressed).
#
#   ci/gpu-profile.sh DEPS_DIR RESULTS_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
deps_dir=$(realpath "${1:?usage: gpu-profile.sh DEPS_DIR RESULTS_DIR}")
results=$(realpath -m "${2:?RESULTS_DIR}")
mkdir -p "$results" build
. ci/gpu-build.sh
gpu_logs=$results
gpu_prepare "$deps_dir" && gpu_build build/gpu OFF "$(nproc)" || exit 1
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$ncu" ] || { echo "gpu-profile: no ncu on this machine"; exit 1; }
w=/tmp/stiefel-profile
profile() {  # profile LABEL ARM SEEDS
  local extra=() s
  for (( s = 1; s < $3; ++s )); do extra+=(--batch-seed "$s=$w/$1/seed-$s"); done
  timeout 100 "$ncu" --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
    --log-file "$results/ncu-$1.csv" build/gpu/stiefel train --task grok --arm "$2" --device cuda --epochs 1 \
    --quiet --out "$w/$1/seed-0" "${extra[@]}" > "$results/ncu-$1.err" 2>&1
  echo "$1 rc=$?"
  python3 - "$results/ncu-$1.csv" > "$results/ncu-$1.txt" <<'PY'
import collections, csv, re, sys
rows = csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))
header = next(rows); next(rows)
name, ns = header.index("Kernel Name"), header.index("gpu__time_duration.sum")
total, per = 0.0, collections.defaultdict(lambda: [0, 0.0])
for r in rows:
    t = float(r[ns].replace(",", "")); k = re.sub(r"\(.*", "", r[name])[:120]
    per[k][0] += 1; per[k][1] += t; total += t
print(f"{sum(c for c, _ in per.values())} kernels, {total / 1e6:.2f} ms of kernel time")
for k, (c, t) in sorted(per.items(), key=lambda kv: -kv[1][1])[:40]:
    print(f"{t / 1e6:9.3f} ms {c:7d}  {k}")
PY
}
profile a2-s5 a2 5
profile b2-s1 b2 1
gzip -f "$results"/ncu-*.csv
