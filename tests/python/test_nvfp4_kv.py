"""NVFP4 KV caches (SPEC 8.1): ctxattn's quantizer and its inverse against the layout rules,
and the call over NVFP4 caches in every form against the float64 reference."""

import math

import pytest
import torch

import ctxattn
import kv_nvfp4
from attn_reference import DEVICES, FP8, SM90, call, check_dense, make_case, refused_on_gpu

_E2M1_GRID = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6])


def _cache(shape, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen).to(torch.bfloat16), torch.randn(*shape, generator=gen).to(torch.bfloat16)


@pytest.mark.parametrize("kv_layout", ["HND", "NHD"])
def test_quantize_layout_shapes_and_globals(kv_layout):
    shape = (5, 2, 16, 128) if kv_layout == "HND" else (5, 16, 2, 128)
    k, v = _cache(shape, 0)
    (k_fp4, v_fp4), (k_sf, v_sf), k_g, v_g = ctxattn.nvfp4_quantize_paged_kv_cache(k, v, kv_layout=kv_layout)
    assert k_fp4.dtype == v_fp4.dtype == torch.uint8 and k_fp4.shape == (*shape[:3], 64)
    assert k_sf.dtype == v_sf.dtype == FP8 and k_sf.shape == (*shape[:3], 8)
    assert math.isclose(k_g, k.float().abs().max().item() / 448, rel_tol=1e-6)
    assert math.isclose(v_g, v.float().abs().max().item() / 448, rel_tol=1e-6)
    assert k_sf.float().max() <= 448 / 6 + 1e-3


def test_nhd_is_the_transpose_of_hnd():
    """FlashInfer's NHD quantizer writes the bytes that become the HND layout (V's interleave
    included) after transposing dims 1 and 2."""
    k, v = _cache((3, 2, 32, 64), 1)
    hnd = ctxattn.nvfp4_quantize_paged_kv_cache(k, v, "HND")
    nhd = ctxattn.nvfp4_quantize_paged_kv_cache(k.transpose(1, 2), v.transpose(1, 2), "NHD")
    for a, b in zip((*hnd[0], *hnd[1]), (*nhd[0], *nhd[1])):
        assert torch.equal(a.view(torch.uint8), b.transpose(1, 2).contiguous().view(torch.uint8))
    assert hnd[2:] == nhd[2:]


def test_values_and_v_interleave_by_the_formula():
    """Each stored value is the nearest e2m1 point (ties to even) of x / (scale * global), K's
    scales are linear, and V's sit where (t // 4) * 4 * S + 4 * s + t % 4 says."""
    k, v = _cache((2, 1, 8, 64), 2)
    (k_fp4, v_fp4), (k_sf, v_sf), k_g, v_g = ctxattn.nvfp4_quantize_paged_kv_cache(k, v)
    for data, sf, g, x in ((k_fp4, k_sf, k_g, k), (v_fp4, kv_nvfp4.unswizzle_v(v_sf), v_g, v)):
        decoded = kv_nvfp4.decode(data, sf)  # e2m1 * scale, no global
        scale = sf.double().repeat_interleave(16, -1)
        target = (x.double() / g / scale).clamp(-6, 6)
        grid = _E2M1_GRID.double()
        nearest = grid[(target.abs()[..., None] - grid).abs().argmin(-1)]
        midpoints = (grid[1:] + grid[:-1]) / 2
        at_tie = ((target.abs()[..., None] - midpoints).abs() < 1e-6).any(-1)  # test_ties_go_to_the_even_code
        assert (((decoded / scale).abs() == nearest) | at_tie).all()
        err = (decoded * g - x.double()).abs()
        block_amax = x.double().abs().reshape(*x.shape[:-1], -1, 16).amax(-1).repeat_interleave(16, -1)
        assert (err <= block_amax / 6 * 1.07 + 1e-6).all()  # half a step of the coarsest grid + scale rounding
    # The interleave, independently: V's linear scale of (t, s) equals stored[f // S, f % S].
    linear = kv_nvfp4.unswizzle_v(v_sf).view(torch.uint8)
    S = v_sf.shape[-1]
    for t in range(8):
        for s in range(S):
            f = (t // 4) * 4 * S + 4 * s + t % 4
            assert v_sf.view(torch.uint8)[0, 0, f // S, f % S] == linear[0, 0, t, s]


def test_ties_go_to_the_even_code():
    x = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, -0.25, -5.0] + [0.0] * 6, dtype=torch.float32)
    block = x.reshape(1, 1, 1, 16).repeat(1, 1, 4, 4)  # D = 64, page 4
    (data, _), (sf, _), g, _ = ctxattn.nvfp4_quantize_paged_kv_cache(block, block, k_global_sf=1.0, v_global_sf=1.0)
    assert g == 1.0 and sf.float()[0, 0, 0, 0] == 1.0  # amax 6: scale 1
    values = kv_nvfp4.decode(data, sf)[0, 0, 0, :16]
    expected = [0, 1, 1, 2, 2, 4, 4, 6, 0, -4] + [0] * 6
    assert values.tolist() == expected


def test_dequantize_is_the_inverse():
    k, v = _cache((4, 2, 16, 128), 3)
    fp4, sf, k_g, v_g = ctxattn.nvfp4_quantize_paged_kv_cache(k, v)
    k_hat, v_hat = ctxattn.nvfp4_dequantize_paged_kv_cache(fp4, sf, k_g, v_g)
    torch.testing.assert_close(k_hat.double(), kv_nvfp4.decode(fp4[0], sf[0]) * k_g, rtol=1e-6, atol=0)
    torch.testing.assert_close(v_hat.double(), kv_nvfp4.decode(fp4[1], kv_nvfp4.unswizzle_v(sf[1])) * v_g,
                               rtol=1e-6, atol=0)
    unit = ctxattn.nvfp4_dequantize_paged_kv_cache(fp4, sf)  # global scales 1: what the call reads
    assert torch.equal(unit[0].double(), kv_nvfp4.decode(fp4[0], sf[0]))


@pytest.mark.parametrize("bad", ["page", "dim"])
def test_quantize_refuses_shapes_without_the_interleave(bad):
    shape = (2, 1, 6, 64) if bad == "page" else (2, 1, 8, 48)
    k, v = _cache(shape, 4)
    with pytest.raises(ValueError, match="page_size % 4 == 0 and head_dim % 64 == 0"):
        ctxattn.nvfp4_quantize_paged_kv_cache(k, v)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kv_layout", ["HND", "NHD"])
@pytest.mark.parametrize("form,sf_form", [("tuple", "tuple"), ("single", "single"), ("tuple", "single")])
@pytest.mark.parametrize("q_dtype", [FP8, torch.bfloat16, torch.float16])
def test_call_forms(device, kv_layout, form, sf_form, q_dtype):
    case = make_case(device, q_dtype=q_dtype, kv_dtype="nvfp4", head_dim=128, page_size=16, kv_layout=kv_layout,
                     form=form, sf_form=sf_form, q_lens=(6, 17, 0, 1), prefix_lens=(40, 3, 9, 70),
                     num_qo_heads=10, num_kv_heads=2, sinks="tensor", seed=5)
    if refused_on_gpu(case):
        return
    out, lse = call(case, return_lse=True, out_dtype=FP8 if q_dtype == FP8 else None)
    check_dense(case, out, lse)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("window_left,causal", [(-1, False), (20, True)])
def test_windows_and_non_causal(device, window_left, causal):
    case = make_case(device, q_dtype=FP8, kv_dtype="nvfp4", head_dim=64, page_size=8, window_left=window_left,
                     causal=causal, q_lens=(30, 5), prefix_lens=(50, 0), seed=6)
    if refused_on_gpu(case):
        return
    out, lse = call(case, return_lse=True, out_dtype=torch.bfloat16)
    check_dense(case, out, lse)


@pytest.mark.parametrize("device", DEVICES)
def test_same_bits_as_the_dequantized_16bit_cache(device):
    """e2m1 x e4m3 is exact in bf16: the call over an NVFP4 cache gives bitwise the output of the
    call over a bf16 cache holding its decoded values (on the GPU: the portable kernel both times,
    at D = 64, where its NVFP4 and 16-bit forms share the tile shape and so the arithmetic)."""
    head_dim = 128 if device == "cpu" else 64
    case = make_case(device, q_dtype=torch.bfloat16, kv_dtype="nvfp4", head_dim=head_dim, page_size=32,
                     q_lens=(40, 9), prefix_lens=(100, 0), extra_pages=0, seed=7)
    if refused_on_gpu(case):
        return
    k_fp4, v_fp4 = case.kv_cache
    k_sf, v_sf = case.kwargs["kv_cache_sf"]
    k16, v16 = ctxattn.nvfp4_dequantize_paged_kv_cache((k_fp4, v_fp4), (k_sf, v_sf), dtype=torch.bfloat16)
    dense = make_case(device, q_dtype=torch.bfloat16, head_dim=head_dim, page_size=32, q_lens=(40, 9),
                      prefix_lens=(100, 0), extra_pages=0, seed=7)
    dense.kv_cache = (k16.nan_to_num(0.0), v16.nan_to_num(0.0))
    dense.query, dense.block_tables = case.query, case.block_tables
    with ctxattn.use_backend("auto" if device == "cpu" else "cuda_portable"):
        assert torch.equal(call(case).view(torch.int16), call(dense).view(torch.int16))


@SM90
@pytest.mark.parametrize("q_dtype,kv_layout,page_size,head_dim,backend", [
    (FP8, "HND", 16, 128, "cuda_sm90"), (torch.float16, "HND", 64, 128, "cuda_sm90"),
    (torch.bfloat16, "HND", 32, 128, "cuda_sm90"), (FP8, "HND", 8, 256, "cuda_sm90"),
    (torch.bfloat16, "HND", 16, 256, "cuda_sm90"), (FP8, "NHD", 16, 128, "cuda_portable"),
    (FP8, "HND", 8, 128, "cuda_portable"), (FP8, "HND", 4, 256, "cuda_portable"), (FP8, "HND", 64, 64, "cuda_portable")])
def test_auto_runs_nvfp4_where_the_sm90_kernel_serves_it(q_dtype, kv_layout, page_size, head_dim, backend):
    """AUTO's choice over NVFP4 caches on an sm90 GPU (the Hopper kernels: e4m3 / fp16 / bf16 queries
    at D = 128 and 256 with HND scales and pages of 2048 / D tokens or more; the portable kernel
    otherwise), and the result against the float64 reference either way."""
    case = make_case("cuda", q_dtype=q_dtype, kv_dtype="nvfp4", head_dim=head_dim, page_size=page_size,
                     kv_layout=kv_layout, q_lens=(33, 1, 70), prefix_lens=(200, 0, 9), num_qo_heads=8,
                     num_kv_heads=2, seed=11)
    assert ctxattn.selected_backend(*case.args(), **case.kwargs) == backend
    out, lse = call(case, return_lse=True, out_dtype=FP8 if q_dtype == FP8 else None)
    check_dense(case, out, lse)
