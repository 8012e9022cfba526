#!/usr/bin/env python3
"""The loops of each kernel that hold its warpgroup MMAs (HGMMA / QGMMA), offline (no GPU): for
every backward branch whose body holds an MMA, the body's length in instructions and its most
frequent opcodes, shortest first. The shortest such loop of a consumer is its tile loop; its length
is the static instruction count of one tile (a branch inside it counts both ways).

    bench/profiling/sass_loops.py FILE.o|FILE.so|FILE.cubin|FILE.sass [--filter SUBSTRING]
                            [--loops N] [--ops N] [--cuobjdump PATH]

FILE.sass is cuobjdump -sass output already written. Reads any cubin, so a peer's kernels (the
sm_90a cubins of a wheel's shared object) count the same way as ours.
"""
import argparse
import collections
import re
import subprocess
import sys

from sass_compare import find_cuobjdump, listing

TARGET = re.compile(r"\b0x([0-9a-f]+)\s*$")
MMA = re.compile(r"\b[HQ]GMMA\b")


def opcode(text):
    text = re.sub(r"^@!?U?P[T0-9]+\s+", "", text)  # the guard predicate
    return text.split()[0]


def mma_loops(code):
    """(length, body) of each backward branch's body that holds an MMA."""
    index = {address: i for i, (address, _) in enumerate(code)}
    found = []
    for i, (address, text) in enumerate(code):
        if not opcode(text).startswith("BRA"):
            continue
        m = TARGET.search(text)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target < address and target in index:
            body = code[index[target]:i + 1]
            if any(MMA.search(t) for _, t in body):
                found.append(body)
    return sorted(found, key=len)


def demangle(name):
    try:
        return subprocess.run(["c++filt"], input=name, capture_output=True, text=True).stdout.strip()
    except OSError:
        return name


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--filter", default="", help="only kernels whose demangled name holds this")
    ap.add_argument("--loops", type=int, default=3, help="loops shown a kernel, shortest first")
    ap.add_argument("--ops", type=int, default=12, help="opcodes shown a loop, most frequent first")
    ap.add_argument("--cuobjdump")
    args = ap.parse_args()
    if args.file.endswith(".sass"):
        sass = open(args.file).read()
    else:
        sass = subprocess.run([find_cuobjdump(args.cuobjdump), "-sass", args.file], capture_output=True,
                              text=True, check=True).stdout
    for name, code in listing(sass).items():
        pretty = re.sub(r"\(.*", "", demangle(name))
        if args.filter not in pretty:
            continue
        print("%s: %d instructions" % (pretty, len(code)))
        for body in mma_loops(code)[:args.loops]:
            counts = collections.Counter(opcode(t) for _, t in body)
            mmas = sum(n for op, n in counts.items() if MMA.search(op))
            ops = ", ".join("%s %d" % kv for kv in counts.most_common(args.ops))
            print("  loop of %d, %d MMA, LDL %d: %s" % (len(body), mmas, counts["LDL"], ops))
    return 0


if __name__ == "__main__":
    sys.exit(main())
