#!/usr/bin/env bash
# The sanitizer job of CI (.ci/run runs it after the README's test command): builds the
# test programs below with AddressSanitizer + UndefinedBehaviorSanitizer (EMBER_SANITIZE,
# the `sanitize` preset's settings) in build-sanitize/ (or $EMBER_SANITIZE_BUILD_DIR) and
# runs their tests; the first report stops the program and fails the job.
#
# The subset (docs/testing.md says why, and what it costs): the fuzz tests of every reader
# of outside data, and the unit tests of support, core, graph and capture. The op
# conformance suite, the inductor, AOT and debug tests stay out: they compile generated C++
# at run time (with the sanitizers too, in this build), which would take CI past its limit.
# Extra arguments go to ctest, e.g. -R GraphText.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${EMBER_SANITIZE_BUILD_DIR:-build-sanitize}
programs=(test_fuzz test_support test_core test_graph test_capture)

# -O1 -g1: what ASan is documented to run well at, with line tables for its reports, and
# about a third quicker to compile than RelWithDebInfo's -O2 -g.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" >/dev/null
ninja -C "$build_dir" "${programs[@]}"

# halt_on_error: the first report fails its test. allocator_may_return_null: an
# allocation too large for the machine returns null, which Ember reports as an
# ember::Error ("out of memory"), as the release build does, instead of ASan aborting.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1:allocator_may_return_null=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
labels=$(IFS='|'; echo "${programs[*]}")
cd "$build_dir"
ctest --output-on-failure -j2 --timeout 600 -L "^(${labels})\$" "$@"
