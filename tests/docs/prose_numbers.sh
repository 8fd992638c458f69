#!/usr/bin/env bash
# The counts docs/findings.md quotes are the certificate's: its claims, its controls and the
# statements of the paper it refutes (reports/certificate.json's summary), and the paper-size
# group's claims and controls (reports/certificate-paper-size.json's).
set -euo pipefail
root=$1
python3 - "$root/docs/findings.md" "$root/reports/certificate.json" "$root/reports/certificate-paper-size.json" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
paper = json.load(open(sys.argv[3]))["summary"]
m = re.search(r"for the (\d+) claims \((\d+) controls\) at d = 128 of the `paper-size` group", text)
if not m:
    sys.exit("FAIL: docs/findings.md no longer states the paper-size group's counts in the expected sentence")
if (int(m.group(1)), int(m.group(2))) != (paper["claims"], paper["controls"]):
    sys.exit(f"FAIL: docs/findings.md quotes the paper-size group's claims/controls {m.groups()}; "
             f"reports/certificate-paper-size.json has {(paper['claims'], paper['controls'])}")
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
