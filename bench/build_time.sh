#!/usr/bin/env bash
# Clean-build benchmark of the `default` preset's settings, as a new user's two README commands
# build: the `stiefel` program alone (command 1), then everything else (tests, fuzzer shims,
# benchmarks; command 2). Builds a fresh tree from a clean checkout of HEAD under a scratch folder;
# prints the wall times and the ten slowest translation units (from ninja's log; with more parallel
# jobs than cores a unit's time includes waiting). About 13 min on 2 cores.
# Measured here (GCC 12.2, 2 cores, ninja's -j4, nothing else running), on 2026-12-05:
#   without precompiled headers: 439 s for `stiefel`, 192 s for the rest, 632 s in all;
#   with the LibTorch header precompiled once for the training library (and reused by the trainer's
#   rule, the executable and the roofline benchmark) and the certificate units' headers once for
#   theirs: 370 s + 178 s, 549 s in all (-13 %). Per unit (usr+sys, one at a time):
#   training/src/trainer.cpp 28.2 s -> 18.9 s, a claim group's unit 6.5 s -> 3.3 s.
# With the test programs' own sources at -O1 and `stiefel` a front end beside the complete
#   stiefel-torch: 373 s for `stiefel` (both executables), 150 s for the rest, 524 s in all.
# Sources compiled together (CMake unity groups) where they share heavy headers: the reports and
#   runner libraries, training_test and core_double_test, and the fuzz tree's copy of the training
#   sources. CPU time (usr+sys) of the targets rebuilt with their dependencies, separate -> together:
#   reports + runner 82 s -> 60 s; training_test + core_double_test 346 s -> 249 s; the fuzz tree
#   (ci/fuzz.sh --build-only and the sanitizer slice's tests) 361 s -> 303 s.
# One certificate instantiation unit per claim group and precision was measured slower (about 3x
# the CPU time of checks_double.cpp and checks_mp50.cpp: they re-instantiate the same kernels).
# Usage: bench/build_time.sh [NINJA_JOBS]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=()
[ $# -gt 0 ] && jobs=(-j "$1")
scratch=$(mktemp -d)
trap 'git worktree remove --force "$scratch/src" > /dev/null 2>&1 || true; rm -rf "$scratch"' EXIT
git worktree add --detach "$scratch/src" HEAD > /dev/null 2>&1
echo "commit $(git rev-parse --short HEAD), $(nproc) cores, $(c++ --version | head -1)"
build=$scratch/build
t0=$(date +%s.%N)
cmake -S "$scratch/src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTIEFEL_WARNINGS_AS_ERRORS=ON \
  > "$scratch/configure.log"
t1=$(date +%s.%N)
cmake --build "$build" --target stiefel "${jobs[@]}" > "$scratch/stiefel.log"
t2=$(date +%s.%N)
cmake --build "$build" "${jobs[@]}" > "$scratch/rest.log"
t3=$(date +%s.%N)
printf 'configure %.0f s, stiefel %.0f s, the rest %.0f s, total %.0f s\n' \
  "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" "$(echo "$t3 - $t2" | bc)" "$(echo "$t3 - $t0" | bc)"
awk 'NR > 1 { printf "  %7.1f s  %s\n", ($2 - $1) / 1000, $4 }' "$build/.ninja_log" | sort -rn | head -10
