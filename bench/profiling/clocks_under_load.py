"""Sustained calls of each implementation on one workload, with the SM clock and the board power
sampled while they run: is a row limited by the power cap (the clock drops under a long series of
calls) rather than by the kernel's cycles?

    python3 bench/profiling/clocks_under_load.py -w long_32k --impl ctxattn,fa3 --page-size 64 \
        --seconds 4 --rounds 2

Each round runs every implementation in turn for about `--seconds` of back-to-back calls (no L2
flush between them: a sustained series, as an engine's prefill is), timing each call with CUDA
events, while a thread reads NVML every 10 ms. Per implementation and round it prints the median
call, TFLOP/s, the mean SM clock and power over the series' second half (after the clock has
settled), and TFLOP/s per GHz: equal work per cycle at a lower clock points at energy (instructions
and data moved per FLOP), not at the schedule. Needs nvidia-ml-py (pynvml), which the GPU image has.
"""

import argparse
import os
import statistics
import sys
import threading
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench.inputs import build  # noqa: E402
from bench.peers import make_peers  # noqa: E402
from bench.workloads import gpu_suite, select_cases  # noqa: E402


def sampler(handle, samples, stop):
    import pynvml

    while not stop.is_set():
        clock = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
        power = pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0
        samples.append((time.perf_counter(), clock, power))
        time.sleep(0.01)


def sustained(run, seconds):
    """Back-to-back calls for about `seconds`: (call times in µs, start, end wall times)."""
    run()
    torch.cuda.synchronize()
    times = []
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0)
    return times, t0, time.perf_counter()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-w", "--workload", default="long_32k")
    ap.add_argument("--impl", default="ctxattn,fa3")
    ap.add_argument("--page-size", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    import pynvml

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    print(f"# {torch.cuda.get_device_name()}, power limit "
          f"{pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000:.0f} W")

    (case,) = select_cases(gpu_suite(), [args.workload], page_sizes=[args.page_size])
    inp = build(case, "cuda", seed=0)
    prepared = {}
    for peer in make_peers("cuda", args.impl.split(",")):
        reason = peer.available()
        if reason:
            print(f"{peer.name}: unavailable: {reason}")
            continue
        prepared[peer.name] = peer.prepare(inp, peer.strategies(case)[0])
    gflop = case.flops() / 1e9
    print("round impl calls median_us tflops sm_mhz watts tflops_per_ghz")
    for r in range(args.rounds):
        order = list(prepared) if r % 2 == 0 else list(reversed(prepared))
        for name in order:
            samples, stop = [], threading.Event()
            thread = threading.Thread(target=sampler, args=(handle, samples, stop), daemon=True)
            thread.start()
            times, t0, t1 = sustained(prepared[name].run, args.seconds)
            stop.set()
            thread.join()
            half = t0 + (t1 - t0) / 2
            settled = [s for s in samples if half <= s[0] <= t1] or samples
            median = statistics.median(times[len(times) // 2:])
            clock = statistics.mean(s[1] for s in settled)
            watts = statistics.mean(s[2] for s in settled)
            tflops = gflop / median * 1e3  # GFLOP a µs is PFLOP/s
            print(f"{r} {name} {len(times)} {median:.1f} {tflops:.1f} {clock:.0f} {watts:.0f} "
                  f"{tflops / (clock / 1000.0):.1f}", flush=True)
            time.sleep(1.0)


if __name__ == "__main__":
    main()
