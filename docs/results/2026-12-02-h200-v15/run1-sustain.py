"""Why the harness's long_8k (about 950 us) is slower than ctxattn_gpu_bench's (about 850):
the same prepared call timed three ways -- back to back as the harness does (flush, events, no
sync), one call at a time with a sync after each (as the tool does), and back to back without
the flush -- for ctxattn (and FA3 when importable), on the harness's own inputs."""
import sys, time, statistics, os
import torch
sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.join(os.getcwd(), "python"))
from bench.workloads import gpu_suite, select_cases
from bench.inputs import build
from bench.peers import make_peers

dev = torch.device("cuda")
names = sys.argv[1].split(",")
impls = sys.argv[2].split(",")
flush = torch.empty(256 * 2**20, dtype=torch.uint8, device=dev)
def timed(fn, iters, mode):
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for s, e in ev:
        if mode != "noflush":
            flush.zero_()
        s.record(); fn(); e.record()
        if mode == "sync":
            e.synchronize()
    torch.cuda.synchronize()
    t = sorted(s.elapsed_time(e) * 1e3 for s, e in ev)
    return f"median {statistics.median(t):7.1f} p10 {t[len(t)//10]:7.1f} p90 {t[9*len(t)//10]:7.1f} first5 {' '.join(f'{x:.0f}' for x in [s.elapsed_time(e)*1e3 for s, e in ev][:5])}"
for case in select_cases(gpu_suite(), names, ["bf16"], [64]):
    inp = build(case, dev, seed=0)
    for peer in make_peers("cuda", impls):
        try:
            prep = peer.prepare(inp, peer.strategies(case)[0])
        except Exception as e:
            print(case.id, peer.name, "prepare failed", e); continue
        for _ in range(5): prep.run()
        torch.cuda.synchronize()
        for mode in ("b2b", "sync", "noflush", "b2b"):
            print(f"{case.id:28s} {peer.name:10s} {mode:8s} {timed(prep.run, 200, mode)}", flush=True)
            time.sleep(1.0)
