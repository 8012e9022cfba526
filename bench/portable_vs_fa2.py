"""Times the portable CUDA backend against torch's FlashAttention-2 on the BENCH.md workloads.

Usage (on a GPU machine, from the repository root, after building the library):
    CTXATTN_LIBRARY=build-cuda/libctxattn.so PYTHONPATH=python python3 bench/portable_vs_fa2.py [--out DIR]

ctxattn reads K/V through the paged cache (page sizes 16 and 64, pages permuted); FA2
(torch.ops.aten._flash_attention_forward, varlen, bottom-right causal) reads the same K/V
gathered into contiguous memory outside the timed region. Each call is captured 10 times into a
CUDA graph (no host overhead in the numbers); the graph is replayed 20 times after a warm-up and
the median per-call time is reported. Every ctxattn output is checked against FA2 first.
"""

import argparse
import itertools
import json
import math
import os
import subprocess
import sys

import torch

import ctxattn

WORKLOADS = {
    # name: (q_lens, kv_lens); GQA 32/8, D = 128, bf16, causal
    "long_8k": ([8192], [8192]),
    "batch_1k": ([1024] * 16, [1024] * 16),
    "chunk_prefix": ([512] * 8, [4096] * 8),
}
HQ, HKV, D = 32, 8, 128
CALLS_PER_GRAPH = 10
REPLAYS = 20


def causal_pairs(q_lens, kv_lens):
    return sum(q * (k - q) + q * (q + 1) // 2 for q, k in zip(q_lens, kv_lens))


def make_problem(q_lens, kv_lens, page_size, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    dev = "cuda"
    batch = len(q_lens)
    total_q = sum(q_lens)
    query = torch.randn(total_q, HQ, D, device=dev, dtype=torch.bfloat16, generator=g)
    pages_per = [math.ceil(k / page_size) for k in kv_lens]
    num_pages = sum(pages_per)
    k_cache = torch.randn(num_pages, HKV, page_size, D, device=dev, dtype=torch.bfloat16, generator=g)
    v_cache = torch.randn(num_pages, HKV, page_size, D, device=dev, dtype=torch.bfloat16, generator=g)
    perm = torch.randperm(num_pages, device=dev, generator=g).to(torch.int32)
    max_pages = max(pages_per)
    block_tables = torch.zeros(batch, max_pages, dtype=torch.int32, device=dev)
    start = 0
    for b, n in enumerate(pages_per):
        block_tables[b, :n] = perm[start:start + n]
        start += n
    seq_lens = torch.tensor(kv_lens, dtype=torch.int32, device=dev)
    cu_q = torch.tensor([0] + list(itertools.accumulate(q_lens)), dtype=torch.int32, device=dev)
    cu_kv = torch.tensor([0] + list(itertools.accumulate(kv_lens)), dtype=torch.int32, device=dev)
    # Contiguous K/V for FA2: [total_kv, HKV, D].
    ks, vs = [], []
    for b, kv in enumerate(kv_lens):
        pages = block_tables[b, :pages_per[b]].long()
        ks.append(k_cache[pages].permute(0, 2, 1, 3).reshape(-1, HKV, D)[:kv])
        vs.append(v_cache[pages].permute(0, 2, 1, 3).reshape(-1, HKV, D)[:kv])
    return dict(query=query, k_cache=k_cache, v_cache=v_cache, block_tables=block_tables, seq_lens=seq_lens,
                cu_q=cu_q, cu_kv=cu_kv, k=torch.cat(ks).contiguous(), v=torch.cat(vs).contiguous(),
                max_q=max(q_lens), max_kv=max(kv_lens), batch=batch)


def ctxattn_call(p, out, workspace):
    def run():
        ctxattn.trtllm_batch_context_with_kv_cache(
            p["query"], (p["k_cache"], p["v_cache"]), workspace, p["block_tables"], p["seq_lens"], p["max_q"],
            p["max_kv"], 1.0 / math.sqrt(D), 1.0, p["batch"], p["cu_q"], p["cu_kv"], out=out, kv_layout="HND")
    return run


def fa2_call(p, box):
    def run():
        box[0] = torch.ops.aten._flash_attention_forward(
            p["query"], p["k"], p["v"], p["cu_q"], p["cu_kv"], p["max_q"], p["max_kv"], 0.0, True, False,
            scale=1.0 / math.sqrt(D))[0]
    return run


def time_graph(fn):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(CALLS_PER_GRAPH):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPLAYS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / CALLS_PER_GRAPH)
    times.sort()
    return times[len(times) // 2]


def header():
    props = torch.cuda.get_device_properties(0)
    try:
        commit = subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], text=True,
                                         stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.CalledProcessError):
        commit = os.environ.get("CTXATTN_COMMIT", "unknown")
    return {"gpu": props.name, "sms": props.multi_processor_count, "torch": torch.__version__,
            "cuda": torch.version.cuda, "commit": commit}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None, help="folder for results.json")
    ap.add_argument("--pages", default="16,64")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="comma list of workload names")
    args = ap.parse_args()
    info = header()
    print(f"# {info}")
    rows = []
    workspace = torch.zeros(128 << 20, dtype=torch.uint8, device="cuda")  # docs/api.md "Workspace"
    print(f"{'workload':14s} {'page':>4s} {'ctxattn us':>11s} {'TFLOP/s':>8s} {'FA2 us':>9s} {'TFLOP/s':>8s} "
          f"{'ratio':>6s} {'maxdiff':>8s}")
    for name in args.workloads.split(","):
        q_lens, kv_lens = WORKLOADS[name]
        flops = 4.0 * D * HQ * causal_pairs(q_lens, kv_lens)
        for page in [int(x) for x in args.pages.split(",")]:
            p = make_problem(q_lens, kv_lens, page)
            out = torch.empty_like(p["query"])
            box = [None]
            ctxattn_call(p, out, workspace)()
            fa2_call(p, box)()
            torch.cuda.synchronize()
            maxdiff = (out.float() - box[0].float()).abs().max().item()
            ours = time_graph(ctxattn_call(p, out, workspace))
            fa2 = time_graph(fa2_call(p, box))
            row = dict(workload=name, page_size=page, ctxattn_us=ours, fa2_us=fa2,
                       ctxattn_tflops=flops / ours / 1e6, fa2_tflops=flops / fa2 / 1e6, ratio=fa2 / ours,
                       maxdiff=maxdiff)
            rows.append(row)
            print(f"{name:14s} {page:4d} {ours:11.1f} {row['ctxattn_tflops']:8.1f} {fa2:9.1f} "
                  f"{row['fa2_tflops']:8.1f} {row['ratio']:6.2f} {maxdiff:8.4f}", flush=True)
            del p, out, box
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "bench_portable.json"), "w") as f:
            json.dump({"header": info, "rows": rows}, f, indent=1)
    bad = [r for r in rows if not r["maxdiff"] < 0.05]
    if bad:
        print(f"ERROR: {len(bad)} workloads differ from FA2 by more than 0.05", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
