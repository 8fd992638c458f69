# Sourced by the ci/gpu-*.sh scripts, on a CUDA machine whose python3 holds a CUDA build of PyTorch.
#
#   gpu_prepare [DEPS_DIR]   unpacks DEPS_DIR/deps.tar.xz (made by ci/gpu-deps.sh) where the machine
#                            lacks Debian's header packages, and finds the LibTorch PyTorch bundles
#   gpu_build DIR CERTIFICATES JOBS
#                            configures DIR (Release, no tests; the certificate suite ON or OFF) and
#                            builds `stiefel`; on failure prints the first errors, leaves DIR.log.gz in
#                            $gpu_logs (default: DIR's parent) and returns 1
gpu_prepare() {
  export PATH="/usr/local/cuda/bin:$PATH"
  gpu_prefixes=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') || return 1
  gpu_flags=
  if [ -n "${1:-}" ]; then
    mkdir -p /tmp/stiefel-deps && tar -xJf "$1/deps.tar.xz" -C /tmp/stiefel-deps || return 1
    gpu_prefixes="$gpu_prefixes;/tmp/stiefel-deps/usr"
    gpu_flags="-isystem /tmp/stiefel-deps/usr/include/x86_64-linux-gnu"  # GMP's header (multiarch folder)
    gpu_zlib=(-DZLIB_ROOT=/tmp/stiefel-deps/usr)
  else
    gpu_zlib=()
  fi
  # GCC 13's standard headers no longer include <cstdint> transitively.
  gpu_flags="-include cstdint $gpu_flags"
}

gpu_build() {
  local dir=$1 certificates=$2 jobs=$3 start
  start=$(date +%s)
  mkdir -p "$(dirname "$dir")"
  if cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$gpu_prefixes" \
       -DCMAKE_CXX_FLAGS="$gpu_flags" "${gpu_zlib[@]}" -DSTIEFEL_WITH_TORCH=ON -DSTIEFEL_BUILD_TESTS=OFF \
       -DSTIEFEL_WITH_CERTIFICATES="$certificates" > "$dir.configure.log" 2>&1 &&
     cmake --build "$dir" -j "$jobs" --target stiefel -- -k 0 > "$dir.log" 2>&1; then
    echo "build $dir (certificates $certificates): $(( $(date +%s) - start )) s"
    return 0
  fi
  echo "build $dir (certificates $certificates): failed after $(( $(date +%s) - start )) s"
  tail -30 "$dir.configure.log"
  grep -B2 -A12 -m8 "error" "$dir.log"
  gzip -c "$dir.log" > "${gpu_logs:-$(dirname "$dir")}/$(basename "$dir").log.gz"
  return 1
}
