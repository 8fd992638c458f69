#!/usr/bin/env bash
# Every statement the committed certificates check is in the claims ledger, and the ledger names
# no certificate entry that does not exist: each claim of reports/certificate.json and
# reports/certificate-paper-size.json (but for the per-implementation `rule-*` claims, which certify
# our code, not a statement of the paper) is listed by a theory row of experiments/claims.json,
# under `certificate` or `refuted_by`.
set -euo pipefail
root=$1
python3 - "$root/experiments/claims.json" "$root/reports/certificate.json" "$root/reports/certificate-paper-size.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["claims"]
certified = {c["id"] for f in sys.argv[2:] for c in json.load(open(f))["claims"]}
named = {}
for r in rows:
    for key in ("certificate", "refuted_by"):
        for cid in r.get(key, []):
            named.setdefault(cid, []).append(r["id"])
status = 0
for cid in sorted(set(named) - certified):
    print(f"FAIL: ledger row(s) {', '.join(named[cid])} name {cid}, which neither certificate holds")
    status = 1
for cid in sorted(certified - set(named)):
    if not cid.startswith("rule-"):
        print(f"FAIL: certificate claim {cid} is in no row of experiments/claims.json")
        status = 1
if status == 0:
    print(f"the ledger's {len(rows)} rows name every one of the certificates' {len(certified)} claims "
          f"(the rule-* implementation claims aside) and nothing else")
sys.exit(status)
PY
