"""The skip_softmax workload (BENCH.md): skip-softmax on the GPU against dense attention.

    python3 bench/skip_softmax.py [--shapes long_32k,chunk_128k] [--targets 0.5,0.8] [--rounds 5] [--out DIR]
                                  [--fmha-v2 auto|off]

Inputs whose attention concentrates, built so that the sparsity is a property of the data and not
of the kernel, with RoPE's shape: query i and key j carry, in 16 dimension pairs, a unit rotary pair
at their positions with periods from 16 to 65536 tokens (geometric), scaled so that q_i . k_j /
sqrt(D) = 24 sum_f cos(theta_f (i - j)) / 16 peaks at 24 nats on the diagonal and falls off with
the distance as the periods shorter than it stop contributing, plus N(0, 1) in every other
dimension; the first 64 keys (attention sinks) share a further direction with every query, worth
the diagonal's logit. Far tiles then hold little mass, as in a long-context model's layers.

For each shape: the factor f that skips about each target fraction of the (row group, key tile)
votes is found by bisection on log f (the kernel's own statistics); then, in interleaved rounds
(each round runs every variant once, in a shuffled order, after an L2 flush), dense attention
(f = None), f = 1e-30 (the vote compiled in, nothing skipped) and the calibrated factors are timed
with CUDA events. Printed per variant: the skipped fraction s, the median time, its ratio to
dense, the bound (1 - s / 2) (Q K^T always runs; at D = 128 in 16 bits it is half the work) and how
close the time comes to it, and the error against the dense output (max |diff|, relative L2).

FMHAv2 (TensorRT-LLM's Hopper kernels through FlashInfer's trtllm_fmha_v2_prefill, the open
reference for skip-softmax; bench/build_fmha_v2.sh builds its modules) runs in the same rounds on
the same inputs when its modules load (--fmha-v2 auto), dense and with the same factors: its
threshold is the same f / kv_len, but it counts no skipped tiles, so its rows have no skipped
fraction and no bound (NaN); each is compared with FMHAv2's own dense output and time, and
FMHAv2's dense output with ctxattn's (printed, and fmha_v2_dense_checks in the JSON).
Writes skip_softmax.csv / .json to --out.
"""

import argparse
import csv
import json
import math
import os
import random
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ctxattn  # noqa: E402

SHAPES = {
    # name: (q_len, kv_len, Hq, Hkv, D)
    "long_32k": (32768, 32768, 32, 8, 128),
    "chunk_128k": (512, 131072, 8, 1, 128),
    "long_128k": (131072, 131072, 8, 1, 128),
}
PAGE = 64
SINK_KEYS = 64


def build(shape, peak=24.0, pairs=16, seed=0, dtype=torch.bfloat16, device="cuda"):
    q_len, kv_len, hq, hkv, d = SHAPES[shape]
    gen = torch.Generator(device=device).manual_seed(seed)
    periods = torch.logspace(math.log10(16), math.log10(65536), pairs, device=device)
    theta = 2 * math.pi / periods
    pos_k = torch.arange(kv_len, device=device, dtype=torch.float64)
    pos_q = pos_k[kv_len - q_len:]
    # a^2 * pairs / sqrt(d) = peak on the diagonal; the sinks' direction is worth the same.
    a = math.sqrt(peak * math.sqrt(d) / pairs)
    q = torch.randn(q_len, hq, d, generator=gen, device=device)
    k = torch.randn(kv_len, hkv, d, generator=gen, device=device)
    v = torch.randn(kv_len, hkv, d, generator=gen, device=device)
    for x, pos in ((q, pos_q), (k, pos_k)):
        ang = pos[:, None] * theta[None, :]
        x[:, :, 0:2 * pairs:2] = (a * torch.cos(ang)).float()[:, None, :]
        x[:, :, 1:2 * pairs:2] = (a * torch.sin(ang)).float()[:, None, :]
    boost = math.sqrt(peak * math.sqrt(d))
    q[:, :, 2 * pairs] = boost
    k[:, :, 2 * pairs] = 0.0
    k[:SINK_KEYS, :, 2 * pairs] = boost
    pages = -(-kv_len // PAGE)
    perm = torch.randperm(pages, generator=torch.Generator().manual_seed(seed)).to(device)
    pool = torch.empty(pages, 2, hkv, PAGE, d, dtype=dtype, device=device)
    padded = pages * PAGE
    for i, x in enumerate((k, v)):
        full = torch.zeros(padded, hkv, d, device=device)
        full[:kv_len] = x
        pool[perm, i] = full.view(pages, PAGE, hkv, d).transpose(1, 2).to(dtype)
    return dict(
        query=q.to(dtype), kv_cache=pool, block_tables=perm.view(1, -1).to(torch.int32),
        seq_lens=torch.tensor([kv_len], dtype=torch.int32, device=device), max_q_len=q_len, max_kv_len=kv_len,
        cum_q=torch.tensor([0, q_len], dtype=torch.int32, device=device),
        cum_kv=torch.tensor([0, kv_len], dtype=torch.int32, device=device), scale=1.0 / math.sqrt(d),
        flops=4.0 * d * hq * sum(kv_len - q_len + i + 1 for i in range(q_len)),
    )


def caller(inp):
    workspace = torch.zeros(256 << 20, dtype=torch.uint8, device="cuda")
    out = torch.empty_like(inp["query"])

    def call(factor):
        ctxattn.trtllm_batch_context_with_kv_cache(
            inp["query"], inp["kv_cache"], workspace, inp["block_tables"], inp["seq_lens"], inp["max_q_len"],
            inp["max_kv_len"], inp["scale"], 1.0, 1, inp["cum_q"], inp["cum_kv"], out=out,
            skip_softmax_threshold_scale_factor=factor)
        return out

    def stats():
        torch.cuda.synchronize()
        return ctxattn.skip_softmax_stats(workspace)

    return call, stats


def fmha_v2_call(inp):
    """(FMHAv2's call(factor) on the same inputs, "") or (None, the reason it cannot run here)."""
    from bench import peers_external as ext

    reason = ext.fmha_v2_unavailable()
    if reason is not None:
        return None, reason
    folder = ext.fmha_v2_modules_dir()
    entry = ext.read_fmha_v2_manifest(folder).get(("bf16", "bf16"))
    d = inp["query"].shape[-1]
    if entry is None or d not in entry["head_dims"] or True not in entry["skip_softmax"]:
        return None, f"the FMHAv2 modules in {folder} have no bf16 skip-softmax kernel for head dim {d}"
    prefill = ext.import_flashinfer_prefill()
    ext.use_prebuilt_fmha_v2(prefill, ext.load_fmha_v2_modules(folder))
    out = torch.empty_like(inp["query"])
    return ext.fmha_v2_caller(prefill, inp["query"], inp["kv_cache"], inp["block_tables"], inp["seq_lens"],
                              inp["max_q_len"], inp["max_kv_len"], inp["scale"], 1.0, inp["cum_q"],
                              inp["cum_kv"], out), ""


def skipped_fraction(call, stats, factor):
    call(factor)
    counted, skipped = stats()
    return skipped / counted if counted else 0.0


def calibrate(call, stats, target, lo=-10.0, hi=40.0, steps=18):
    """log f (natural) whose skipped fraction is closest to `target`: the fraction grows with f."""
    best = None
    for _ in range(steps):
        mid = (lo + hi) / 2
        frac = skipped_fraction(call, stats, math.exp(mid))
        if best is None or abs(frac - target) < abs(best[1] - target):
            best = (mid, frac)
        if frac < target:
            lo = mid
        else:
            hi = mid
    return math.exp(best[0]), best[1]


def time_once(fn, flush):
    flush.zero_()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3  # us


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="long_32k,chunk_128k")
    ap.add_argument("--targets", default="0.5,0.8")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3, help="timed calls of each variant a round (median kept)")
    ap.add_argument("--out", default="bench-out/skip_softmax")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--fmha-v2", choices=("auto", "off"), default="auto",
                    help="time FMHAv2 beside ctxattn when its modules load (auto) or not (off)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    print(f"# {props.name}, {props.multi_processor_count} SMs; torch {torch.__version__}; ctxattn {ctxattn.version()}")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows, checks = [], []
    with ctxattn.use_backend(args.backend):
        for shape in args.shapes.split(","):
            inp = build(shape)
            call, stats = caller(inp)
            # (implementation, variant, factor, skipped fraction; NaN where it is not counted)
            variants = [("ctxattn", "dense", None, 0.0),
                        ("ctxattn", "f=1e-30", 1e-30, skipped_fraction(call, stats, 1e-30))]
            for target in (float(t) for t in args.targets.split(",")):
                f, frac = calibrate(call, stats, target)
                variants.append(("ctxattn", f"~{target:.0%}", f, frac))
            calls = {"ctxattn": call}
            if args.fmha_v2 == "auto":
                fmha, reason = fmha_v2_call(inp)
                if fmha is None:
                    print(f"# {shape}: fmha_v2 not timed: {reason}")
                else:
                    calls["fmha_v2"] = fmha
                    variants += [("fmha_v2", name, f, math.nan) for _, name, f, _ in variants]
            dense = {impl: fn(None).clone() for impl, fn in calls.items()}
            if "fmha_v2" in dense:
                diff = dense["fmha_v2"].float() - dense["ctxattn"].float()
                check = dict(shape=shape, max_abs=diff.abs().max().item(),
                             rel_l2=(diff.norm() / dense["ctxattn"].float().norm()).item())
                checks.append(check)
                print(f"# {shape}: fmha_v2 dense against ctxattn dense: max|diff| {check['max_abs']:.2e}, "
                      f"rel L2 {check['rel_l2']:.2e}")
            errors = {}
            for impl, name, f, _ in variants:
                ref = dense[impl].float()
                diff = calls[impl](f).float() - ref
                errors[impl, name] = (diff.abs().max().item(), (diff.norm() / ref.norm()).item())
            times = {(impl, name): [] for impl, name, _, _ in variants}
            for _ in range(2):  # warm-up
                for impl, _, f, _ in variants:
                    calls[impl](f)
            for _ in range(args.rounds):
                order = list(variants)
                random.shuffle(order)
                for impl, name, f, _ in order:
                    fn = calls[impl]
                    times[impl, name].append(
                        statistics.median(time_once(lambda: fn(f), flush) for _ in range(args.reps)))
            for impl, name, f, frac in variants:
                t = statistics.median(times[impl, name])
                ratios = [a / b for a, b in zip(times[impl, name], times[impl, "dense"])]
                bound = 1.0 - frac / 2.0
                row = dict(shape=shape, impl=impl, variant=name, factor=f, skipped=frac, us=t,
                           tflops=inp["flops"] / t / 1e6, vs_dense=statistics.median(ratios), bound=bound,
                           vs_bound=statistics.median(ratios) / bound, max_abs_err=errors[impl, name][0],
                           rel_l2_err=errors[impl, name][1])
                rows.append(row)
            for impl in calls:
                t_dense = statistics.median(times[impl, "dense"])
                print(f"\n{shape}, {impl} (dense {t_dense:.1f} us, {inp['flops'] / t_dense / 1e6:.0f} TFLOP/s)")
                print(f"{'variant':>9} {'factor':>10} {'skipped':>8} {'us':>10} {'x dense':>8} {'bound':>6} "
                      f"{'x bound':>8} {'max|err|':>9} {'rel L2':>9}")
                for r in rows:
                    if r["shape"] != shape or r["impl"] != impl:
                        continue
                    f = "None" if r["factor"] is None else f"{r['factor']:.3g}"
                    print(f"{r['variant']:>9} {f:>10} {r['skipped']:8.3f} {r['us']:10.1f} {r['vs_dense']:8.3f} "
                          f"{r['bound']:6.3f} {r['vs_bound']:8.3f} {r['max_abs_err']:9.2e} {r['rel_l2_err']:9.2e}")
            del inp, call, stats, dense, calls
            torch.cuda.empty_cache()
    with open(os.path.join(args.out, "skip_softmax.json"), "w") as fh:
        json.dump(dict(device=props.name, rows=rows, fmha_v2_dense_checks=checks), fh, indent=1)
    with open(os.path.join(args.out, "skip_softmax.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
