#!/usr/bin/env bash
# The paper profiles of Table 6 and of the five-seed grokking study on one CUDA machine, in one
# command of at most 10 minutes. Needs python3 with a CUDA build of PyTorch (its LibTorch is built
# against), CMake, Ninja and a C++20 compiler; the header-only Debian packages the build needs
# (Eigen, Boost, nlohmann-json, CLI11, zlib headers) and djpeg for the CIFAR-10 (JPEG copy) are read
# from DEPS (.deb files, unpacked with dpkg -x) when the machine lacks them.
#
#   ci/gpu-experiments.sh DEPS_DIR CIFAR_DIR RESULTS_DIR [SECONDS]
#
# DEPS_DIR holds the .deb files and the CIFAR-10 (JPEG copy) archive with its prepare.sh; SECONDS
# (default 540) is the wall-clock budget from start to packed results. Runs that finish inside the
# budget are complete and reportable; `stiefel experiment` resumes the rest on a later call.
set -uo pipefail
cd "$(dirname "$0")/.."
deps_dir=$(realpath "${1:?usage: gpu-experiments.sh DEPS_DIR CIFAR_DIR RESULTS_DIR [SECONDS]}")
cifar=${2:?CIFAR_DIR}
results=${3:?RESULTS_DIR}
budget=${4:-540}
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c 'import torch; assert torch.cuda.is_available(), "no CUDA device"; print("torch", torch.__version__)' || exit 1

prefix=/tmp/stiefel-deps
mkdir -p "$prefix"
for f in "$deps_dir"/*.deb; do dpkg -x "$f" "$prefix"; done
export PATH="/usr/local/cuda/bin:$PATH:$prefix/usr/bin"
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$prefix/usr/lib/x86_64-linux-gnu"

# CIFAR-10 (JPEG copy), decoded while the build runs.
(bash "$deps_dir/prepare.sh" "$cifar" > /tmp/prepare.log 2>&1; echo "prepare rc=$?" >> /tmp/prepare.log) &
prep=$!

zlib_args=()
if [ ! -f /usr/include/zlib.h ]; then
  zlib_so=$(ls /usr/lib/x86_64-linux-gnu/libz.so.1* /lib/x86_64-linux-gnu/libz.so.1* 2>/dev/null | head -1)
  zlib_args=(-DZLIB_INCLUDE_DIR="$prefix/usr/include" -DZLIB_LIBRARY="$zlib_so")
fi
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_prefix;$prefix/usr" \
  -DSTIEFEL_WITH_TORCH=ON -DSTIEFEL_BUILD_TESTS=OFF -DSTIEFEL_WITH_CERTIFICATES=OFF "${zlib_args[@]}" \
  > /tmp/configure.log 2>&1 || { tail -40 /tmp/configure.log; exit 1; }
cmake --build build/gpu -j "$(nproc)" --target stiefel > /tmp/build.log 2>&1 || { grep -B2 -A12 -m3 "error" /tmp/build.log; exit 1; }
echo "build: $(elapsed) s"
wait "$prep"
tail -2 /tmp/prepare.log
echo "data ready: $(elapsed) s"

# Many small-kernel processes share the GPU better through MPS; fall back to plain sharing.
if command -v nvidia-cuda-mps-control >/dev/null && nvidia-cuda-mps-control -d 2>/dev/null; then
  if python3 -c 'import torch; torch.zeros(1).cuda(); torch.cuda.synchronize()' 2>/dev/null; then
    echo "MPS on"
  else
    echo quit | nvidia-cuda-mps-control; echo "MPS off (clients could not connect)"
  fi
fi

left=$(( budget - $(elapsed) - 25 ))
echo "running for at most $left s"
timeout -s TERM "$left" build/gpu/stiefel experiment grok-5seed --profile paper --device cuda --jobs 10 \
  --out "$results/grok-5seed-paper" > /tmp/grok.log 2>&1 &
grok=$!
timeout -s TERM "$left" build/gpu/stiefel experiment table6 --profile paper --device cuda --jobs 5 \
  --data "cifar10:$cifar" --out "$results/table6-paper" > /tmp/table6.log 2>&1 &
table6=$!
wait "$table6"; echo "table6 rc=$? at $(elapsed) s"; tail -3 /tmp/table6.log
wait "$grok"; echo "grok rc=$? at $(elapsed) s"; tail -3 /tmp/grok.log
nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
echo "total: $(elapsed) s"
