#!/usr/bin/env bash
# `stiefel certify --rule` on the ways a user's rule, or a user's command line, goes wrong: each
# ends in exit 2 with a message that names the file and the call, never in a hang, a crash, a
# "refuted" verdict or an overwritten input; and the certificate of a rule that is right says
# nothing of implementations it never selected.
set -uo pipefail
stiefel=$1 source=$2 work=$3
py=python3  # the tests' Python (STIEFEL_TEST_PYTHON, first on PATH): ci/setup installs python3-torch for it
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $1"; exit 1; }
"$py" -c 'import torch' 2> /dev/null || fail "$py cannot import torch: ci/setup installs python3-torch"
"$py" "$source/scripts/make_rule_fixtures.py" "$work/rules" > /dev/null || fail "make_rule_fixtures.py failed"
"$py" "$source/tests/certify/make_malformed_rules.py" "$work/rules" || fail "make_malformed_rules.py failed"
rules=$work/rules

# shellcheck source=expect_refusal.sh
source "$(dirname "$0")/expect_refusal.sh"
scale_free() { echo "--claims ^rule-scale-free-$1\$ --cases 2 --jobs 2"; }

# The cause of an error is at the end of LibTorch's message: it is shown, not cut away.
expect "KeyError: weight_decay" --rule "$rules/reads_decay.pt"
expect "the cause: cannot allocate the moment buffer" --rule "$rules/long_raise.pt"
# Code that does not compile with this LibTorch (an operator a newer PyTorch wrote) names the file.
expect "unknown_op.pt: its TorchScript code does not compile" --rule "$rules/unknown_op.pt"
grep -q "no_such_builtin_op" "$work/out.txt" || { cat "$work/out.txt"; fail "the unknown operator is not named"; }
# A folder or a FIFO is what it is, not "no such file" (and a FIFO is never opened: no hang).
mkdir -p "$work/folder.pt" && mkfifo "$work/fifo.pt" "$work/fifo.json"
expect "folder.pt: is a folder, not a file" --rule "$work/folder.pt"
expect "fifo.pt: is a FIFO" --rule "$work/fifo.pt"
expect "fifo.json: is a FIFO" --rule "$rules/b2.pt" --rule-config "$work/fifo.json"
# A rule named like a built-in implementation: the file, or the config's key, is named.
cp "$rules/b2.pt" "$work/trainer.pt"
expect "trainer.pt: its claims' name 'trainer' (the file's stem) is taken" --rule "$work/trainer.pt"
grep -q 'set another "name" in --rule-config' "$work/out.txt" || { cat "$work/out.txt"; fail "no advice"; }
echo '{"name": "core"}' > "$work/core.json"
expect "(\"name\" in --rule-config $work/core.json) is taken" --rule "$rules/b2.pt" --rule-config "$work/core.json"

# A declaration stiefel cannot honour is refused, naming the key.
for pair in '{"properties": ["isometry"]}|holds "isometry", not one of' \
  '{"properties": [], "settings": {"lr": 0.1}}|each claim sets lr and eps' \
  '{"properties": [], "reference": "b3"}|'"'reference' 'b3' is not one of" \
  '{"reference": "b2"}|belong to a rule that declares its' \
  '{"properties": [], "settings": {"beta1": 1.5}}|'"settings 'beta1' must be in" \
  '{"properties": ["projection"]}|declares '"'projection'"' but exposes no project(w, x)'; do
  echo "${pair%%|*}" > "$work/declared.json"
  expect "${pair#*|}" --rule "$rules/b2.pt" --rule-config "$work/declared.json"
done

# --out and --junit never overwrite the rule or its config.
cp "$rules/b2.pt" "$work/mine.pt" && cp "$rules/b2.json" "$work/mine.json"
for args in "--out $work/mine.pt" "--out $work/mine.json" "--junit $work/mine.pt --out $work/x.json" \
  "--junit $work/mine.json --out $work/x.json"; do
  # shellcheck disable=SC2086
  "$stiefel" certify --rule "$work/mine.pt" --rule-config "$work/mine.json" $args > "$work/out.txt" 2>&1
  rc=$?
  [ "$rc" -eq 2 ] && grep -q "the certificate would overwrite it" "$work/out.txt" ||
    { cat "$work/out.txt"; fail "certify $args: exit $rc, expected 2 and a refusal"; }
  cmp -s "$rules/b2.pt" "$work/mine.pt" && cmp -s "$rules/b2.json" "$work/mine.json" || fail "certify $args changed an input"
done

# A forward that raises inside a claim is the user's error (exit 2, the claim and call named), not
# a refutation; one that never returns is stopped after --rule-timeout; one that crashes the
# process is reported with the call it crashed in. None writes a certificate.
# shellcheck disable=SC2046
expect "claim rule-scale-free-raises-at-eps0, step 1 of its run" --rule "$rules/raises_at_eps0.pt" $(scale_free raises-at-eps0)
grep -q "this rule cannot take eps = 0" "$work/out.txt" || { cat "$work/out.txt"; fail "the rule's own message is lost"; }
start=$(date +%s)
# shellcheck disable=SC2046
expect "forward did not return within 3 s" --rule "$rules/hangs_at_eps0.pt" --rule-timeout 3 $(scale_free hangs-at-eps0)
grep -q "forward call: claim rule-scale-free-hangs-at-eps0, step 1 of its run, .*eps: 0" "$work/out.txt" ||
  { cat "$work/out.txt"; fail "the call that hung is not named"; }
[ $(($(date +%s) - start)) -lt 120 ] || fail "the hanging rule was stopped only after $(($(date +%s) - start)) s"
# shellcheck disable=SC2046
expect "died of signal 11 (Segmentation fault) in" --rule "$rules/crashes_at_eps0.pt" $(scale_free crashes-at-eps0)
grep -q "forward call: claim rule-scale-free-crashes-at-eps0" "$work/out.txt" ||
  { cat "$work/out.txt"; fail "the call that crashed is not named"; }
expect "--rule-timeout" --rule "$rules/b2.pt" --rule-timeout 0

# State kept in the module's attributes starts from the module as loaded in every run: the probe
# at load steps a clone. The certificate of this (B2) rule names no implementation it did not
# select: no "not run" line for trainer-cuda, no skipped JUnit case.
"$stiefel" certify --rule "$rules/counts_calls.pt" --cases 2 --jobs 2 --out "$work/counts.json" \
  --junit "$work/counts.xml" > "$work/counts.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { cat "$work/counts.log"; fail "B2 with a call count in an attribute: exit $rc, expected 0"; }
! grep -q "stepped before this run" "$work/counts.log" "$work/counts.json" || fail "the probe's calls leaked into a claim"
! grep -q "not run:" "$work/counts.log" || { cat "$work/counts.log"; fail "--rule alone reports implementations it never selected"; }
! grep -q "<skipped" "$work/counts.xml" || fail "--rule alone adds skipped JUnit cases"
"$py" -c 'import json,sys; c=json.load(open(sys.argv[1])); assert c["run"]["implementations_not_run"] == [], c["run"]' \
  "$work/counts.json" || fail "implementations_not_run is not empty"

# The reproduce command replays from any folder, whatever the path holds (a quote, a space), and
# writes beside the certificate, never the suite's reports/certificate.json in the current folder.
odd="$work/it's a folder"
mkdir -p "$odd" "$work/here" "$work/there/reports"
cp "$rules/elementwise_adam.pt" "$rules/elementwise_adam.json" "$odd/"
echo committed > "$work/there/reports/certificate.json"
(cd "$work/here" && "$stiefel" certify --rule "$odd/elementwise_adam.pt" --rule-config "$odd/elementwise_adam.json" \
  --claims '^rule-equivariance-' --cases 6 --jobs 2 > "$work/odd.log" 2>&1)
rc=$?
[ "$rc" -eq 1 ] || { cat "$work/odd.log"; fail "the elementwise rule in a quoted folder: exit $rc, expected 1"; }
[ -f "$work/here/elementwise-adam.cert.json" ] || fail "without --out the certificate is not NAME.cert.json"
# stderr shows the failed claim's shrunk counterexample and its replay command; a rule that runs in
# float64 only is never said to "persist at 50 digits".
for want in "FAILED rule-equivariance-elementwise-adam: refuted" "counterexample (shrunk in" \
  "violation in the implementation's own arithmetic" "replay: stiefel certify"; do
  grep -qF "$want" "$work/odd.log" || { cat "$work/odd.log"; fail "stderr lacks '$want'"; }
done
! grep -q "persists at 50 digits" "$work/odd.log" "$work/here/elementwise-adam.cert.json" ||
  fail "a float64-only rule is said to persist at 50 digits"
cmd=$("$py" -c 'import json,sys; c=json.load(open(sys.argv[1])); print(next(k["reproduce"] for k in c["claims"] if k["observed"] == "refuted"))' \
  "$work/here/elementwise-adam.cert.json") || fail "no refuted claim in the certificate"
(cd "$work/there" && eval "\"$stiefel\" certify ${cmd#stiefel certify } --jobs 2") > "$work/replay.log" 2>&1
grep -q "rule-equivariance-elementwise-adam .*refuted" "$work/replay.log" || { cat "$work/replay.log"; echo "$cmd"; fail "the reproduce command does not replay"; }
[ -f "$work/here/elementwise-adam.cert.replay.json" ] || { echo "$cmd"; fail "the replay did not write beside the certificate"; }
[ "$(cat "$work/there/reports/certificate.json")" = committed ] || fail "the replay overwrote reports/certificate.json"
echo "rule defects: each refused with exit 2 and its cause named; nothing overwritten; the replay replays"
