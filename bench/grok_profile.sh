#!/usr/bin/env bash
# Where the grokking epoch's time goes, for A2 and B2 (one run at a time, one thread): per ATen
# operator (bench/grok_profile.cpp), then the GEMMs' GFLOP/s and the epoch's against the sgemm
# roofline, under two BLAS kernel sets: the environment's (OPENBLAS_CORETYPE as set here) and
# OpenBLAS's own choice for this CPU (OPENBLAS_CORETYPE unset). The profiled epoch includes the
# run's set-up and one evaluation spread over EPOCHS, so take EPOCHS ≥ 30.
# Usage: bench/grok_profile.sh [BUILD_DIR] [EPOCHS]
set -euo pipefail
build=${1:-build/default} epochs=${2:-40}
profile="$build/bench/stiefel_grok_profile" roofline="$build/bench/stiefel_gemm_roofline"
for exe in "$profile" "$roofline"; do
  [ -x "$exe" ] || { echo "grok_profile.sh: $exe is missing (build first)" >&2; exit 2; }
done
[[ "$epochs" =~ ^[0-9]+$ ]] && [ "$epochs" -ge 1 ] || { echo "grok_profile.sh: EPOCHS must be a whole number ≥ 1" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Without OPENBLAS_CORETYPE the environment's kernels are OpenBLAS's own choice: one set.
kernel_sets=("own:unset")
[ -n "${OPENBLAS_CORETYPE:-}" ] && kernel_sets=("environment:$OPENBLAS_CORETYPE" "own:unset")
for set in "${kernel_sets[@]}"; do
  name=${set%%:*} core=${set#*:}
  run() { if [ "$core" = unset ]; then env -u OPENBLAS_CORETYPE "$@"; else OPENBLAS_CORETYPE=$core "$@"; fi; }
  run "$roofline" > "$work/$name-roofline.txt"
  for arm in a2 b2; do run "$profile" "$arm" "$epochs" > "$work/$name-$arm.txt"; done
done

python3 - "$work" "${kernel_sets[@]}" <<'PY'
import os, sys
work, sets = sys.argv[1], sys.argv[2:]
for s in sets:
    name, core = s.split(":", 1)
    fields = {l.split()[0]: l.split()[1] for l in open(os.path.join(work, f"{name}-roofline.txt")) if l.split()}
    roof, flops = float(fields["roofline"]), float(fields["grok_flops_per_epoch"])
    print(f"== kernels: {name} (OPENBLAS_CORETYPE {core}); sgemm roofline {roof:.1f} GFLOP/s, "
          f"{flops / 1e9:.2f} GFLOP of GEMMs per epoch")
    for arm in ("a2", "b2"):
        lines = open(os.path.join(work, f"{name}-{arm}.txt")).read().splitlines()
        epoch = float(lines[0].split(": ")[1].split()[0])
        gemm = float(lines[1].split()[1]) / 1e3
        # The GEMM rate is approximate: the FLOPs are the model's (its attention products, 0.4 %, run in
        # the small-attention kernel), the GEMM time also holds the evaluation's and B2's frame products.
        print(f"{arm.upper()}: {epoch:.3f} s/epoch, {flops / epoch / 1e9:.1f} GFLOP/s = "
              f"{100 * flops / epoch / 1e9 / roof:.0f} % of the roofline; GEMMs {gemm:.3f} s/epoch at "
              f"≈ {flops / gemm / 1e9:.1f} GFLOP/s = {100 * flops / gemm / 1e9 / roof:.0f} % of the roofline; "
              f"everything else {epoch - gemm:.3f} s")
        for l in lines[2:14]:
            print("   ", l)
PY
