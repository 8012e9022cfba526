"""ctxattn's CPU backend against torch's CPU scaled_dot_product_attention, same causal GQA shapes.

Each shape is B requests of q = kv = L tokens (no cached prefix), so torch's top-left causal mask
equals ctxattn's bottom-right one. torch runs dense [B, H, L, D] tensors (enable_gqa=True) in
fp32 and bf16; ctxattn runs the paged call through ctxattn_cpu_bench (bench/cpp/) in bf16 (and
fp16). Times are medians of --runs runs after a warm-up, with both sides on --threads threads.

    python bench/cpu/compare_torch.py --bench build/ctxattn_cpu_bench --threads 2 \
        --shapes 1x1024 4x512 --reference

Prints a markdown table (time, GFLOP/s from the exact causal FLOPs, speedup over each torch
dtype) ready for docs/perf.md.
"""
import argparse
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F


def causal_flops(batch, length, heads_q, dim):
    return 4.0 * dim * heads_q * batch * length * (length + 1) / 2


def time_torch(batch, length, heads_q, heads_kv, dim, dtype, runs):
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(batch, heads_q, length, dim, generator=gen).to(dtype)
    k = torch.randn(batch, heads_kv, length, dim, generator=gen).to(dtype)
    v = torch.randn(batch, heads_kv, length, dim, generator=gen).to(dtype)
    scale = dim ** -0.5

    def call():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=True)

    call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def time_ctxattn(bench, batch, length, heads_q, heads_kv, dim, dtype, threads, runs, reference):
    cmd = [bench, "--batch", str(batch), "--len", str(length), "--heads", f"{heads_q}/{heads_kv}",
           "--dim", str(dim), "--dtype", dtype, "--threads", str(threads), "--runs", str(runs)]
    if reference:
        cmd.append("--reference")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    header = out.splitlines()[0].lstrip("# ")
    results = {}
    for line in out.splitlines():
        if not line.startswith("RESULT"):
            continue
        fields = dict(kv.split("=", 1) for kv in line.split()[1:])
        if "backend" in fields:
            results[fields["backend"]] = float(fields["median_ms"])
    return header, results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default="build/ctxattn_cpu_bench", help="path of the ctxattn_cpu_bench binary")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--shapes", nargs="+", default=["1x1024", "4x512"], help="BATCHxLEN")
    ap.add_argument("--heads", default="32/8")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--reference", action="store_true", help="also time ctxattn's plain reference once")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    heads_q, heads_kv = (int(x) for x in args.heads.split("/"))

    rows = []
    header = ""
    for shape in args.shapes:
        batch, length = (int(x) for x in shape.split("x"))
        flops = causal_flops(batch, length, heads_q, args.dim)
        torch_ms = {name: time_torch(batch, length, heads_q, heads_kv, args.dim, dt, args.runs)
                    for name, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16))}
        for dtype in ("bf16", "fp16"):
            header, ours = time_ctxattn(args.bench, batch, length, heads_q, heads_kv, args.dim, dtype,
                                        args.threads, args.runs, args.reference and dtype == "bf16")
            rows.append((shape, dtype, ours, torch_ms, flops))

    print(f"# {header}; torch {torch.__version__}; {args.threads} threads; heads {args.heads}, D={args.dim}, causal\n")
    print("| shape | ctxattn dtype | ctxattn ms | GFLOP/s | torch fp32 ms | torch bf16 ms | vs torch fp32 | vs torch bf16 | reference ms | vs reference |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for shape, dtype, ours, torch_ms, flops in rows:
        ms = ours["cpu"]
        ref = ours.get("cpu_reference")
        ref_cells = f"{ref:.0f} | {ref / ms:.0f}x" if ref else "- | -"
        print(f"| {shape} | {dtype} | {ms:.1f} | {flops / ms / 1e6:.0f} | {torch_ms['fp32']:.1f} | {torch_ms['bf16']:.1f} "
              f"| {torch_ms['fp32'] / ms:.2f}x | {torch_ms['bf16'] / ms:.2f}x | {ref_cells} |")


if __name__ == "__main__":
    main()
