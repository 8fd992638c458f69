#!/usr/bin/env bash
# Benchmark of `stiefel certify --rule` for one user rule: the wall time of certifying each named
# variant of scripts/make_rule_variants.py (default: the paper's B2 with coupled decay, every
# property declared, and the QR-retraction Adam), REPEAT times, with the slowest claims of the last
# run. Run it on an idle machine: the figure is the whole command a user runs (LibTorch's start-up,
# loading and probing the rule, every claim and control, the certificate written).
# Usage: bench/certify_rule.sh [BUILD_DIR] [REPEAT] [VARIANT ...]
set -euo pipefail
build=${1:-build/default} repeat=${2:-3}
shift $(($# < 2 ? $# : 2))
variants=("${@:-b2-coupled-decay}")
[ $# -gt 0 ] || variants=(b2-coupled-decay qr-frame-uncapped)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Debian's python3-torch (ci/setup), the PyTorch the LibTorch of `stiefel` matches.
/usr/bin/python3 "$(dirname "$0")/../scripts/make_rule_variants.py" "$out/rules" "${variants[@]}"
for v in "${variants[@]}"; do
  for i in $(seq "$repeat"); do
    start=$(date +%s.%N)
    rc=0
    "$build/stiefel" certify --rule "$out/rules/$v.pt" --rule-config "$out/rules/$v.json" \
      --out "$out/$v.json" 2> "$out/log.txt" || rc=$?
    end=$(date +%s.%N)
    [ "$rc" -le 1 ] || { cat "$out/log.txt"; exit 1; }
    printf '%s run %d: %.1f s wall, exit %d (%s)\n' "$v" "$i" "$(echo "$end - $start" | bc)" "$rc" \
      "$(grep -E '^[0-9]+ passed' "$out/log.txt")"
  done
  python3 - "$out/$v.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
print(f"  jobs {c['run']['jobs']}; claims (seconds, with their controls):")
for k in sorted(c["claims"], key=lambda k: -k["seconds"]):
    print(f"    {k['seconds']:6.2f}  {k['id']}")
PY
done
