#!/usr/bin/env bash
# `stiefel certify --rule`: the fixtures of scripts/make_rule_fixtures.py, scripted from PyTorch, go
# through the update claims. Our B2 certifies; Riemannian Adam with the elementwise second moment is
# refuted on O(d)-equivariance and on nothing else, with a counterexample; B2 whose moments read the
# Euclidean gradient is refuted by weight-decay annihilation. A malformed module, a module with the
# wrong signature or outputs, and a bad --rule-config are refused (exit 2, the file named), and write
# no certificate.
set -uo pipefail
stiefel=$1 source=$2 work=$3
py=python3  # the tests' Python (STIEFEL_TEST_PYTHON, first on PATH): ci/setup installs python3-torch for it
rm -rf "$work" && mkdir -p "$work"
fail() { echo "$1"; exit 1; }
"$py" -c 'import torch' 2> /dev/null || fail "$py cannot import torch: ci/setup installs python3-torch"
"$py" "$source/scripts/make_rule_fixtures.py" "$work/rules" || fail "make_rule_fixtures.py failed"
"$py" "$source/tests/certify/make_malformed_rules.py" "$work/rules" || fail "make_malformed_rules.py failed"

certify() {  # certify NAME: the fixture NAME.pt with its config, at 40 cases a claim; sets rc
  "$stiefel" certify --rule "$work/rules/$1.pt" --rule-config "$work/rules/$1.json" --jobs 2 --cases 40 \
    --out "$work/$1.cert.json" > "$work/$1.log" 2>&1
  rc=$?
}
# Every claim of a fixture, observed: "claim observed" per line, claim ids without the fixture's suffix.
observed() {
  "$py" - "$work/$1.cert.json" "$2" << 'PY'
import json, sys
c = json.load(open(sys.argv[1]))
suffix = "-" + sys.argv[2]
for k in sorted(c["claims"], key=lambda k: k["id"]):
    assert k["id"].endswith(suffix), k["id"]
    assert sys.argv[2] in k["implementation"] or "TorchScript" in k["implementation"], k["implementation"]
    for ctl in k["controls"]:
        assert ctl["status"] == "killed", (k["id"], ctl["id"], ctl["status"])
    print(k["id"][: -len(suffix)], k["observed"])
PY
}

certify b2
[ "$rc" -eq 0 ] || { cat "$work/b2.log"; fail "the scripted B2 does not certify (exit $rc)"; }
got=$(observed b2 b2) || fail "b2: the certificate's claims or controls are not as expected"
expected="rule-agrees-with-core certified
rule-decay-annihilated certified
rule-equivariance certified
rule-frozen-stays certified
rule-scale-free certified"
[ "$got" = "$expected" ] || fail "b2: claims observed
$got"

certify elementwise_adam
[ "$rc" -eq 1 ] || { cat "$work/elementwise_adam.log"; fail "the elementwise rule: exit $rc, expected 1"; }
got=$(observed elementwise_adam elementwise-adam) || fail "elementwise_adam: claims or controls not as expected"
expected="rule-agrees-with-core certified
rule-decay-annihilated certified
rule-equivariance refuted
rule-frozen-stays certified
rule-scale-free certified"
[ "$got" = "$expected" ] || fail "elementwise_adam: claims observed
$got"
"$py" - "$work/elementwise_adam.cert.json" << 'PY' || fail "the equivariance refutation carries no counterexample"
import json, sys
c = json.load(open(sys.argv[1]))
k = next(k for k in c["claims"] if k["id"] == "rule-equivariance-elementwise-adam")
ce = k["counterexample"]
assert ce and ce["float64"]["ratio"] > 1e6, ce
assert " --rule /" in k["reproduce"] and " --rule-config /" in k["reproduce"], k["reproduce"]
assert k["reproduce"].endswith(" --out " + sys.argv[1][:-len(".json")] + ".replay.json"), k["reproduce"]
PY
# The recorded command replays the refutation.
cmd=$("$py" -c 'import json,sys; c=json.load(open(sys.argv[1])); print(next(k["reproduce"] for k in c["claims"] if k["id"] == "rule-equivariance-elementwise-adam"))' "$work/elementwise_adam.cert.json")
eval "\"$stiefel\" certify ${cmd#stiefel certify } --jobs 2" > "$work/replay.log" 2>&1
grep -q "rule-equivariance-elementwise-adam .*refuted" "$work/replay.log" || { cat "$work/replay.log"; fail "the reproduce command does not replay"; }

# A rule whose frames are not finite where eps = 0 (the load-time probe uses eps 1e-8) is refuted,
# not passed: a NaN residual is no residual of zero.
certify nan_at_eps0
[ "$rc" -eq 1 ] || { cat "$work/nan_at_eps0.log"; fail "a rule returning NaN at eps = 0: exit $rc, expected 1"; }
grep -q "rule-scale-free-nan-at-eps0 *certified refuted" "$work/nan_at_eps0.log" ||
  { cat "$work/nan_at_eps0.log"; fail "NaN frames were not refuted"; }

certify euclidean_moment
[ "$rc" -eq 1 ] || { cat "$work/euclidean_moment.log"; fail "the buggy rule: exit $rc, expected 1"; }
got=$(observed euclidean_moment euclidean-moment) || fail "euclidean_moment: claims or controls not as expected"
echo "$got" | grep -qx "rule-decay-annihilated refuted" || fail "euclidean_moment: decay annihilation not refuted
$got"

# shellcheck source=expect_refusal.sh
source "$(dirname "$0")/expect_refusal.sh"
echo "not a zip" > "$work/rules/garbage.pt"
expect "garbage.pt: not a TorchScript archive" --rule "$work/rules/garbage.pt"
expect "absent.pt: no such file" --rule "$work/rules/absent.pt"
expect "wrong_signature.pt: forward(w, g, state, settings) failed" --rule "$work/rules/wrong_signature.pt"
expect "wrong_shape.pt: forward returned frames of shape" --rule "$work/rules/wrong_shape.pt"
expect "not_finite.pt: forward returned frames that are not finite" --rule "$work/rules/not_finite.pt"
expect "wrong_dtype.pt: forward returned frames of dtype Float" --rule "$work/rules/wrong_dtype.pt"
echo '{"rule": "b3"}' > "$work/c1.json"
expect "rule 'b3' is not a frame rule" --rule "$work/rules/b2.pt" --rule-config "$work/c1.json"
echo '{"rule": "b2",' > "$work/c2.json"
expect "c2.json: not JSON" --rule "$work/rules/b2.pt" --rule-config "$work/c2.json"
echo '{"nmae": "x"}' > "$work/c3.json"
expect "unknown key 'nmae'" --rule "$work/rules/b2.pt" --rule-config "$work/c3.json"
echo '{"name": "trainer"}' > "$work/c4.json"
expect "name 'trainer' (\"name\" in --rule-config $work/c4.json) is taken" --rule "$work/rules/b2.pt" --rule-config "$work/c4.json"
echo '{"dtype": "float16"}' > "$work/c5.json"
expect "dtype 'float16'" --rule "$work/rules/b2.pt" --rule-config "$work/c5.json"
echo '{"dtype": "float32"}' > "$work/c6.json"
expect "always_double.pt: forward returned frames of dtype Double, configured Float" --rule "$work/rules/always_double.pt" --rule-config "$work/c6.json"
echo '{"rule": "b2-sgd"}' > "$work/c7.json"
expect "rule 'b2-sgd' has no update claims for a single rule yet" --rule "$work/rules/b2.pt" --rule-config "$work/c7.json"
echo '{"name": ""}' > "$work/c8.json"
expect "'name' is empty" --rule "$work/rules/b2.pt" --rule-config "$work/c8.json"
expect "not a file" --rule "$work/rules/b2.pt" --rule-config "$work/rules"
expect "raised" --rule "$work/rules/raises.pt"
expect "--rule-config needs --rule" --rule-config "$work/c5.json"
echo "user rules: B2 certified, the elementwise rule refuted on equivariance only, the buggy rule refuted; bad modules refused"
