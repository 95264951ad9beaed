#!/usr/bin/env bash
# The README's demo command: installs dependencies, builds, runs examples/demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
EMBER_BUILD_TARGETS=ember_demo bash scripts/build.sh
./build/examples/ember_demo
