"""Results of ctxattn.trtllm_batch_context_with_kv_cache against the float64 reference."""

import random

import pytest
import torch

import ctxattn
from attn_reference import (
    DEVICES, FP8, TOL_LSE, call, check_dense, check_nvfp4, make_case, query_rows, reference, round_up,
)


DTYPE_COMBOS = [
    # (query, kv, out_dtype)
    (torch.bfloat16, torch.bfloat16, None),
    (torch.float16, torch.float16, None),
    (FP8, FP8, None),
    (FP8, FP8, torch.bfloat16),
    (FP8, FP8, torch.float16),
    (torch.bfloat16, FP8, None),
    (torch.float16, FP8, None),
    (torch.bfloat16, torch.bfloat16, FP8),
    (torch.float16, FP8, FP8),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("q_dtype,kv_dtype,out_dtype", DTYPE_COMBOS, ids=str)
def test_dtypes(device, q_dtype, kv_dtype, out_dtype):
    case = make_case(device, q_dtype=q_dtype, kv_dtype=kv_dtype, seed=1)
    out, lse = call(case, out_dtype=out_dtype, return_lse=True)
    expected = out_dtype if out_dtype is not None else q_dtype
    assert out.dtype == expected and out.shape == case.query.shape and out.device == case.query.device
    assert lse.dtype == torch.float32 and lse.shape == case.query.shape[:2]
    check_dense(case, out, lse)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kv_layout", ["HND", "NHD"])
@pytest.mark.parametrize("form", ["tuple", "single", "shared"])
@pytest.mark.parametrize("page_size", [1, 16, 64])
def test_layouts_forms_page_sizes(device, kv_layout, form, page_size):
    case = make_case(device, kv_layout=kv_layout, form=form, page_size=page_size,
                     q_lens=(4, 11, 1), prefix_lens=(70, 5, 0), seed=2)
    out, lse = call(case, return_lse=True)
    check_dense(case, out, lse)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", ["single", "shared"])
@pytest.mark.parametrize("kv_layout", ["HND", "NHD"])
def test_one_tensor_forms_pass_views(device, form, kv_layout, monkeypatch):
    """The library receives pointers into the given cache (V = K for the shared form): no copy."""
    seen = []
    real_run = ctxattn._lib.run

    def recording_run(args):
        seen.append((args.k_cache, args.v_cache, list(args.k_strides), list(args.v_strides)))
        return real_run(args)

    monkeypatch.setattr(ctxattn._lib, "run", recording_run)
    case = make_case(device, form=form, kv_layout=kv_layout, seed=3)
    check_dense(case, call(case))
    kv = case.kv_cache
    k_ptr, v_ptr, k_strides, v_strides = seen[0]
    assert k_ptr == kv.data_ptr()
    assert v_ptr == (kv[:, 1].data_ptr() if form == "single" else k_ptr)
    assert k_strides == v_strides == [kv.stride(0), kv.stride(2), kv.stride(3)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("num_qo_heads,num_kv_heads", [(5, 1), (10, 2), (4, 4), (8, 1)])
def test_gqa(device, num_qo_heads, num_kv_heads):
    case = make_case(device, num_qo_heads=num_qo_heads, num_kv_heads=num_kv_heads, seed=4)
    out, lse = call(case, return_lse=True)
    check_dense(case, out, lse)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("head_dim", [64, 128, 256])
def test_head_dims(device, head_dim):
    case = make_case(device, head_dim=head_dim, q_lens=(3, 6), prefix_lens=(10, 20), seed=5)
    check_dense(case, call(case))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("window_left", [0, 3, 17])
def test_sliding_window(device, window_left):
    case = make_case(device, window_left=window_left, q_lens=(9, 20), prefix_lens=(30, 4), seed=6)
    out, lse = call(case, return_lse=True)
    check_dense(case, out, lse)


@pytest.mark.parametrize("device", DEVICES)
def test_non_causal(device):
    case = make_case(device, causal=False, q_lens=(9, 20), prefix_lens=(30, 4), seed=7)
    out, lse = call(case, return_lse=True)
    check_dense(case, out, lse)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", ["tensor", "list"])
def test_sinks(device, form):
    case = make_case(device, sinks=form, window_left=5, q_lens=(9, 3), prefix_lens=(12, 0), seed=8)
    out, lse = call(case, return_lse=True)
    check_dense(case, out, lse)


@pytest.mark.parametrize("device", DEVICES)
def test_tensor_scales_and_uint32_seq_lens(device):
    case = make_case(device, tensor_scales=True, bmm2_scale=0.5, seq_lens_dtype=torch.uint32, seed=9)
    out, lse = call(case, return_lse=True)
    check_dense(case, out, lse)


@pytest.mark.parametrize("device", DEVICES)
def test_non_contiguous_query(device):
    case = make_case(device, noncontig_query=True, seed=10)
    assert not case.query.is_contiguous()
    check_dense(case, call(case))


@pytest.mark.parametrize("device", DEVICES)
def test_given_out_and_lse_strided(device):
    case = make_case(device, seed=11)
    num_tokens, num_heads, head_dim = case.query.shape
    out_big = torch.full((num_tokens, num_heads + 1, 2 * head_dim), 7.0, dtype=torch.bfloat16, device=device)
    out = out_big[:, 1:, :head_dim]
    lse_big = torch.full((num_heads, num_tokens), 7.0, device=device)
    lse = lse_big.t()
    result = call(case, out=out, lse=lse)
    assert result is out
    check_dense(case, out, lse)
    assert torch.all(out_big[:, 0] == 7.0) and torch.all(out_big[:, :, head_dim:] == 7.0)


@pytest.mark.parametrize("device", DEVICES)
def test_given_lse_without_return_lse(device):
    case = make_case(device, seed=12)
    lse = torch.full(case.query.shape[:2], 7.0, device=device)
    out = call(case, lse=lse)
    assert isinstance(out, torch.Tensor)
    check_dense(case, out, lse)
    out2, lse2 = call(case, lse=lse, return_lse=True)
    assert lse2 is lse


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("q_dtype", [FP8, torch.bfloat16, torch.float16])
def test_nvfp4_allocated(device, q_dtype):
    case = make_case(device, q_dtype=q_dtype, num_qo_heads=5, num_kv_heads=1, seed=13, bmm2_scale=2.0)
    fp4, lse = call(case, out_dtype="nvfp4", o_sf_scale=3.0, return_lse=True)
    assert isinstance(fp4, ctxattn.FP4Tensor)
    num_tokens, num_heads, head_dim = case.query.shape
    assert fp4.data.dtype == torch.uint8 and tuple(fp4.data.shape) == (num_tokens, num_heads, head_dim // 2)
    assert tuple(fp4.scale.shape) == (round_up(num_tokens, 128), round_up(num_heads * head_dim // 16, 4))
    assert fp4.scale.dtype == FP8 and fp4.scale_start_index == 0
    assert tuple(fp4.original_shape) == tuple(case.query.shape)
    o_ref, lse_ref = reference(case)
    check_nvfp4(fp4, o_ref, 3.0, query_rows(case))
    torch.testing.assert_close(lse.cpu().double(), lse_ref, rtol=TOL_LSE[0], atol=TOL_LSE[1])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scale_dtype", [FP8, torch.uint8])
@pytest.mark.parametrize("out_dtype", [None, "nvfp4"])
def test_nvfp4_given_with_start_index(device, scale_dtype, out_dtype):
    case = make_case(device, q_lens=(40, 0, 100), prefix_lens=(0, 3, 20), seed=14)
    num_tokens, num_heads, head_dim = case.query.shape
    start = 150
    data = torch.full((num_tokens, num_heads, head_dim // 2), 0xEE, dtype=torch.uint8, device=device)
    scale = torch.zeros((round_up(start + num_tokens, 128), round_up(num_heads * head_dim // 16, 4)),
                        dtype=torch.uint8, device=device).view(scale_dtype)
    given = ctxattn.FP4Tensor(data, scale, start)
    result = call(case, out=given, out_dtype=out_dtype, o_sf_scale=1.5, o_sf_vec_size=16)
    assert result is given
    o_ref, _ = reference(case)
    check_nvfp4(given, o_ref, 1.5, query_rows(case))
    untouched_tiles = (start // 128) * 128 * scale.shape[1]  # whole 128-row tiles before start
    assert torch.count_nonzero(scale.view(torch.uint8).reshape(-1)[:untouched_tiles]) == 0


@pytest.mark.parametrize("device", DEVICES)
def test_empty_requests_and_batch(device):
    case = make_case(device, q_lens=(0, 0, 3, 0), prefix_lens=(5, 0, 2, 9), seed=15)
    out, lse = call(case, return_lse=True)
    check_dense(case, out, lse)
    empty = make_case(device, q_lens=(0, 0), prefix_lens=(4, 0), seed=15)
    out, lse = call(empty, return_lse=True)
    assert out.shape == (0, 4, 64) and lse.shape == (0, 4)


@pytest.mark.parametrize("device", DEVICES)
def test_deterministic_and_cache_read_only(device):
    case = make_case(device, form="single", q_lens=(33, 7), prefix_lens=(50, 100), seed=16)
    before = case.kv_cache.clone()
    first, lse1 = call(case, return_lse=True)
    second, lse2 = call(case, return_lse=True)
    assert torch.equal(first.view(torch.int16), second.view(torch.int16))
    assert torch.equal(lse1.view(torch.int32), lse2.view(torch.int32))
    assert torch.equal(case.kv_cache.view(torch.int16), before.view(torch.int16))


def _random_config(rng):
    q_dtype = rng.choice([torch.bfloat16, torch.float16, FP8])
    kv_dtype = q_dtype if q_dtype == FP8 or rng.random() < 0.6 else FP8
    num_kv_heads = rng.choice([1, 2, 3])
    batch = rng.randint(1, 4)
    q_lens = tuple(rng.choice([0, 1, rng.randint(1, 24)]) for _ in range(batch))
    causal = rng.random() < 0.85
    cfg = dict(
        q_dtype=q_dtype, kv_dtype=kv_dtype, num_kv_heads=num_kv_heads,
        num_qo_heads=num_kv_heads * rng.choice([1, 2, 5]), head_dim=rng.choice([64, 128]),
        page_size=rng.choice([1, 2, 8, 16, 64, 128]), q_lens=q_lens,
        prefix_lens=tuple(rng.choice([0, rng.randint(0, 90)]) for _ in range(batch)),
        kv_layout=rng.choice(["HND", "NHD"]), form=rng.choice(["tuple", "single", "shared"]),
        extra_pages=rng.randint(0, 4), causal=causal,
        window_left=rng.choice([-1, -1, rng.randint(0, 40)]) if causal else -1,
        sinks=rng.choice([None, None, "tensor", "list"]), noncontig_query=rng.random() < 0.3,
        seq_lens_dtype=rng.choice([torch.int32, torch.uint32]), tensor_scales=rng.random() < 0.3,
        bmm2_scale=rng.choice([1.0, 0.75]),
    )
    out_dtype = rng.choice([None, None, torch.bfloat16, torch.float16, FP8, "nvfp4"])
    return cfg, out_dtype, rng.random() < 0.5, rng.random() < 0.3


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("seed", range(40))
def test_random_sweep(device, seed):
    cfg, out_dtype, return_lse, given_out = _random_config(random.Random(seed))
    case = make_case(device, seed=100 + seed, **cfg)
    kwargs = {"out_dtype": out_dtype, "return_lse": return_lse}
    if out_dtype == "nvfp4":
        kwargs["o_sf_scale"] = 2.0
    elif given_out:
        kwargs["out"] = torch.empty(case.query.shape, dtype=out_dtype or case.query.dtype, device=device)
    result = call(case, **kwargs)
    out, lse = result if return_lse else (result, None)
    if out_dtype == "nvfp4":
        o_ref, lse_ref = reference(case)
        check_nvfp4(out, o_ref, 2.0, query_rows(case))
        if lse is not None:
            torch.testing.assert_close(lse.cpu().double(), lse_ref, rtol=TOL_LSE[0], atol=TOL_LSE[1])
    else:
        if given_out:
            assert out is kwargs["out"]
        check_dense(case, out, lse)
