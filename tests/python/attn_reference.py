"""Test support: random paged-KV problems and an independent float64 reference.

The reference reads the cache tensors exactly as the call receives them (through the block table,
in either layout), dequantizes to float64 and applies SPEC section 3 directly; it shares no code
with the library. nvfp4 helpers decode the packed output and unswizzle its scales with their own
formula.
"""

import math
from dataclasses import dataclass, field

import pytest
import torch

import ctxattn
import kv_nvfp4

FP8 = torch.float8_e4m3fn
LOG2E = 1.0 / math.log(2.0)


def _cuda_ready():
    """A GPU is present and libctxattn has its CUDA backends (the library is loaded only then)."""
    return torch.cuda.is_available() and ctxattn.has_cuda()


# Every correctness test runs on each device; "cuda" is skipped (never passed) without a GPU or
# with a libctxattn built without CUDA (test_errors covers that build's NotImplementedError).
DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(
            not _cuda_ready(),
            reason="needs a CUDA device and a libctxattn built with CUDA",
        ),
    ),
]

# Head dims the CUDA backends build.
GPU_HEAD_DIMS = (64, 128, 256, 512)

# Tests of the Hopper kernels: an sm90 GPU and a library built with them.
SM90 = pytest.mark.skipif(
    not (torch.cuda.is_available() and ctxattn.has_cuda() and torch.cuda.get_device_capability() == (9, 0)),
    reason="needs a Hopper GPU and a libctxattn with the sm90 kernels")

# SPEC section 6: (rtol, atol) by (inputs, output) kind.
TOL_16BIT = (1e-2, 1e-2)
TOL_FP8_IN = (4e-2, 6e-2)
TOL_FP8_OUT = (5e-2, 7e-2)
TOL_LSE = (1e-3, 1e-3)

# Midpoints between consecutive points of the e2m1 grid {0, .5, 1, 1.5, 2, 3, 4, 6}.
E2M1_MIDPOINTS = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], dtype=torch.float64)


@dataclass
class Case:
    """The positional and keyword arguments of one call plus what the reference needs."""

    query: torch.Tensor
    kv_cache: object
    workspace_buffer: torch.Tensor
    block_tables: torch.Tensor
    seq_lens: torch.Tensor
    max_q_len: int
    max_kv_len: int
    bmm1_scale: object
    bmm2_scale: object
    batch_size: int
    cum_seq_lens_q: torch.Tensor
    cum_seq_lens_kv: torch.Tensor
    kwargs: dict = field(default_factory=dict)
    q_lens: tuple = ()
    kv_lens: tuple = ()

    def args(self):
        return (
            self.query, self.kv_cache, self.workspace_buffer, self.block_tables, self.seq_lens,
            self.max_q_len, self.max_kv_len, self.bmm1_scale, self.bmm2_scale, self.batch_size,
            self.cum_seq_lens_q, self.cum_seq_lens_kv,
        )


def _store(x_hnd, layout):
    """A logical [P, H, N, D] tensor in the storage order of `layout` (a fresh contiguous tensor)."""
    return x_hnd.contiguous() if layout == "HND" else x_hnd.transpose(1, 2).contiguous()


def _stack_forms(k_store, v_store, form, device):
    """The kv_cache argument of `form` from K and V stores in layout order."""
    if form == "tuple":
        return (k_store.to(device), v_store.to(device))
    if form == "single":
        return torch.stack([k_store, v_store], dim=1).to(device)
    if form == "shared":
        return k_store.unsqueeze(1).to(device)
    raise AssertionError(form)


def _trtllm_pool(k_store, v_store, block_tables):
    """TensorRT-LLM's form of separate K / V page indices: one pool of 2P pages, K page p at 2p,
    V page p at 2p + 1, and a [B, 2, M] table of the K and V page ids."""
    pool = torch.stack([k_store, v_store], dim=1).reshape(2 * k_store.shape[0], *k_store.shape[1:])
    return pool, torch.stack([2 * block_tables, 2 * block_tables + 1], dim=1)


def make_case(
    device="cpu", q_dtype=torch.bfloat16, kv_dtype=None, num_qo_heads=4, num_kv_heads=2,
    head_dim=64, page_size=16, q_lens=(5, 0, 9), prefix_lens=(3, 7, 0), kv_layout="HND",
    form="tuple", extra_pages=3, window_left=-1, causal=True, sinks=None, seed=0,
    noncontig_query=False, seq_lens_dtype=torch.int32, tensor_scales=False, bmm2_scale=1.0,
    shared_idx=True, sf_form="tuple", skip=None, concentrate=0.0, max_kv_len=None, cum_kv="tokens",
):
    """A random problem over a permuted, over-allocated page pool.

    Unused pages and the slots past each request's last token hold NaN, and block-table entries
    past a request's last page hold an out-of-pool id, so reading any of them shows up.
    `form`: "tuple" (k, v), "single" [P, 2, ...] or "shared" [P, 1, ...] (V is K).
    `kv_dtype` "nvfp4": uint8 codes with random e4m3 block scales in kwargs["kv_cache_sf"]
    (`sf_form` "tuple" or "single"), NaN scales in every slot no request uses.
    `shared_idx` False: TensorRT-LLM's aliased pool, kv_cache = (pool, pool) and a [B, 2, M] table.
    `sinks`: None, "tensor" or "list". `skip`: skip_softmax_threshold_scale_factor.
    `concentrate` > 0: every query and the first 8 and last 48 keys of each request share a
    direction, so that those keys' logits stand about `concentrate` above the others.
    `max_kv_len`: the call's bound (default the longest request). `cum_kv`: what
    cum_seq_lens_kv holds ("tokens" prefix sums, "pages" page prefix sums, "q" the query's, or
    "long": page ids of the whole pool, longer than batch_size + 1).
    """
    nvfp4 = kv_dtype == "nvfp4"
    kv_dtype = kv_dtype or q_dtype
    gen = torch.Generator().manual_seed(seed)
    batch_size = len(q_lens)
    kv_lens = [p + q for p, q in zip(prefix_lens, q_lens)]
    pages_per_req = [-(-n // page_size) for n in kv_lens]
    num_pages = sum(pages_per_req) + extra_pages
    perm = torch.randperm(num_pages, generator=gen).tolist()
    width = max(pages_per_req + [0]) + 1
    junk = num_pages + 1000
    block_tables = torch.full((batch_size, width), junk, dtype=torch.int32)

    def rand_cache():
        return torch.full((num_pages, num_kv_heads, page_size, head_dim), float("nan"))

    direction = torch.zeros(head_dim)
    if concentrate:  # |direction|^2 / sqrt(D) = concentrate: the logit a shared direction adds
        direction = torch.randn(head_dim, generator=gen)
        direction *= (concentrate * head_dim ** 0.5) ** 0.5 / direction.norm()
    k_hnd, v_hnd = rand_cache(), rand_cache()
    used_slots = torch.zeros(num_pages, page_size, dtype=torch.bool)
    used = 0
    for b, (n, pages) in enumerate(zip(kv_lens, pages_per_req)):
        for j in range(pages):
            page = perm[used]
            used += 1
            block_tables[b, j] = page
            valid = min(page_size, n - j * page_size)
            used_slots[page, :valid] = True
            k_hnd[page, :, :valid] = torch.randn(num_kv_heads, valid, head_dim, generator=gen)
            v_hnd[page, :, :valid] = torch.randn(num_kv_heads, valid, head_dim, generator=gen)
            if concentrate:
                keys = j * page_size + torch.arange(valid)
                hot = (keys < 8) | (keys >= n - 48)
                k_hnd[page, :, :valid][:, hot] += direction

    kwargs = {"kv_layout": kv_layout, "window_left": window_left, "causal": causal}
    if nvfp4:
        k_codes, k_sf = kv_nvfp4.random_pages(used_slots, num_kv_heads, head_dim, gen)
        v_codes, v_sf = kv_nvfp4.random_pages(used_slots, num_kv_heads, head_dim, gen)
        v_codes = k_codes if form == "shared" else v_codes
        k_store, v_store = _store(k_codes, kv_layout), _store(v_codes, kv_layout)
        k_sf_store, v_sf_store = _store(k_sf, kv_layout), _store(kv_nvfp4.swizzle_v(v_sf), kv_layout)
    else:
        if form == "shared":
            v_hnd = k_hnd
        k_store = _store(k_hnd, kv_layout).to(kv_dtype)
        v_store = _store(v_hnd, kv_layout).to(kv_dtype)
    table = block_tables
    if shared_idx:
        kv_cache = _stack_forms(k_store, v_store, form, device)
        if nvfp4:
            kwargs["kv_cache_sf"] = _stack_forms(k_sf_store, v_sf_store, sf_form, device)
    else:
        pool, table = _trtllm_pool(k_store, v_store, block_tables)
        kv_cache = (pool.to(device), pool.to(device))
        kwargs["uses_shared_paged_kv_idx"] = False
        if nvfp4:
            sf_pool, _ = _trtllm_pool(k_sf_store, v_sf_store, block_tables)
            kwargs["kv_cache_sf"] = (sf_pool.to(device), sf_pool.to(device))

    num_tokens = sum(q_lens)
    q = torch.randn(num_tokens, num_qo_heads, head_dim, generator=gen) + direction
    if noncontig_query:
        big = torch.full((num_tokens, num_qo_heads + 3, 2 * head_dim), float("nan"))
        big[:, 1:num_qo_heads + 1, :head_dim] = q
        query = big.to(q_dtype).to(device)[:, 1:num_qo_heads + 1, :head_dim]
    else:
        query = q.to(q_dtype).to(device)

    cum_q, cum_tokens, cum_pages = [0], [0], [0]
    for lq, lk, pages in zip(q_lens, kv_lens, pages_per_req):
        cum_q.append(cum_q[-1] + lq)
        cum_tokens.append(cum_tokens[-1] + lk)
        cum_pages.append(cum_pages[-1] + pages)
    cum_kv_values = {"tokens": cum_tokens, "pages": cum_pages, "q": cum_q,
                     "long": [page_size * i for i in range(num_pages + 1)]}[cum_kv]

    bmm1 = 1.0 / math.sqrt(head_dim)
    scale1, scale2 = bmm1, bmm2_scale
    if tensor_scales:
        scale1 = torch.tensor([bmm1], dtype=torch.float32, device=device)
        scale2 = torch.tensor([bmm2_scale], dtype=torch.float32, device=device)

    if sinks is not None:
        sink_values = (torch.randn(num_qo_heads, generator=gen) * 2.0).to(device)
        kwargs["sinks"] = sink_values if sinks == "tensor" else [sink_values]
    if skip is not None:
        kwargs["skip_softmax_threshold_scale_factor"] = skip

    return Case(
        query=query,
        kv_cache=kv_cache,
        workspace_buffer=torch.zeros(1 << 16, dtype=torch.uint8, device=device),
        block_tables=table.to(device),
        seq_lens=torch.tensor(kv_lens, dtype=torch.int64).to(seq_lens_dtype).to(device),
        max_q_len=max(list(q_lens) + [0]),
        max_kv_len=max(kv_lens + [0]) if max_kv_len is None else max_kv_len,
        bmm1_scale=scale1,
        bmm2_scale=scale2,
        batch_size=batch_size,
        cum_seq_lens_q=torch.tensor(cum_q, dtype=torch.int32, device=device),
        cum_seq_lens_kv=torch.tensor(cum_kv_values, dtype=torch.int32, device=device),
        kwargs=kwargs,
        q_lens=tuple(q_lens),
        kv_lens=tuple(kv_lens),
    )


def _scalar(x):
    return float(x.item()) if isinstance(x, torch.Tensor) else float(x)


def _pair(x):
    """(K's, V's) of a kv_cache / kv_cache_sf argument: a tuple, [P, 2, ...], or [P, 1, ...]."""
    if isinstance(x, (tuple, list)):
        return x[0], x[1]
    return x[:, 0], x[:, 1] if x.shape[1] == 2 else x[:, 0]


def logical_kv(case):
    """(K pool, V pool, K page ids, V page ids): the pools float64 [P, Hkv, N, D] in HND order,
    decoded from the tensors the call receives (NVFP4 through kv_nvfp4), and the tables [B, M]."""
    nhd = case.kwargs.get("kv_layout", "HND") == "NHD"
    hnd = (lambda t: t.transpose(1, 2)) if nhd else (lambda t: t)
    k, v = (hnd(t).cpu() for t in _pair(case.kv_cache))
    if k.dtype == torch.uint8:
        k_sf, v_sf = (hnd(t).cpu() for t in _pair(case.kwargs["kv_cache_sf"]))
        k, v = kv_nvfp4.decode(k, k_sf), kv_nvfp4.decode(v, kv_nvfp4.unswizzle_v(v_sf))
    tables = case.block_tables.cpu().long()
    if case.kwargs.get("uses_shared_paged_kv_idx", True):
        return k.double(), v.double(), tables, tables
    return k.double(), v.double(), tables[:, 0], tables[:, 1]


def request_kv(case, b, pools=None):
    """K and V of request b as float64 [Lk, Hkv, D]."""
    k_pool, v_pool, k_table, v_table = pools or logical_kv(case)
    page_size = k_pool.shape[2]
    j = torch.arange(case.kv_lens[b])
    k = k_pool[k_table[b, j // page_size], :, j % page_size]
    v = v_pool[v_table[b, j // page_size], :, j % page_size]
    return k, v


def reference(case):
    """(O before output conversion, LSE base 2), both float64 on the CPU, per SPEC section 3; with
    a skip-softmax factor, SPEC 8.2 at the CPU backends' default geometry (skip_reference)."""
    if case.kwargs.get("skip_softmax_threshold_scale_factor"):
        import skip_reference  # it builds on this module

        out, lse, _, _ = skip_reference.reference(case)
        return out, lse
    q_all = case.query.cpu().double()
    pools = logical_kv(case)
    num_tokens, num_qo_heads, head_dim = q_all.shape
    group = num_qo_heads // pools[0].shape[1]
    bmm1, bmm2 = _scalar(case.bmm1_scale), _scalar(case.bmm2_scale)
    window = case.kwargs.get("window_left", -1)
    causal = case.kwargs.get("causal", True)
    sinks = case.kwargs.get("sinks")
    if isinstance(sinks, list):
        sinks = sinks[0]
    sinks = None if sinks is None else sinks.cpu().double()

    out = torch.zeros(num_tokens, num_qo_heads, head_dim, dtype=torch.float64)
    lse = torch.zeros(num_tokens, num_qo_heads, dtype=torch.float64)
    start = 0
    for b, (lq, lk) in enumerate(zip(case.q_lens, case.kv_lens)):
        if lq == 0:
            continue
        j = torch.arange(lk)
        k, v = request_kv(case, b, pools)
        k = k.repeat_interleave(group, dim=1)  # [Lk, Hq, D]
        v = v.repeat_interleave(group, dim=1)
        q = q_all[start:start + lq]
        s = bmm1 * torch.einsum("ihd,jhd->hij", q, k)  # [Hq, Lq, Lk]
        allowed = torch.ones(lq, lk, dtype=torch.bool)
        if causal:
            p = (lk - lq + torch.arange(lq)).unsqueeze(1)
            allowed = j.unsqueeze(0) <= p
            if window >= 0:
                allowed &= j.unsqueeze(0) >= p - window
        s = s.masked_fill(~allowed, -math.inf)
        m = s.amax(dim=-1)
        if sinks is not None:
            m = torch.maximum(m, sinks[:, None])
        e = torch.exp(s - m[..., None])
        denom = e.sum(dim=-1)
        if sinks is not None:
            denom = denom + torch.exp(sinks[:, None] - m)
        o = torch.einsum("hij,jhd->ihd", e, v) / denom.transpose(0, 1)[..., None]
        out[start:start + lq] = bmm2 * o
        lse[start:start + lq] = (m * LOG2E + torch.log2(denom)).transpose(0, 1)
        start += lq
    return out, lse


def call(case, **extra):
    return ctxattn.trtllm_batch_context_with_kv_cache(*case.args(), **{**case.kwargs, **extra})


def gpu_refusal(case):
    """The argument a CUDA call of `case` is refused for (NotImplementedError naming it) by the
    GPU backends today, or None. NVFP4 caches run on the sm90 kernel (e4m3 / fp16 queries, D = 128,
    HND, pages of 16+) or the portable one (AUTO chooses), and skip-softmax factors run on the sm90
    kernels, elsewhere dense; head dims the GPU kernels lack are refused, and at D = 512 NVFP4
    caches and (but on Hopper) bf16 queries over e4m3."""
    if case.query.device.type != "cuda":
        return None
    if case.query.shape[2] not in GPU_HEAD_DIMS:
        return "head_dim"
    kv = case.kv_cache[0] if isinstance(case.kv_cache, tuple) else case.kv_cache
    if case.query.shape[2] == 512 and (kv.dtype == torch.uint8 or (kv.dtype == FP8 and case.query.dtype == torch.bfloat16)):
        # The portable kernel of head dim 512 is built for the dtypes FlashInfer serves there; on
        # Hopper the sm90 kernel runs bf16 queries over an e4m3 cache too.
        if kv.dtype == FP8 and torch.cuda.get_device_capability(case.query.device) == (9, 0):
            return None
        return "kv_cache"
    return None


def refused_on_gpu(case, **extra):
    """True (having checked the refusal) when the GPU backends do not run `case` yet."""
    name = gpu_refusal(case)
    if name is None:
        return False
    with pytest.raises(NotImplementedError, match=name):
        call(case, **extra)
    return True


def tolerance(case, out_dtype):
    """SPEC section 6 by inputs and output; an NVFP4 cache counts as fp8 inputs (SPEC 8.1)."""
    if out_dtype == FP8:
        return TOL_FP8_OUT
    kv = case.kv_cache[0] if isinstance(case.kv_cache, tuple) else case.kv_cache
    if case.query.dtype == FP8 or kv.dtype in (FP8, torch.uint8):
        return TOL_FP8_IN
    return TOL_16BIT


def check_dense(case, out, lse=None, expected=None):
    """out (and lse) against the float64 reference (or `expected`, a (O, LSE) pair) on the rows
    the call writes, at the SPEC's tolerances."""
    o_ref, lse_ref = expected if expected is not None else reference(case)
    rows = query_rows(case)
    rtol, atol = tolerance(case, out.dtype)
    torch.testing.assert_close(out.cpu().double()[rows], o_ref[rows], rtol=rtol, atol=atol)
    if lse is not None:
        torch.testing.assert_close(lse.cpu().double()[rows], lse_ref[rows], rtol=TOL_LSE[0], atol=TOL_LSE[1])


def query_rows(case):
    """Indices of the query rows the call writes (every row of a request with Lq > 0)."""
    return torch.arange(sum(case.q_lens))


# ---- nvfp4 ----

def round_up(x, m):
    return (x + m - 1) // m * m


def e2m1_index(x):
    """Signed index of the nearest e2m1 grid point for float64 x (ties to the even index)."""
    mag = x.abs().clamp(max=6.0)
    idx = torch.searchsorted(E2M1_MIDPOINTS, mag.contiguous())  # midpoints strictly below mag
    at_tie = (idx < 7) & (E2M1_MIDPOINTS[idx.clamp(max=6)] == mag) & (idx % 2 == 1)
    idx = idx + at_tie.long()
    return torch.where(x < 0, -idx, idx)


def nvfp4_reference(o, o_sf_scale):
    """(signed e2m1 indices [T, Hq, D], scales float64 [T, Hq*D/16]) of float64 output `o`."""
    num_tokens = o.shape[0]
    blocks = o.reshape(num_tokens, o.shape[1] * o.shape[2] // 16, 16)
    amax = blocks.abs().amax(dim=-1)
    sf = (o_sf_scale * amax / 6.0).float().to(FP8).double()
    scaled = blocks * o_sf_scale / torch.where(sf == 0, 1.0, sf)[..., None]
    scaled = torch.where(sf[..., None] == 0, 0.0, scaled.clamp(-6.0, 6.0))
    return e2m1_index(scaled).reshape(o.shape), sf


def decode_nvfp4_data(data):
    """Signed e2m1 indices [T, Hq, D] from packed bytes [T, Hq, D/2] (even element in the low nibble)."""
    d = data.cpu().to(torch.int64)
    codes = torch.stack([d & 0xF, d >> 4], dim=-1).reshape(*d.shape[:-1], 2 * d.shape[-1])
    mag = codes & 7
    return torch.where(codes & 8 != 0, -mag, mag)


def unswizzle_scales(scale, start, num_tokens, num_cols):
    """Scale factors float64 [T, num_cols] read from the 128x4 swizzled layout."""
    raw = scale.cpu().view(torch.uint8).reshape(-1)
    padded_cols = round_up(num_cols, 4)
    r = (start + torch.arange(num_tokens))[:, None]
    c = torch.arange(num_cols)[None, :]
    offset = ((r // 128) * (padded_cols // 4) + c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + (c % 4)
    return raw[offset].view(FP8).double()


def check_nvfp4(fp4, o_ref, o_sf_scale, rows):
    """Asserts the SPEC section 6 nvfp4 tolerances on the given query rows."""
    num_tokens, num_heads, head_dim = o_ref.shape
    ref_idx, ref_sf = nvfp4_reference(o_ref, o_sf_scale)
    got_idx = decode_nvfp4_data(fp4.data)
    got_sf = unswizzle_scales(fp4.scale, fp4.scale_start_index, num_tokens, num_heads * head_dim // 16)
    torch.testing.assert_close(got_sf[rows], ref_sf[rows], rtol=0.2, atol=0.2)
    diff = (got_idx[rows] - ref_idx[rows]).abs().double()
    assert diff.numel() == 0 or diff.max().item() <= 1, f"nvfp4 codes differ by {diff.max().item()} steps"
    rms = diff.pow(2).mean().sqrt().item() if diff.numel() else 0.0
    assert rms < 0.3, f"nvfp4 RMS code error {rms}"
