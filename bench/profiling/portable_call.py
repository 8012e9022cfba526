"""One ctxattn call and one FA2 call of a BENCH.md workload, for a profiler to attach to.

Usage (GPU machine, repository root):
    ncu --clock-control none -k regex:attention_kernel|flash_fwd \\
        python3 bench/profiling/portable_call.py batch_1k [PAGE]
with CTXATTN_LIBRARY and PYTHONPATH=python set as for bench/portable_vs_fa2.py; for source lines in
the report, point CTXATTN_LIBRARY at a build configured with -DCTXATTN_LINEINFO=ON. Inputs and the
FA2 peer call are those of portable_vs_fa2.py; a warm-up call of each precedes the profiled pair
so that neither includes first-launch costs.
"""

import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import portable_vs_fa2 as gb  # noqa: E402


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "batch_1k"
    page = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    q_lens, kv_lens = gb.WORKLOADS[name]
    p = gb.make_problem(q_lens, kv_lens, page)
    out = torch.empty_like(p["query"])
    workspace = torch.zeros(128 << 20, dtype=torch.uint8, device="cuda")  # docs/api.md "Workspace"
    box = [None]
    run_ctx = gb.ctxattn_call(p, out, workspace)
    run_fa2 = gb.fa2_call(p, box)
    for fn in (run_ctx, run_fa2, run_ctx, run_fa2):
        fn()
    torch.cuda.synchronize()
    diff = (out.float() - box[0].float()).abs().max().item()
    print(f"{name} page {page}: max |ctxattn - FA2| = {diff:.3g}")
    assert math.isfinite(diff) and diff < 0.05, "outputs disagree"


if __name__ == "__main__":
    main()
