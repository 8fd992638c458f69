#!/usr/bin/env bash
# docs/certify-your-optimizer.md as a reader runs it: each ```python file=NAME block is written to
# NAME, each ```sh block runs in order (bash -e) in one empty folder with `stiefel` on the PATH, and
# must exit 0, or the code its fence names (```sh exit=1).
set -uo pipefail
stiefel=$1 doc=$2 work=$3
rm -rf "$work" && mkdir -p "$work/bin"
fail() { echo "FAIL: $1"; exit 1; }
ln -s "$(realpath "$stiefel")" "$work/bin/stiefel"
ln -s "$(dirname "$(realpath "$stiefel")")/stiefel-torch" "$work/bin/stiefel-torch" 2> /dev/null || true
python3 - "$doc" "$work" << 'PY' || fail "cannot split $doc into its blocks"
import os, re, sys
doc, work = sys.argv[1], sys.argv[2]
blocks = re.findall(r"^```(\w+)([^\n]*)\n(.*?)^```", open(doc).read(), re.S | re.M)
n = 0
for lang, info, body in blocks:
    attrs = dict(a.split("=", 1) for a in info.split() if "=" in a)
    if lang == "python" and "file" in attrs:
        open(os.path.join(work, attrs["file"]), "w").write(body)
    elif lang == "sh":
        n += 1
        open(os.path.join(work, f"step-{n:02d}.sh"), "w").write(body)
        open(os.path.join(work, f"step-{n:02d}.exit"), "w").write(attrs.get("exit", "0"))
if n == 0:
    sys.exit("no sh blocks")
PY
python_dir=$(realpath "$(dirname "$(realpath "$doc")")/../python")  # the repository's python/ (section 6)
cd "$work" || fail "no $work"
for step in step-*.sh; do
  want=$(cat "${step%.sh}.exit")
  PATH="$work/bin:$PATH" PYTHONPATH="$python_dir" bash -e "$step" > "${step%.sh}.log" 2>&1
  rc=$?
  [ "$rc" -eq "$want" ] || { cat "${step%.sh}.log"; fail "$step: exit $rc, the tutorial says $want"; }
done
grep -q "^FAILED rule-projection-qr-adam: refuted" step-02.log || { cat step-02.log; fail "the tutorial's bug is not refuted by name"; }
echo "tutorial: every step ran as the text says ($(ls step-*.sh | wc -l) steps)"
