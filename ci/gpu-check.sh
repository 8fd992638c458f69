#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and a CUDA build of PyTorch: builds stiefel against the LibTorch
# bundled with PyTorch, runs the update claims through the trainer on CUDA (the `-trainer-cuda` and
# `-trainer-cuda-f32` implementations, default and paper-size groups), a CUDA smoke run of each task
# and the image-model speed benchmark on the GPU. Needs the header packages of ci/setup (Eigen,
# Boost, nlohmann-json, CLI11, zlib); the certificate suite also needs MPFR, GMP and RapidCheck:
# where they are missing it is left out, and the script says so. Target: under 5 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
python3 -c 'import torch; assert torch.cuda.is_available(), "no CUDA device"; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
start=$(date +%s)
certificates=ON
if ! cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
       -DSTIEFEL_WITH_TORCH=ON -DSTIEFEL_BUILD_TESTS=OFF -DSTIEFEL_WITH_CERTIFICATES=ON > build/gpu-configure.log 2>&1; then
  certificates=OFF
  echo "gpu-check: the certificate suite does not configure here (build/gpu-configure.log); building without it"
  rm -rf build/gpu
  cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DSTIEFEL_WITH_TORCH=ON -DSTIEFEL_BUILD_TESTS=OFF -DSTIEFEL_WITH_CERTIFICATES=OFF
fi
cmake --build build/gpu -j "$(nproc)" --target stiefel
echo "build: $(( $(date +%s) - start )) s"
out=$(mktemp -d)
if [ "$certificates" = ON ]; then
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
else
  echo "gpu-check: the update claims on CUDA were not run: this machine lacks the certificate suite's packages"
fi
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
