#!/usr/bin/env bash
# Packs the build dependencies that a machine without Debian's packages lacks (a CUDA machine whose
# image has PyTorch, CMake and a compiler but no Eigen, Boost, nlohmann-json, CLI11, RapidCheck,
# MPFR, GMP or zlib headers) into one archive, from the files ci/setup installed here:
#
#   ci/gpu-deps.sh OUT_DIR      ->  OUT_DIR/deps.tar.xz (about 5 MB), paths under usr/
#
# ci/gpu-experiments.sh unpacks it and builds against it. Boost is cut to the libraries the build
# includes (measured with `ninja -t deps` over the default preset's build, every unit); the static
# libraries are taken rather than the shared ones, so nothing of this machine is needed at run time.
set -euo pipefail
out=${1:?usage: gpu-deps.sh OUT_DIR}
mkdir -p "$out"
list=$(mktemp)
trap 'rm -f "$list"' EXIT
for pkg in libeigen3-dev nlohmann-json3-dev libcli11-dev librapidcheck-dev libmpfr-dev libgmp-dev zlib1g-dev; do
  dpkg -L "$pkg" > /dev/null || { echo "gpu-deps: $pkg is not installed (run ci/setup)" >&2; exit 1; }
  dpkg -L "$pkg" | while read -r f; do
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    case "$f" in /usr/share/doc/* | /usr/share/man/* | *.so | *.so.*) continue ;; esac
    echo "${f#/}"
  done >> "$list"
done
boost_libs="assert concept config container container_hash core detail exception functional integer iterator
  lexical_cast math move mp11 mpl multiprecision numeric predef preprocessor range smart_ptr type_traits utility"
for lib in $boost_libs; do find /usr/include/boost/"$lib" -type f | sed 's|^/||'; done >> "$list"
find /usr/include/boost -maxdepth 1 -type f -name '*.hpp' | sed 's|^/||' >> "$list"
find /usr/lib/x86_64-linux-gnu/cmake -maxdepth 1 -type d \( -name 'Boost-*' -o -name 'boost_headers-*' -o -name 'BoostDetectToolset-*' \) |
  while read -r d; do find "$d" -type f | sed 's|^/||'; done >> "$list"
find /usr/lib/x86_64-linux-gnu/cmake -maxdepth 1 -type f -name 'BoostDetectToolset-*.cmake' | sed 's|^/||' >> "$list"
tar -C / -cJf "$out/deps.tar.xz.tmp" -T "$list"
mv "$out/deps.tar.xz.tmp" "$out/deps.tar.xz"
echo "gpu-deps: $(wc -l < "$list") files, $(du -h "$out/deps.tar.xz" | cut -f1) in $out/deps.tar.xz"
