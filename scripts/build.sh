#!/usr/bin/env bash
# Configures and builds Ember in build/ (or $EMBER_BUILD_DIR). Extra arguments go to
# CMake, e.g. -DEMBER_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${EMBER_BUILD_DIR:-build}
# EMBER_BUILD_BENCH=OFF leaves the benchmark programs out (the test command does).
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-Release} \
  -DEMBER_BUILD_BENCH=${EMBER_BUILD_BENCH:-ON} "$@" >/dev/null
ninja -C "$build_dir" ${EMBER_BUILD_TARGETS:-}
