#!/usr/bin/env bash
# Swaps every non-vacuity control into the real pipeline, one at a time: `stiefel certify` must
# then exit 1 (a failed certificate), never 0, and the written certificate must say the claim
# did not meet its expectation.
set -euo pipefail
stiefel=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
claim=""
count=0
while IFS= read -r line; do
  if [[ "$line" =~ ^([a-z0-9-]+)\  ]]; then
    claim=${BASH_REMATCH[1]}
  elif [[ "$line" =~ ^\ +control\ ([a-z0-9-]+): ]]; then
    control=${BASH_REMATCH[1]}
    set +e
    "$stiefel" certify --cases 12 --precision double --group all --claims "^${claim}\$" \
      --swap-control "${claim}:${control}" --out "$work/c-$count.json" 2> "$work/log.txt"
    rc=$?
    set -e
    if [ "$rc" -ne 1 ]; then
      cat "$work/log.txt"; echo "control ${claim}:${control} swapped in: exit $rc, expected 1"; exit 1
    fi
    echo "${claim}:${control}" > "$work/c-$count.name"
    count=$((count + 1))
  fi
done < <("$stiefel" certify --list)
[ "$count" -ge 24 ] || { echo "only $count controls listed"; exit 1; }
# Each written certificate says its one claim did not meet its expectation (one interpreter for all).
python3 - "$work" "$count" <<'PY'
import json, sys
work, count = sys.argv[1], int(sys.argv[2])
for k in range(count):
    c = json.load(open(f"{work}/c-{k}.json"))
    assert len(c["claims"]) == 1 and not c["claims"][0]["meets_expectation"], open(f"{work}/c-{k}.name").read()
PY
echo "$count controls each fail the certificate when swapped in"
