"""Builds the tensors of one case: query, a paged KV cache with permuted pages, block tables and
lengths for ctxattn and the paged peers, and the same KV gathered into contiguous memory for the
peers that need it (built on request, outside any timed region).

Every implementation sees the same values: the paged cache is filled first, and the contiguous KV
is a copy of it read through the block table.
"""

import dataclasses
import math

import torch

from bench.workloads import Case, Workload

TORCH_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8": torch.float8_e4m3fn}

# The check instance: ragged, kv_len > q_len for three of four requests (one equal), a single-row
# request, and lengths that leave partial pages.
CHECK_Q_LENS = (1, 37, 64, 100)
CHECK_KV_LENS = (129, 37, 200, 300)
# A narrow window makes a one-key misalignment of the band visible within the tolerances.
CHECK_WINDOW = 5
# Large enough that a missing or doubled sink term moves the output beyond the tolerances.
SINK_MEAN = 3.0
# A softmax scale other than 1/sqrt(D), so that a peer dropping the scale fails the check.
CHECK_SCALE_FACTOR = 1.3
# Extra pool pages that no request uses, so that the pool is not exactly the pages in the tables.
SPARE_PAGES = 3


@dataclasses.dataclass
class Inputs:
    case: Case
    device: torch.device
    query: torch.Tensor            # [T, Hq, D], in_dtype
    kv_cache: torch.Tensor         # [P, 2, Hkv, N, D] (HND), kv_dtype
    block_tables: torch.Tensor     # int32 [B, max_pages]
    seq_lens: torch.Tensor         # int32 [B]
    cum_seq_lens_q: torch.Tensor   # int32 [B+1]
    cum_seq_lens_kv: torch.Tensor  # int32 [B+1]
    sinks: object                  # float32 [Hq] or None
    bmm1_scale: float
    bmm2_scale: float
    o_sf_scale: float
    window_left: int
    # NVFP4 caches: the e4m3 block scales [P, 2, Hkv, N, D/16] (V's interleaved), the global
    # scales (K's, V's) that ctxattn's call folds into bmm1 / bmm2_scale, and the decoded cache in
    # float32 (e2m1 x block scale x global scale) for the reference and the peers that read
    # gathered KV with the plain scales.
    kv_cache_sf: object = None
    kv_global_scales: tuple = (1.0, 1.0)
    kv_decoded: object = None
    _gathered: tuple = None

    @property
    def workload(self) -> Workload:
        return self.case.workload

    @property
    def q_lens(self):
        return self.workload.q_lens

    @property
    def kv_lens(self):
        return self.workload.kv_lens

    @property
    def max_q_len(self):
        return max(self.q_lens)

    @property
    def max_kv_len(self):
        return max(self.kv_lens)

    @property
    def out_torch_dtype(self):
        return TORCH_DTYPES[self.case.dtype]

    def gathered(self):
        """(k, v), each [sum(kv_lens), Hkv, D] contiguous, in the cache's dtype; cached."""
        if self._gathered is None:
            cache = self.kv_decoded if self.kv_decoded is not None else self.kv_cache
            self._gathered = gather_kv(cache, self.block_tables, self.kv_lens)
        return self._gathered


def gather_kv(kv_cache, block_tables, kv_lens):
    """Reads each request's KV through its block table into [sum(kv_lens), Hkv, D] per K and V."""
    page = kv_cache.shape[3]
    parts_k, parts_v = [], []
    tables = block_tables.cpu()
    for b, n in enumerate(kv_lens):
        pages = tables[b, : math.ceil(n / page)].to(kv_cache.device, torch.long)
        # [pages, 2, Hkv, N, D] -> [2, pages * N, Hkv, D]
        chunk = kv_cache.index_select(0, pages).permute(1, 0, 3, 2, 4)
        chunk = chunk.reshape(2, -1, kv_cache.shape[2], kv_cache.shape[4])[:, :n]
        parts_k.append(chunk[0])
        parts_v.append(chunk[1])
    return torch.cat(parts_k).contiguous(), torch.cat(parts_v).contiguous()


def _random(shape, dtype, device, gen, scale=1.0):
    """Normal values, made in bf16/fp16/fp32 and cast (fp8 goes through float32)."""
    if dtype == torch.float8_e4m3fn:
        return (torch.randn(shape, generator=gen, device=device) * scale).to(dtype)
    return (torch.randn(shape, generator=gen, device=device, dtype=torch.float32) * scale).to(dtype)


def build(case, device, seed=0, check=False, true_size=True):
    """All tensors of `case` on `device`.

    `true_size` marks the suite's real shapes: those are only built on CUDA, so that a typo on a
    CPU machine fails fast instead of allocating gigabytes. `check` scales the softmax scale by
    CHECK_SCALE_FACTOR so that a peer ignoring the scale fails its check.
    """
    device = torch.device(device)
    if true_size and device.type != "cuda":
        raise ValueError(f"{case.id}: the suite's true sizes are built on CUDA only; use --dry-run "
                         "(shrunk shapes) or the CPU suite (--device cpu) on this machine")
    w = case.workload
    dt = TORCH_DTYPES[case.in_dtype]
    nvfp4_kv = case.kv_dtype == "nvfp4"
    kv_dt = TORCH_DTYPES[case.dtype if nvfp4_kv else case.kv_dtype]
    page = case.page_size
    hq, hkv, d = w.num_qo_heads, w.num_kv_heads, w.head_dim
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)

    pages_per_req = [math.ceil(n / page) for n in w.kv_lens]
    used = sum(pages_per_req)
    num_pages = used + SPARE_PAGES
    perm = torch.randperm(num_pages, generator=torch.Generator().manual_seed(seed + 1))
    max_pages = max(pages_per_req)
    tables = torch.zeros(len(w.kv_lens), max_pages, dtype=torch.int32)
    start = 0
    for b, n in enumerate(pages_per_req):
        tables[b, :n] = perm[start:start + n].to(torch.int32)
        start += n

    kv = _random((num_pages, 2, hkv, page, d), kv_dt, device, gen)

    q = _random((sum(w.q_lens), hq, d), dt, device, gen)
    cu_q = torch.tensor([0] + _cumsum(w.q_lens), dtype=torch.int32)
    cu_kv = torch.tensor([0] + _cumsum(w.kv_lens), dtype=torch.int32)
    sinks = None
    if w.sinks:
        sinks = (torch.randn(hq, generator=gen, device=device) + SINK_MEAN).float()
    scale = 1.0 / math.sqrt(d)
    if check:
        scale *= CHECK_SCALE_FACTOR
    kv_sf = decoded = None
    globals_ = (1.0, 1.0)
    if nvfp4_kv:  # quantized as engines do it
        import ctxattn

        data, sf, k_global, v_global = ctxattn.nvfp4_quantize_paged_kv_cache(kv[:, 0], kv[:, 1])
        decoded = torch.stack(ctxattn.nvfp4_dequantize_paged_kv_cache(data, sf, k_global, v_global), dim=1)
        kv, kv_sf, globals_ = torch.stack(data, dim=1), torch.stack(sf, dim=1), (k_global, v_global)
    return Inputs(
        case=case, device=device, query=q, kv_cache=kv,
        block_tables=tables.to(device), seq_lens=torch.tensor(w.kv_lens, dtype=torch.int32).to(device),
        cum_seq_lens_q=cu_q.to(device), cum_seq_lens_kv=cu_kv.to(device), sinks=sinks,
        bmm1_scale=scale, bmm2_scale=1.0, o_sf_scale=1.0, window_left=w.window_left,
        kv_cache_sf=kv_sf, kv_global_scales=globals_, kv_decoded=decoded)


def _cumsum(values):
    out, acc = [], 0
    for v in values:
        acc += v
        out.append(acc)
    return out


def check_case(case, no_prefix=False):
    """The small ragged instance that each implementation must pass before `case` is timed: the
    same heads, head dim, dtypes, sinks and page size, a narrow window where `case` has one.
    Requests have cached prefixes (kv_len > q_len) unless `no_prefix`, for peers whose causal mask
    is top-left aligned and which are only timed on workloads without prefixes."""
    w = case.workload
    window = CHECK_WINDOW if w.window_left >= 0 else -1
    kv_lens = CHECK_Q_LENS if no_prefix else CHECK_KV_LENS
    small = dataclasses.replace(w, q_lens=CHECK_Q_LENS, kv_lens=kv_lens, window_left=window)
    return Case(small, case.dtype, case.page_size)
