#!/usr/bin/env bash
# Benchmark of the default `stiefel certify` (every claim of the default group, 200 cases, float64
# and 50 digits): wall time of REPEAT runs and the ten slowest claims of the last one; then the
# paper-size group (`--group paper-size`, where the build has one) once, on its own.
# Usage: bench/certify.sh [BUILD_DIR] [REPEAT]
set -euo pipefail
build=${1:-build/default} repeat=${2:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$repeat"); do
  start=$(date +%s.%N)
  "$build/stiefel" certify --out "$out/certificate.json" 2> "$out/log.txt" || { cat "$out/log.txt"; exit 1; }
  end=$(date +%s.%N)
  printf 'run %d: %.1f s wall (%s)\n' "$i" "$(echo "$end - $start" | bc)" "$(tail -n 1 "$out/log.txt")"
done
python3 - "$out/certificate.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
print(f"cases per randomised claim: {c['run']['cases']}, jobs: {c['run']['jobs']}, "
      f"claims: {c['summary']['claims']}, controls: {c['summary']['controls']}")
print("slowest claims (seconds, both precisions and all controls):")
for k in sorted(c["claims"], key=lambda k: -k["seconds"])[:10]:
    print(f"  {k['seconds']:7.2f}  {k['id']}")
PY
if "$build/stiefel" certify --list | grep -q 'at-paper-size-trainer '; then
  start=$(date +%s.%N)
  "$build/stiefel" certify --group paper-size --out "$out/paper-size.json" 2> "$out/ps.txt" || { cat "$out/ps.txt"; exit 1; }
  end=$(date +%s.%N)
  printf 'paper-size group: %.1f s wall (%s)\n' "$(echo "$end - $start" | bc)" "$(tail -n 1 "$out/ps.txt")"
fi
