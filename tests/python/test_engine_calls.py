"""The call as each serving engine makes it today (FlashInfer 0.7.2's keywords included), built the
way the engine builds its tensors, checked against the float64 reference:

- SGLang (trtllm_mha_backend): K / V as HND views of NHD token storage (non-standard strides),
  max_kv_len = the model's max context, bmm2_scale 1, token prefix sums as cum_seq_lens_kv and
  skip_softmax_threshold_scale_factor from its environment setting.
- TensorRT-LLM (trtllm_gen): one pool passed twice, K page p at 2p and V page p at 2p + 1, a
  [B, 2, M] table, NVFP4 block scales in one aliased scale pool, sinks, a given out.
- vLLM (trtllm backend): NVFP4 K / V data and scales as views of one packed uint8 block tensor
  (each side [data | scales]), an fp8 query, fp8 scratch output, cum_seq_lens_kv = the query's
  prefix sums; and (flashinfer backend) nvfp4 output into a shared FP4Tensor at a start index.
"""

import math

import pytest
import torch

import ctxattn
from attn_reference import (
    DEVICES, FP8, Case, call, check_dense, check_nvfp4, query_rows, reference, refused_on_gpu, round_up,
)


def _lengths(q_lens, prefix_lens):
    kv = [q + p for q, p in zip(q_lens, prefix_lens)]
    cum_q = torch.tensor([0] + list(torch.tensor(q_lens).cumsum(0)), dtype=torch.int32)
    cum_kv = torch.tensor([0] + list(torch.tensor(kv).cumsum(0)), dtype=torch.int32)
    return kv, cum_q, cum_kv


def _tables(kv_lens, page_size, num_pages, gen):
    """A permuted page table [B, M] over a pool of num_pages (more than the requests use)."""
    pages = [-(-n // page_size) for n in kv_lens]
    perm = torch.randperm(num_pages, generator=gen)
    table = torch.zeros(len(kv_lens), max(pages), dtype=torch.int32)
    used = 0
    for b, n in enumerate(pages):
        table[b, :n] = perm[used:used + n]
        used += n
    return table


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("skip", [None, 1e-30, 0.05])
def test_sglang_hnd_views_of_nhd_storage(device, skip):
    gen = torch.Generator().manual_seed(1)
    num_pages, page, hkv, hq, d = 40, 16, 2, 8, 128
    q_lens, prefix = [7, 30, 1], [100, 0, 200]
    kv_lens, cum_q, cum_kv = _lengths(q_lens, prefix)
    # Token-major storage [pages * page, Hkv, D] (SGLang's k_buffer), seen as [P, N, Hkv, D], then
    # permuted to HND: strides (N * Hkv * D, D, Hkv * D, 1).
    k_buf = torch.randn(num_pages * page, hkv, d, generator=gen).to(torch.bfloat16)
    v_buf = torch.randn(num_pages * page, hkv, d, generator=gen).to(torch.bfloat16)
    k = k_buf.view(num_pages, page, hkv, d).permute(0, 2, 1, 3)
    v = v_buf.view(num_pages, page, hkv, d).permute(0, 2, 1, 3)
    assert not k.is_contiguous()
    case = Case(
        query=torch.randn(sum(q_lens), hq, d, generator=gen).to(torch.bfloat16).to(device),
        kv_cache=(k.to(device), v.to(device)),
        workspace_buffer=torch.zeros(1 << 20, dtype=torch.uint8, device=device),
        block_tables=_tables(kv_lens, page, num_pages, gen).to(device),
        seq_lens=torch.tensor(kv_lens, dtype=torch.int32, device=device),
        max_q_len=max(q_lens), max_kv_len=4096,  # the model's max context, not the batch's
        bmm1_scale=1 / math.sqrt(d), bmm2_scale=1.0, batch_size=3,
        cum_seq_lens_q=cum_q.to(device), cum_seq_lens_kv=cum_kv.to(device),
        kwargs={"kv_layout": "HND", "window_left": -1, "sinks": None, "out_dtype": torch.bfloat16,
                "skip_softmax_threshold_scale_factor": skip},
        q_lens=tuple(q_lens), kv_lens=tuple(kv_lens),
    )
    if not refused_on_gpu(case):
        check_dense(case, call(case))


def _trtllm_case(device, nvfp4, window_left=-1):
    gen = torch.Generator().manual_seed(2)
    num_pages, page, hkv, hq, d = 24, 32, 4, 8, 128
    q_lens, prefix = [33, 5], [60, 150]
    kv_lens, cum_q, cum_kv = _lengths(q_lens, prefix)
    table = _tables(kv_lens, page, num_pages, gen)
    k = torch.randn(num_pages, hkv, page, d, generator=gen)
    v = torch.randn(num_pages, hkv, page, d, generator=gen)
    kwargs = {"kv_layout": "HND", "window_left": window_left, "uses_shared_paged_kv_idx": False,
              "sinks": torch.randn(hq, generator=gen).to(device), "enable_pdl": True}
    bmm1, bmm2 = 1 / math.sqrt(d), 1.0
    if nvfp4:
        (k, v), (k_sf, v_sf), k_g, v_g = ctxattn.nvfp4_quantize_paged_kv_cache(k, v)
        sf_pool = torch.stack([k_sf, v_sf], dim=1).reshape(2 * num_pages, *k_sf.shape[1:])
        kwargs["kv_cache_sf"] = (sf_pool.to(device), sf_pool.to(device))
        bmm1, bmm2 = bmm1 * k_g, v_g
        query = torch.randn(sum(q_lens), hq, d, generator=gen).to(FP8)
    else:
        k, v = k.to(torch.float16), v.to(torch.float16)
        query = torch.randn(sum(q_lens), hq, d, generator=gen).to(torch.float16)
    pool = torch.stack([k, v], dim=1).reshape(2 * num_pages, *k.shape[1:]).to(device)
    return Case(
        query=query.to(device), kv_cache=(pool, pool),
        workspace_buffer=torch.zeros(1 << 20, dtype=torch.uint8, device=device),
        block_tables=torch.stack([2 * table, 2 * table + 1], dim=1).to(device),
        seq_lens=torch.tensor(kv_lens, dtype=torch.int32, device=device), max_q_len=max(q_lens),
        max_kv_len=max(kv_lens), bmm1_scale=bmm1, bmm2_scale=bmm2, batch_size=2,
        cum_seq_lens_q=cum_q.to(device), cum_seq_lens_kv=cum_kv.to(device), kwargs=kwargs,
        q_lens=tuple(q_lens), kv_lens=tuple(kv_lens),
    )


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("nvfp4", [False, True])
@pytest.mark.parametrize("window_left", [-1, 40])
def test_trtllm_aliased_pool_and_3d_table(device, nvfp4, window_left):
    case = _trtllm_case(device, nvfp4, window_left)
    assert case.kv_cache[0].data_ptr() == case.kv_cache[1].data_ptr()
    if refused_on_gpu(case):
        return
    out = torch.empty(case.query.shape, dtype=torch.bfloat16, device=device)
    assert call(case, out=out) is out
    check_dense(case, out)


@pytest.mark.parametrize("device", DEVICES)
def test_trtllm_table_of_the_same_pages_as_shared(device):
    """The [B, 2, M] form over the aliased pool gives bitwise the output of the shared table over
    separate K and V tensors holding the same pages."""
    case = _trtllm_case(device, nvfp4=False)
    pool = case.kv_cache[0]
    shared = Case(**{**case.__dict__, "kv_cache": (pool[0::2], pool[1::2]),
                     "block_tables": (case.block_tables[:, 0] // 2).contiguous(),
                     "kwargs": {**case.kwargs, "uses_shared_paged_kv_idx": True}})
    assert torch.equal(call(case).view(torch.int16), call(shared).view(torch.int16))


def _vllm_nvfp4_block_tensor(k_fp4, k_sf, v_fp4, v_sf, device):
    """vLLM's NVFP4 cache: one uint8 tensor per layer, each block [K side | V side], each side
    [data (Hkv * N * D/2 bytes) | scales (Hkv * N * D/16 bytes)]; returns it and the (data,
    scales) views of each side, whose page stride is the whole block."""
    num_pages, hkv, page, half = k_fp4.shape
    data_bytes = hkv * page * half
    raw = torch.empty(num_pages, 2, data_bytes + data_bytes // 8, dtype=torch.uint8)
    for i, (data, sf) in enumerate(((k_fp4, k_sf), (v_fp4, v_sf))):
        raw[:, i, :data_bytes] = data.reshape(num_pages, -1)
        raw[:, i, data_bytes:] = sf.view(torch.uint8).reshape(num_pages, -1)
    raw = raw.to(device)
    views = [(raw[:, i, :data_bytes].unflatten(1, (hkv, page, half)),
              raw[:, i, data_bytes:].unflatten(1, (hkv, page, half // 8)).view(FP8)) for i in range(2)]
    return raw, views


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("out_kind", ["fp8_scratch", "bf16"])
def test_vllm_nvfp4_split_views(device, out_kind):
    gen = torch.Generator().manual_seed(3)
    num_pages, page, hkv, hq, d = 20, 16, 2, 16, 128
    q_lens, prefix = [12, 40, 3], [50, 0, 90]
    kv_lens, cum_q, _ = _lengths(q_lens, prefix)
    k = torch.randn(num_pages, hkv, page, d, generator=gen).to(torch.bfloat16)
    v = torch.randn(num_pages, hkv, page, d, generator=gen).to(torch.bfloat16)
    (k_fp4, v_fp4), (k_sf, v_sf), k_g, v_g = ctxattn.nvfp4_quantize_paged_kv_cache(k, v)
    raw, split = _vllm_nvfp4_block_tensor(k_fp4, k_sf, v_fp4, v_sf, device)
    assert split[0][0].stride(0) == raw.stride(0) and not split[0][1].is_contiguous()
    q_scale = 0.5
    query = (torch.randn(sum(q_lens), hq, d, generator=gen) / q_scale).to(FP8).to(device)
    case = Case(
        query=query, kv_cache=(split[0][0], split[1][0]),
        workspace_buffer=torch.zeros(1 << 20, dtype=torch.uint8, device=device),
        block_tables=_tables(kv_lens, page, num_pages, gen).to(device),
        seq_lens=torch.tensor(kv_lens, dtype=torch.int32, device=device), max_q_len=max(q_lens),
        max_kv_len=max(kv_lens), bmm1_scale=q_scale * k_g / math.sqrt(d), bmm2_scale=v_g, batch_size=3,
        cum_seq_lens_q=cum_q.to(device), cum_seq_lens_kv=cum_q.to(device),  # "same as Q for prefill"
        kwargs={"window_left": -1, "sinks": None, "o_sf_scale": None, "kv_cache_sf": (split[0][1], split[1][1])},
        q_lens=tuple(q_lens), kv_lens=tuple(kv_lens),
    )
    if refused_on_gpu(case):
        return
    if out_kind == "fp8_scratch":  # vLLM writes an fp8 scratch buffer and converts
        scratch = torch.empty(64, hq, d, dtype=FP8, device=device)
        out = call(case, out=scratch[:sum(q_lens)])
        assert out.data_ptr() == scratch.data_ptr()
    else:
        out = call(case, out_dtype=torch.bfloat16)
    check_dense(case, out)


@pytest.mark.parametrize("device", DEVICES)
def test_vllm_nvfp4_output_at_a_start_index(device):
    """vLLM's flashinfer backend: prefill tokens after the decode tokens write an FP4Tensor whose
    scales start at scale_start_index = num_decode_tokens inside the shared scale tensor."""
    gen = torch.Generator().manual_seed(4)
    num_pages, page, hkv, hq, d = 16, 64, 1, 8, 64
    q_lens, prefix = [70, 9], [10, 300]
    kv_lens, cum_q, _ = _lengths(q_lens, prefix)
    decode_tokens = 37
    k = torch.randn(num_pages, hkv, page, d, generator=gen).to(FP8).to(device)
    v = torch.randn(num_pages, hkv, page, d, generator=gen).to(FP8).to(device)
    table = _tables(kv_lens, page, num_pages, gen)
    cum_pages = torch.tensor([0, -(-kv_lens[0] // page), -(-kv_lens[0] // page) - (-kv_lens[1] // page)])
    case = Case(
        query=torch.randn(sum(q_lens), hq, d, generator=gen).to(FP8).to(device), kv_cache=(k, v),
        workspace_buffer=torch.zeros(1 << 20, dtype=torch.uint8, device=device), block_tables=table.to(device),
        seq_lens=torch.tensor(kv_lens, dtype=torch.int32, device=device), max_q_len=max(q_lens),
        max_kv_len=max(kv_lens), bmm1_scale=1 / math.sqrt(d), bmm2_scale=1.0, batch_size=2,
        cum_seq_lens_q=cum_q.to(device), cum_seq_lens_kv=cum_pages.to(torch.int32).to(device),
        kwargs={"window_left": -1, "sinks": None}, q_lens=tuple(q_lens), kv_lens=tuple(kv_lens),
    )
    total = decode_tokens + sum(q_lens)
    data = torch.zeros(total, hq, d // 2, dtype=torch.uint8, device=device)
    scale = torch.zeros(round_up(total, 128), round_up(hq * d // 16, 4), dtype=FP8, device=device)
    out = ctxattn.FP4Tensor(data[decode_tokens:], scale, decode_tokens, tuple(case.query.shape))
    assert call(case, out=out, o_sf_scale=2.0) is out
    o_ref, _ = reference(case)
    check_nvfp4(out, o_ref, 2.0, query_rows(case))
    assert torch.count_nonzero(data[:decode_tokens]) == 0
