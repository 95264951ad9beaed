#!/usr/bin/env bash
# Builds the GPU programs for any x86-64-v3 machine (build-gpu/) and packs what a GPU
# machine without Ember's build needs into build-gpu/bundle/cuda_tests.tar.xz:
#   test_cuda, test_cuda_host       the CUDA unit tests (docs/testing.md, "CUDA tests")
#   test_cuda_conformance           every op on CUDA against PyTorch's CUDA results
#   test_cuda_compiled_conformance  the same cases inside graphs the inductor compiles for CUDA
#   bench_cuda_eager_workloads      W1–W7 eagerly on CUDA (docs/workloads.md)
#   bench_cuda_inductor_workloads   W1–W7 eager against inductor-compiled on CUDA, and L1's overhead
#   lib/                            the shared libraries they load that the machine may lack
#                                   (OpenBLAS, Sleef, oneDNN, their runtimes), stripped
#   gen/tests/ops/, gen/src/ops/    the conformance case generator and the derivative
#                                   tables it reads (which ops get gradient cases)
#   cases_cuda/                     tests/ops/cases_cuda/, when this checkout has it
#   bench/                          torch_workloads.py (and its blocks, torch_cuda_compiled.py),
#                                   run_cuda_side_by_side.sh and run_cuda_compiled_side_by_side.sh,
#                                   for the PyTorch side
# NVRTC is not packed: the GPU machine's CUDA 13 toolkit provides it. On that machine:
#   mkdir -p /tmp/ct && tar -C /tmp/ct -xJf cuda_tests.tar.xz && cd /tmp/ct
#   export LD_LIBRARY_PATH=/tmp/ct/lib:/usr/local/cuda/lib64
#   ./test_cuda
#   python3 gen/tests/ops/gen_cases.py --device cuda --out cases_cuda   # PyTorch's CUDA cases
#   EMBER_CUDA_CASES_DIR=cases_cuda ./test_cuda_conformance
#   EMBER_CUDA_CASES_DIR=cases_cuda ./test_cuda_compiled_conformance
#   ./bench_cuda_inductor_workloads
#   compute-sanitizer --tool memcheck ./test_cuda_conformance           # (EMBER_CUDA_CASES_DIR as above)
#   bash bench/run_cuda_side_by_side.sh --ember ./bench_cuda_eager_workloads --out /tmp/side
#   bash bench/run_cuda_compiled_side_by_side.sh --ember ./bench_cuda_inductor_workloads --out /tmp/race
# See README.md, "The GPU build", and docs/testing.md, "Conformance on CUDA".
set -euo pipefail
cd "$(dirname "$0")/.."
build=${EMBER_BUILD_DIR:-build-gpu}
programs=(tests/test_cuda tests/test_cuda_host tests/test_cuda_conformance tests/test_cuda_compiled_conformance
          bench/bench_cuda_eager_workloads bench/bench_cuda_inductor_workloads)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DEMBER_ARCH=x86-64-v3 >/dev/null
ninja -C "$build" "${programs[@]##*/}"
stage="$build/bundle/stage"
rm -rf "$stage" && mkdir -p "$stage/lib" "$stage/gen/tests/ops" "$stage/gen/src/ops" "$stage/bench"
for p in "${programs[@]}"; do
  cp "$build/$p" "$stage/" && strip "$stage/${p##*/}"
  # Everything the programs load except the C library itself.
  for lib in $(ldd "$build/$p" | awk '/=> \// {print $3}'); do
    case "$(basename "$lib")" in libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*) continue ;; esac
    cp -L "$lib" "$stage/lib/"
  done
done
cp tests/ops/*.py "$stage/gen/tests/ops/"  # the generator and every module of rows it imports
cp src/ops/derivatives*.cpp "$stage/gen/src/ops/"
[[ -d tests/ops/cases_cuda ]] && cp -r tests/ops/cases_cuda "$stage/"
cp bench/torch_workloads.py bench/torch_blocks.py bench/torch_training.py bench/torch_cuda_compiled.py \
   bench/run_cuda_side_by_side.sh bench/run_cuda_compiled_side_by_side.sh "$stage/bench/"
tar -C "$stage" -cJf "$build/bundle/cuda_tests.tar.xz" .
ls -l "$build/bundle/cuda_tests.tar.xz"
