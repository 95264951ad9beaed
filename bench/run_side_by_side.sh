#!/usr/bin/env bash
# bench/run_side_by_side.sh — Ember's inductor against PyTorch's torch.compile on one
# machine: for each thread count T, bench_inductor_workloads and then
# bench/torch_workloads.py --compile under each PyTorch setting asked for (--settings), each
# pinned to cores 0..T-1 (taskset) with OMP_NUM_THREADS=T, logs and JSON written to one
# directory; at the end bench/side_by_side_table.py prints Ember against each setting and
# against the best of them. Rows W1–W9
# (docs/workloads.md); each program ends with a second table for the training rows W7–W9
# (bytes saved for backward, eager and compiled; cold compile of the training graphs
# against the forward alone).
#
#   bench/run_side_by_side.sh --ember build/bench/bench_inductor_workloads --out results/run1 [2 16]
#
# Options:
#   --ember PATH     the bench_inductor_workloads binary (built on another machine is fine)
#   --out DIR        where logs and JSON go (created; default bench-side-by-side-<time>)
#   --python PATH    the Python with PyTorch (default python3)
#   --iters N        timed calls per row, both programs (default 21)
#   --only IDS       rows whose id starts with one of these, e.g. W1,W4 (default all)
#   --settings LIST  PyTorch's settings (torch_settings.py), comma-separated: default,
#                    max-autotune, freezing (default: all three; logs torch_t<T>.log for
#                    default, torch_<setting>_t<T>.log for the others)
#   --ember-freezing also run Ember with --freezing (inductor.freezing on: parameters as
#                    constants, GEMM weights packed once) into ember_freezing_t<T>.*, the
#                    column the table sets beside PyTorch's freezing setting
#   --rounds N       run every program N times per thread count, in turn (round r starts
#                    its sequence at the r-th program), into <name>.r<r>.json/.log; the
#                    table takes each row's median over the rounds and shows the spread of
#                    the ratios, so that a shared machine's slow minutes fall on every
#                    program alike instead of on whichever ran then (default 1: one pass,
#                    files without .r<r>)
#   --src DIR        Ember's src/ on this machine, for the generated code's includes
#                    (default: this checkout's src/); see below
#   --sleef DIR      a directory holding sleef.h, when the machine has no libsleef-dev
#   --libs DIR       shared libraries the Ember binary needs and the machine lacks
#                    (libdnnl.so.2, libsleef.so.3): on LD_LIBRARY_PATH for Ember only
#   T ...            thread counts (default: 2 16)
#
# The Ember binary compiles generated C++ at run time with the compiler and flags it was
# built with (build_info) and `-I <src>` of the machine it was built on. Where that path
# does not exist here, the compiler finds kernels/cpu/vec.h and sleef.h through CPATH,
# which this script sets to --src and --sleef. Each program gets a fresh compile cache per
# run (Ember: a temp directory per row; PyTorch: a temp TORCHINDUCTOR_CACHE_DIR), so
# "cold compile" is cold for both.
#
# On a machine without Ember's build (the GPU host's CPU): build here with -DEMBER_ARCH=
# the host's level (x86-64-v4 for its AVX-512 Xeon), put bench_inductor_workloads in
# .devcarry/bin/, the shared libraries it needs that the host lacks (libdnnl.so.2,
# libsleef.so.3) in .devcarry/lib/ and sleef.h in .devcarry/include/, carry .devcarry to
# the host, and from the checkout's root there run one thread count per call (a command
# there may run 10 minutes):
#
#   bash bench/run_side_by_side.sh --ember .devcarry/bin/bench_inductor_workloads \
#     --sleef .devcarry/include --libs .devcarry/lib --out bench/results/side_by_side_<date> 2
#   (then the same with 16, into the same --out)
#
# The generated code also links the Sleef library by the path the build machine had
# (/usr/lib/x86_64-linux-gnu/libsleef.so on Debian); on a host without libsleef-dev, link
# that path to the carried libsleef.so.3 first, or every compile fails at the link step.
#
# The training rows cost the most time: W7–W9 each compile four times in each program
# (the row's cold and warm compile, then the training graphs and the forward alone, cold)
# and W8's eager step is the slowest of all rows. Where one call cannot hold a whole
# thread count, split the rows: `--only W1,W2,W3,W4,W5,W6` and `--only W7,W8,W9`, each
# into its own --out directory.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ember=""
out="bench-side-by-side-$(date -u +%Y%m%dT%H%M%SZ)"
python=python3
iters=21
only=""
settings="default,max-autotune,freezing"
src="$here/../src"
sleef=""
libs=""
ember_freezing=0
rounds=1
threads=()
while (($#)); do
  case "$1" in
    --ember) ember=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --settings) settings=$2; shift 2 ;;
    --src) src=$2; shift 2 ;;
    --sleef) sleef=$2; shift 2 ;;
    --libs) libs=$2; shift 2 ;;
    --ember-freezing) ember_freezing=1; shift ;;
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    -*) echo "run_side_by_side.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) threads+=("$1"); shift ;;
  esac
done
((${#threads[@]})) || threads=(2 16)
[[ -n "$ember" ]] || { echo "run_side_by_side.sh: --ember PATH (bench_inductor_workloads) is required" >&2; exit 2; }
[[ -x "$ember" ]] || { echo "run_side_by_side.sh: $ember is not an executable" >&2; exit 2; }
[[ -f "$src/kernels/cpu/vec.h" ]] || { echo "run_side_by_side.sh: $src/kernels/cpu/vec.h not found (--src)" >&2; exit 2; }
cores=$(nproc --all)
for t in "${threads[@]}"; do
  [[ "$t" =~ ^[1-9][0-9]*$ ]] || { echo "run_side_by_side.sh: thread count '$t' is not a positive integer" >&2; exit 2; }
  ((t <= cores)) || { echo "run_side_by_side.sh: $t threads, but this machine has $cores cores" >&2; exit 2; }
done

[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "run_side_by_side.sh: --rounds '$rounds' is not a positive integer" >&2; exit 2; }
for setting in ${settings//,/ }; do
  [[ "$setting" =~ ^(default|max-autotune|freezing)$ ]] ||
    { echo "run_side_by_side.sh: --settings: '$setting' is not default, max-autotune or freezing" >&2; exit 2; }
done

mkdir -p "$out"
out=$(cd "$out" && pwd)
ember=$(cd "$(dirname "$ember")" && pwd)/$(basename "$ember")
src=$(cd "$src" && pwd)
cpath="$src"
[[ -n "$sleef" ]] && cpath="$cpath:$(cd "$sleef" && pwd)"
export CPATH="$cpath${CPATH:+:$CPATH}"
ember_env=()
[[ -n "$libs" ]] && ember_env=(LD_LIBRARY_PATH="$(cd "$libs" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
only_args=()
[[ -n "$only" ]] && only_args=(--only "$only")

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $cores cores"
  echo "ember binary: $ember; this checkout: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo 'no git') (the binary may come from another build)"
  echo "python: $python, torch $("$python" -c 'import torch; print(torch.__version__)' 2>&1 | tail -1)"
  echo "threads: ${threads[*]}; rounds: $rounds; iters: $iters; only: ${only:-all}; CPATH=$CPATH"
} | tee "$out/machine.txt"

# One program of the sequence: run_one T NAME (ember, ember_freezing, torch_<setting>) ROUND.
run_one() {
  local t=$1 prog=$2 round=$3 pin=(taskset -c "0-$(($1 - 1))") name suffix=""
  ((rounds > 1)) && suffix=".r$round"
  case "$prog" in
    ember | ember_freezing)
      local flags=()
      name=${prog}_t$t
      [[ "$prog" == ember_freezing ]] && flags=(--freezing)
      env "${ember_env[@]}" OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t "${pin[@]}" "$ember" "${flags[@]}" --iters "$iters" \
        "${only_args[@]}" --json "$out/$name$suffix.json" 2>&1 | tee "$out/$name$suffix.log" | tee -a "$out/summary.log" ;;
    torch_*)
      local setting=${prog#torch_}
      name=torch_t$t
      [[ "$setting" == default ]] || name=torch_${setting}_t$t
      OMP_NUM_THREADS=$t "${pin[@]}" "$python" "$here/torch_workloads.py" --compile --setting "$setting" --threads "$t" \
        --iters "$iters" "${only_args[@]}" --json "$out/$name$suffix.json" 2>&1 | tee "$out/$name$suffix.log" |
        tee -a "$out/summary.log" ;;
  esac
}

programs=(ember)
((ember_freezing)) && programs+=(ember_freezing)
for setting in ${settings//,/ }; do programs+=("torch_$setting"); done
status=0
for t in "${threads[@]}"; do
  echo "== $t threads (cores 0-$((t - 1)))" | tee -a "$out/summary.log"
  for ((round = 1; round <= rounds; ++round)); do
    ((rounds > 1)) && echo "== round $round of $rounds" | tee -a "$out/summary.log"
    n=${#programs[@]}
    for ((i = 0; i < n; ++i)); do
      run_one "$t" "${programs[$(((i + round - 1) % n))]}" "$round" || status=1
    done
  done
done
"$python" "$here/side_by_side_table.py" "$out" | tee "$out/table.txt" || status=1
echo "logs and JSON in $out"
exit $status
