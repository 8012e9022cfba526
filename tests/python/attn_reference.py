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


def make_case(
    device="cpu", q_dtype=torch.bfloat16, kv_dtype=None, num_qo_heads=4, num_kv_heads=2,
    head_dim=64, page_size=16, q_lens=(5, 0, 9), prefix_lens=(3, 7, 0), kv_layout="HND",
    form="tuple", extra_pages=3, window_left=-1, causal=True, sinks=None, seed=0,
    noncontig_query=False, seq_lens_dtype=torch.int32, tensor_scales=False, bmm2_scale=1.0,
):
    """A random problem over a permuted, over-allocated page pool.

    Unused pages and the slots past each request's last token hold NaN, and block-table entries
    past a request's last page hold an out-of-pool id, so reading any of them shows up.
    `form`: "tuple" (k, v), "single" [P, 2, ...] or "shared" [P, 1, ...] (V is K).
    `sinks`: None, "tensor" or "list".
    """
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

    k_hnd, v_hnd = rand_cache(), rand_cache()
    used = 0
    for b, (n, pages) in enumerate(zip(kv_lens, pages_per_req)):
        for j in range(pages):
            page = perm[used]
            used += 1
            block_tables[b, j] = page
            valid = min(page_size, n - j * page_size)
            k_hnd[page, :, :valid] = torch.randn(num_kv_heads, valid, head_dim, generator=gen)
            v_hnd[page, :, :valid] = torch.randn(num_kv_heads, valid, head_dim, generator=gen)

    if form == "shared":
        v_hnd = k_hnd
    k_store = _store(k_hnd, kv_layout).to(kv_dtype)
    v_store = _store(v_hnd, kv_layout).to(kv_dtype)
    if form == "tuple":
        kv_cache = (k_store.to(device), v_store.to(device))
    elif form == "single":
        kv_cache = torch.stack([k_store, v_store], dim=1).to(device)
    elif form == "shared":
        kv_cache = k_store.unsqueeze(1).to(device)
    else:
        raise AssertionError(form)

    num_tokens = sum(q_lens)
    q = torch.randn(num_tokens, num_qo_heads, head_dim, generator=gen)
    if noncontig_query:
        big = torch.full((num_tokens, num_qo_heads + 3, 2 * head_dim), float("nan"))
        big[:, 1:num_qo_heads + 1, :head_dim] = q
        query = big.to(q_dtype).to(device)[:, 1:num_qo_heads + 1, :head_dim]
    else:
        query = q.to(q_dtype).to(device)

    cum_q = [0]
    cum_kv = [0]
    for lq, lk in zip(q_lens, kv_lens):
        cum_q.append(cum_q[-1] + lq)
        cum_kv.append(cum_kv[-1] + lk)

    bmm1 = 1.0 / math.sqrt(head_dim)
    scale1, scale2 = bmm1, bmm2_scale
    if tensor_scales:
        scale1 = torch.tensor([bmm1], dtype=torch.float32, device=device)
        scale2 = torch.tensor([bmm2_scale], dtype=torch.float32, device=device)

    kwargs = {"kv_layout": kv_layout, "window_left": window_left, "causal": causal}
    if sinks is not None:
        sink_values = (torch.randn(num_qo_heads, generator=gen) * 2.0).to(device)
        kwargs["sinks"] = sink_values if sinks == "tensor" else [sink_values]

    return Case(
        query=query,
        kv_cache=kv_cache,
        workspace_buffer=torch.zeros(1 << 16, dtype=torch.uint8, device=device),
        block_tables=block_tables.to(device),
        seq_lens=torch.tensor(kv_lens, dtype=torch.int64).to(seq_lens_dtype).to(device),
        max_q_len=max(list(q_lens) + [0]),
        max_kv_len=max(kv_lens + [0]),
        bmm1_scale=scale1,
        bmm2_scale=scale2,
        batch_size=batch_size,
        cum_seq_lens_q=torch.tensor(cum_q, dtype=torch.int32, device=device),
        cum_seq_lens_kv=torch.tensor(cum_kv, dtype=torch.int32, device=device),
        kwargs=kwargs,
        q_lens=tuple(q_lens),
        kv_lens=tuple(kv_lens),
    )


def _scalar(x):
    return float(x.item()) if isinstance(x, torch.Tensor) else float(x)


def _logical_kv(case):
    """K and V as float64 [P, Hkv, N, D] (HND order), from the tensors the call receives."""
    kv = case.kv_cache
    if isinstance(kv, tuple):
        k, v = kv
    else:
        k = kv[:, 0]
        v = kv[:, 1] if kv.shape[1] == 2 else kv[:, 0]
    if case.kwargs.get("kv_layout", "HND") == "NHD":
        k, v = k.transpose(1, 2), v.transpose(1, 2)
    return k.cpu().double(), v.cpu().double()


def reference(case):
    """(O before output conversion, LSE base 2), both float64 on the CPU, per SPEC section 3."""
    q_all = case.query.cpu().double()
    k_pool, v_pool = _logical_kv(case)
    tables = case.block_tables.cpu().long()
    num_tokens, num_qo_heads, head_dim = q_all.shape
    group = num_qo_heads // k_pool.shape[1]
    page_size = k_pool.shape[2]
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
        pages = tables[b, j // page_size]
        slots = j % page_size
        k = k_pool[pages, :, slots].repeat_interleave(group, dim=1)  # [Lk, Hq, D]
        v = v_pool[pages, :, slots].repeat_interleave(group, dim=1)
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
