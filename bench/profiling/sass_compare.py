#!/usr/bin/env python3
"""Compares the SASS of the kernels two builds hold, offline (no GPU): for each kernel of the first
file, whether its whole function is the same instruction for instruction (addresses and immediates
aside) in the second, and how much of its main loop -- the stretch from its first to its last
warpgroup MMA (HGMMA / QGMMA), registers renamed away -- the second keeps (difflib ratio).

ptxas schedules a Hopper kernel's main loop from the whole function: a change outside the loop
(the work decode, what the epilogue keeps live) can move the loop by a few percent either way
(docs/perf.md, v18). Comparing here says which kernels a change touched before any
device time is spent, and which kernels of a merged source are those a device run tested.

    bench/profiling/sass_compare.py A.o|A.so B.o|B.so [--filter SUBSTRING] [--cuobjdump PATH]
                              [--ops LDL,STL,R2UR,...]

--ops adds, for each kernel, how many of those opcodes its main loop holds in A and in B: local
memory traffic (LDL / STL: spills), R2UR (values ptxas moved out of uniform registers, e.g. a
loop index it cannot prove warp-uniform), VOTE, MUFU, FMUL...

cuobjdump: the CUDA toolkit's, or `pip install nvidia-cuda-cuobjdump` (found on PATH or under the
nvidia/cu*/bin folder of the Python packages).
"""
import argparse
import difflib
import glob
import os
import re
import shutil
import site
import subprocess
import sys

FUNCTION = re.compile(r"Function : (\S+)")
INSTRUCTION = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);")
MMA = re.compile(r"\b[HQ]GMMA\b")


def find_cuobjdump(explicit):
    if explicit:
        return explicit
    found = shutil.which("cuobjdump")
    if found:
        return found
    roots = site.getsitepackages() + [site.getusersitepackages()]
    for root in roots:
        for path in glob.glob(os.path.join(root, "nvidia", "cu*", "bin", "cuobjdump")):
            return path
    sys.exit("cuobjdump not found: install the CUDA toolkit's or `pip install nvidia-cuda-cuobjdump`")


KERNEL = re.compile(
    r"attention_kernelI\d*(\w+?)NS0_6TraitsILi(\d+)ELb(\d)ELb(\d)ELb(\d)E(?:Li(\d)E)?EELb(\d)ELb(\d)E")
# Today's traits: <D, KV form (0 16-bit, 1 e4m3, 2 NVFP4), e4m3 Q/K/V, two-term P, take> and the
# kernel's <split, dynamic, skip>.
KERNEL_NOW = re.compile(
    r"attention_kernelI\d*(\w+?)NS0_6TraitsILi(\d+)ELi(\d)ELb(\d)ELb(\d)ELi(\d)EEELb(\d)ELb(\d)ELb(\d)E")


def label(name):
    """sm90 attention kernels as elem D=.. [kv8] [qkv8] [2term] [192] split=. dynamic=.; others as
    named. The short form of a two-form kernel (Traits kTake 1) is labelled as the kernel that takes
    every request, so that it pairs with a build without the two forms; the long form (kTake 2,
    192-key tiles) gets " 192"."""
    m = KERNEL_NOW.search(name)
    if m:
        elem, dim, kv, qkv8, two, take, split, dynamic, skip = m.groups()
        flags = {"1": " kv8", "2": " kv4"}.get(kv, "")
        flags += "".join(f" {f}" for f, on in (("qkv8", qkv8), ("2term", two)) if on == "1")
        flags += {"1": " short", "2": " 192"}.get(take, "")
        return f"{elem} D={dim}{flags} split={split} dynamic={dynamic} skip={skip}"
    m = KERNEL.search(name)
    if not m:
        return name  # whole: a tail can be shared by kernels of different traits
    elem, dim, kv8, qkv8, two, take, split, dynamic = m.groups()
    flags = "".join(f" {f}" for f, on in (("kv8", kv8), ("qkv8", qkv8), ("2term", two)) if on == "1")
    if take == "2":
        flags += " 192"
    return f"{elem} D={dim}{flags} split={split} dynamic={dynamic}"


def listing(text):
    """{mangled name: [(address, instruction text)]} of a cuobjdump -sass listing, in its order."""
    out, current = {}, None
    for line in text.splitlines():
        m = FUNCTION.search(line)
        if m:
            current = m.group(1)
            out[current] = []
            continue
        m = INSTRUCTION.match(line)
        if m and current is not None:
            out[current].append((int(m.group(1), 16), m.group(2).strip()))
    return out


def kernels(cuobjdump, path):
    """{mangled name: [instruction text, immediates and addresses as X]}"""
    text = subprocess.run([cuobjdump, "-sass", path], check=True, capture_output=True, text=True).stdout
    return {name: [re.sub(r"0x[0-9a-f]+", "X", s) for _, s in code] for name, code in listing(text).items()}


def main_loop(instructions):
    """The first to the last warpgroup MMA, registers and predicates renamed away."""
    at = [i for i, s in enumerate(instructions) if MMA.search(s)]
    if not at:
        return []
    loop = instructions[at[0]:at[-1] + 1]
    return [re.sub(r"\bU?P\d\b", "P", re.sub(r"\bU?R\d+\b", "R", s)) for s in loop]


def opcode(instruction):
    """The opcode of an instruction's text without its guard and modifiers (`@!P0 FMUL.FTZ` -> FMUL)."""
    words = instruction.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else ""


def op_counts(loop, ops):
    counts = {op: 0 for op in ops}
    for s in loop:
        op = opcode(s)
        if op in counts:
            counts[op] += 1
    return " ".join(f"{op} {counts[op]}" for op in ops)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--filter", default="", help="only kernels whose mangled name contains this")
    ap.add_argument("--cuobjdump", default="")
    ap.add_argument("--ops", default="", help="comma list of opcodes to count in each main loop (A / B)")
    args = ap.parse_args()
    ops = [o for o in args.ops.split(",") if o]
    tool = find_cuobjdump(args.cuobjdump)
    a, b = kernels(tool, args.a), kernels(tool, args.b)
    # Kernels pair by label: the mangled names of two builds differ where a template gained a
    # defaulted parameter.
    b_by_label = {label(name): ins for name, ins in b.items()}
    print(f"{'kernel':50} {'instr A':>8} {'instr B':>8}  whole      loop")
    for name, ins in a.items():
        if args.filter not in name:
            continue
        other = b_by_label.get(label(name))
        if other is None:
            print(f"{label(name):50} {len(ins):8} {'-':>8}  missing in B")
            continue
        whole = "same" if ins == other else "differs"
        la, lb = main_loop(ins), main_loop(other)
        loop = "-" if not la else "same" if la == lb else f"{difflib.SequenceMatcher(None, la, lb, autojunk=False).ratio():.4f}"
        print(f"{label(name):50} {len(ins):8} {len(other):8}  {whole:9}  {loop}")
        if ops:
            print(f"{'':50} loop ops A: {op_counts(la, ops)}")
            print(f"{'':50} loop ops B: {op_counts(lb, ops)}")


if __name__ == "__main__":
    main()
