#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer, -O1 -g1 with assertions on (Eigen's index checks
# and nlohmann JSON's own asserts run too).
#   ci/sanitize.sh fast [--build-only]   the unit-test programs that do not link LibTorch (CI's
#                     sanitize_fast_slice), built with clang in the tree the fuzzers use (preset
#                     `fuzz`, build/fuzz): the libraries both need are built once (with the
#                     fuzzers' -O1 and coverage instrumentation; the test programs' own sources
#                     at -O0, without it)
#   ci/sanitize.sh full   every target with gcc (preset `sanitize`), then the whole test suite
# A sanitizer report fails the run (UBSan halts on the first error; ASan always does).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-fast}
mkdir -p build
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
case $mode in
  fast)
    tests=(core_double_test io_test paired_statistics_test experiments_test runner_test)
    cmake --preset fuzz > build/fuzz-configure.log 2>&1 || { cat build/fuzz-configure.log; exit 1; }
    cmake --build --preset fuzz --target "${tests[@]}" > build/sanitize-build.log 2>&1 ||
      { tail -40 build/sanitize-build.log; exit 1; }
    [ "${2:-}" = --build-only ] && { echo "ci/sanitize.sh: ${#tests[@]} unit-test programs built in build/fuzz"; exit 0; }
    for t in "${tests[@]}"; do
      log=build/fuzz/$t.log
      if build/fuzz/tests/$t > "$log" 2>&1; then
        echo "$t: $(grep -o '\[  PASSED  \] [0-9]* tests\?' "$log" | grep -o '[0-9]*') tests passed, no sanitizer report"
      else
        grep -B2 -A30 -m1 'ERROR: AddressSanitizer\|runtime error\|FAILED' "$log" || tail -40 "$log"
        echo "$t: FAILED under the sanitizers (see $log)"
        exit 1
      fi
    done ;;
  full)
    cmake --preset sanitize > build/sanitize-configure.log 2>&1 || { cat build/sanitize-configure.log; exit 1; }
    cmake --build --preset sanitize
    # The fuzzers and the fast slice have their own tree (build/fuzz); the slice's tests are part of this run.
    ctest --preset sanitize -E '^(sanitizer_tree_build|fuzz_readers_and_loaders|sanitize_fast_slice)$' ;;
  *) echo "ci/sanitize.sh: unknown mode '$mode' (fast | full)" >&2; exit 2 ;;
esac
