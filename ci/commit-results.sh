#!/usr/bin/env bash
# Commits what the results folders hold now, so that nothing computed is lost when the machine that
# runs a grid goes away (a grid of runs longer than the machine is held continues elsewhere):
#   - every finished run (completed or diverged): its record and log; a checkpoint committed while it
#     ran leaves the index (results keep no final checkpoints);
#   - every unfinished run with a checkpoint: its record, log and checkpoint, committed together once
#     the record names the checkpoint's SHA-256 (a run writes its record, then renames its
#     checkpoint: a pair caught in between is read again), so that `stiefel experiment` with the same
#     arguments resumes it from that checkpoint on the next machine (--resume checks the hash);
#   - each results folder's pinned grid (experiment.json), and the reports and the ledger
#     regenerated from the records as staged, checked as CI checks them.
# Usage: ci/commit-results.sh [BUILD_DIR] [MESSAGE]
set -euo pipefail
build=${1:-build/default}
message=${2:-"results: run records (and the checkpoints of unfinished runs); reports regenerated"}
root=$(git rev-parse --show-toplevel)
cd "$root"
[ -x "$build/stiefel" ] || { echo "commit-results.sh: $build/stiefel is missing (build first)" >&2; exit 2; }
git diff --cached --quiet ||
  { echo "commit-results.sh: the index holds staged changes; commit or unstage them first" >&2; exit 2; }
snap=$(mktemp -d)
trap 'rm -rf "$snap"' EXIT
stage() {  # stage FILE [SNAPSHOT]: FILE's content as it is now (or as SNAPSHOT holds it)
  local blob
  blob=$(git hash-object -w -- "${2:-$1}")
  git update-index --add --cacheinfo "100644,$blob,$1"
}
finished=0 unfinished=0
# Each results folder's pinned grid: a report reads it.
for pin in results/*/experiment.json; do [ -f "$pin" ] && stage "$pin"; done
# Every record's status, read in one pass (a run's folder names are plain: no tab or line break).
statuses=$(python3 - results/*/runs/*/*/*/run.json <<'PY'
import json, os, sys
for path in sys.argv[1:]:
    if not os.path.isfile(path):
        continue
    try:
        status = json.load(open(path)).get("status", "")
    except (OSError, ValueError, AttributeError):
        status = "unreadable"
    print(f"{status}\t{path}")
PY
)
while IFS=$'\t' read -r -u 3 status rec; do
  [ -n "$rec" ] || continue
  dir=$(dirname "$rec")
  case "$status" in
    completed | diverged)
      stage "$rec"
      [ -f "$dir/log.txt" ] && stage "$dir/log.txt"
      if git ls-files --error-unmatch "$dir/checkpoint.pt" > /dev/null 2>&1; then git rm -q --cached -- "$dir/checkpoint.pt"; fi
      finished=$((finished + 1)) ;;
    *)
      [ -f "$dir/checkpoint.pt" ] || continue
      # One snapshot of the pair, checked and staged as read: the run may write either at any time.
      ok=0
      for _ in 1 2 3 4 5; do
        if ! { cp -- "$rec" "$snap/run.json" && cp -- "$dir/checkpoint.pt" "$snap/checkpoint.pt"; }; then
          sleep 2
          continue
        fi
        if python3 - "$snap/run.json" "$snap/checkpoint.pt" <<'PY'; then ok=1; break; fi
import hashlib, json, sys
rec = json.load(open(sys.argv[1]))
sha = hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
sys.exit(0 if sha in rec.get("checkpoints", {}).values() else 1)
PY
        sleep 2
      done
      if [ "$ok" -eq 1 ]; then
        stage "$rec" "$snap/run.json"
        stage "$dir/checkpoint.pt" "$snap/checkpoint.pt"
        [ -f "$dir/log.txt" ] && stage "$dir/log.txt"
        unfinished=$((unfinished + 1))
      else
        echo "commit-results.sh: $dir: its record does not name its checkpoint (left out)" >&2
      fi ;;
  esac
done 3<<< "$statuses"
# The reports are made from the records as staged (an unfinished run's record moves on while this
# runs, and its report lists where it stands), in an export of the index with its definitions and
# claims, and checked there as CI checks a fresh clone; only the files the report makes come back.
stiefel=$(realpath -- "$build/stiefel")
tree="$snap/tree"
git checkout-index -a --prefix="$tree/"
(cd "$tree" && "$stiefel" report results/*/ --out reports --claims experiments/claims.json --definitions experiments \
  --certificate reports/certificate.json --certificate reports/certificate-paper-size.json > /dev/null)
tests/docs/prose_numbers.sh "$tree"
tests/docs/reports_regenerate.sh "$stiefel" "$tree" "$snap/regenerated"
# The findings quote the reports and list every one of them: a new report (a grid's first record) or a
# moved figure must reach docs/findings.md before the commit, as CI would refuse it.
python3 tests/docs/findings_numbers.py "$tree" > /dev/null ||
  { echo "commit-results.sh: docs/findings.md no longer matches the regenerated reports (above); nothing committed" >&2; exit 1; }
for made in "$snap/regenerated"/*; do
  name=$(basename -- "$made")
  cp -- "$tree/reports/$name" "reports/$name"
  stage "reports/$name"
done
if git diff --cached --quiet; then
  echo "commit-results.sh: nothing new to commit"
else
  git commit -q -m "$message"
  echo "commit-results.sh: committed ($finished finished runs, $unfinished unfinished with their checkpoints)"
fi
