"""What a run leaves behind: the table on stdout, results.csv, results.json and results.png."""

import csv
import json
import math
import os

from bench.runner import is_ctxattn

COLUMNS = (
    "case", "workload", "variant", "in_dtype", "kv_dtype", "out_dtype", "page_size", "batch", "q_tokens",
    "kv_tokens", "qo_heads", "kv_heads", "head_dim", "window_left", "sinks", "gflop", "impl",
    "status", "check", "median_us", "p10_us", "p90_us", "samples", "tflops", "ceiling",
    "pct_ceiling", "vs_best", "vs_best_rounds", "best_peer", "ctxattn_speedup", "exact", "note",
)


def format_header(info, ceilings):
    lines = ["# ctxattn benchmark"]
    width = max(len(k) for k in info)
    for key, value in info.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        lines.append(f"#   {key:<{width}}  {value}")
    for key, (tflops, what) in ceilings.items():
        lines.append(f"#   ceiling {key:<{width - 8}}  {tflops:.{1 if tflops >= 10 else 3}f} TFLOP/s ({what})")
    return "\n".join(lines)


def _num(value, fmt):
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, fmt)


def format_case(rows):
    """One block per case: a title line, then one line per implementation."""
    first = rows[0]
    lines = [f"{first['case']}  ({first['gflop']:.1f} GFLOP, batch {first['batch']}, "
             f"{first['q_tokens']} q / {first['kv_tokens']} kv tokens)"]
    lines.append(f"  {'impl':<19}{'median us':>11} {'p10-p90 us':>19}{'TFLOP/s':>9}{'%ceil':>7}  "
                 f"{'ratio':<28} note / status")
    for r in rows:
        if r.get("status") != "ok":
            lines.append(f"  {r['impl']:<19}{'-':>11} {'':>19}{'':>9}{'':>7}  {'':<28} {r.get('status', '')}")
            continue
        spread = f"{_num(r['p10_us'], '.1f')}-{_num(r['p90_us'], '.1f')}"
        if "vs_best" in r:
            ratio = f"{r['vs_best']:.2f}x best ({r['best_peer']})"
        elif "ctxattn_speedup" in r:
            ratio = f"ctxattn {r['ctxattn_speedup']:.2f}x"
        else:
            ratio = ""
        pct = _num(r.get("pct_ceiling"), ".1f")
        tflops = format(r["tflops"], ".1f" if r["tflops"] >= 10 else ".3f")
        lines.append(f"  {r['impl']:<19}{r['median_us']:>11.1f} {spread:>19}{tflops:>9}{pct:>7}  "
                     f"{ratio:<28} {r.get('note', '')}")
    return "\n".join(lines)


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: r.get(k, "") for k in COLUMNS})


def write_json(path, info, ceilings, rows):
    doc = {
        "header": info,
        "ceilings": {k: {"tflops": v[0], "what": v[1]} for k, v in ceilings.items()},
        "columns": COLUMNS,
        "rows": rows,
    }
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, default=str)
    os.replace(tmp, path)


def write_plot(path, info, ceilings, rows):
    """Bars of TFLOP/s per case and implementation, and each ctxattn variant against the best peer
    (bars in the variant's colour).

    Returns None when written, else why not (matplotlib is optional)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError as e:
        return f"plot skipped: matplotlib is not installed ({e}); `pip install matplotlib` or use `make bench`"
    ok = [r for r in rows if r.get("status") == "ok"]
    if not ok:
        return "plot skipped: no timed rows"
    cases = list(dict.fromkeys(r["case"] for r in ok))
    impls = list(dict.fromkeys(r["impl"] for r in ok))
    by = {(r["case"], r["impl"]): r for r in ok}
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(min(22, max(10, 0.55 * len(cases) + 4)), 9),
                                      gridspec_kw={"height_ratios": [3, 1.3]}, sharex=True)
    width = 0.8 / len(impls)
    cmap = plt.get_cmap("tab10")
    for j, impl in enumerate(impls):
        xs, ys, hatches = [], [], []
        for i, c in enumerate(cases):
            r = by.get((c, impl))
            if r is not None:
                xs.append(i - 0.4 + (j + 0.5) * width)
                ys.append(r["tflops"])
                hatches.append("" if r.get("exact", True) else "//")
        bars = top.bar(xs, ys, width, color=cmap(j % 10))
        for bar, hatch in zip(bars, hatches):
            bar.set_hatch(hatch)
    for key, (tflops, what) in ceilings.items():
        if key in ("bf16", "fp32"):
            top.axhline(tflops, color="grey", linestyle="--", linewidth=1)
            top.text(len(cases) - 0.5, tflops, f" {what}: {tflops:.{0 if tflops >= 10 else 3}f}",
                     va="bottom", ha="right", fontsize=8, color="grey")
    top.set_ylabel("TFLOP/s (exact causal FLOPs)")
    device = info.get("gpu") or info.get("cpu", "")
    top.set_title(f"ctxattn vs peers on {device}, commit {info.get('commit', '?')} "
                  "(hatched: other precision)", fontsize=10)
    top.legend(handles=[Patch(color=cmap(j % 10), label=impl) for j, impl in enumerate(impls)],
               fontsize=8, ncol=min(4, len(impls)))
    ours = [impl for impl in impls if is_ctxattn(impl)]
    for j, impl in enumerate(ours):
        step = 0.6 / len(ours)
        xs, ys = [], []
        for i, c in enumerate(cases):
            v = by[(c, impl)].get("vs_best") if (c, impl) in by else None
            if v:
                xs.append(i - 0.3 + (j + 0.5) * step)
                ys.append(v)
        bottom.bar(xs, ys, step, color=cmap(impls.index(impl) % 10))
    bottom.axhline(1.0, color="black", linewidth=0.8)
    bottom.set_ylabel("ctxattn vs best peer\n(>1: ctxattn faster)")
    bottom.set_xticks(range(len(cases)))
    bottom.set_xticklabels(cases, rotation=60, ha="right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None
