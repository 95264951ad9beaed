#!/usr/bin/env bash
# Builds test_cuda and test_cuda_host for any x86-64-v3 machine (build-gpu/) and packs
# them, stripped, with the shared libraries they load that a GPU machine may lack
# (OpenBLAS, Sleef, oneDNN, their runtimes) into build-gpu/bundle/cuda_tests.tar.xz.
# NVRTC is not packed: the GPU machine's CUDA 13 toolkit provides it. On that machine:
#   mkdir -p /tmp/ct && tar -C /tmp/ct -xJf cuda_tests.tar.xz
#   LD_LIBRARY_PATH=/tmp/ct/lib:/usr/local/cuda/lib64 /tmp/ct/test_cuda
# See README.md, "The GPU build".
set -euo pipefail
cd "$(dirname "$0")/.."
build=${EMBER_BUILD_DIR:-build-gpu}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DEMBER_ARCH=x86-64-v3 >/dev/null
ninja -C "$build" test_cuda test_cuda_host
stage="$build/bundle/stage"
rm -rf "$stage" && mkdir -p "$stage/lib"
for t in test_cuda test_cuda_host; do
  cp "$build/tests/$t" "$stage/" && strip "$stage/$t"
done
# Everything the programs load except the C library itself.
for lib in $(ldd "$build/tests/test_cuda" | awk '/=> \// {print $3}'); do
  case "$(basename "$lib")" in libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*) continue ;; esac
  cp -L "$lib" "$stage/lib/"
done
tar -C "$stage" -cJf "$build/bundle/cuda_tests.tar.xz" .
ls -l "$build/bundle/cuda_tests.tar.xz"
