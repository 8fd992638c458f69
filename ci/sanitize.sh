#!/usr/bin/env bash
# The `sanitize` preset (gcc, AddressSanitizer + UndefinedBehaviorSanitizer, -O1 -g1 with assertions
# on: Eigen's index checks and nlohmann JSON's own asserts run too).
#   ci/sanitize.sh fast   the unit-test programs that do not link LibTorch (CI's sanitize_fast_slice)
#   ci/sanitize.sh full   every target, then the whole test suite under the sanitizers
# A sanitizer report fails the run (UBSan halts on the first error; ASan always does).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-fast}
mkdir -p build
cmake --preset sanitize > build/sanitize-configure.log 2>&1 || { cat build/sanitize-configure.log; exit 1; }
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
case $mode in
  fast)
    tests=(core_double_test io_test paired_statistics_test experiments_test runner_test)
    cmake --build --preset sanitize --target "${tests[@]}" > build/sanitize-build.log 2>&1 ||
      { tail -40 build/sanitize-build.log; exit 1; }
    for t in "${tests[@]}"; do
      log=build/sanitize/$t.log
      if build/sanitize/tests/$t > "$log" 2>&1; then
        echo "$t: $(grep -o '\[  PASSED  \] [0-9]* tests\?' "$log" | grep -o '[0-9]*') tests passed, no sanitizer report"
      else
        grep -B2 -A30 -m1 'ERROR: AddressSanitizer\|runtime error\|FAILED' "$log" || tail -40 "$log"
        echo "$t: FAILED under the sanitizers (see $log)"
        exit 1
      fi
    done ;;
  full)
    cmake --build --preset sanitize
    # The fuzz slice builds its own sanitized preset, and the fast slice is part of this run.
    ctest --preset sanitize -E '^(fuzz_readers_and_loaders|sanitize_fast_slice)$' ;;
  *) echo "ci/sanitize.sh: unknown mode '$mode' (fast | full)" >&2; exit 2 ;;
esac
