#!/usr/bin/env bash
# reports/certificate.json is the tree's: `stiefel certify` as its run.command_line ran it gives the
# same verdicts, controls, counterexamples and figures (tests/certify/same_certificate.py). CERT: that
# run's certificate (tests/certify/certify_default_run.sh).
set -euo pipefail
source=$1 cert=$2
python3 "$source/tests/certify/same_certificate.py" "$source/reports/certificate.json" "$cert"
