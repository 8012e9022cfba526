"""Serving throughput of transformers' continuous batching with ctxattn and with transformers' own
paged attention paths: `generate_batch` over a few hundred prompts of mixed lengths.

    python -m bench.transformers_throughput --out transformers-out/bench            # 8B-class, H200
    python -m bench.transformers_throughput --size 1b --num-prompts 64 --out DIR     # smaller
    python -m bench.transformers_throughput --device cpu --size tiny --out DIR       # a smoke run

One process builds a Llama-style model from a config with random bf16 weights (8B-class: 32
layers, hidden 4096, 32 query / 8 KV heads of 128, vocabulary 128256) and draws the prompts (token
ids, lengths log-uniform in [--min-prompt, --max-prompt], fixed seed). Every implementation then
serves the same prompts, greedy, exactly --new-tokens each (no EOS), with the same explicit cache
(--block-size, --max-batch-tokens, and blocks for every request at once), after a short warm-up
run. Measured per implementation: wall time of the whole `generate_batch`, output tokens per
second, prompt + output tokens per second, time to first token (from submission, all prompts
submitted at once, so it includes queueing) and the gaps between a request's tokens.

Implementations (--impl, comma list, run in this order): ctxattn (`paged|ctxattn`),
ctxattn-graphs (the same with `use_cuda_graph=True`), sdpa (`paged|sdpa`), eager (`paged|eager`),
flash_attention_2 / flash_attention_3 (`paged|flash_attention_N`, when the package or its kernels
load; else the row says why not). --budget-s skips the implementations that would start after the
budget is spent. Writes results.json, results.csv and results.png (tokens/s, TTFT distribution,
token gaps) to --out, with the machine, versions and commit in results.json.
"""

import argparse
import csv
import gc
import json
import logging
import math
import os
import statistics
import sys
import time

import torch

# Nothing here comes from the hub; a flash path whose kernels would be downloaded fails at once.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import ctxattn  # noqa: E402
import ctxattn.integrations.transformers as cx  # noqa: E402
from bench import envinfo  # noqa: E402
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM  # noqa: E402
from transformers.generation.configuration_utils import ContinuousBatchingConfig  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

SIZES = {
    # Llama-3-8B's shapes.
    "8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=8, head_dim=128, vocab_size=128256),
    # Llama-3.2-1B's shapes with head dim 128.
    "1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=16,
               num_key_value_heads=4, head_dim=128, vocab_size=128256),
    # For the CPU: seconds, not minutes.
    "tiny": dict(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=8,
                 num_key_value_heads=2, head_dim=64, vocab_size=1024),
}

IMPLEMENTATIONS = {
    "ctxattn": (cx.ATTN_IMPLEMENTATION, {}),
    "ctxattn-graphs": (cx.ATTN_IMPLEMENTATION, {"use_cuda_graph": True}),
    "sdpa": ("paged|sdpa", {}),
    "eager": ("paged|eager", {}),
    "flash_attention_2": ("paged|flash_attention_2", {}),
    "flash_attention_3": ("paged|flash_attention_3", {}),
}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="transformers-out/bench")
    p.add_argument("--size", choices=sorted(SIZES), default="8b")
    p.add_argument("--device", default="cuda")
    p.add_argument("--impl", default="ctxattn,sdpa,flash_attention_2")
    p.add_argument("--num-prompts", type=int, default=256)
    p.add_argument("--min-prompt", type=int, default=32)
    p.add_argument("--max-prompt", type=int, default=2048)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--block-size", type=int, default=256)
    p.add_argument("--max-batch-tokens", type=int, default=8192)
    p.add_argument("--budget-s", type=float, default=0.0, help="skip implementations starting after this (0: none)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def build_model(size, device):
    torch.manual_seed(0)
    config = LlamaConfig(max_position_embeddings=8192, **SIZES[size])
    with torch.device(device):
        model = LlamaForCausalLM._from_config(config, dtype=torch.bfloat16)
    return model.eval()


def draw_prompts(args, vocab):
    g = torch.Generator().manual_seed(args.seed)
    lo, hi = math.log(args.min_prompt), math.log(args.max_prompt)
    lengths = torch.exp(torch.rand(args.num_prompts, generator=g, dtype=torch.float64) * (hi - lo) + lo)
    return [torch.randint(0, vocab, (int(n),), generator=g).tolist() for n in lengths.round().long()]


def cb_config(args, prompts, extra):
    blocks = sum(-(-(len(p) + args.new_tokens) // args.block_size) for p in prompts)
    return ContinuousBatchingConfig(block_size=args.block_size, max_batch_tokens=args.max_batch_tokens,
                                    num_blocks=blocks + len(prompts), **extra)


def sync(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else float("nan")


def serve(model, implementation, extra, args, prompts, progress):
    """(wall seconds, outputs) of one greedy generate_batch."""
    model.set_attn_implementation(implementation)
    config = GenerationConfig(max_new_tokens=args.new_tokens, do_sample=False, eos_token_id=None, pad_token_id=0)
    sync(args.device)
    start = time.perf_counter()
    outputs = model.generate_batch(prompts, generation_config=config, continuous_batching_config=cb_config(
        args, prompts, extra), record_timestamps=True, progress_bar=progress)
    sync(args.device)
    return time.perf_counter() - start, list(outputs.values())


def measure(model, name, args, prompts):
    implementation, extra = IMPLEMENTATIONS[name]
    row = {"impl": name, "attn_implementation": implementation, **{k: str(v) for k, v in extra.items()}}
    try:
        serve(model, implementation, extra, args, prompts[:4], False)  # warm-up: kernels, allocator, graphs
        wall, outputs = serve(model, implementation, extra, args, prompts, True)
    except Exception as e:  # an implementation that does not load here (flash without its package)
        row["status"] = f"skipped: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
        return row, None
    failed = [o.request_id for o in outputs if o.error is not None]
    generated = sum(len(o.generated_tokens) for o in outputs)
    prompt_tokens = sum(len(o.prompt_ids) for o in outputs)
    ttft = [o.timestamps[0] - o.created_time for o in outputs if o.timestamps]
    gaps = [b - a for o in outputs if o.timestamps for a, b in zip(o.timestamps, o.timestamps[1:])]
    row.update(
        status="ok" if not failed and len(outputs) == len(prompts) else f"{len(failed)} failed, {len(outputs)} returned",
        wall_s=round(wall, 3),
        output_tokens=generated,
        output_tok_s=round(generated / wall, 1),
        total_tok_s=round((generated + prompt_tokens) / wall, 1),
        ttft_p50_s=round(percentile(ttft, 0.5), 4),
        ttft_p90_s=round(percentile(ttft, 0.9), 4),
        ttft_mean_s=round(statistics.fmean(ttft), 4) if ttft else float("nan"),
        token_gap_p50_ms=round(1e3 * percentile(gaps, 0.5), 3),
        token_gap_p90_ms=round(1e3 * percentile(gaps, 0.9), 3),
    )
    return row, {"ttft": ttft, "tokens": [o.generated_tokens for o in outputs]}


def plot(rows, series, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ran = [r for r in rows if r["impl"] in series]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    names = [r["impl"] for r in ran]
    axes[0].bar(names, [r["output_tok_s"] for r in ran], color="tab:blue")
    axes[0].set_ylabel("output tokens / s")
    axes[0].set_title("throughput (higher is better)")
    for name in names:
        ttft = sorted(series[name]["ttft"])
        axes[1].plot(ttft, [(i + 1) / len(ttft) for i in range(len(ttft))], label=name)
    axes[1].set_xlabel("time to first token (s, from submission)")
    axes[1].set_ylabel("fraction of requests")
    axes[1].set_title("TTFT distribution (left is better)")
    axes[1].legend()
    width = 0.38
    x = range(len(ran))
    axes[2].bar([i - width / 2 for i in x], [r["token_gap_p50_ms"] for r in ran], width, label="p50")
    axes[2].bar([i + width / 2 for i in x], [r["token_gap_p90_ms"] for r in ran], width, label="p90")
    axes[2].set_xticks(list(x), names)
    axes[2].set_ylabel("ms between a request's tokens")
    axes[2].set_title("token gaps (lower is better)")
    axes[2].legend()
    for ax in axes:
        ax.tick_params(axis="x", labelrotation=15)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_results(args, info, workload, rows, series):
    """results.json, results.csv and results.png as far as the run has come (rewritten after each
    implementation, so a run cut short keeps what it measured)."""
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"env": info, "workload": workload, "results": rows}, f, indent=2)
    fields = sorted({k for r in rows for k in r}, key=lambda k: (k != "impl", k != "status", k))
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    if series:
        title = (f"transformers {info['transformers']} generate_batch, Llama {args.size} random bf16, "
                 f"{args.num_prompts} prompts ({args.min_prompt}-{args.max_prompt} tokens) x {args.new_tokens} new; "
                 f"{info.get('gpu', info.get('cpu'))}; commit {info['commit']}")
        plot(rows, series, os.path.join(args.out, "results.png"), title)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    hf_logging.set_verbosity_error()
    logging.getLogger("ContinuousBatchingLogger").setLevel(logging.ERROR)  # one EOS notice per call
    os.makedirs(args.out, exist_ok=True)
    names = [n.strip() for n in args.impl.split(",") if n.strip()]
    unknown = [n for n in names if n not in IMPLEMENTATIONS]
    if unknown:
        raise SystemExit(f"--impl: unknown {unknown}; choose from {sorted(IMPLEMENTATIONS)}")
    cuda = torch.device(args.device).type == "cuda"
    info = envinfo.collect(args.device, argv)
    info["command"] = "python -m bench.transformers_throughput " + " ".join(argv)
    info["transformers"] = envinfo._version("transformers")

    start = time.perf_counter()
    model = build_model(args.size, args.device)
    prompts = draw_prompts(args, SIZES[args.size]["vocab_size"])
    lengths = [len(p) for p in prompts]
    workload = {k: getattr(args, k) for k in ("size", "num_prompts", "min_prompt", "max_prompt", "new_tokens",
                                              "block_size", "max_batch_tokens", "seed")}
    workload["prompt_tokens"] = sum(lengths)
    print(f"model {args.size} on {args.device} built in {time.perf_counter() - start:.1f} s; {len(prompts)} prompts, "
          f"{sum(lengths)} prompt tokens (median {int(statistics.median(lengths))}), {args.new_tokens} new tokens "
          f"each; ctxattn {ctxattn.version()} from {ctxattn.library_path()}", flush=True)

    rows, series = [], {}
    for name in names:
        if args.budget_s and time.perf_counter() - start > args.budget_s:
            rows.append({"impl": name, "status": f"skipped: budget of {args.budget_s:.0f} s spent"})
            continue
        row, data = measure(model, name, args, prompts)
        if data is not None:
            series[name] = data
            if "ctxattn" in series and name != "ctxattn":
                row["same_tokens_as_ctxattn"] = sum(
                    a == b for a, b in zip(series["ctxattn"]["tokens"], data["tokens"])) / len(prompts)
        rows.append(row)
        print(json.dumps(row), flush=True)
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()
            info["gpu_at_end"] = envinfo.gpu_state()
        write_results(args, info, workload, rows, series)
    print(f"wrote {args.out}/results.json, results.csv, results.png in {time.perf_counter() - start:.1f} s")
    return 0 if all(r.get("status", "").startswith(("ok", "skipped")) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
