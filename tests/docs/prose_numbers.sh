#!/usr/bin/env bash
# The counts docs/findings.md quotes are the certificate's: its claims, its controls and the
# statements of the paper it refutes (reports/certificate.json's summary).
set -euo pipefail
root=$1
python3 - "$root/docs/findings.md" "$root/reports/certificate.json" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
summary = json.load(open(sys.argv[2]))["summary"]
m = re.search(r"checks\s+(\d+) claims with (\d+) non-vacuity controls\.\s+(\d+) of the claims", text)
if not m:
    sys.exit("FAIL: docs/findings.md no longer states the certificate's counts in the expected sentence")
quoted = tuple(int(g) for g in m.groups())
actual = (summary["claims"], summary["controls"], summary["refuted"])
if quoted != actual:
    sys.exit(f"FAIL: docs/findings.md quotes claims/controls/refuted {quoted}; reports/certificate.json has {actual}")
print(f"findings.md quotes the certificate's counts {actual}")
PY
