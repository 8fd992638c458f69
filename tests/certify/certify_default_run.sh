#!/usr/bin/env bash
# One `stiefel certify` of the default group, as reports/certificate.json's run.command_line runs it
# (and with --junit): the run that committed_certificate_is_the_trees and certify_end_to_end read
# (CTest fixture certify_default). Writes WORK/certificate.json, WORK/certificate.xml and the
# printed table, WORK/table.txt.
set -uo pipefail
stiefel=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
"$stiefel" certify --jobs 2 --out "$work/certificate.json" --junit "$work/certificate.xml" 2> "$work/table.txt" ||
  { cat "$work/table.txt"; echo "FAIL: stiefel certify exited non-zero"; exit 1; }
echo "certify (default group): $(tail -n 1 "$work/table.txt")"
