#!/usr/bin/env bash
# The paper-size group (`stiefel certify --group paper-size`): the claims at d = 128, among them every
# registered implementation's update rule at the paper's two shapes over whole runs (1 600 and 1 000
# steps, eta_R = 1). The certificate passes and validates, every claim is in the group, the trainer's
# runs are whole, the cap bound in them and the isometry error did not grow, and the default group
# holds none of these claims.
set -euo pipefail
stiefel=$1 schema=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
cert="$work/certificate.json"
"$stiefel" certify --group paper-size --out "$cert" 2> "$work/table.txt" || {
  cat "$work/table.txt"; echo "certify --group paper-size exited non-zero"; exit 1; }
python3 -m jsonschema -i "$cert" "$schema"
python3 - "$cert" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
assert c["run"]["group"] == "paper-size", c["run"]
assert c["summary"]["passed"] and c["summary"]["controls_survived"] == 0, c["summary"]
ids = [k["id"] for k in c["claims"]]
assert "rule-agrees-with-core-at-paper-size-trainer" in ids and "rule-agrees-with-core-at-paper-size-trainer-f32" in ids, ids
assert {"prop7-equivariance-scalar-at-paper-size", "update-isometry-paper-bound-float32"} <= set(ids), ids
for k in c["claims"]:
    assert k["group"] == "paper-size", k["id"]
    assert "--group paper-size" in k["reproduce"], k["reproduce"]
    for x in k["controls"]:
        assert x["status"] == "killed", (k["id"], x["id"])
    if not k["id"].startswith("rule-"):
        continue
    for task in ("image", "grokking"):
        d = k["worst"]["detail"][task]
        # a whole run, in which the cap bound, and no growth of the isometry error over it
        assert d["steps"] >= 1000 and d["steps_run"] == d["steps"], (k["id"], task, d)
        assert d["steps_capped"] >= d["steps"] // 10, (k["id"], task, d)
        assert d["isometry_last_100_steps"] <= 4 * d["isometry_first_100_steps"], (k["id"], task, d)
print("paper-size certificate ok:", len(ids), "claims")
PY
# A claim of the group is not in the default run.
"$stiefel" certify --claims 'at-paper-size-trainer$' --out "$work/none.json" 2> "$work/none.txt" && {
  echo "the default group ran a paper-size claim"; exit 1; }
grep -q "matches no registered claim of group 'default'" "$work/none.txt"
[ ! -e "$work/none.json" ]
# The committed reports/certificate-paper-size.json is this run's (the same command).
python3 "$(dirname "$0")/same_certificate.py" "$(dirname "$schema")/../reports/certificate-paper-size.json" "$cert"
echo "paper-size group ok"
