#!/usr/bin/env bash
# reports/certificate.json is the tree's: `stiefel certify` as its run.command_line ran it gives the
# same verdicts, controls, counterexamples and figures (tests/certify/same_certificate.py).
set -uo pipefail
stiefel=$1 source=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
"$stiefel" certify --jobs 2 --out "$work/certificate.json" > "$work/log.txt" 2>&1 ||
  { cat "$work/log.txt"; echo "FAIL: stiefel certify exited non-zero"; exit 1; }
python3 "$source/tests/certify/same_certificate.py" "$source/reports/certificate.json" "$work/certificate.json"
