#!/usr/bin/env bash
# Formats the tree's C++ sources with clang-format and .clang-format; with --check, changes nothing
# and fails (listing the files) where a source does not follow it.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
if [ -n "$mode" ] && [ "$mode" != --check ]; then
  echo "ci/format.sh: unknown argument '$mode' (expected --check or nothing)" >&2
  exit 2
fi
command -v clang-format > /dev/null || { echo "ci/format.sh: clang-format is not installed (ci/setup installs it)" >&2; exit 2; }
if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cpp' '*.h' | grep -v '^results/')
else
  mapfile -t files < <(find . -path ./build -prune -o -path ./results -prune -o \( -name '*.cpp' -o -name '*.h' \) -print)
fi
[ "${#files[@]}" -gt 0 ] || { echo "ci/format.sh: no C++ sources found" >&2; exit 2; }
if [ "$mode" = --check ]; then
  bad=()
  for f in "${files[@]}"; do
    clang-format --dry-run --Werror "$f" > /dev/null 2>&1 || bad+=("$f")
  done
  if [ "${#bad[@]}" -gt 0 ]; then
    echo "ci/format.sh: ${#bad[@]} of ${#files[@]} files do not follow .clang-format (run ci/format.sh):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "ci/format.sh: ${#files[@]} files follow .clang-format"
else
  clang-format -i "${files[@]}"
fi
