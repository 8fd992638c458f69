#!/usr/bin/env bash
# `stiefel certify --rule` on rules that declare what they are (scripts/make_rule_variants.py): the
# certificate certifies exactly the declared properties, reports every other one as an observation,
# and names what fails.
#   - the paper's B2 with coupled weight decay, written as a user writes it (lambda through the
#     settings, agreement with core/'s B2 declared), is certified; so are B2 with its first moment
#     projected at the next step instead of after the retraction, and B2 whose quotient is not
#     projected again (both B2 in exact arithmetic);
#   - Riemannian Adam with a sign-fixed QR retraction and one second moment per frame, uncapped,
#     declaring no reference, exits 0;
#   - the same with Adam's elementwise second moment, declaring equivariance, exits 1, naming
#     equivariance and nothing else; declaring nothing of equivariance it exits 0, and the
#     certificate reports equivariance as an observation, refuted;
#   - a rule whose exposed projection removes the symmetric part twice is refuted on the projection
#     claim, by name, its idempotency residual shown;
#   - a rule declared against core/'s B2 that is not B2 is refuted with the first stage that differs
#     named: the elementwise moment (direction), the QR retraction (retraction), no cap (step cap),
#     the first moment never transported (moments);
#   - the components: the Grassmann B2 (horizontal projection, gradient and transport, declared
#     against core/'s B2-Grassmann) is certified on all of them; the canonical-metric Adam's
#     projection, gradient and metric hold in its metric; the QR and Cayley retractions are refuted
#     as second order (an observation) and the polar one certified; a transport that leaves the moment
#     where it was is refuted by name; declaring a component the module does not have exits 2.
set -uo pipefail
stiefel=$1 source=$2 work=$3
py=python3  # the tests' Python (STIEFEL_TEST_PYTHON, first on PATH): ci/setup installs python3-torch for it
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $1"; exit 1; }
"$py" "$source/scripts/make_rule_variants.py" "$work/rules" b2-coupled-decay qr-frame-uncapped qr-elementwise-uncapped \
  project-twice-sym polar-frame-moment-at-next-step polar-frame-quotient-not-projected polar-elementwise-capped \
  polar-frame-uncapped polar-frame-not-transported grassmann-polar-frame-capped canonical-polar-frame-capped \
  cayley-frame-capped || fail "make_rule_variants.py failed"
certify() {  # certify NAME [CONFIG [CLAIMS]]: sets rc; the log in $work/NAME.log, the certificate in $work/NAME.cert.json
  # CLAIMS (a --claims pattern) where the test reads one claim only
  "$stiefel" certify --rule "$work/rules/$1.pt" --rule-config "${2:-$work/rules/$1.json}" --jobs 2 --cases 12 \
    ${3:+--claims "$3"} --out "$work/$1.cert.json" > "$work/$1.log" 2>&1
  rc=$?
}
verdicts() {  # verdicts CERT: "claim expected observed" per line, sorted
  "$py" -c 'import json,sys
for k in sorted(json.load(open(sys.argv[1]))["claims"], key=lambda k: k["id"]): print(k["id"], k["expected"], k["observed"])' "$1"
}

certify b2-coupled-decay
[ "$rc" -eq 0 ] || { cat "$work/b2-coupled-decay.log"; fail "B2 with coupled decay: exit $rc, expected 0"; }
got=$(verdicts "$work/b2-coupled-decay.cert.json")
[ "$got" = "rule-agrees-with-core-b2-coupled-decay certified certified
rule-decay-annihilated-b2-coupled-decay certified certified
rule-equivariance-b2-coupled-decay certified certified
rule-frozen-stays-b2-coupled-decay certified certified
rule-metric-b2-coupled-decay certified certified
rule-on-manifold-b2-coupled-decay certified certified
rule-projection-b2-coupled-decay certified certified
rule-retraction-b2-coupled-decay certified certified
rule-retraction-second-order-b2-coupled-decay certified certified
rule-riemannian-gradient-b2-coupled-decay certified certified
rule-scale-free-b2-coupled-decay certified certified
rule-tangent-step-b2-coupled-decay certified certified
rule-transport-b2-coupled-decay certified certified" ] || fail "B2 with coupled decay: $got"

# Two more rules that are B2 in exact arithmetic, each declaring every property and agreement with core/'s B2.
for b2 in polar-frame-moment-at-next-step polar-frame-quotient-not-projected; do
  certify "$b2"
  [ "$rc" -eq 0 ] || { cat "$work/$b2.log"; fail "$b2 (B2 in exact arithmetic): exit $rc, expected 0"; }
done

certify qr-frame-uncapped
[ "$rc" -eq 0 ] || { cat "$work/qr-frame-uncapped.log"; fail "the QR-retraction Adam: exit $rc, expected 0"; }
got=$(verdicts "$work/qr-frame-uncapped.cert.json")
! grep -q "agrees-with-core" <<< "$got" || fail "a rule with no reference got an agreement claim"

certify qr-elementwise-uncapped
[ "$rc" -eq 1 ] || { cat "$work/qr-elementwise-uncapped.log"; fail "the elementwise QR Adam: exit $rc, expected 1"; }
failed=$(grep "^FAILED " "$work/qr-elementwise-uncapped.log")
[ "$failed" = "FAILED rule-equivariance-qr-elementwise-uncapped: refuted (expected certified)" ] ||
  { cat "$work/qr-elementwise-uncapped.log"; fail "the elementwise QR Adam fails on: $failed"; }
# Not declaring equivariance (nor decay, which its quotient cannot meet): both are observations.
"$py" -c 'import json,sys; c=json.load(open(sys.argv[1])); c["properties"]=[p for p in c["properties"] if p != "equivariance"]; json.dump(c, open(sys.argv[2], "w"))' \
  "$work/rules/qr-elementwise-uncapped.json" "$work/undeclared.json"
certify qr-elementwise-uncapped "$work/undeclared.json" '^rule-equivariance-'
[ "$rc" -eq 0 ] || { cat "$work/qr-elementwise-uncapped.log"; fail "the elementwise QR Adam, equivariance not declared: exit $rc"; }
got=$(verdicts "$work/qr-elementwise-uncapped.cert.json")
grep -qx "rule-equivariance-qr-elementwise-uncapped observed refuted" <<< "$got" ||
  fail "equivariance is not reported as an observation, refuted"

certify project-twice-sym "$work/rules/project-twice-sym.json" '^rule-projection-'
[ "$rc" -eq 1 ] || { cat "$work/project-twice-sym.log"; fail "the projection bug: exit $rc, expected 1"; }
grep -q "^FAILED rule-projection-project-twice-sym: refuted" "$work/project-twice-sym.log" ||
  { cat "$work/project-twice-sym.log"; fail "the projection claim does not name the bug"; }
"$py" -c 'import json,sys
k = next(k for k in json.load(open(sys.argv[1]))["claims"] if k["id"] == "rule-projection-project-twice-sym")
d = k["counterexample"]["float64"]["detail"]
assert d["idempotent"] > 0.1 and d["kills_normal"] > 0.1, d' "$work/project-twice-sym.cert.json" ||
  fail "the projection's counterexample does not show the idempotency defect"
# The first stage that differs from the declared reference.
for pair in "polar-elementwise-capped:direction" "qr-frame-uncapped:retraction" "polar-frame-uncapped:step cap" \
  "polar-frame-not-transported:moments"; do
  v=${pair%%:*} stage=${pair#*:}
  "$py" -c 'import json,sys; c=json.load(open(sys.argv[1])); c["reference"]="b2"; c["properties"]=["agrees-with-reference"]; json.dump(c, open(sys.argv[2], "w"))' \
    "$work/rules/$v.json" "$work/$v.ref.json"
  "$stiefel" certify --rule "$work/rules/$v.pt" --rule-config "$work/$v.ref.json" --claims "^rule-agrees-with-core-$v\$" \
    --jobs 2 --out "$work/$v.ref.cert.json" > "$work/$v.ref.log" 2>&1
  rc=$?
  [ "$rc" -eq 1 ] || { cat "$work/$v.ref.log"; fail "$v against B2: exit $rc, expected 1"; }
  grep -q "^  first stage that differs from the reference: $stage" "$work/$v.ref.log" ||
    { cat "$work/$v.ref.log"; fail "$v against B2: the first stage that differs is not '$stage'"; }
done

# The components.
certify grassmann-polar-frame-capped
[ "$rc" -eq 0 ] || { cat "$work/grassmann-polar-frame-capped.log"; fail "the Grassmann B2: exit $rc, expected 0"; }
got=$(verdicts "$work/grassmann-polar-frame-capped.cert.json")
[ "$(grep -c " certified certified$" <<< "$got")" -eq 13 ] || fail "the Grassmann B2: $got"
"$py" -c 'import json,sys
k = next(k for k in json.load(open(sys.argv[1]))["claims"] if k["id"] == "rule-tangent-step-grassmann-polar-frame-capped")
assert "horizontal" in k["statement"] and "r < d" in k["generator"], k["statement"]' \
  "$work/grassmann-polar-frame-capped.cert.json" || fail "the Grassmann rule's tangent-step claim is not the horizontal one"
certify canonical-polar-frame-capped
[ "$rc" -eq 0 ] || { cat "$work/canonical-polar-frame-capped.log"; fail "the canonical-metric Adam: exit $rc, expected 0"; }
certify cayley-frame-capped "$work/rules/cayley-frame-capped.json" '^rule-retraction-second-order-'
got=$(verdicts "$work/cayley-frame-capped.cert.json")
grep -qx "rule-retraction-second-order-cayley-frame-capped observed refuted" <<< "$got" ||
  fail "the Cayley retraction is not observed to be first order only: $got"
got=$(verdicts "$work/qr-frame-uncapped.cert.json")
grep -qx "rule-retraction-second-order-qr-frame-uncapped observed refuted" <<< "$got" ||
  fail "the QR retraction is not observed to be first order only: $got"
grep -qx "rule-retraction-second-order-b2-coupled-decay certified certified" <<< \
  "$(verdicts "$work/b2-coupled-decay.cert.json")" || fail "the polar retraction is not certified second order"
"$stiefel" certify --rule "$work/rules/polar-frame-not-transported.pt" \
  --rule-config "$work/rules/polar-frame-not-transported.json" --claims '^rule-transport-' --jobs 2 --cases 12 \
  --out "$work/not-transported.cert.json" > "$work/not-transported.log" 2>&1
rc=$?
[ "$rc" -eq 1 ] && grep -q "^FAILED rule-transport-polar-frame-not-transported: refuted" "$work/not-transported.log" ||
  { cat "$work/not-transported.log"; fail "a transport that leaves the moment is not refuted by name (exit $rc)"; }
# A component declared that the module does not have: the user's error (exit 2), named.
"$py" "$source/scripts/make_rule_fixtures.py" "$work/two" > /dev/null || fail "make_rule_fixtures.py failed"
printf '{"properties": ["tangent-step"]}' > "$work/two/declares-step.json"
"$stiefel" certify --rule "$work/two/b2.pt" --rule-config "$work/two/declares-step.json" --out "$work/two.cert.json" \
  > "$work/two.log" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "declares 'tangent-step' but its forward returns no step" "$work/two.log" ||
  { cat "$work/two.log"; fail "a rule declaring tangent-step without returning its step: exit $rc, expected 2 and the reason"; }
[ ! -e "$work/two.cert.json" ] || fail "a refused rule left a certificate"

# The same rules computing in float32 ("dtype": "float32"): certified at float32's rounding, every
# control killed, and refuted where the float64 rule is.
f32() {  # f32 NAME [CLAIMS]: certify NAME with its config in float32
  "$py" -c 'import json,sys; c=json.load(open(sys.argv[1])); c["dtype"]="float32"; json.dump(c, open(sys.argv[2], "w"))' \
    "$work/rules/$1.json" "$work/rules/$1.f32.json"
  "$stiefel" certify --rule "$work/rules/$1.pt" --rule-config "$work/rules/$1.f32.json" --jobs 2 --cases 8 \
    ${2:+--claims "$2"} --out "$work/$1.f32.cert.json" > "$work/$1.f32.log" 2>&1
  rc=$?
}
f32 b2-coupled-decay
[ "$rc" -eq 0 ] || { cat "$work/b2-coupled-decay.f32.log"; fail "B2 with coupled decay in float32: exit $rc, expected 0"; }
[ "$(verdicts "$work/b2-coupled-decay.f32.cert.json")" = "$(verdicts "$work/b2-coupled-decay.cert.json")" ] ||
  fail "B2 with coupled decay in float32: $(verdicts "$work/b2-coupled-decay.f32.cert.json")"
f32 qr-elementwise-uncapped
[ "$rc" -eq 1 ] && [ "$(grep "^FAILED " "$work/qr-elementwise-uncapped.f32.log")" = \
  "FAILED rule-equivariance-qr-elementwise-uncapped: refuted (expected certified)" ] ||
  { cat "$work/qr-elementwise-uncapped.f32.log"; fail "the elementwise QR Adam in float32: exit $rc, or not refuted on equivariance alone"; }
f32 project-twice-sym '^rule-projection-'
[ "$rc" -eq 1 ] && grep -q "^FAILED rule-projection-project-twice-sym: refuted" "$work/project-twice-sym.f32.log" ||
  { cat "$work/project-twice-sym.f32.log"; fail "the projection bug in float32: exit $rc, or the projection not refuted by name"; }
echo "declared rules: B2 with coupled decay, the QR Adam and the Grassmann B2 certified; equivariance, the projection, the transport and second order refuted by name; in float32 too"
