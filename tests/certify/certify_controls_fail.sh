#!/usr/bin/env bash
# Swaps every non-vacuity control into the real pipeline: `stiefel certify` must then exit 1 (a
# failed certificate), never 0, and the written certificate must say that each claim with a control
# swapped in did not meet its expectation. Round k swaps the k-th control of every claim that has
# one into a single run (one control per claim and run), so that every control is swapped in once.
# The default group's controls: the paper-size group's (each a whole run at d = 128, nine tenths of
# this test's time when swapped in here) are held by certify_paper_size, which requires every one of
# them killed in that group's own run.
set -euo pipefail
stiefel=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
"$stiefel" certify --list > "$work/list.txt"
# CLAIM CONTROL K lines: K is the control's position in its claim's list.
claim="" k=0
while IFS= read -r line; do
  if [[ "$line" =~ ^([a-z0-9-]+)\  ]]; then
    claim=${BASH_REMATCH[1]} k=0
    [[ "$line" =~ \ group\ [a-z0-9-]+$ ]] && claim=""  # another group than the default
  elif [[ -n "$claim" && "$line" =~ ^\ +control\ ([a-z0-9-]+): ]]; then
    echo "$claim ${BASH_REMATCH[1]} $k"
    k=$((k + 1))
  fi
done < "$work/list.txt" > "$work/controls.txt"
count=$(wc -l < "$work/controls.txt")
[ "$count" -ge 24 ] || { echo "only $count controls listed"; exit 1; }
rounds=$(awk '$3 + 1 > n {n = $3 + 1} END {print n}' "$work/controls.txt")
for ((k = 0; k < rounds; k++)); do
  claims=() swaps=()
  while read -r c ctl pos; do
    [ "$pos" -eq "$k" ] || continue
    claims+=("$c") swaps+=(--swap-control "$c:$ctl")
  done < "$work/controls.txt"
  pattern="^($(IFS='|'; echo "${claims[*]}"))\$"
  set +e
  "$stiefel" certify --cases 12 --precision double --claims "$pattern" "${swaps[@]}" \
    --out "$work/round-$k.json" 2> "$work/round-$k.log"
  rc=$?
  set -e
  if [ "$rc" -ne 1 ]; then
    cat "$work/round-$k.log"; echo "round $k: ${#claims[@]} controls swapped in: exit $rc, expected 1"; exit 1
  fi
done
# Every control was swapped into its claim once, and each such claim failed its expectation.
python3 - "$work" "$rounds" "$work/controls.txt" <<'PY'
import json, sys
work, rounds, listed = sys.argv[1], int(sys.argv[2]), sys.argv[3]
want = {(c, ctl) for c, ctl, _ in (line.split() for line in open(listed))}
seen = set()
for k in range(rounds):
    cert = json.load(open(f"{work}/round-{k}.json"))
    assert cert["run"]["swap_control"], f"round {k}: the certificate does not name its swapped controls"
    for claim in cert["claims"]:
        pair = (claim["id"], claim["swapped_control"])
        assert claim["swapped_control"] is not None, f"round {k}: {claim['id']} ran without its control"
        assert not claim["meets_expectation"], f"control {pair[0]}:{pair[1]} swapped in, yet the claim met its expectation"
        assert pair not in seen, pair
        seen.add(pair)
assert seen == want, f"controls never swapped in: {sorted(want - seen)}"
PY
echo "$count controls, swapped in over $rounds runs, each fail their claim and the certificate"
