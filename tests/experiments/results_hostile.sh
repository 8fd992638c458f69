#!/usr/bin/env bash
# Results folders travel: a results folder, a definition or a command line made by someone else runs
# nothing, touches nothing outside --out, hangs on nothing and is never tabulated as what it is not.
# One block per defect; each fails on the code before its fix.
set -uo pipefail
stiefel=$1 smoke=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
work=$(cd "$work" && pwd)
# STIEFEL_TEST_CONTINUE=1 goes on past a failure (to list every defect of a binary at once).
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
  [ -n "${STIEFEL_TEST_CONTINUE:-}" ] || exit 1
}
# expect CODE PATTERN -- command...: exits CODE within 60 s and says PATTERN.
expect() {
  local code=$1 pattern=$2; shift 3
  local out; out=$(timeout 60 "$@" 2>&1); local rc=$?
  [ "$rc" -eq "$code" ] && grep -q -- "$pattern" <<<"$out" || fail "$* -> rc $rc (expected $code, \"$pattern\"): $out"
}
src="$smoke/table7"
[ -f "$src/experiment.json" ] || fail "no smoke results of table7 in $smoke"
fresh() {  # fresh NAME: a copy of the smoke results of table7, without checkpoints
  rm -rf "${work:?}/$1"; cp -r "$src" "$work/$1"; find "$work/$1" -name checkpoint.pt -delete
}
empty_defs="$work/no-definitions"; mkdir -p "$empty_defs"
# The `stiefel train` arguments a run record's options were given as (defaults left out).
train_args_of() {
  python3 - "$1" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))["options"]
args = []
for k, v in o.items():
    if v is False or v == "" or (type(v) in (int, float) and v == -1) or (k == "eval_every" and v == 0):
        continue
    args += ["--" + k.replace("_", "-")] + ([] if v is True else [str(v)])
print(" ".join(args))
PY
}

# 1, 2: every text a results folder holds that reaches a plot, and --out, with shell and gnuplot
# syntax in it: nothing runs, the figures are drawn, the texts reach the tables literally, only --out
# is written, and the scratch folder (TMPDIR) is left empty.
fresh hostile
marker="$work/ran"
python3 - "$work/hostile/experiment.json" "$marker" <<'PY'
import json, sys
p, m = sys.argv[1], sys.argv[2]
e = json.load(open(p))
d = e["definition"]
d["title"] = 'T `touch %s-1` "x" . system("touch %s-2") . "\n" $(touch %s-3) @x' % (m, m, m)
for i, a in enumerate(d["arms"]):
    a["label"] = "L%d `touch %s-a%d` ' \" \\\" system('touch %s-b%d')" % (i, m, i, m, i)
e["source"] = "`touch %s-4`" % m
json.dump(e, open(p, "w"))
PY
mkdir -p "$work/tmp"
out="$work/report \`touch $marker-out\` \$(touch $marker-out2) \" '"
before=$(cd "$work" && find . -path "./report*" -prune -o -print | sort)
TMPDIR="$work/tmp" "$stiefel" report "$work/hostile" --definitions "$empty_defs" --out "$out" --resamples 200 \
  > "$work/hostile.log" 2>&1 || fail "report over hostile texts: $(cat "$work/hostile.log")"
ls "$work" | grep -q '^ran' && fail "a text from the results folder ran a command: $(ls "$work" | grep '^ran')"
[ -z "$(ls -A "$work/tmp")" ] || fail "scratch files left in TMPDIR: $(ls -A "$work/tmp")"
ls "$out"/table7-smoke-*.png > /dev/null 2>&1 || fail "no figure drawn"
grep -qF "L0 \`touch $marker-a0\`" "$out/table7-smoke.md" || fail "an arm label is not shown literally"
# Nothing outside --out changed: no file appeared or went beside the results folder and --out (the
# listing before the report, but for its own log).
after=$(cd "$work" && find . -path "./report*" -prune -o -path ./hostile.log -prune -o -print | sort)
before=$(grep -v '^\./hostile\.log$' <<<"$before")
[ "$before" = "$after" ] || fail "report wrote outside --out: $(diff <(echo "$before") <(echo "$after"))"
echo "1, 2: hostile titles, labels and --out run nothing; scratch folder private and removed"

# 3: nesting 100 000 levels deep is refused while parsing, in every reader of JSON.
python3 -c "print('[' * 100000 + ']' * 100000)" > "$work/deep.json"
fresh deep; cp "$work/deep.json" "$work/deep/experiment.json"
expect 2 "nested more than 64 levels" -- "$stiefel" report "$work/deep" --out "$work/deep-report"
expect 2 "nested more than 64 levels" -- "$stiefel" experiment "$work/deep.json" --profile smoke --out "$work/deep-x"
run0=$(ls -d "$src"/runs/main/a2/seed-0)
mkdir -p "$work/deep-run"; cp "$work/deep.json" "$work/deep-run/run.json"
expect 2 "nested more than 64 levels" -- "$stiefel" train --arm a2 --n 256 --epochs 1 --out "$work/deep-run" --resume
echo "3: deep nesting refused"

# 4: a record copied into another cell, or of another budget, is mismatched: named, never tabulated.
fresh copied
cp "$work/copied/runs/main/a2/seed-0/run.json" "$work/copied/runs/main/b2/seed-0/run.json"
"$stiefel" report "$work/copied" --out "$work/copied-report" --resamples 200 --no-plots > /dev/null 2>&1 ||
  fail "report over a copied record"
python3 - "$work/copied-report/table7-smoke.json" <<'PY' || fail "the table of a copied record (above)"
import json, sys
t = json.load(open(sys.argv[1]))
m = t["runs_mismatched"]
assert [x["run"] for x in m] == ["main/b2/seed-0"] and "arm \"a2\" (the cell's: \"b2\")" in m[0]["why"], m
b2 = [a for a in t["groups"][0]["arms"] if a["id"] == "b2"][0]
assert b2["n"] == 1, b2["n"]   # seed 1 only
PY
grep -q "Not tabulated: 1 records that are not their grid cell's run" "$work/copied-report/table7-smoke.md" ||
  fail "the table does not name the mismatched record"
expect 0 "mismatched" -- "$stiefel" experiment table7 --profile smoke --out "$work/copied" --status
# Without experiment.json: a record of another budget is not a finished run of this grid.
fresh budget; rm "$work/budget/experiment.json"
python3 - "$work/budget/runs/main/a2/seed-0/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); r["options"]["n"] = 5000; json.dump(r, open(sys.argv[1], "w"))
PY
status=$("$stiefel" experiment table7 --profile smoke --out "$work/budget" --status 2>&1)
grep -q "main/a2/seed-0 *mismatched.*n 5000 (the cell's: 256)" <<<"$status" || fail "another budget's record: $status"
echo "4: copied and other-budget records are mismatched, named, not tabulated"

# 5: two results folders of the same experiment and profile would write one table: refused, nothing written.
fresh twin
expect 2 "whose tables would overwrite each other" -- \
  "$stiefel" report "$work/copied" "$work/twin" --out "$work/twin-report" --no-plots
[ ! -e "$work/twin-report" ] || fail "report A B wrote $work/twin-report"
# A stored definition whose name is a path: refused before anything is written (the report's file
# names come from it).
fresh escape
python3 - "$work/escape/experiment.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1])); e["definition"]["name"] = "../escaped"; json.dump(e, open(sys.argv[1], "w"))
PY
expect 2 "/definition/name \"../escaped\" is not a plain name" -- \
  "$stiefel" report "$work/escape" --definitions "$empty_defs" --out "$work/escape-out/sub" --no-plots
[ ! -e "$work/escape-out" ] || fail "a definition named ../escaped wrote $(find "$work/escape-out")"
echo "5: report A B of one experiment refused; a stored name that is a path refused"

# 6: FIFOs and devices where a file is expected: refused at once, nothing grows, nothing hangs.
mkfifo "$work/fifo.json" "$work/fifo.pt"
ln -s /dev/zero "$work/zero.pt"
expect 2 "a FIFO, not a JSON file" -- "$stiefel" experiment "$work/fifo.json" --profile smoke --out "$work/f1"
expect 2 "fifo.pt: a FIFO, not a checkpoint" -- "$stiefel" certify --checkpoint "$work/fifo.pt" --out "$work/f.json"
expect 2 "zero.pt: a character device, not a checkpoint" -- \
  "$stiefel" certify --checkpoint "$work/zero.pt" --out "$work/f.json"
mkdir -p "$work/idx"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  ln -s /dev/zero "$work/idx/$f.gz"
done
expect 1 "a character device, not an IDX file" -- \
  "$stiefel" train --data "fashion-mnist:$work/idx" --epochs 1 --out "$work/f2"
fresh fifo-log; rm "$work/fifo-log/runs/main/a2/seed-0/log.txt" "$work/fifo-log/runs/main/a2/seed-0/run.json"
mkfifo "$work/fifo-log/runs/main/a2/seed-0/log.txt"
expect 0 "log.txt: not a regular file, not a log" -- "$stiefel" experiment table7 --profile smoke --out "$work/fifo-log" --status
fresh folder-record; rm "$work/folder-record/runs/main/a2/seed-0/run.json"
mkdir "$work/folder-record/runs/main/a2/seed-0/run.json"
expect 2 "seed-0/run.json: a folder, not a JSON file" -- \
  "$stiefel" report "$work/folder-record" --out "$work/folder-report" --no-plots
echo "6: FIFOs, devices and folders refused at once"

# 7: a log planted as a link out of the results folder is never written through.
fresh link-log
rm -rf "$work/link-log/runs/main/a2/seed-0"; mkdir -p "$work/link-log/runs/main/a2/seed-0"
echo "outside" > "$work/outside.txt"
ln -s "$work/outside.txt" "$work/link-log/runs/main/a2/seed-0/log.txt"
timeout 300 "$stiefel" experiment table7 --profile smoke --out "$work/link-log" > "$work/link-log.out" 2>&1
[ "$(cat "$work/outside.txt")" = "outside" ] || fail "the run appended to a file outside the results folder"
grep -q "log.txt: cannot be opened as the run's log (a symbolic link)" "$work/link-log.out" ||
  fail "the planted link is not named: $(cat "$work/link-log.out")"
echo "7: a planted log link is refused"

# 8: seed counts that would wrap are refused, in the schema and in the code.
for seeds in 4294967297 2147483648 1e20 0 -1; do
  printf '{"name": "x", "title": "x", "task": "grok", "analysis": "grok", "seeds": %s,\n "arms": [{"id": "a", "train": {"arm": "a2"}}], "profiles": {"paper": {}, "cpu": {"reductions": "r", "seeds": 6}, "smoke": {}}}' \
    "$seeds" > "$work/seeds.json"
  expect 2 "seeds.json: /seeds" -- "$stiefel" experiment "$work/seeds.json" --profile smoke --out "$work/s"
done
printf '{"name": "x", "title": "x", "task": "grok", "analysis": "grok", "seeds": 2,\n "arms": [{"id": "a", "seeds": 1e20, "train": {"arm": "a2"}}], "profiles": {"paper": {}, "cpu": {"reductions": "r", "seeds": 6}, "smoke": {}}}' \
  > "$work/arm-seeds.json"
expect 2 "arm-seeds.json: /arms/0/seeds" -- "$stiefel" experiment "$work/arm-seeds.json" --profile smoke --out "$work/s"
[ ! -e "$work/s" ] || fail "a refused seed count wrote $work/s"
echo "8: seed counts out of range refused"

# 9: --resume of a record whose epochs are missing, repeated or renumbered is refused.
for epochs in "[1, 3]" "[1, 1]" "[1e30]"; do
  rm -rf "$work/renumbered"; cp -r "$src/runs/main/a2/seed-0" "$work/renumbered"; rm -f "$work/renumbered/checkpoint.pt"
  python3 - "$work/renumbered/run.json" "$epochs" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); new = json.loads(sys.argv[2])
r["epochs"] = [dict(r["epochs"][0], epoch=e) for e in new]
r["config"]["epochs"] = 3; r["options"]["epochs"] = 3
r["status"] = "running"; r.pop("final", None); r.pop("checkpoints", None)
json.dump(r, open(sys.argv[1], "w"))
PY
  args=$(train_args_of "$work/renumbered/run.json")
  # shellcheck disable=SC2086
  expect 2 "/epochs/" -- "$stiefel" train $args --out "$work/renumbered" --resume
done
echo "9: renumbered epochs refused on --resume"

# 10: the grokking task refuses the image task's options instead of recording what did not run.
for opt in "--n 5" "--batch 64" "--layers 3" "--pooling cls" "--warmup-epochs 1" "--test-n 10" "--val-n 10" \
           "--pca-samples 2000" "--data fashion-mnist"; do
  # shellcheck disable=SC2086
  expect 2 "${opt%% *}: the grok task does not use it" -- "$stiefel" train --task grok --epochs 1 $opt --out "$work/g"
done
[ ! -e "$work/g" ] || fail "a refused grok run wrote $work/g"
# and the image task refuses the grokking modulus; a modulus out of range is refused by name.
expect 2 "\-\-modulus: the image task does not use it" -- "$stiefel" train --task image --modulus 11 --out "$work/g"
for p in 4 1001 x; do
  expect 2 "\-\-modulus" -- "$stiefel" train --task grok --modulus $p --out "$work/g"
done
[ ! -e "$work/g" ] || fail "a refused modulus wrote $work/g"
# A run at 23 resumes only at 23.
"$stiefel" train --task grok --modulus 23 --epochs 1 --quiet --out "$work/g23" > /dev/null
expect 2 "modulus" -- "$stiefel" train --task grok --epochs 2 --quiet --out "$work/g23" --resume
expect 2 "modulus" -- "$stiefel" train --task grok --modulus 29 --epochs 2 --quiet --out "$work/g23" --resume
echo "10: image options refused by the grok task, the modulus by the image task"

# 11: a checkpoint with one byte changed is refused (its ZIP records' CRC-32), and one that is not the
# record's (its SHA-256) too; what was checked is said.
ckdir=$(ls -d "$smoke"/table7/runs/main/b2/seed-0)
rm -rf "$work/ck"; cp -r "$ckdir" "$work/ck"
expect 0 "SHA-256 .* is epoch 1's in" -- "$stiefel" certify --checkpoint "$work/ck/checkpoint.pt" --out "$work/ck.json"
python3 - "$work/ck/checkpoint.pt" <<'PY'
import sys, zipfile
p = sys.argv[1]
z = zipfile.ZipFile(p)
info = max(z.infolist(), key=lambda i: i.file_size)   # the largest tensor record
data = bytearray(open(p, "rb").read())
start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
# the local header's extra field can differ from the central one: read its length there
import struct
name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
start = info.header_offset + 30 + name_len + extra_len
data[start + info.file_size // 2] ^= 0x10
open(p, "wb").write(bytes(data))
PY
expect 2 "do not match their CRC-32" -- "$stiefel" certify --checkpoint "$work/ck/checkpoint.pt" --out "$work/ck.json"
cp "$ckdir/checkpoint.pt" "$work/ck/checkpoint.pt"
cp "$(ls -d "$smoke"/table7/runs/main/b2/seed-1)/run.json" "$work/ck/run.json"
expect 2 "matches no checkpoint that" -- "$stiefel" certify --checkpoint "$work/ck/checkpoint.pt" --out "$work/ck.json"
rm "$work/ck/run.json"
expect 0 "no run.json beside it" -- "$stiefel" certify --checkpoint "$work/ck/checkpoint.pt" --out "$work/ck.json"
echo "11: damaged and foreign checkpoints refused"

# 12: out-of-range values are refused with the option's name, never wrapped or replaced.
expect 2 "\-\-seed: expected a finite number >= 0" -- "$stiefel" certify --seed -1 --out "$work/c.json"
expect 2 "\-\-bootstrap-seed: expected a finite number >= 0" -- \
  "$stiefel" report --bootstrap-seed -1 --out "$work/r12"
expect 2 "\-\-eval-every: expected a finite number > 0" -- "$stiefel" train --eval-every 0 --out "$work/t12"
expect 2 "\-\-pca-samples 100000000: more than the 4096 training patches" -- \
  "$stiefel" train --n 256 --epochs 1 --pca-samples 100000000 --out "$work/t12"
[ ! -e "$work/r12" ] && [ ! -e "$work/t12" ] || fail "a refused value wrote its output"
echo "12: out-of-range values refused"

# 13: --status's advice for a completed run with a damaged checkpoint is a command that works.
rm -rf "$work/advice"; cp -r "$src" "$work/advice"
printf 'damaged' > "$work/advice/runs/main/a2/seed-0/checkpoint.pt"
status=$("$stiefel" experiment table7 --profile smoke --out "$work/advice" --status 2>&1)
advice=$(grep -o '`rm [^`]*`' <<<"$status" | head -1 | tr -d '`')
[ -n "$advice" ] || fail "no working advice in: $status"
$advice
again=$("$stiefel" experiment table7 --profile smoke --out "$work/advice" 2>&1) || fail "after the advice: $again"
grep -q "already finished (skipped), 0 to run" <<<"$again" || fail "the advised command did not settle it: $again"
echo "13: the damaged-checkpoint advice works"

# 14: two `experiment` processes on one --out: runs the other holds are left to it, nothing is "failed"
#     (three arms, six runs of about 2 s: the second process starts once the first has finished its
#     first run, so that the two overlap by five runs).
rm -rf "$work/twice"
twice=(experiment table7 --profile smoke --arms a2,b2,pa16 --out "$work/twice")
"$stiefel" "${twice[@]}" > "$work/twice-1.log" 2>&1 &
first=$!
for _ in $(seq 600); do grep -q '^\[1/6\]' "$work/twice-1.log" 2>/dev/null && break; sleep 0.1; done
"$stiefel" "${twice[@]}" > "$work/twice-2.log" 2>&1; rc2=$?
wait "$first"; rc1=$?
[ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ] || fail "two processes: exits $rc1, $rc2: $(cat "$work/twice-1.log" "$work/twice-2.log")"
! grep -q "failed" "$work/twice-1.log" "$work/twice-2.log" || fail "a run was called failed: $(cat "$work/twice-2.log")"
final=$("$stiefel" experiment table7 --profile smoke --out "$work/twice" --status 2>&1)
grep -q ": 14 runs: 6 completed, 0 diverged, 0 running, 0 queued, 0 failed, 0 repair, 0 mismatched, 8 missing" <<<"$final" &&
  [ "$(grep -cE "^main/(a2|b2|pa16)/seed-[01] +completed " <<<"$final")" -eq 6 ] ||
  fail "not every run of the three arms completed: $final"
echo "14: two processes on one folder share it"

# 15: a folder where a file is expected is named; a refused --claims writes nothing.
printf '{"claims": [{"id": "k"}]}' > "$work/bad-claims.json"
expect 2 "bad-claims.json" -- "$stiefel" report "$work/twin" --claims "$work/bad-claims.json" --out "$work/r15" --no-plots
[ ! -e "$work/r15" ] || fail "a refused --claims left tables in $work/r15"
mkdir -p "$work/claims-folder.json"
expect 2 "claims-folder.json: a folder, not a JSON file" -- \
  "$stiefel" report --claims "$work/claims-folder.json" --out "$work/r15"
# --resume of a completed run on a read-only file system returns it (a bind mount, where the
# machine lets root make one; said when it does not).
rm -rf "$work/ro-src" "$work/ro"; cp -r "$src/runs/main/a2/seed-0" "$work/ro-src"; mkdir -p "$work/ro"
if mount --bind "$work/ro-src" "$work/ro" 2> /dev/null && mount -o remount,ro,bind "$work/ro" 2> /dev/null; then
  args=$(train_args_of "$work/ro/run.json")
  # shellcheck disable=SC2086
  out15=$("$stiefel" train $args --out "$work/ro" --resume 2>&1); rc15=$?
  umount "$work/ro"
  [ "$rc15" -eq 0 ] && grep -q "run completed" <<<"$out15" || fail "--resume on a read-only folder: rc $rc15: $out15"
else
  umount "$work/ro" 2> /dev/null
  echo "15: (no read-only bind mount on this machine: --resume on a read-only folder not exercised)"
fi
echo "15: folders named, a bad claims file writes nothing, a read-only completed run is returned"
# 16: a finished record whose checkpoint key is no epoch (the run schema rejects it) is named by
# --status as mismatched, not skipped as completed or reported as "stoll".
fresh badkey
rec="$work/badkey/runs/main/a2/seed-0/run.json"
python3 - "$rec" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); r["checkpoints"] = {"x1": "00"}; json.dump(r, open(sys.argv[1], "w"))
PY
echo junk > "$(dirname "$rec")/checkpoint.pt"
status=$("$stiefel" experiment table7 --profile smoke --out "$work/badkey" --status 2>&1)
grep -q 'main/a2/seed-0 *mismatched.*names a checkpoint by "x1", not an epoch number' <<<"$status" || fail "a malformed completed record: $status"
! grep -q "stoll" <<<"$status" || fail "--status reports a parse error as the run's failure: $status"
echo "16: a finished record with a checkpoint key that is no epoch is named by --status"
# 17 (N1): with --batch-seeds the logs of a group's other runs are opened as the first run's is: a
# planted link is never written through, and a planted FIFO hangs nothing; each is named.
for kind in link fifo; do
  d="$work/batch-$kind"
  rm -rf "$d"; cp -r "$smoke/grok-5seed" "$d"; find "$d" -name checkpoint.pt -delete
  rm -rf "$d/runs/main/a2"; mkdir -p "$d/runs/main/a2/seed-1"
  echo "outside" > "$work/outside-$kind.txt"
  if [ "$kind" = link ]; then
    ln -s "$work/outside-$kind.txt" "$d/runs/main/a2/seed-1/log.txt"
  else
    mkfifo "$d/runs/main/a2/seed-1/log.txt"
  fi
  timeout 300 "$stiefel" experiment grok-5seed --profile smoke --arms a2 --batch-seeds 2 --out "$d" > "$d.out" 2>&1
  rc=$?
  [ "$rc" -ne 124 ] || fail "--batch-seeds with a planted $kind for a log hangs"
  [ "$(cat "$work/outside-$kind.txt")" = "outside" ] || fail "--batch-seeds appended through a planted log link"
  grep -q "seed-1/log.txt: \(cannot be opened as the run's log\|not a regular file\)" "$d.out" ||
    fail "the planted $kind log is not named: $(cat "$d.out")"
done
echo "17: --batch-seeds never writes through a planted log link, nor hangs on a planted FIFO"
# 18 (N2): a sparse 50 GB checkpoint beside a finished record is not read: --status answers at once,
# naming its size.
fresh huge
truncate -s 50G "$work/huge/runs/main/a2/seed-0/checkpoint.pt"
start=$(date +%s)
status=$(timeout 60 "$stiefel" experiment table7 --profile smoke --out "$work/huge" --status 2>&1)
took=$(( $(date +%s) - start ))
[ "$took" -lt 20 ] || fail "--status took ${took} s over a sparse 50 GB checkpoint"
grep -q "main/a2/seed-0.*53687091200 bytes, more than any checkpoint" <<<"$status" ||
  fail "the oversized checkpoint is not named: $status"
rm -f "$work/huge/runs/main/a2/seed-0/checkpoint.pt"
echo "18: a 50 GB checkpoint is not hashed; --status names its size"

# 19 (N7): a "completed" record that breaks the run schema is named by --status and by the runner as
# the report would name it (mismatched, never skipped as finished), not tabulated.
fresh schema
python3 - "$work/schema/runs/main/a2/seed-0/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); r["epochs"][0]["train_acc"] = "high"; json.dump(r, open(sys.argv[1], "w"))
PY
status=$("$stiefel" experiment table7 --profile smoke --out "$work/schema" --status 2>&1)
grep -q 'main/a2/seed-0 *mismatched.*/epochs/0/train_acc' <<<"$status" || fail "a completed record breaking the schema: $status"
echo "19: a completed record that breaks the run schema is named by --status (the runner's own state)"
# 20 (N18): a record whose options were edited (its arm) or whose final result was forged is refused by
# the report and named by --status; its final is its last epoch's, its options state what its config ran.
for forge in arm final; do
  fresh "forged-$forge"
  python3 - "$work/forged-$forge/runs/main/a2/seed-0/run.json" "$forge" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
if sys.argv[2] == "arm":
    r["options"]["arm"] = "b2"
else:
    r["final"]["test_acc"] = 0.99
json.dump(r, open(sys.argv[1], "w"))
PY
  pattern='its options state arm "b2" but its config ran "a2"'
  [ "$forge" = arm ] || pattern="its final metrics are not its last epoch's"
  expect 2 "$pattern" -- "$stiefel" report "$work/forged-$forge" --out "$work/forged-$forge-report" --no-plots
  [ ! -e "$work/forged-$forge-report/table7-smoke.md" ] || fail "a forged $forge was tabulated"
  status=$("$stiefel" experiment table7 --profile smoke --out "$work/forged-$forge" --status 2>&1)
  grep -q "main/a2/seed-0 *mismatched.*$pattern" <<<"$status" || fail "a forged $forge: $status"
done
echo "20: an edited arm and a forged final are refused by the report and named by --status"
# 21 (N9): a stored definition is checked against the schema, named by the file that holds it and
# never by its own "source" field: std_ddof -3 and a seed count of the wrong type are refused.
for bad in ddof type; do
  fresh "stored-$bad"
  python3 - "$work/stored-$bad/experiment.json" "$bad" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
e["source"] = "/planted/source.json"
if sys.argv[2] == "ddof":
    e["definition"]["std_ddof"] = -3
else:
    e["definition"]["seeds"] = "two"
json.dump(e, open(sys.argv[1], "w"))
PY
  field=std_ddof; [ "$bad" = ddof ] || field=seeds
  out=$("$stiefel" report "$work/stored-$bad" --definitions "$empty_defs" --out "$work/stored-$bad-report" --no-plots 2>&1)
  rc=$?
  [ "$rc" -eq 2 ] && grep -q "stored-$bad/experiment.json (its stored definition).*$field" <<<"$out" ||
    fail "a stored definition with a bad $field: rc $rc: $out"
  ! grep -q "/planted/source.json" <<<"$out" || fail "the error names the stored source field: $out"
  [ ! -e "$work/stored-$bad-report" ] || fail "a bad stored definition wrote $work/stored-$bad-report"
done
echo "21: stored definitions checked against the schema, named by their file"
# 22 (N8): a figure path that is a folder is refused before anything is written: the files --out
# already holds stay as they were, those of the tables before the refused figure's included.
fresh figure
rm -rf "$work/figure-grok"; cp -r "$smoke/grok-5seed" "$work/figure-grok"; find "$work/figure-grok" -name checkpoint.pt -delete
mkdir -p "$work/figure-report/grok-5seed-smoke-grok.png"
echo "earlier" > "$work/figure-report/table7-smoke.md"
echo "earlier" > "$work/figure-report/CLAIMS.md"
expect 1 "grok-5seed-smoke-grok.png: exists and is a folder" -- \
  "$stiefel" report "$work/figure" "$work/figure-grok" --out "$work/figure-report" --resamples 200
[ "$(cat "$work/figure-report/table7-smoke.md")" = earlier ] && [ "$(cat "$work/figure-report/CLAIMS.md")" = earlier ] &&
  [ ! -e "$work/figure-report/table7-smoke.json" ] && [ ! -e "$work/figure-report/table7-smoke-isometry.png" ] ||
  fail "a refused report replaced files of --out: $(ls "$work/figure-report")"
echo "22: a figure path that is a folder is refused with --out as it was"
# 23 (N17): a profile whose name has a dot (the schema allows it) runs and is reported.
fresh dotted
mkdir -p "$work/dotted-defs"
python3 - "$work/dotted/experiment.json" "$work/dotted-defs/table7.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
e["profile"] = "smoke.v2"
e["definition"]["profiles"]["smoke.v2"] = dict(e["definition"]["profiles"]["smoke"],
                                              reductions="the smoke profile's sizes, as a second version")
json.dump(e, open(sys.argv[1], "w"))
json.dump(e["definition"], open(sys.argv[2], "w"))
PY
expect 0 "completed" -- "$stiefel" experiment table7 --profile smoke.v2 --definitions "$work/dotted-defs" \
  --out "$work/dotted" --status
"$stiefel" report "$work/dotted" --definitions "$work/dotted-defs" --out "$work/dotted-report" --resamples 200 \
  --no-plots > "$work/dotted.out" 2>&1 || fail "the report of profile smoke.v2: $(cat "$work/dotted.out")"
[ -f "$work/dotted-report/table7-smoke.v2.md" ] || fail "no table7-smoke.v2.md"
echo "23: a profile named smoke.v2 runs and is reported"

[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "hostile results folders: every defect refused or shown literally"
