#!/usr/bin/env bash
# A grid pins the OpenBLAS kernels its runs compute with (experiment.json "blas_kernel": the first
# invocation's, from its OPENBLAS_CORETYPE or OpenBLAS's choice) and sets them for every child, so a
# run started later, from an environment that names none, computes with them too; an
# OPENBLAS_CORETYPE that names others is refused, naming both, unless --allow-kernel-change (then
# pinned anew, the old kernels kept in "earlier_blas_kernels").
set -euo pipefail
stiefel=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
grid=(experiment grok-riemann-lr --profile smoke --jobs 1 --out "$work/grid")
kernels() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['compute']['blas']['kernels'])" "$1"; }
OPENBLAS_CORETYPE=Haswell "$stiefel" "${grid[@]}" --arms lr-1 > "$work/1.log" 2>&1
[ "$(python3 -c "import json; print(json.load(open('$work/grid/experiment.json'))['blas_kernel'])")" = Haswell ]
[ "$(kernels "$work/grid/runs/main/lr-1/seed-0/run.json")" = Haswell ]
rc=0
OPENBLAS_CORETYPE=Prescott "$stiefel" "${grid[@]}" --arms lr-0.3 > "$work/2.log" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "computed with OpenBLAS's Haswell kernels, and OPENBLAS_CORETYPE=Prescott would give other bits" "$work/2.log" ||
  { cat "$work/2.log"; echo "FAIL: another kernel was not refused (exit $rc)"; exit 1; }
[ ! -e "$work/grid/runs/main/lr-0.3/seed-0/run.json" ] || { echo "FAIL: a refused invocation trained"; exit 1; }
env -u OPENBLAS_CORETYPE "$stiefel" "${grid[@]}" --arms lr-0.3 > "$work/3.log" 2>&1
[ "$(kernels "$work/grid/runs/main/lr-0.3/seed-0/run.json")" = Haswell ] ||
  { echo "FAIL: a run started without OPENBLAS_CORETYPE did not compute with the grid's kernels"; exit 1; }
OPENBLAS_CORETYPE=Prescott "$stiefel" "${grid[@]}" --arms lr-0.1 --allow-kernel-change > "$work/4.log" 2>&1
[ "$(kernels "$work/grid/runs/main/lr-0.1/seed-0/run.json")" = Prescott ]
python3 - "$work/grid/experiment.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
assert m["blas_kernel"] == "Prescott" and m["earlier_blas_kernels"] == ["Haswell"], m
PY
echo "kernels: pinned with the grid (Haswell), set for every child, another refused, a change only when asked (recorded)"
