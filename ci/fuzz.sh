#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`: clang, ASan, UBSan, -O1 with assertions on, so that
# nlohmann JSON asserts on a const operator[] of a missing key) and runs each for SECONDS
# (default 30) from its seed corpus in fuzz/corpus/ (plus the project's own definitions, claims and
# run records, and a checkpoint written by the build under test). A crash, a sanitizer report or an unexpected exception fails the run; the input is
# kept under build/fuzz/artifacts/. Prints one line per target: runs, coverage, corpus size.
#   ci/fuzz.sh [SECONDS] [TARGET...]      e.g. ci/fuzz.sh 600 (the ten-minute runs)
#   ci/fuzz.sh --build-only               builds the targets and runs nothing (CI's set-up step)
# The tree (build/fuzz) is the one ci/sanitize.sh fast builds its unit tests in: the libraries both
# need are built once.
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=false
[ "${1:-}" = --build-only ] && { build_only=true; shift; }
seconds=${1:-30}
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(cifar10 idx definition claims run_record plot_script checkpoint)
mkdir -p build
cmake --preset fuzz > build/fuzz-configure.log 2>&1 || { cat build/fuzz-configure.log; exit 1; }
cmake --build --preset fuzz --target "${targets[@]/#/fuzz_}" > build/fuzz-build.log 2>&1 ||
  { echo "ci/fuzz.sh: the fuzz tree does not build (build/fuzz-build.log):"; grep -E "error|FAILED" build/fuzz-build.log | head -20; exit 1; }
$build_only && { echo "ci/fuzz.sh: ${#targets[@]} fuzz targets built in build/fuzz"; exit 0; }
work=build/fuzz/corpus-work artifacts=build/fuzz/artifacts
mkdir -p "$artifacts"
status=0
for t in "${targets[@]}"; do
  mkdir -p "$work/$t"
  seeds=("fuzz/corpus/$t")
  case $t in
    definition) seeds+=(experiments tests/experiments) ;;
    plot_script) seeds+=(reports) ;;  # the committed tables, which figures are drawn from
    checkpoint)  # a checkpoint in this build's LibTorch format, beside the committed one
      mkdir -p "$work/checkpoint-seed"
      build/fuzz/fuzz/fuzz_checkpoint -seed "$work/checkpoint-seed/current.pt"
      seeds+=("$work/checkpoint-seed") ;;
  esac
  max_len=65536
  [ "$t" = cifar10 ] && max_len=12292  # up to 4 records
  [ "$t" = idx ] && max_len=4096
  log=build/fuzz/$t.log
  # LibTorch's own leaks on its readers' error paths are suppressed (fuzz/lsan.supp); ours are not.
  if LSAN_OPTIONS=suppressions=$PWD/fuzz/lsan.supp build/fuzz/fuzz/fuzz_$t "$work/$t" "${seeds[@]}" -max_total_time="$seconds" -max_len="$max_len" \
       -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/$t-" > "$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo "?")
    echo "fuzz_$t: ${seconds} s, $runs inputs, coverage $cov edges, corpus $(ls "$work/$t" | wc -l) files: no failure"
  else
    echo "fuzz_$t: FAILED (see $log; input in $artifacts/)"
    grep -E "ERROR|SUMMARY|terminate|what\(\)" "$log" | head -5
    status=1
  fi
done
exit $status
