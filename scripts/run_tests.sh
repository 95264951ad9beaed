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
