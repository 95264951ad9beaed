#!/usr/bin/env bash
# The README's test command: installs dependencies, builds everything, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# Without the benchmark programs: no test runs them (scripts/build.sh builds them).
EMBER_BUILD_BENCH=OFF bash scripts/build.sh "$@"
build_dir=${EMBER_BUILD_DIR:-build}
cd "$build_dir"
ctest --output-on-failure -j2 --timeout 600
# The conformance summary lines, from the run above (ctest keeps every test's output,
# passing ones included, in Testing/Temporary/LastTest.log): the compiled line is every op
# run inside a graph compiled with the inductor backend, the compiled gradients line every
# gradient case through AOT autograd and the inductor, the dynamic line every case compiled
# with .dynamic = true at its sizes and at two others.
grep -hE '^(conformance|gradients|compiled|compiled gradients|dynamic):' Testing/Temporary/LastTest.log
# The unit tests once more, each binary as one process. ctest runs every test in a process
# of its own, which hides a test that leaves global state behind for later ones (a dispatch
# layer's handler, a config knob); a developer running a binary whole would meet it first.
# About a minute here, the compile cache warm from the run above.
for t in test_support test_core test_graph test_autograd test_nn test_optim test_errors test_capture test_aot \
  test_debug test_export test_ops; do
  if ! "tests/$t" --gtest_brief=1 >"Testing/Temporary/whole_$t.log" 2>&1; then
    echo "$t failed as one process (ctest's one process per test passed it): a test depends on another's state" >&2
    tail -40 "Testing/Temporary/whole_$t.log" >&2
    exit 1
  fi
done
echo "unit tests, one process per binary: passed"
