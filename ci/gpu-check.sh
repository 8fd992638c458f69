#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and a CUDA build of PyTorch: builds stiefel against the LibTorch
# bundled with PyTorch, runs the update claims through the trainer on CUDA (the `-trainer-cuda` and
# `-trainer-cuda-f32` implementations, default and paper-size groups), a CUDA smoke run of each task
# and the image-model speed benchmark on the GPU. Target: under 5 minutes.
#
#   ci/gpu-check.sh [DEPS_DIR]
#
# DEPS_DIR: the archive of ci/gpu-deps.sh, for a machine without Debian's header packages (Eigen,
# Boost, nlohmann-json, CLI11, RapidCheck, MPFR, GMP, zlib); ci/gpu-build.sh builds.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c 'import torch; assert torch.cuda.is_available(), "no CUDA device"; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
start=$(date +%s)
. ci/gpu-build.sh
gpu_prepare "${1:-}"
gpu_build build/gpu ON "$(nproc)"
out=$(mktemp -d)
# The update claims through the trainer on CUDA (float64 and float32 parameters), both groups.
build/gpu/stiefel certify --group all --claims '-trainer-cuda(-f32)?$' --out "$out/certificate-cuda.json"
python3 - "$out/certificate-cuda.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
ids = [k["id"] for k in c["claims"]]
assert any(i.endswith("-trainer-cuda") for i in ids) and any(i.endswith("-trainer-cuda-f32") for i in ids), ids
assert not c["run"]["implementations_not_run"] or all("cuda" not in n["name"] for n in c["run"]["implementations_not_run"])
print(f"CUDA update claims: {len(ids)} claims, {c['summary']['controls_killed']} of {c['summary']['controls']} controls killed")
PY
# Image data for the speed benchmark: Fashion-MNIST when Debian's package is there, otherwise
# random bytes in the CIFAR-10 layout (speed does not depend on the pixels; accuracies are void).
if [ -d /usr/share/datasets/fashion-mnist ]; then
  data=fashion-mnist
else
  python3 - "$out/random-cifar" <<'PY'
import os, sys
os.makedirs(sys.argv[1], exist_ok=True)
for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        for _ in range(10000):
            f.write(bytes([os.urandom(1)[0] % 10])); f.write(os.urandom(3072))
PY
  data=cifar10:$out/random-cifar
fi
build/gpu/stiefel train --task grok --arm b2 --device cuda --epochs 50 --eval-every 10 --out "$out/grok"
build/gpu/stiefel train --task image --arm b2 --device cuda --data "$data" --n 10000 --epochs 2 --out "$out/image"
for arm in a2 b2; do
  build/gpu/stiefel train --task image --arm "$arm" --device cuda --data "$data" --n 50000 --epochs 3 --quiet \
    --out "$out/speed-$arm"
done
python3 - "$out" <<'PY'
import json, sys
for arm in ("a2", "b2"):
    r = json.load(open(f"{sys.argv[1]}/speed-{arm}/run.json"))
    s = [e["seconds"] for e in r["epochs"][1:]]
    print(f"{arm}: {sum(s)/len(s):.2f} s/epoch, {50000 / (sum(s)/len(s)):.0f} examples/s on CUDA")
PY
echo "total: $(( $(date +%s) - start )) s"
