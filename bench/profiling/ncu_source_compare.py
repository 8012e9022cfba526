#!/usr/bin/env python3
"""Compares two kernels' Nsight Compute source counters (the SASS CSV that profile_sm90.sh writes,
plain or .xz): executed instructions and stall samples by opcode, per consumer-warp key tile
(HGMMA count / GEMMs a tile), then each kernel's instructions with the most stall samples.

    bench/profiling/ncu_source_compare.py A.source.csv[.xz] B.source.csv[.xz] [--gemms-per-tile 16] [--top 20]
"""
import argparse
import collections
import csv
import io
import lzma
import re


def load(path):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"Address"'))
    return list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))


def opcode(source):
    text = re.sub(r"^@!?U?P\w+\s+", "", source.strip())
    return text.split()[0].split(".")[0] if text else ""


def count(rows, field):
    return int(rows[field] or 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--gemms-per-tile", type=int, default=16, help="HGMMA instructions a consumer warp issues a tile")
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args()
    kernels = []
    for path in (args.a, args.b):
        rows = load(path)
        executed, stalls = collections.Counter(), collections.Counter()
        for r in rows:
            op = opcode(r["Source"])
            executed[op] += count(r, "Instructions Executed")
            stalls[op] += count(r, "Warp Stall Sampling (All Samples)")
        tiles = executed["HGMMA"] / args.gemms_per_tile or 1
        kernels.append((path, rows, executed, stalls, tiles))
        print(f"{path}: {sum(executed.values()) / 1e6:.1f} M instructions, {tiles / 1e6:.3f} M warp-tiles, "
              f"{sum(executed.values()) / tiles:.0f} a warp-tile, {sum(stalls.values())} stall samples")
    (_, _, ea, sa, ta), (_, _, eb, sb, tb) = kernels
    total_a, total_b = sum(sa.values()) or 1, sum(sb.values()) or 1
    ops = sorted(set(ea) | set(eb), key=lambda k: -(ea[k] / ta + eb[k] / tb))
    print(f"{'opcode':10s} {'A/tile':>8s} {'B/tile':>8s} {'A stall%':>9s} {'B stall%':>9s}")
    for op in ops[:40]:
        print(f"{op:10s} {ea[op] / ta:8.1f} {eb[op] / tb:8.1f} {100 * sa[op] / total_a:9.1f} {100 * sb[op] / total_b:9.1f}")
    for path, rows, _, stalls, _ in kernels:
        total = sum(stalls.values()) or 1
        print(f"== most stall samples: {path}")
        order = sorted(range(len(rows)), key=lambda i: -count(rows[i], "Warp Stall Sampling (All Samples)"))
        for i in order[:args.top]:
            r = rows[i]
            print(f"{i:6d} {100 * count(r, 'Warp Stall Sampling (All Samples)') / total:5.1f}% "
                  f"executed {count(r, 'Instructions Executed'):9d}  {r['Source'].strip()[:70]}")


if __name__ == "__main__":
    main()
