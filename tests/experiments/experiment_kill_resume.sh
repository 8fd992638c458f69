#!/usr/bin/env bash
# Kills `stiefel experiment` (SIGKILL) mid-grid, reruns the same command and checks that no
# completed run was lost or redone (same bytes, same mtime), that the interrupted run resumed from
# its checkpoint, that no run outlived the runner, and that the grid then completes.
set -euo pipefail
stiefel=$1 work=$2 definition=$3
rm -rf "$work"; mkdir -p "$work"
out=$work/results
cmd=("$stiefel" experiment "$definition" --profile paper --jobs 1 --out "$out")

completed_runs() {
  for f in "$out"/runs/*/*/*/run.json; do
    [ -f "$f" ] && grep -q '"status": "completed"' "$f" && echo "$f"
  done
  return 0
}
partial_run() {
  for d in "$out"/runs/*/*/*/; do
    [ -f "$d/checkpoint.pt" ] && ! grep -q '"status": "completed"' "$d/run.json" 2>/dev/null && echo "${d%/}" && break
  done
  return 0
}

"${cmd[@]}" > "$work/first.log" 2>&1 &
runner=$!
trap 'kill "$runner" 2>/dev/null || true' EXIT
# Wait until one run is complete and the next has written a checkpoint.
for _ in $(seq 1 600); do
  done_runs=$(completed_runs | wc -l)
  partial=$(partial_run)
  [ "$done_runs" -ge 1 ] && [ -n "$partial" ] && break
  sleep 0.2
done
[ "$done_runs" -ge 1 ] && [ -n "$partial" ] || { echo "never reached the middle of the grid"; cat "$work/first.log"; exit 1; }
kill -9 "$runner"; wait "$runner" 2>/dev/null || true
sleep 1
if pgrep -f -- "--out $out/runs" > /dev/null; then echo "FAIL: a run outlived the killed runner"; exit 1; fi

partial=$(partial_run)  # again: the run in progress may have finished before the kill
[ -n "$partial" ] || { echo "no interrupted run after the kill"; exit 1; }
completed_before=$(completed_runs | sort)
n_before=$(echo "$completed_before" | wc -l)
for f in $completed_before; do stat -c '%n %Y.%y %s' "$f"; sha256sum "$f"; done > "$work/before.txt"
echo "killed with $n_before completed; interrupted run: $partial"
# --status names the interrupted run failed (nobody holds its lock), the rest completed or missing.
"$stiefel" experiment "$definition" --profile paper --out "$out" --status > "$work/status.txt"
cat "$work/status.txt"
grep -q "^kill-resume \[paper\]: 4 runs: $n_before completed, 0 diverged, 0 running, 0 queued, 1 failed, 0 repair, 0 mismatched, $((3 - n_before)) missing" "$work/status.txt" \
  || { echo "FAIL: --status after the kill"; exit 1; }
grep -q "^${partial#$out/runs/} *failed .*log $partial/log.txt" "$work/status.txt" || { echo "FAIL: --status does not name the interrupted run"; exit 1; }

"${cmd[@]}" > "$work/second.log" 2>&1
cat "$work/second.log"
grep -q "; $n_before already finished (skipped)" "$work/second.log" || { echo "FAIL: completed runs not skipped"; exit 1; }
for f in $completed_before; do stat -c '%n %Y.%y %s' "$f"; sha256sum "$f"; done > "$work/after.txt"
diff "$work/before.txt" "$work/after.txt" || { echo "FAIL: a completed run was rewritten"; exit 1; }
python3 - "$partial/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "completed", r["status"]
assert r.get("resumed_at_epochs") and r["resumed_at_epochs"][0] > 0, "the interrupted run did not resume from its checkpoint"
epochs = [e["epoch"] for e in r["epochs"]]
assert epochs == sorted(set(epochs)), f"records repeated after the resume: {epochs}"
print("resumed at epoch", r["resumed_at_epochs"][0], "records", epochs)
PY
total=$(ls "$out"/runs/*/*/*/run.json | wc -l)
[ "$(completed_runs | wc -l)" -eq 4 ] && [ "$total" -eq 4 ] || { echo "FAIL: grid incomplete"; exit 1; }

# A third run finds everything done and starts nothing.
"${cmd[@]}" > "$work/third.log" 2>&1
grep -q "; 4 already finished (skipped), 0 to run" "$work/third.log" || { echo "FAIL: third run"; cat "$work/third.log"; exit 1; }
"$stiefel" report "$out" --out "$work/report" --no-plots
test -s "$work/report/kill-resume-paper.md"
echo "kill and rerun: nothing lost, nothing redone"
