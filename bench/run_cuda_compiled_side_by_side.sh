#!/usr/bin/env bash
# bench/run_cuda_compiled_side_by_side.sh — the CUDA inductor race: Ember's inductor against
# PyTorch's torch.compile on one GPU, in one call. It runs bench_cuda_inductor_workloads
# (Ember eager, compiled, and compiled with CUDA graphs, inductor.cudagraphs = mode
# "reduce-overhead"), then torch_workloads.py --device cuda --compile (torch.compile's
# default and reduce-overhead modes, torch_cuda_compiled.py), with the same timing (CUDA
# events around each call after an L2-flushing zeroing, medians), and prints one table:
#
#   id | Ember ms | torch.compile ms | speedup | Ember ro ms | torch ro ms | ro speedup | % of copy | host µs (Ember, torch, Ember ro, torch ro)
#
# speedup: torch.compile ms / Ember ms (above 1: Ember faster); ro: reduce-overhead (CUDA
# graphs) on both sides; % of copy: W1–W3's bytes over Ember's compiled ms, against the
# device-to-device copy_ bandwidth PyTorch measured in the same call between 1 GiB tensors,
# and (second figure) against a copy_ moving the row's own bytes, whose launch and ramp are
# the row's too; geomeans over the W rows.
#
#   bench/run_cuda_compiled_side_by_side.sh --ember build-gpu/bench/bench_cuda_inductor_workloads --out /tmp/race
#
# Options: --ember PATH, --out DIR, --python PATH (default python3), --iters N (default 21),
# --only IDS (e.g. W1,W5).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ember=""
out="bench-cuda-race-$(date -u +%Y%m%dT%H%M%SZ)"
python=python3
iters=21
only=""
while (($#)); do
  case "$1" in
    --ember) ember=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "run_cuda_compiled_side_by_side.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x "$ember" ]] || { echo "run_cuda_compiled_side_by_side.sh: --ember: no executable at '$ember'" >&2; exit 2; }
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt" 2>&1 || true
status=0
"$ember" --iters "$iters" ${only:+--only "$only"} > "$out/ember.log" 2>&1 || status=$?
(cd "$here" && "$python" torch_workloads.py --device cuda --compile --iters "$iters" ${only:+--only "$only"} \
   --json "$out/torch.json") > "$out/torch.log" 2>&1 || status=$?
"$python" - "$out/ember.log" "$out/torch.json" <<'PY' | tee "$out/table.txt"
import json, math, sys
ember = {}
for line in open(sys.argv[1]):
    f = [c.strip() for c in line.split("|")]
    if len(f) >= 7 and (f[0].startswith("W") or f[0] == "L1"):
        try:
            ember[f[0]] = dict(ms=float(f[3]), host=float(f[4]), ro=float(f[5]), ro_host=float(f[6]),
                               cold=float(f[9]) if len(f) >= 11 else float("nan"))
        except ValueError:
            pass
t = json.load(open(sys.argv[2]))
print(f"{t['device']}; PyTorch {t['torch']}; copy_ {t['copy_gbps']:.1f} GB/s")
print(f"{'id':9} | {'Ember ms':>9} | {'torch ms':>9} | {'speedup':>7} | {'Ember ro':>9} | {'torch ro':>9} | "
      f"{'ro spd':>6} | {'% copy (same size)':>18} | {'cold s: Ember, torch':>20} | host µs: Ember, torch, Ember ro, torch ro")
sp, sp_ro = [], []
for r in t["rows"]:
    e, d, ro = ember.get(r["id"]), r.get("default", {}), r.get("reduce-overhead", {})
    if not e or "ms" not in d or "ms" not in ro:
        print(f"{r['id']:9} | missing: Ember {'ok' if e else 'none'}, torch {d.get('error', 'ok')}, ro {ro.get('error', 'ok')}")
        continue
    s, s_ro = d["ms"] / e["ms"], ro["ms"] / e["ro"]
    if r["id"] != "L1":
        sp.append(s); sp_ro.append(s_ro)
    pct = "-"
    if r.get("nbytes"):
        gbps = r["nbytes"] / (e["ms"] * 1e-3) / 1e9
        same = f" ({100 * gbps / r['copy_same_gbps']:5.1f}%)" if r.get("copy_same_gbps") else ""
        pct = f"{100 * gbps / t['copy_gbps']:5.1f}%{same}"
    cold = f"{e['cold']:.2f}, {d.get('cold_s', float('nan')):.2f}"
    print(f"{r['id']:9} | {e['ms']:9.4f} | {d['ms']:9.4f} | {s:7.2f} | {e['ro']:9.4f} | {ro['ms']:9.4f} | {s_ro:6.2f} | "
          f"{pct:>18} | {cold:>20} | {1e3 * e['host']:.1f}, {1e3 * d['host_ms']:.1f}, {1e3 * e['ro_host']:.1f}, "
          f"{1e3 * ro['host_ms']:.1f}")
geo = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
print(f"geomean speedup over the W rows: default {geo(sp):.2f}, reduce-overhead {geo(sp_ro):.2f}")
PY
exit $status
