#!/usr/bin/env python3
"""Where a consumer warp's cycles go in a Hopper attention kernel's tile loop, from Nsight
Compute source counters (the SASS CSV of `ncu --page source --csv --print-source sass`, which
bench/profiling/profile_sm90.sh writes; plain or .xz). Works on any ping-pong WGMMA kernel, a peer's
included: the tile loop is the innermost loop around the most executed GMMA instructions, cut
into five regions at its landmarks,

    top      loop start up to the first GMMA (barrier waits for K / V, the turn)
    issue    the GMMAs up to the turn's hand-over (BAR.ARV)
    S wait   up to the wait for Q K^T (WARPGROUP.DEPBAR.LE gsb0, 0x1)
    P V wait up to the wait for P V (WARPGROUP.DEPBAR.LE gsb0, 0x0)
    softmax  the rest of the loop

and for each: static and executed instructions a tile, its share of all stall samples (and that
share of the kernel's duration, when given), and its top stall reasons. --listing prints the
instructions from the S wait to the loop's end with their samples and top two reasons.

    bench/profiling/ncu_loop_regions.py [LABEL=]SOURCE.csv[.xz][=DURATION_US] ... [--listing]
"""
import argparse
import os
import re
import sys

from ncu_source_compare import load

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"
GMMA = re.compile(r"\b[HQ]GMMA\b")
TARGET = re.compile(r"\bBRA\b.*0x([0-9a-f]+)\s*$")


def count(row, field):
    try:
        return int(row.get(field) or 0)
    except ValueError:
        return 0


def reasons(rows):
    return [k for k in rows[0] if k.startswith("stall_") and "(Not Issued)" not in k]


def tile_loop(rows):
    """(first, last, main GMMA rows, executions a GMMA) of the innermost loop around the hottest GMMAs."""
    executed = [count(r, EXECUTED) for r in rows]
    gmma = [i for i, r in enumerate(rows) if GMMA.search(r["Source"])]
    if not gmma:
        raise SystemExit("no GMMA instruction in this kernel")
    top = max(executed[i] for i in gmma)
    main = [i for i in gmma if executed[i] == top]
    index = {int(r["Address"], 16): i for i, r in enumerate(rows)}
    best = None
    for i, r in enumerate(rows):
        m = TARGET.search(r["Source"].strip())
        if m and i >= main[-1]:
            t = index.get(int(m.group(1), 16))
            if t is not None and t <= main[0] and (best is None or i - t < best[1] - best[0]):
                best = (t, i)
    if best is None:
        raise SystemExit("no loop around the hottest GMMAs")
    return best[0], best[1], main, top


def regions(rows):
    lo, hi, main, tiles = tile_loop(rows)
    src = [r["Source"].strip() for r in rows]

    def find(text, start):
        return next((i for i in range(start, hi + 1) if text in src[i]), None)

    arv = find("BAR.ARV", main[-1])
    w1 = find("DEPBAR.LE gsb0, 0x1", arv if arv is not None else main[-1])
    w0 = find("DEPBAR.LE gsb0, 0x0", w1 if w1 is not None else main[-1])
    if None in (arv, w1, w0):
        raise SystemExit("the loop lacks a landmark (BAR.ARV, the S wait or the P V wait)")
    cuts = [("top", lo, main[0] - 1), ("issue", main[0], arv), ("S wait", arv + 1, w1),
            ("P V wait", w1 + 1, w0), ("softmax", w0 + 1, hi)]
    return cuts, tiles, (w1, hi)


def report(label, path, duration_us, listing):
    rows = load(path)
    names = reasons(rows)
    total = sum(count(r, SAMPLES) for r in rows) or 1
    cuts, tiles, (first, last) = regions(rows)
    loop = sum(count(rows[i], SAMPLES) for _, a, b in cuts for i in range(a, b + 1))
    print(f"== {label}: {total} stall samples, {100 * loop / total:.1f}% in the tile loop"
          + (f"; kernel {duration_us:g} us" if duration_us else ""))
    for name, a, b in cuts:
        span = range(a, b + 1)
        samples = sum(count(rows[i], SAMPLES) for i in span)
        executed = sum(count(rows[i], EXECUTED) for i in span) / tiles
        by_reason = sorted(((sum(count(rows[i], k) for i in span), k) for k in names), reverse=True)[:5]
        share = 100 * samples / total
        us = f" ({duration_us * samples / total:6.1f} us)" if duration_us else ""
        top = ", ".join(f"{k[len('stall_'):]} {100 * v / total:.1f}" for v, k in by_reason if v)
        print(f"  {name:9s} static {b - a + 1:4d}  executed a tile {executed:6.1f}  samples {share:5.1f}%{us}  {top}")
    if listing:
        for i in range(first, last + 1):
            r = rows[i]
            if count(r, EXECUTED) < tiles // 2:
                continue  # a branch not taken on most tiles
            two = sorted(((count(r, k), k[len("stall_"):]) for k in names), reverse=True)[:2]
            print(f"  {i - first:4d} {100 * count(r, SAMPLES) / total:5.2f} {two[0][1]:>14s} {two[1][1]:>14s}  "
                  f"{r['Source'].strip()[:64]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="[LABEL=]PATH[=DURATION_US]")
    ap.add_argument("--listing", action="store_true", help="the instructions from the S wait to the loop's end")
    args = ap.parse_args()
    for spec in args.files:
        parts = spec.split("=")
        at = next((i for i, part in enumerate(parts) if os.path.isfile(part)), None)
        if at is None:
            ap.error(f"no file in {spec!r}")
        path = parts[at]
        label = parts[0] if at > 0 else path
        duration = float(parts[at + 1]) if len(parts) > at + 1 else None
        report(label, path, duration, args.listing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
