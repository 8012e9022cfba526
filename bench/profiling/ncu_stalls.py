#!/usr/bin/env python3
"""Side by side: the warp stall reasons (cycles stalled per issued instruction), tensor-pipe and
issue activity of one kernel launch each, from Nsight Compute's raw CSV (`ncu --csv --page raw`),
plain or .xz. The metrics to ask ncu for (one launch, any kernel, a peer's included):

    ncu --clock-control none -k regex:KERNEL --launch-skip N --launch-count 1 --csv --page raw \\
      --metrics "$(bench/profiling/ncu_stalls.py --metrics)" PROGRAM ... > NAME.csv

    bench/profiling/ncu_stalls.py [LABEL=]A.csv[.xz] [LABEL=]B.csv[.xz] ...

A reason's value times the instructions a warp issues is the cycles that warp spends in it, so two
kernels compare directly: for a consumer warp, `wait` and `gmma` hold its own GEMMs' latency,
`barrier` the named-barrier turn of the ping-pong (slack when large: the warp was ready before its
turn), `selected` the issue itself.
"""
import argparse
import csv
import io
import lzma
import sys

STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"
SUMMARY = [
    ("gpu__time_duration.sum", "duration (ns)"),
    ("sm__cycles_elapsed.avg.per_second", "SM clock (Hz)"),
    ("smsp__inst_executed.sum", "instructions executed"),
    ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "tensor pipe active %"),
    ("smsp__issue_active.avg.pct_of_peak_sustained_active", "issue slots busy %"),
]
METRICS = ",".join([f"regex:{STALL_PREFIX}.*_per_issue_active\\.ratio$"] + [name for name, _ in SUMMARY])


def load(path):
    """{metric: value} of the first kernel launch in an ncu raw CSV."""
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, values = rows[0], rows[2]  # rows[1] holds the units
    return dict(zip(header, values))


def number(text):
    try:
        return float(text.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="[LABEL=]PATH of an ncu raw CSV")
    ap.add_argument("--metrics", action="store_true", help="print the --metrics argument for ncu and exit")
    args = ap.parse_args()
    if args.metrics:
        print(METRICS)
        return 0
    if not args.files:
        ap.error("no CSV given")
    runs = []
    for spec in args.files:
        label, _, path = spec.rpartition("=")
        runs.append((label or path, load(path)))
    reasons = sorted({k for _, run in runs for k in run if k.startswith(STALL_PREFIX) and k.endswith(STALL_SUFFIX)},
                     key=lambda k: -(number(runs[0][1].get(k)) or 0.0))
    width = max(12, *(len(label) + 2 for label, _ in runs))
    print(f"{'':32}" + "".join(f"{label:>{width}}" for label, _ in runs))
    for key, title in SUMMARY:
        values = [number(run.get(key)) for _, run in runs]
        print(f"{title:32}" + "".join(f"{v:>{width}.4g}" if v is not None else f"{'-':>{width}}" for v in values))
    print("stalled cycles per issued instruction:")
    for key in reasons:
        values = [number(run.get(key)) for _, run in runs]
        if all(not v for v in values):
            continue
        name = key[len(STALL_PREFIX):-len(STALL_SUFFIX)]
        print(f"  {name:30}" + "".join(f"{v:>{width}.3f}" if v is not None else f"{'-':>{width}}" for v in values))
    return 0


if __name__ == "__main__":
    sys.exit(main())
