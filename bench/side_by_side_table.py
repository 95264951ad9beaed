#!/usr/bin/env python3
"""Reads a run_side_by_side.sh output directory and prints, per thread count, Ember's
compiled ms beside PyTorch's under each setting it ran (torch_settings.py: default,
max-autotune, freezing), the best of them, and Ember's speedup over the default mode and
over the best setting (PyTorch ms / Ember ms: above 1, Ember is faster), with their
geomeans over W1-W7 and over every row. Where the run has Ember with inductor.freezing on
(ember_freezing_t<T>.json, run_side_by_side.sh --ember-freezing), a second table sets it
beside PyTorch's freezing setting. Rows missing from a file show "-".

    python3 bench/side_by_side_table.py DIR
"""
import glob
import json
import math
import os
import re
import sys

SETTINGS = ("default", "max-autotune", "freezing")


def rows_of(path):
    with open(path) as fh:
        return {r["id"]: r for r in json.load(fh)["rows"]}


def compiled_ms(rows, wid):
    r = rows.get(wid)
    return r.get("compiled_ms") if r else None


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def fmt(v, spec):
    return format(v, spec) if v is not None else "-"


def main(d):
    threads = sorted(int(m.group(1)) for p in glob.glob(os.path.join(d, "ember_t*.json"))
                     if (m := re.search(r"ember_t(\d+)\.json$", p)))
    if not threads:
        sys.exit(f"side_by_side_table.py: no ember_t*.json in {d}")
    for t in threads:
        ember = rows_of(os.path.join(d, f"ember_t{t}.json"))
        torch = {}
        for s in SETTINGS:
            name = f"torch_t{t}.json" if s == "default" else f"torch_{s}_t{t}.json"
            if os.path.exists(os.path.join(d, name)):
                torch[s] = rows_of(os.path.join(d, name))
        print(f"== {t} threads: compiled ms (PyTorch settings: {', '.join(torch)})")
        print(f"{'id':10} | {'Ember':>9} | " + " | ".join(f"{s:>12}" for s in torch) +
              f" | {'best':>9} | {'vs default':>10} | {'vs best':>8}")
        ratios_default, ratios_best = {}, {}
        for wid in ember:
            e = compiled_ms(ember, wid)
            ts = [compiled_ms(torch[s], wid) for s in torch]
            have = [x for x in ts if x]
            best = min(have) if have else None
            d_ms = ts[0] if torch and "default" in torch else None
            if e and d_ms:
                ratios_default[wid] = d_ms / e
            if e and best:
                ratios_best[wid] = best / e
            print(f"{wid:10} | {fmt(e, '9.2f')} | " + " | ".join(fmt(x, "12.2f") for x in ts) +
                  f" | {fmt(best, '9.2f')} | {fmt(ratios_default.get(wid), '9.2f')}x | {fmt(ratios_best.get(wid), '7.2f')}x")
        w17 = [w for w in ratios_default if re.match(r"W[1-7](\b|-)", w)]
        print(f"geomean W1-W7: vs default {fmt(geomean([ratios_default[w] for w in w17]), '.2f')}x, "
              f"vs best {fmt(geomean([ratios_best[w] for w in w17 if w in ratios_best]), '.2f')}x; every row: "
              f"vs default {fmt(geomean(ratios_default.values()), '.2f')}x, "
              f"vs best {fmt(geomean(ratios_best.values()), '.2f')}x\n")
        frozen_path = os.path.join(d, f"ember_freezing_t{t}.json")
        if os.path.exists(frozen_path) and "freezing" in torch:
            frozen = rows_of(frozen_path)
            print(f"== {t} threads, freezing on both sides: compiled ms")
            print(f"{'id':10} | {'Ember':>9} | {'PyTorch':>9} | {'speedup':>8}")
            ratios = {}
            for wid in frozen:
                e, p = compiled_ms(frozen, wid), compiled_ms(torch["freezing"], wid)
                if e and p:
                    ratios[wid] = p / e
                print(f"{wid:10} | {fmt(e, '9.2f')} | {fmt(p, '9.2f')} | {fmt(ratios.get(wid), '7.2f')}x")
            w17 = [w for w in ratios if re.match(r"W[1-7](\b|-)", w)]
            print(f"geomean W1-W7: {fmt(geomean([ratios[w] for w in w17]), '.2f')}x; every row: "
                  f"{fmt(geomean(ratios.values()), '.2f')}x\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
