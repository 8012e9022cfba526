"""The standard suite: stable workload names, their shapes, and the exact work each one does.

A `Workload` is a shape family (lengths, heads, head dim, mask); a `Case` is one workload at one
input dtype and one page size, which is what gets built, checked and timed. Names never change, so
numbers can be compared across versions; the GPU suite is the one of BENCH.md, the CPU suite keeps
the names but shrinks the shapes so that one call takes a fraction of a second on 2 cores.
"""

import dataclasses
import math
import random

DTYPES_16 = ("bf16", "fp16")
DEFAULT_PAGE_SIZES = (64, 16)


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str
    q_lens: tuple
    kv_lens: tuple
    num_qo_heads: int = 32
    num_kv_heads: int = 8
    head_dim: int = 128
    window_left: int = -1
    sinks: bool = False
    # "16": the run's 16-bit dtype for Q/KV/out; "fp8": e4m3 Q/KV with 16-bit out;
    # "fp8_nvfp4": e4m3 Q/KV with nvfp4 out; "fp8_kv": 16-bit Q and out over an e4m3 KV cache;
    # "nvfp4_kv": e4m3 Q and 16-bit out over an NVFP4 KV cache (SPEC 8.1).
    precision: str = "16"
    # "shared": one block table for K and V; "trtllm_pool": TensorRT-LLM's form of separate K / V
    # page indices, the pool passed twice (K page p at 2p, V at 2p + 1) with a [B, 2, M] table.
    kv_form: str = "shared"
    page_sizes: tuple = DEFAULT_PAGE_SIZES
    # For workloads that repeat another one's shape at another precision (fp8, nvfp4_out).
    variant: str = ""

    @property
    def batch_size(self):
        return len(self.q_lens)

    @property
    def uniform(self):
        """Every request has the same query length and the same KV length."""
        return len(set(self.q_lens)) == 1 and len(set(self.kv_lens)) == 1

    def label(self):
        return f"{self.name}.{self.variant}" if self.variant else self.name


@dataclasses.dataclass(frozen=True)
class Case:
    workload: Workload
    dtype: str       # 16-bit dtype of the run: "bf16" or "fp16"
    page_size: int

    @property
    def in_dtype(self):
        """The query's dtype."""
        return "fp8" if self.workload.precision in ("fp8", "fp8_nvfp4", "nvfp4_kv") else self.dtype

    @property
    def kv_dtype(self):
        """The KV cache's dtype."""
        if self.workload.precision == "nvfp4_kv":
            return "nvfp4"
        return "fp8" if self.workload.precision.startswith("fp8") else self.dtype

    @property
    def fp8_inputs(self):
        """Some input is e4m3 (the fp8 tolerances apply)."""
        return "fp8" in (self.in_dtype, self.kv_dtype)

    @property
    def out_dtype(self):
        return "nvfp4" if self.workload.precision == "fp8_nvfp4" else self.dtype

    @property
    def id(self):
        w = self.workload
        kv = "" if self.kv_dtype == self.in_dtype else f"+{self.kv_dtype}kv"
        return f"{w.label()}/{self.in_dtype}{kv}->{self.out_dtype}/p{self.page_size}"

    def flops(self):
        return attention_flops(self.workload)


def allowed_pairs(q_len, kv_len, window_left=-1, causal=True):
    """(query, key) pairs the mask allows for one request and one head, counted exactly.

    Bottom-right causal: row i sees keys j <= p with p = kv_len - q_len + i, and with a window
    also j >= p - window_left, i.e. min(p + 1, window_left + 1) keys.
    """
    if q_len == 0:
        return 0
    if not causal:
        return q_len * kv_len
    first = kv_len - q_len + 1          # keys seen by row 0
    last = kv_len                       # keys seen by the last row
    total = (first + last) * q_len // 2
    if window_left < 0:
        return total
    cap = window_left + 1
    if first >= cap:
        return cap * q_len
    # rows whose unwindowed count is still below the cap keep it; the rest see exactly `cap`
    rows_below = min(q_len, cap - first)
    below = (first + first + rows_below - 1) * rows_below // 2
    return below + cap * (q_len - rows_below)


def attention_flops(w):
    """BENCH.md: 4 * D * allowed pairs, summed over requests and query heads."""
    pairs = sum(allowed_pairs(q, k, w.window_left) for q, k in zip(w.q_lens, w.kv_lens))
    return 4 * w.head_dim * w.num_qo_heads * pairs


def ragged_lengths(count, low, high, seed):
    """Log-uniform lengths in [low, high] from a fixed seed (identical on every machine)."""
    rng = random.Random(seed)
    lo, hi = math.log(low), math.log(high)
    return tuple(int(round(math.exp(lo + rng.random() * (hi - lo)))) for _ in range(count))


RAGGED_SEED = 20261129


def _uniform(n, q, kv=None):
    return (q,) * n, ((kv if kv is not None else q),) * n


def gpu_suite():
    """BENCH.md's standard suite at its true size (built on CUDA only)."""
    ragged = ragged_lengths(32, 16, 4096, RAGGED_SEED)
    return _suite(
        long=_uniform(1, 8192), long32=_uniform(1, 32768), batch4=_uniform(4, 4096),
        batch1=_uniform(16, 1024), short=_uniform(64, 256), ragged=(ragged, ragged),
        chunk=_uniform(8, 512, 4096), chunk_long=_uniform(1, 512, 131072),
        chunk_long_batch=((512,) * 4, (32768, 65536, 98304, 131072)),
        d64=_uniform(1, 8192), d256=_uniform(1, 8192), heads=(32, 8, 64, 8, 16, 4, 8, 1))


def cpu_suite():
    """The same names at sizes for 2 cores: 4x shorter sequences, a quarter of the heads."""
    ragged = ragged_lengths(8, 16, 1024, RAGGED_SEED)
    return _suite(
        long=_uniform(1, 2048), long32=_uniform(1, 4096), batch4=_uniform(4, 512),
        batch1=_uniform(16, 128), short=_uniform(16, 64), ragged=(ragged, ragged),
        chunk=_uniform(4, 128, 1024), chunk_long=_uniform(1, 128, 8192),
        chunk_long_batch=((128,) * 4, (2048, 4096, 6144, 8192)),
        d64=_uniform(1, 2048), d256=_uniform(1, 2048), heads=(8, 2, 16, 2, 4, 1, 8, 1))


def _suite(long, long32, batch4, batch1, short, ragged, chunk, chunk_long, chunk_long_batch, d64, d256,
           heads):
    hq, hkv, hq64, hkv64, hq256, hkv256, hq_tp8, hkv_tp8 = heads
    base = dict(num_qo_heads=hq, num_kv_heads=hkv)
    d64_heads = dict(num_qo_heads=hq64, num_kv_heads=hkv64, head_dim=64)
    return [
        Workload("long_8k", *long, **base),
        Workload("long_32k", *long32, **base),
        Workload("batch_4k", *batch4, **base),
        Workload("batch_1k", *batch1, **base),
        Workload("short_256", *short, **base),
        Workload("ragged", *ragged, **base),
        Workload("chunk_prefix", *chunk, **base),
        Workload("chunk_long_tp8", *chunk_long, num_qo_heads=hq_tp8, num_kv_heads=hkv_tp8),
        Workload("chunk_long_tp8_batch", *chunk_long_batch, num_qo_heads=hq_tp8, num_kv_heads=hkv_tp8),
        Workload("d64", *d64, **d64_heads),
        Workload("d64_sinks_swa", *d64, window_left=127, sinks=True, **d64_heads),
        Workload("d64_sinks", *d64, sinks=True, **d64_heads),
        Workload("d256", *d256, num_qo_heads=hq256, num_kv_heads=hkv256, head_dim=256),
        # Gemma-4's full-attention layers (BENCH.md d512): d256's shape at head dim 512.
        Workload("d512", *d256, num_qo_heads=hq256, num_kv_heads=hkv256, head_dim=512),
        Workload("page1", *ragged, page_sizes=(1,), **base),
        Workload("fp8", *long, precision="fp8", variant="long_8k", **base),
        Workload("fp8", *batch1, precision="fp8", variant="batch_1k", **base),
        Workload("fp8", *d256, precision="fp8", variant="d256", num_qo_heads=hq256, num_kv_heads=hkv256,
                 head_dim=256),
        Workload("fp8", *d256, precision="fp8", variant="d512", num_qo_heads=hq256, num_kv_heads=hkv256,
                 head_dim=512),
        Workload("nvfp4_out", *long, precision="fp8_nvfp4", **base),
        Workload("fp8_kv", *long, precision="fp8_kv", variant="long_8k", **base),
        Workload("fp8_kv", *batch1, precision="fp8_kv", variant="batch_1k", **base),
        Workload("nvfp4_kv", *long, precision="nvfp4_kv", variant="long_8k", **base),
        Workload("nvfp4_kv", *batch1, precision="nvfp4_kv", variant="batch_1k", **base),
        Workload("trtllm_pool", *batch1, kv_form="trtllm_pool", **base),
    ]


WORKLOAD_NAMES = tuple(dict.fromkeys(w.name for w in gpu_suite()))


def shrink(w, factor):
    """The same workload with every length divided by `factor` (at least 1 token), for dry runs."""
    q = tuple(max(1, n // factor) for n in w.q_lens)
    kv = tuple(max(qi, n // factor) for qi, n in zip(q, w.kv_lens))
    return dataclasses.replace(w, q_lens=q, kv_lens=kv)


def select_cases(suite, names=None, dtypes=DTYPES_16[:1], page_sizes=None):
    """Cases of `suite` for the given names (None: all), 16-bit dtypes and page sizes.

    `page_sizes` overrides each workload's own list, except for page1 whose point is page size 1.
    """
    unknown = set(names or ()) - set(WORKLOAD_NAMES)
    if unknown:
        raise ValueError(f"unknown workload(s) {sorted(unknown)}; known: {', '.join(WORKLOAD_NAMES)}")
    for d in dtypes:
        if d not in DTYPES_16:
            raise ValueError(f"--dtype takes {' or '.join(DTYPES_16)}, got {d!r}")
    cases = []
    for w in suite:
        if names and w.name not in names:
            continue
        sizes = w.page_sizes if (page_sizes is None or w.name == "page1") else page_sizes
        for d in dtypes:
            for n in sizes:
                cases.append(Case(w, d, n))
    return cases
