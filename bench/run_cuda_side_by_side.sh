#!/usr/bin/env bash
# bench/run_cuda_side_by_side.sh — Ember eager against PyTorch eager on one GPU, in one
# call: bench_cuda_eager_workloads, then bench/torch_workloads.py --device cuda (W1–W7 of
# docs/workloads.md on cuda:0, CUDA events around each call, median of --iters after 3
# warm-up calls, each program measuring the device-to-device copy bandwidth in its own
# run), logs and JSON written to one directory, then one table:
#
#   id | workload | Ember ms | PyTorch ms | Ember/PyTorch | Ember GB/s | % of copy | % of same | Ember host ms | PyTorch host ms
#
# (Ember GB/s: the bytes Ember's kernels read and write, W1's eager chain 25 passes over x;
# % of copy: of a copy_ between two 1 GiB tensors; % of same: of a copy_ moving the row's own bytes; Ember host
# ms, PyTorch host ms: the host's time to return from one call, its launch overhead; L1,
# x + 1 on one element: its host ms is one op's launch work, its ms one tiny kernel's)
#
# with the GPU's name as nvidia-smi and each program (cudaGetDeviceProperties,
# torch.cuda.get_device_name) report it. A row Ember skips (an op without a CUDA kernel in
# this build) shows the skip instead of a time.
#
#   bench/run_cuda_side_by_side.sh --ember build-gpu/bench/bench_cuda_eager_workloads --out /tmp/side
#
# Options:
#   --ember PATH     the bench_cuda_eager_workloads binary (built on another machine is fine)
#   --out DIR        where logs and JSON go (created; default bench-cuda-side-by-side-<time>)
#   --python PATH    the Python with PyTorch (default python3)
#   --iters N        timed calls per row, both programs (default 21)
#   --only IDS       rows whose id starts with one of these, e.g. W1,W4 (default all)
#   --libs DIR       shared libraries the Ember binary needs and the machine lacks (the
#                    bundle's lib/ from scripts/cuda_test_bundle.sh): on LD_LIBRARY_PATH
#                    for Ember only
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ember=""
out="bench-cuda-side-by-side-$(date -u +%Y%m%dT%H%M%SZ)"
python=python3
iters=21
only=""
libs=""
while (($#)); do
  case "$1" in
    --ember) ember=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --libs) libs=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "run_cuda_side_by_side.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -n "$ember" ]] || { echo "run_cuda_side_by_side.sh: --ember PATH (bench_cuda_eager_workloads) is required" >&2; exit 2; }
[[ -x "$ember" ]] || { echo "run_cuda_side_by_side.sh: $ember is not an executable" >&2; exit 2; }
[[ "$iters" =~ ^[1-9][0-9]*$ ]] || { echo "run_cuda_side_by_side.sh: --iters '$iters' is not a positive integer" >&2; exit 2; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
ember_env=()
[[ -n "$libs" ]] && ember_env=(LD_LIBRARY_PATH="$(cd "$libs" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
only_args=()
[[ -n "$only" ]] && only_args=(--only "$only")

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  echo "gpu (nvidia-smi): $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1)"
  echo "ember binary: $ember; this checkout: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo 'no git') (the binary may come from another build)"
  echo "python: $python, torch $("$python" -c 'import torch; print(torch.__version__)' 2>&1 | tail -1)"
  echo "iters: $iters; only: ${only:-all}"
} | tee "$out/machine.txt"

status=0
env "${ember_env[@]}" "$ember" --iters "$iters" "${only_args[@]}" --json "$out/ember_cuda.json" 2>&1 |
  tee "$out/ember_cuda.log" || status=1
"$python" "$here/torch_workloads.py" --device cuda --iters "$iters" "${only_args[@]}" --json "$out/torch_cuda.json" 2>&1 |
  tee "$out/torch_cuda.log" || status=1

"$python" - "$out/ember_cuda.json" "$out/torch_cuda.json" <<'EOF' | tee "$out/table.txt" || status=1
import json, os, sys

def load(path):
    if not os.path.exists(path):
        print(f"(no {os.path.basename(path)}: that program did not finish; see its log)")
        return {"rows": []}
    with open(path) as f:
        return json.load(f)

ember, torch = load(sys.argv[1]), load(sys.argv[2])
print(f"\nEmber:   {ember.get('device', '?')} (sm {ember.get('capability', '?')}), copy_ "
      f"{ember.get('copy_gbps', 0):.1f} GB/s")
print(f"PyTorch: {torch.get('device', '?')} (sm {torch.get('capability', '?')}), copy_ "
      f"{torch.get('copy_gbps', 0):.1f} GB/s, torch {torch.get('torch', '?')}")
print(f"{'id':8} | {'workload':36} | {'Ember ms':>9} | {'PyTorch ms':>10} | {'Ember/PyTorch':>13} | "
      f"{'Ember GB/s':>10} | {'% of copy':>9} | {'% of same':>9} | Ember host ms | PyTorch host ms")
theirs = {r["id"]: r for r in torch["rows"]}
copy = ember.get("copy_gbps") or 0
for r in ember["rows"]:
    t = theirs.get(r["id"], {})
    tms = f"{t['eager_ms']:10.3f}" if "eager_ms" in t else f"{'-':>10}"
    if "eager_ms" not in r:
        print(f"{r['id']:8} | {r['workload']:36} | {'skipped: ' + r['skipped'] if 'skipped' in r else 'error: ' + r.get('error', '?')} "
              f"| PyTorch {tms.strip()} ms")
        continue
    ratio = f"{r['eager_ms'] / t['eager_ms']:12.2f}x" if t.get("eager_ms") else f"{'-':>13}"
    gb = f"{r['gbps']:10.1f}" if "gbps" in r else f"{'-':>10}"
    pct = f"{100 * r['gbps'] / copy:8.1f}%" if "gbps" in r and copy else f"{'-':>9}"
    same = f"{100 * r['gbps'] / r['copy_same_gbps']:8.1f}%" if "copy_same_gbps" in r else f"{'-':>9}"
    host = f"{r['host_ms']:13.3f}" if "host_ms" in r else f"{'-':>13}"
    thost = f"{t['host_ms']:.3f}" if "host_ms" in t else "-"
    print(f"{r['id']:8} | {r['workload']:36} | {r['eager_ms']:9.3f} | {tms} | {ratio} | {gb} | {pct} | {same} | {host} | {thost}")
EOF
echo "logs and JSON in $out"
exit $status
