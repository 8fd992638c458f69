#!/usr/bin/env bash
# The committed reports are what `stiefel report` makes of the committed run records and
# certificate, byte for byte: every table, figure and the ledger.
set -euo pipefail
stiefel=$1 root=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cd "$root"
"$stiefel" report results/*/ --out "$work" --claims experiments/claims.json --definitions experiments \
  --certificate reports/certificate.json --certificate reports/certificate-paper-size.json > "$work.log" 2>&1 ||
  { cat "$work.log"; exit 1; }
status=0
for f in "$work"/*; do
  name=$(basename "$f")
  if ! cmp -s "$f" "reports/$name"; then
    echo "FAIL: reports/$name differs from what the records in results/ make of it (a grid training in this" \
      "checkout moves its unfinished records on: ci/commit-results.sh commits records and reports together)"
    status=1
  fi
done
for f in reports/*.md reports/*.json reports/*.png; do
  name=$(basename "$f")
  # The certificates, the mutation reports and the conformance report are made by their own programs
  # (stiefel certify, ci/mutation.py, scripts/conformance.py), each held by its own test.
  case "$name" in certificate.json | certificate-paper-size.json | mutation*.json | mutation*.md | conformance.json | conformance.md) continue ;; esac
  [ -e "$work/$name" ] || { echo "FAIL: reports/$name is made by no results folder"; status=1; }
done
[ "$status" -eq 0 ] && echo "reports regenerate byte for byte from results/ ($(ls "$work" | wc -l) files)"
exit "$status"
