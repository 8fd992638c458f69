#!/usr/bin/env bash
# `stiefel experiment --slurm` against a real single-node Slurm (local_slurm.sh): submits a grid as
# an array job (one task per run, at most one at a time) and a report job after it; cancels the
# array task of the second run mid-run (scancel) and checks that --status names it failed with its
# logs; resubmits and checks that only that run is submitted again, that it resumes from its
# checkpoint, that no finished run is redone (same bytes, same mtime), and that the report job ran.
# Then the same grid runs locally and the run records must match the Slurm ones in every metric.
# A daemon that cannot start fails the test with its log; nothing is skipped.
set -euo pipefail
stiefel=$(readlink -f "$1") harness=$(readlink -f "$2") work=$3 definition=$(readlink -f "$4")
rm -rf "$work" && mkdir -p "$work"
work=$(cd "$work" && pwd)
cluster=$work/cluster out=$work/slurm-results local=$work/local-results
trap '"$harness" stop "$cluster"' EXIT
"$harness" start "$cluster"
export SLURM_CONF=$cluster/slurm.conf
exp=("$stiefel" experiment "$definition" --profile paper)

wait_for_job() {  # JOBID SECONDS: until no task of the job is pending or running
  for _ in $(seq 1 $(($2 * 5))); do
    [ -z "$(squeue -h -j "$1" 2> /dev/null)" ] && return 0
    sleep 0.2
  done
  echo "FAIL: job $1 still queued after $2 s"; squeue; exit 1
}
job_state() { scontrol show job "$1" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1; }
record_state() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$1" 2> /dev/null || true; }

# --dry-run prints both scripts and both sbatch commands and submits nothing.
"${exp[@]}" --out "$out" --slurm --max-parallel 1 --dry-run > "$work/dry-run.txt"
grep -q -- '--array=0-3%1' "$work/dry-run.txt" || { echo "FAIL: dry run"; cat "$work/dry-run.txt"; exit 1; }
grep -q -- '--dependency=afterany:ARRAY_JOB_ID' "$work/dry-run.txt" || { echo "FAIL: dry run: no report job"; exit 1; }
[ ! -e "$out/slurm" ] && [ -z "$(squeue -h)" ] || { echo "FAIL: --dry-run submitted or wrote something"; exit 1; }
# With --batch-seeds 2 an array task takes a whole seed group: two tasks, each passing the batching on.
"${exp[@]}" --out "$out" --slurm --batch-seeds 2 --dry-run > "$work/dry-run-batched.txt"
grep -q -- '--array=0-1$' "$work/dry-run-batched.txt" && grep -q -- '--batch-seeds 2 --shard' "$work/dry-run-batched.txt" ||
  { echo "FAIL: batched dry run"; cat "$work/dry-run-batched.txt"; exit 1; }
[ ! -e "$out/slurm" ] || { echo "FAIL: the batched --dry-run wrote something"; exit 1; }

submit() {  # LOG ARGS...: submits, prints "ARRAY REPORT"; on failure shows the log and fails
  local log=$1; shift
  "${exp[@]}" --out "$out" --slurm "$@" > "$work/ids" 2> "$log" || { echo "FAIL: submission"; cat "$log"; exit 1; }
  cat "$work/ids"
}

# First submission.
read -r array report < <(submit "$work/submit1.log" --max-parallel 1)
[ -n "$report" ] || { echo "FAIL: no job ids"; cat "$work/submit1.log"; exit 1; }
echo "submitted array job $array, report job $report"
test -s "$out/slurm/array-1.sbatch" && test -s "$out/slurm/report-1.sbatch"
ls "$out"/slurm/bin/stiefel-* > /dev/null

# While the array is queued, --status says so and a second submission submits nothing.
"${exp[@]}" --out "$out" --status > "$work/status0.txt"
grep -Eq "^slurm-grid \[paper\]: 4 runs: 0 completed, 0 diverged, [01] running, [34] queued" "$work/status0.txt" \
  || { echo "FAIL: --status while queued"; cat "$work/status0.txt"; exit 1; }
"${exp[@]}" --out "$out" --slurm --max-parallel 1 > /dev/null 2> "$work/submit-early.log"
grep -q "nothing to submit now" "$work/submit-early.log" || { echo "FAIL: a submission while queued"; cat "$work/submit-early.log"; exit 1; }
[ "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$out/slurm/submissions.json")" = 1 ] \
  || { echo "FAIL: a submission while queued submitted something"; exit 1; }

# Cancel the second run's task once the first run finished and the second wrote a checkpoint.
# The grid's order (array task k runs run k): seed-major, then arm.
runs=("$out"/runs/main/a2/seed-0 "$out"/runs/main/b2/seed-0 "$out"/runs/main/a2/seed-1 "$out"/runs/main/b2/seed-1)
victim=${runs[1]}
for _ in $(seq 1 1500); do
  [ "$(record_state "${runs[0]}/run.json")" = completed ] && [ -f "$victim/checkpoint.pt" ] && break
  sleep 0.1
done
[ -f "$victim/checkpoint.pt" ] || { echo "FAIL: the second run never wrote a checkpoint"; exit 1; }
scancel "${array}_1"
[ "$(record_state "$victim/run.json")" != completed ] || { echo "FAIL: the second run finished before the cancel (the test grid is too short for this machine)"; exit 1; }
echo "cancelled task ${array}_1 at epoch $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["epochs"][-1]["epoch"])' "$victim/run.json")"
wait_for_job "$array" 900
wait_for_job "$report" 300
echo "after the first submission: array $(job_state "$array"), report $(job_state "$report")"
# The report job ran after the array although one task was cancelled (afterany), on what was there.
grep -q "(3/4 runs)" "$out/slurm/logs/report-$report.out" || { echo "FAIL: the first report job"; cat "$out/slurm/logs/report-$report.out"; exit 1; }

"${exp[@]}" --out "$out" --status | tee "$work/status1.txt"
grep -q "^slurm-grid \[paper\]: 4 runs: 3 completed, 0 diverged, 0 running, 0 queued, 1 failed" "$work/status1.txt" \
  || { echo "FAIL: --status after the cancel"; exit 1; }
grep -q "^main/b2/seed-0 *failed .*log $victim/log.txt, Slurm $out/slurm/logs/${array}_1.out" "$work/status1.txt" \
  || { echo "FAIL: --status does not name the failed run's logs"; exit 1; }

for r in "${runs[0]}" "${runs[2]}" "${runs[3]}"; do stat -c '%n %Y %s' "$r/run.json"; sha256sum "$r/run.json"; done > "$work/before.txt"

# Resubmission in two tasks of two runs (task i: shard i+1/2): only task 1 (runs 1 and 3) has an
# unfinished run; inside it the finished run 3 is skipped and run 1 resumes.
read -r array2 report2 < <(submit "$work/submit2.log" --max-parallel 1 --array-tasks 2)
cat "$work/submit2.log"
grep -q "(1 of 2 tasks: 1%1)" "$work/submit2.log" || { echo "FAIL: resubmission did not submit only task 1"; exit 1; }
wait_for_job "$array2" 900
wait_for_job "$report2" 300
[ "$(job_state "$array2")" = COMPLETED ] && [ "$(job_state "$report2")" = COMPLETED ] \
  || { echo "FAIL: resubmitted jobs: $(job_state "$array2"), $(job_state "$report2")"; cat "$out"/slurm/logs/*; exit 1; }
for r in "${runs[0]}" "${runs[2]}" "${runs[3]}"; do stat -c '%n %Y %s' "$r/run.json"; sha256sum "$r/run.json"; done > "$work/after.txt"
diff "$work/before.txt" "$work/after.txt" || { echo "FAIL: a finished run was redone"; exit 1; }
"${exp[@]}" --out "$out" --status | tee "$work/status2.txt"
grep -q ": 4 runs: 4 completed" "$work/status2.txt" || { echo "FAIL: grid incomplete after resubmission"; exit 1; }
grep -q "1 already finished (skipped), 1 to run" "$out/slurm/logs/${array2}_1.out" \
  || { echo "FAIL: the resubmitted task did not skip its finished run"; cat "$out/slurm/logs/${array2}_1.out"; exit 1; }
grep -q "(4/4 runs)" "$out/slurm/logs/report-$report2.out" \
  || { echo "FAIL: the second report job"; cat "$out/slurm/logs/report-$report2.out"; exit 1; }
python3 - "$out/slurm/submissions.json" "$array" "$report" "$array2" "$report2" <<'PY'
import json, sys
subs = json.load(open(sys.argv[1]))
ids = [(s["array_job"], s.get("report_job")) for s in subs]
assert ids == [(sys.argv[2], sys.argv[3]), (sys.argv[4], sys.argv[5])], ids
PY

# A third submission has nothing to do.
"${exp[@]}" --out "$out" --slurm 2> "$work/submit3.log"
grep -q "all 4 runs finished; nothing to submit" "$work/submit3.log" || { echo "FAIL: third submission"; exit 1; }

# The same grid run locally gives the same records.
"${exp[@]}" --out "$local" --jobs 2 2> "$work/local.log"
python3 - "$out" "$local" "$victim" <<'PY'
import json, sys, glob, os
slurm, local, victim = sys.argv[1:]
# Wall-clock timings and the checkpoints' SHA-256 (LibTorch archives are not byte-deterministic)
# are not results; resumed_at_epochs records the resume itself.
SKIP = {"seconds", "stage_seconds", "checkpoints", "resumed_at_epochs"}
def strip(x):
    if isinstance(x, dict): return {k: strip(v) for k, v in x.items() if k not in SKIP}
    if isinstance(x, list): return [strip(v) for v in x]
    return x
def norm(x, root):  # the records name their own folder
    return json.loads(json.dumps(x).replace(root, "OUT"))
resumed = json.load(open(os.path.join(victim, "run.json")))
assert resumed.get("resumed_at_epochs", [0])[0] > 0, "the cancelled run did not resume from its checkpoint"
files = sorted(os.path.relpath(f, slurm) for f in glob.glob(f"{slurm}/runs/*/*/*/run.json"))
assert len(files) == 4, files
for f in files:
    a = norm(strip(json.load(open(os.path.join(slurm, f)))), slurm)
    b = norm(strip(json.load(open(os.path.join(local, f)))), local)
    assert a == b, f"{f}: the Slurm record differs from the local one"
print(f"4 run records identical between Slurm and local ({sum(len(json.load(open(os.path.join(slurm, f)))['epochs']) for f in files)} recorded epochs); "
      f"the cancelled run resumed at epoch {resumed['resumed_at_epochs'][0]}")
PY
echo "Slurm grid: submitted, cancelled, resubmitted, reported; identical to the local run"
