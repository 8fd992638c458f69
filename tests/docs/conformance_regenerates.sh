#!/usr/bin/env bash
# reports/conformance.md is what scripts/conformance.py writes from reports/conformance.json, byte
# for byte; and a variant certified again now gives the committed row (scripts/conformance.py
# reruns them all: about two minutes).
set -uo pipefail
stiefel=$1 source=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $1"; exit 1; }
cp "$source/reports/conformance.json" "$work/" || fail "reports/conformance.json is missing"
python3 "$source/scripts/conformance.py" --markdown --out "$work" || fail "conformance.py --markdown failed"
cmp -s "$work/conformance.md" "$source/reports/conformance.md" ||
  { diff "$work/conformance.md" "$source/reports/conformance.md" | head -20; fail "reports/conformance.md is not what conformance.json gives (scripts/conformance.py --markdown)"; }
python3 "$source/scripts/conformance.py" --check qr-frame-uncapped --stiefel "$stiefel" --out "$work" ||
  fail "a variant certified again differs from its committed row (scripts/conformance.py regenerates the report)"
echo "conformance report: regenerates from its JSON; a variant rechecked gives its committed row"
