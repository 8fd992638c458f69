#!/usr/bin/env bash
# Every run record names the program that made it and the CPU: environment.program (version, the
# sources' commit and state, the executable's SHA-256, which is that of the binary that trained) and
# environment.cpu_model; a run resumed by another program keeps the one before in
# environment.earlier_programs, with the first epoch it did not compute. SOURCE: the checkout, whose
# commit a build from it names.
set -euo pipefail
stiefel=$1 source=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
args=(train --task grok --modulus 47 --arm b2 --seed 5 --epochs 30 --eval-every 2 --quiet)
"$stiefel" "${args[@]}" --out "$work/killed" &
pid=$!
for _ in $(seq 600); do
  if [ -f "$work/killed/run.json" ] && python3 -c "import json,sys; sys.exit(0 if len(json.load(open('$work/killed/run.json'))['epochs']) >= 3 else 1)" 2>/dev/null; then
    break
  fi
  sleep 0.1
done
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
commit=$(git -C "$source" rev-parse HEAD 2>/dev/null || echo none)
binaries=$(sha256sum "$(dirname "$(realpath "$stiefel")")"/stiefel* 2>/dev/null | cut -d' ' -f1 | tr '\n' ' ')
# The killed run's record as another program would have left it: its binary's digest changed.
python3 - "$work/killed/run.json" "$commit" "$binaries" <<'PY'
import json, sys
path, commit, binaries = sys.argv[1], sys.argv[2], sys.argv[3].split()
r = json.load(open(path))
assert r["status"] == "running", r["status"]
env = r["environment"]
p = env["program"]
assert set(p) >= {"version", "commit", "tree", "binary_sha256"}, p
assert p["tree"] in ("clean", "modified", "unknown"), p
assert p["commit"] == (None if commit == "none" else commit), (p["commit"], commit)
assert (p["tree"] == "modified") == ("source_diff_sha256" in p), p
assert p["binary_sha256"] in binaries, (p["binary_sha256"], binaries)
assert env["cpu_model"], env
assert "earlier_programs" not in env
p["binary_sha256"] = "0" * 64
json.dump(r, open(path, "w"))
PY
"$stiefel" "${args[@]}" --out "$work/killed" --resume
python3 - "$work/killed/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "completed", r["status"]
[earlier] = r["environment"]["earlier_programs"]
assert earlier["program"]["binary_sha256"] == "0" * 64, earlier
assert earlier["until_epoch"] >= 2, earlier
assert r["environment"]["program"]["binary_sha256"] != "0" * 64
print(f"provenance: recorded ({r['environment']['program']['tree']} tree, commit "
      f"{(r['environment']['program']['commit'] or 'none')[:12]}), the program before a resume kept until epoch "
      f"{earlier['until_epoch']}")
PY
