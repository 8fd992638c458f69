#!/usr/bin/env bash
# Clean-build benchmark of the `default` preset's settings, as a new user's first two commands
# build: the `stiefel` program alone (README command 1), then everything else (tests, fuzzer shims,
# benchmarks; README command 2). Each configuration builds a fresh tree from a clean checkout of
# HEAD under a scratch folder; prints the wall times and the ten slowest translation units
# (from ninja's log; with N parallel jobs on fewer cores a unit's time includes waiting).
# Usage: bench/build_time.sh [pch|nopch|both]      (default both; about 15 min per configuration
#        on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-both}
case $mode in pch) configs=(ON) ;; nopch) configs=(OFF) ;; both) configs=(OFF ON) ;;
  *) echo "bench/build_time.sh: unknown mode '$mode' (pch | nopch | both)" >&2; exit 2 ;; esac
scratch=$(mktemp -d)
trap 'git worktree remove --force "$scratch/src" > /dev/null 2>&1 || true; rm -rf "$scratch"' EXIT
git worktree add --detach "$scratch/src" HEAD > /dev/null 2>&1
echo "commit $(git rev-parse --short HEAD), $(nproc) cores, $(c++ --version | head -1)"
for pch in "${configs[@]}"; do
  build=$scratch/build-$pch
  t0=$(date +%s.%N)
  cmake -S "$scratch/src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTIEFEL_WARNINGS_AS_ERRORS=ON \
    -DSTIEFEL_PRECOMPILED_HEADERS=$pch > "$scratch/configure-$pch.log"
  t1=$(date +%s.%N)
  cmake --build "$build" --target stiefel > "$scratch/stiefel-$pch.log"
  t2=$(date +%s.%N)
  cmake --build "$build" > "$scratch/rest-$pch.log"
  t3=$(date +%s.%N)
  printf 'precompiled headers %-3s: configure %.0f s, stiefel %.0f s, the rest %.0f s, total %.0f s\n' "$pch" \
    "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" "$(echo "$t3 - $t2" | bc)" "$(echo "$t3 - $t0" | bc)"
  awk 'NR > 1 { printf "  %7.1f s  %s\n", ($2 - $1) / 1000, $4 }' "$build/.ninja_log" | sort -rn | head -10
done
