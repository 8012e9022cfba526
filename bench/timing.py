"""Timers and ceilings.

CUDA: warm up, then time each call alone between two CUDA events with the L2 flushed before it
(the flush is outside the events), and report the median. CPU: warm up, then wall-clock each call
and report the median. Both keep going until a time target or an iteration cap is reached, so
short calls get many samples and long ones a few.
"""

import dataclasses
import statistics
import time

import torch

GEMM_SIZE_CUDA = 8192
GEMM_SIZE_CPU = 2048
# Larger than the L2 of any current GPU (60 MB on an H200), so zeroing it evicts the inputs.
FLUSH_BYTES = 256 * 2**20


@dataclasses.dataclass
class Timing:
    median_us: float
    p10_us: float
    p90_us: float
    samples: int


def _summary(times_us):
    times_us = sorted(times_us)
    n = len(times_us)
    return Timing(statistics.median(times_us), times_us[int(0.1 * (n - 1))],
                  times_us[int(round(0.9 * (n - 1)))], n)


class CudaTimer:
    def __init__(self, device, warmup_ms=50.0, target_ms=300.0, min_iters=10, max_iters=500, flush=True):
        self.device = torch.device(device)
        self.warmup_ms = warmup_ms
        self.target_ms = target_ms
        self.min_iters = min_iters
        self.max_iters = max_iters
        self.flush_buffer = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=self.device) if flush else None

    def _flush(self):
        if self.flush_buffer is not None:
            self.flush_buffer.zero_()

    def _estimate_ms(self, fn):
        """Warm-up calls (at least 3, about warmup_ms of GPU time); their mean time per call."""
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        fn()
        torch.cuda.synchronize(self.device)
        spent, calls = 0.0, 0
        while calls < 3 or (spent < self.warmup_ms and calls < self.max_iters):
            self._flush()
            start.record()
            fn()
            end.record()
            end.synchronize()
            spent += start.elapsed_time(end)
            calls += 1
        return spent / calls

    def time(self, fn):
        per_call = max(self._estimate_ms(fn), 1e-3)
        iters = int(min(self.max_iters, max(self.min_iters, self.target_ms / per_call)))
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        for s, e in zip(starts, ends):
            self._flush()
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize(self.device)
        return _summary([s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)])


class CpuTimer:
    def __init__(self, warmup=1, target_s=2.0, min_iters=3, max_iters=50):
        self.warmup = warmup
        self.target_s = target_s
        self.min_iters = min_iters
        self.max_iters = max_iters

    def time(self, fn):
        for _ in range(self.warmup):
            fn()
        times, t_start = [], time.perf_counter()
        while len(times) < self.min_iters or (
                time.perf_counter() - t_start < self.target_s and len(times) < self.max_iters):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e6)
        return _summary(times)


def make_timer(device, quick=False):
    device = torch.device(device)
    if device.type == "cuda":
        if quick:
            return CudaTimer(device, warmup_ms=5.0, target_ms=20.0, min_iters=3, max_iters=20)
        return CudaTimer(device)
    if quick:
        return CpuTimer(warmup=1, target_s=0.0, min_iters=1, max_iters=1)
    return CpuTimer()


def gemm_ceiling(timer, device, dtype):
    """(TFLOP/s, description) of one square matrix product on `device` in `dtype` ("bf16", "fp16",
    "fp32", or "fp8" through torch._scaled_mm with unit scales and bf16 output)."""
    device = torch.device(device)
    n = GEMM_SIZE_CUDA if device.type == "cuda" else GEMM_SIZE_CPU
    gen = torch.Generator(device=device).manual_seed(7)
    if dtype == "fp8":
        a = torch.randn(n, n, generator=gen, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, generator=gen, device=device).to(torch.float8_e4m3fn).t()
        one = torch.ones((), device=device)

        def fn():
            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        what = f"torch._scaled_mm e4m3 {n}^3"
    else:
        tdt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype]
        a = torch.randn(n, n, generator=gen, device=device, dtype=tdt)
        b = torch.randn(n, n, generator=gen, device=device, dtype=tdt)
        out = torch.empty(n, n, device=device, dtype=tdt)

        def fn():
            return torch.matmul(a, b, out=out)
        what = f"torch.matmul {dtype} {n}^3"
    t = timer.time(fn)
    return 2.0 * n**3 / (t.median_us * 1e-6) / 1e12, what
