#!/usr/bin/env python3
"""The table of a bench/compare_variants.sh run: for each workload and page size, each build's
median time over the rounds, its TFLOP/s at that median, and its median per-round ratio to the
baseline's time (below 1: faster), from the prefixed ctxattn_gpu_bench lines of bench.txt:

    NAME rROUND WORKLOAD PAGE BACKEND US TFLOPS MAXDIFF

    bench/variants_summary.py BENCH_TXT [--base NAME]

The baseline defaults to the first build named in the file. A round in which the baseline has no
line for a workload gives no ratio for it.
"""
import argparse
import collections
import re
import statistics
import sys

LINE = re.compile(r"^(\S+) r(\d+) (\S+) +(\d+) +(\S+) +([0-9.]+) +([0-9.]+)")


def parse(lines):
    """(build, round, workload, page, backend, us, tflops) of every bench line, in file order."""
    rows = []
    for line in lines:
        m = LINE.match(line)
        if m:
            rows.append((m[1], int(m[2]), m[3], int(m[4]), m[5], float(m[6]), float(m[7])))
    return rows


def summarize(rows, base=None):
    """Rows of (workload, page, build, median_us, tflops_at_median, median_ratio or None, rounds)."""
    builds = list(dict.fromkeys(r[0] for r in rows))
    if not builds:
        return []
    base = base or builds[0]
    times = collections.defaultdict(list)  # (workload, page, build) -> [us]
    by_round = {}  # (workload, page, build, round) -> us
    work = collections.defaultdict(list)  # (workload, page) -> us * TFLOP/s: the work, as each line rounds it
    for build, rnd, workload, page, _backend, us, tflops in rows:
        times[(workload, page, build)].append(us)
        by_round[(workload, page, build, rnd)] = us
        work[(workload, page)].append(us * tflops)
    out = []
    cases = list(dict.fromkeys((r[2], r[3]) for r in rows))
    for workload, page in cases:
        for build in builds:
            samples = times.get((workload, page, build))
            if not samples:
                continue
            med = statistics.median(samples)
            ratios = [us / by_round[(workload, page, base, rnd)]
                      for (w, p, b, rnd), us in by_round.items()
                      if (w, p, b) == (workload, page, build) and (workload, page, base, rnd) in by_round]
            out.append((workload, page, build, med, statistics.median(work[(workload, page)]) / med,
                        statistics.median(ratios) if ratios else None, len(samples)))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bench_txt")
    parser.add_argument("--base", default=None, help="the baseline build (default: the first in the file)")
    args = parser.parse_args()
    with open(args.bench_txt) as f:
        table = summarize(parse(f), args.base)
    if not table:
        print("no bench lines")
        return 1
    print(f"{'workload':<16} {'page':>4} {'build':<12} {'median us':>10} {'TFLOP/s':>8} {'vs base':>8} {'rounds':>6}")
    for workload, page, build, med, tflops, ratio, n in table:
        shown = f"{ratio:.3f}" if ratio is not None else "-"
        print(f"{workload:<16} {page:>4} {build:<12} {med:>10.1f} {tflops:>8.1f} {shown:>8} {n:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
