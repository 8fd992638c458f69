#!/usr/bin/env bash
# Benchmark of the default `stiefel certify` (every claim, 200 cases, float64 and 50 digits):
# wall time of REPEAT runs and the ten slowest claims of the last one.
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
