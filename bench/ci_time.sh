#!/usr/bin/env bash
# The CI figure: `.ci/run` (set-up, configure, build, the whole test suite) on a fresh clone of HEAD,
# as CI runs it, timed; then the split between building and testing, the sum of the tests' own
# times and the ten slowest tests. Run it on an idle machine (as root: ci/setup installs packages);
# the clone lives in a scratch folder that is removed afterwards, and its log is kept in LOG.
# Usage: bench/ci_time.sh [LOG]   (LOG defaults to the checkout's build/ci_time.log)
set -euo pipefail
log=$(realpath -m "${1:-$(dirname "$0")/../build/ci_time.log}")
cd "$(dirname "$0")/.."
root=$PWD
mkdir -p "$(dirname "$log")"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
git clone -q "$root" "$scratch/src"
# The clone sees the shared data folder where the checkout does (../shared), if there is one.
[ -e "$root/../shared" ] && ln -s "$(realpath "$root/../shared")" "$scratch/shared"
echo "commit $(git rev-parse --short HEAD), $(nproc) cores"
t0=$(date +%s%N)
rc=0
(cd "$scratch/src" && CI=true bash .ci/run) > "$log" 2>&1 || rc=$?
t1=$(date +%s%N)
# A run that stops before CTest has no test time and no test lines: its figures are still printed.
tests=$(grep -o 'Total Test time (real) = *[0-9.]*' "$log" | grep -o '[0-9.]*$' || true)
awk -v rc="$rc" -v ns="$((t1 - t0))" -v tests="${tests:-0}" 'BEGIN {
  total = ns / 1e9
  printf ".ci/run: exit %d, %.0f s in all: %.0f s set-up and build, %.0f s of tests\n", rc, total, total - tests, tests }'
{ grep -E 'Test +#[0-9]+: ' "$log" || true; } | sed -E 's/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/' > "$scratch/times"
awk '{s += $1} END {printf "sum of the tests'"'"' own times: %.0f s over %d tests\n", s, NR}' "$scratch/times"
sort -rn "$scratch/times" | head -10 | awk '{printf "  %7.1f s  %s\n", $1, $2}'
echo "log: $log"
exit "$rc"
