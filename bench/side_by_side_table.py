#!/usr/bin/env python3
"""Reads a run_side_by_side.sh output directory and prints, per thread count, Ember's
compiled ms beside PyTorch's under each setting it ran (torch_settings.py: default,
max-autotune, freezing), the best of them, and Ember's speedup over the default mode and
over the best setting (PyTorch ms / Ember ms: above 1, Ember is faster), with their
geomeans over W1-W7 and over every row. Where the run has Ember with inductor.freezing on
(ember_freezing_t<T>.json, run_side_by_side.sh --ember-freezing), a second table sets it
beside PyTorch's freezing setting, and a third sets the faster of Ember's two beside the
best of PyTorch's settings. Rows missing from a file show "-".

With several rounds (run_side_by_side.sh --rounds: <name>.r<r>.json), each program's ms for
a row is its median over the rounds, and a last column gives the lowest and highest of the
per-round ratios against the best setting (each round's Ember against that round's best), the
spread a shared machine puts on one ratio.

    python3 bench/side_by_side_table.py DIR
"""
import glob
import json
import math
import os
import re
import sys

SETTINGS = ("default", "max-autotune", "freezing")


def rounds_of(d, name):
    """The rounds of one program's JSON: [rows of <name>.json] or rows of each
    <name>.r<r>.json in round order; [] when there is none."""
    def load(path):
        with open(path) as fh:
            return {r["id"]: r for r in json.load(fh)["rows"]}
    one = os.path.join(d, name + ".json")
    if os.path.exists(one):
        return [load(one)]
    paths = glob.glob(os.path.join(d, name + ".r*.json"))
    paths.sort(key=lambda p: int(re.search(r"\.r(\d+)\.json$", p).group(1)))
    return [load(p) for p in paths]


def compiled_ms(rounds, wid, r=None):
    """A row's compiled ms: its median over the rounds, or round r's."""
    picked = rounds if r is None else rounds[r:r + 1]
    xs = sorted(x["compiled_ms"] for rows in picked if (x := rows.get(wid)) and x.get("compiled_ms"))
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def fmt(v, spec):
    return format(v, spec) if v is not None else "-"


def print_pairs(title, pairs):
    """A table of Ember's ms beside PyTorch's per row ({id: (ember, pytorch)}), the speedup
    and its geomeans."""
    print(title)
    print(f"{'id':10} | {'Ember':>9} | {'PyTorch':>9} | {'speedup':>8}")
    ratios = {}
    for wid, (e, p) in pairs.items():
        if e and p:
            ratios[wid] = p / e
        print(f"{wid:10} | {fmt(e, '9.2f')} | {fmt(p, '9.2f')} | {fmt(ratios.get(wid), '7.2f')}x")
    w17 = [w for w in ratios if re.match(r"W[1-7](\b|-)", w)]
    print(f"geomean W1-W7: {fmt(geomean([ratios[w] for w in w17]), '.2f')}x; every row: "
          f"{fmt(geomean(ratios.values()), '.2f')}x\n")


def main(d):
    threads = sorted({int(m.group(1)) for p in glob.glob(os.path.join(d, "ember_t*.json"))
                      if (m := re.search(r"ember_t(\d+)(\.r\d+)?\.json$", p))})
    if not threads:
        sys.exit(f"side_by_side_table.py: no ember_t*.json in {d}")
    for t in threads:
        ember = rounds_of(d, f"ember_t{t}")
        torch = {}
        for s in SETTINGS:
            rounds = rounds_of(d, f"torch_t{t}" if s == "default" else f"torch_{s}_t{t}")
            if rounds:
                torch[s] = rounds
        n_rounds = len(ember)
        spread_head = f" | {'per-round vs best':>17}" if n_rounds > 1 else ""
        print(f"== {t} threads: compiled ms (PyTorch settings: {', '.join(torch)})" +
              (f", median of {n_rounds} rounds" if n_rounds > 1 else ""))
        print(f"{'id':10} | {'Ember':>9} | " + " | ".join(f"{s:>12}" for s in torch) +
              f" | {'best':>9} | {'vs default':>10} | {'vs best':>8}" + spread_head)
        ratios_default, ratios_best = {}, {}
        for wid in ember[0]:
            e = compiled_ms(ember, wid)
            ts = [compiled_ms(torch[s], wid) for s in torch]
            have = [x for x in ts if x]
            best = min(have) if have else None
            d_ms = ts[0] if torch and "default" in torch else None
            if e and d_ms:
                ratios_default[wid] = d_ms / e
            if e and best:
                ratios_best[wid] = best / e
            spread = ""
            if n_rounds > 1:
                per_round = []
                for r in range(n_rounds):
                    er = compiled_ms(ember, wid, r)
                    br = [x for s in torch if (x := compiled_ms(torch[s], wid, r))]
                    if er and br:
                        per_round.append(min(br) / er)
                spread = f" | {min(per_round):7.2f}-{max(per_round):.2f}x" if per_round else " | -"
            print(f"{wid:10} | {fmt(e, '9.2f')} | " + " | ".join(fmt(x, "12.2f") for x in ts) +
                  f" | {fmt(best, '9.2f')} | {fmt(ratios_default.get(wid), '9.2f')}x | {fmt(ratios_best.get(wid), '7.2f')}x" +
                  spread)
        w17 = [w for w in ratios_default if re.match(r"W[1-7](\b|-)", w)]
        print(f"geomean W1-W7: vs default {fmt(geomean([ratios_default[w] for w in w17]), '.2f')}x, "
              f"vs best {fmt(geomean([ratios_best[w] for w in w17 if w in ratios_best]), '.2f')}x; every row: "
              f"vs default {fmt(geomean(ratios_default.values()), '.2f')}x, "
              f"vs best {fmt(geomean(ratios_best.values()), '.2f')}x\n")
        frozen = rounds_of(d, f"ember_freezing_t{t}")
        if frozen and "freezing" in torch:
            print_pairs(f"== {t} threads, freezing on both sides: compiled ms",
                        {wid: (compiled_ms(frozen, wid), compiled_ms(torch["freezing"], wid)) for wid in frozen[0]})
            print_pairs(f"== {t} threads, the best setting on each side (Ember: without or with freezing): compiled ms",
                        {wid: (min((x for x in (compiled_ms(ember, wid), compiled_ms(frozen, wid)) if x), default=None),
                               min((x for s in torch if (x := compiled_ms(torch[s], wid))), default=None))
                         for wid in ember[0]})

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
