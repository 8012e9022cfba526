"""Every bad argument raises the right exception, names the argument, and writes nothing."""

import dataclasses

import pytest
import torch

import ctxattn
from attn_reference import DEVICES, FP8, call, make_case, refused_on_gpu

SENTINEL = 7.0


def base_case(device):
    return make_case(device, q_lens=(3, 5), prefix_lens=(4, 0), num_qo_heads=4, num_kv_heads=2, seed=0)


def replace(**make):
    """A mutation replacing positional arguments: each value is a function of the case."""
    return lambda c: (dataclasses.replace(c, **{k: f(c) for k, f in make.items()}), {})


def kw(**make):
    """A mutation adding keyword arguments: each value is a function of the case."""
    return lambda c: (c, {k: f(c) for k, f in make.items()})


def _bad_table(c):
    t = c.block_tables.clone()
    t[1, 0] = 10_000
    return t


def _cast_kv(c, dtype):
    k, v = c.kv_cache
    return (k, v.to(dtype))


def _kv_last_dim_strided(c):
    k, v = c.kv_cache
    wide = torch.zeros(*k.shape[:-1], 2 * k.shape[-1], dtype=k.dtype, device=k.device)
    return (wide[..., ::2], v)


def _fp4(c, cols_delta=0, rows=None, start=0):
    t, h, d = c.query.shape
    cols = (h * d // 16 + 3) // 4 * 4
    data = torch.zeros(t, h, d // 2, dtype=torch.uint8, device=c.query.device)
    scale = torch.zeros(rows or 128, cols + cols_delta, dtype=FP8, device=c.query.device)
    return ctxattn.FP4Tensor(data, scale, start)


# (id, exception, the argument the message must name, mutation)
CASES = [
    ("query-not-tensor", TypeError, "query", replace(query=lambda c: c.query.tolist())),
    ("query-2d", ValueError, "query", replace(query=lambda c: c.query[:, 0])),
    ("query-float64", TypeError, "query", replace(query=lambda c: c.query.double())),
    ("query-float32", TypeError, "query", replace(query=lambda c: c.query.float())),
    ("query-last-dim-strided", ValueError, "query",
     replace(query=lambda c: torch.repeat_interleave(c.query, 2, dim=2)[..., ::2])),
    ("kv-not-tensor", TypeError, "kv_cache", replace(kv_cache=lambda c: "cache")),
    ("kv-tuple-of-3", ValueError, "kv_cache", replace(kv_cache=lambda c: (*c.kv_cache, c.kv_cache[0]))),
    ("kv-tuple-3d", ValueError, "kv_cache", replace(kv_cache=lambda c: (c.kv_cache[0][0], c.kv_cache[1][0]))),
    ("kv-single-4d", ValueError, "kv_cache", replace(kv_cache=lambda c: c.kv_cache[0])),
    ("kv-single-dim1-3", ValueError, "kv_cache",
     replace(kv_cache=lambda c: torch.stack([c.kv_cache[0]] * 3, dim=1))),
    ("kv-shape-mismatch", ValueError, "kv_cache", replace(kv_cache=lambda c: (c.kv_cache[0], c.kv_cache[1][:-1]))),
    ("kv-dtype-mismatch", TypeError, "kv_cache", replace(kv_cache=lambda c: _cast_kv(c, torch.float16))),
    ("kv-float32", TypeError, "kv_cache",
     replace(kv_cache=lambda c: (c.kv_cache[0].float(), c.kv_cache[1].float()))),
    ("kv-int8", TypeError, "kv_cache",
     replace(kv_cache=lambda c: (c.kv_cache[0].to(torch.int8), c.kv_cache[1].to(torch.int8)))),
    ("kv-head-dim", ValueError, "kv_cache",
     replace(kv_cache=lambda c: (c.kv_cache[0][..., :32], c.kv_cache[1][..., :32]))),
    ("kv-last-dim-strided", ValueError, "kv_cache", replace(kv_cache=_kv_last_dim_strided)),
    ("kv-gqa-not-divisible", ValueError, "kv_cache",
     replace(kv_cache=lambda c: (c.kv_cache[0][:, :1].expand(-1, 3, -1, -1), c.kv_cache[1][:, :1].expand(-1, 3, -1, -1)))),
    ("page-size-3", ValueError, "page_size",
     replace(kv_cache=lambda c: (c.kv_cache[0][:, :, :3], c.kv_cache[1][:, :, :3]))),
    ("kv-layout-bad", ValueError, "kv_layout", kw(kv_layout=lambda c: "HDN")),
    ("kv-layout-type", TypeError, "kv_layout", kw(kv_layout=lambda c: 0)),
    ("workspace-not-tensor", TypeError, "workspace_buffer", replace(workspace_buffer=lambda c: 4096)),
    ("workspace-strided", ValueError, "workspace_buffer",
     replace(workspace_buffer=lambda c: c.workspace_buffer[::2])),
    ("workspace-too-small", ValueError, "workspace_buffer",
     replace(workspace_buffer=lambda c: c.workspace_buffer[:64])),
    ("workspace-misaligned", ValueError, "workspace_buffer",
     replace(workspace_buffer=lambda c: c.workspace_buffer[8:])),
    ("block-tables-int64", TypeError, "block_tables", replace(block_tables=lambda c: c.block_tables.long())),
    ("block-tables-1d", ValueError, "block_tables", replace(block_tables=lambda c: c.block_tables[0])),
    ("block-tables-rows", ValueError, "block_tables", replace(block_tables=lambda c: c.block_tables[:1])),
    ("block-tables-too-narrow", ValueError, "block_tables", replace(block_tables=lambda c: c.block_tables[:, :0])),
    ("block-tables-col-strided", ValueError, "block_tables",
     replace(block_tables=lambda c: torch.repeat_interleave(c.block_tables, 2, dim=1)[:, ::2])),
    ("block-tables-page-outside-pool", ValueError, "block_tables", replace(block_tables=_bad_table)),
    ("seq-lens-int64", TypeError, "seq_lens", replace(seq_lens=lambda c: c.seq_lens.long())),
    ("seq-lens-length", ValueError, "seq_lens", replace(seq_lens=lambda c: c.seq_lens[:1])),
    ("seq-lens-above-max", ValueError, "seq_lens", replace(seq_lens=lambda c: c.seq_lens + 100)),
    ("seq-lens-below-q-len", ValueError, "seq_lens", replace(seq_lens=lambda c: c.seq_lens * 0 + 1)),
    ("cum-q-float", TypeError, "cum_seq_lens_q", replace(cum_seq_lens_q=lambda c: c.cum_seq_lens_q.float())),
    ("cum-q-length", ValueError, "cum_seq_lens_q", replace(cum_seq_lens_q=lambda c: c.cum_seq_lens_q[:2])),
    ("cum-q-decreasing", ValueError, "cum_seq_lens_q",
     replace(cum_seq_lens_q=lambda c: torch.tensor([0, 5, 3], dtype=torch.int32, device=c.query.device))),
    ("cum-kv-length", ValueError, "cum_seq_lens_kv", replace(cum_seq_lens_kv=lambda c: c.cum_seq_lens_kv[:2])),
    ("cum-kv-int64", TypeError, "cum_seq_lens_kv", replace(cum_seq_lens_kv=lambda c: c.cum_seq_lens_kv.long())),
    ("max-q-len-float", TypeError, "max_q_len", replace(max_q_len=lambda c: 5.0)),
    ("max-q-len-too-small", ValueError, "max_q_len", replace(max_q_len=lambda c: 1)),
    ("max-kv-len-overflow", ValueError, "max_kv_len", replace(max_kv_len=lambda c: 2**40)),
    ("batch-size-negative", ValueError, "batch_size", replace(batch_size=lambda c: -1)),
    ("batch-size-bool", TypeError, "batch_size", replace(batch_size=lambda c: True)),
    ("bmm1-scale-str", TypeError, "bmm1_scale", replace(bmm1_scale=lambda c: "0.1")),
    ("bmm1-scale-float64-tensor", TypeError, "bmm1_scale",
     replace(bmm1_scale=lambda c: torch.ones(1, dtype=torch.float64, device=c.query.device))),
    ("bmm2-scale-2-elements", ValueError, "bmm2_scale",
     replace(bmm2_scale=lambda c: torch.ones(2, device=c.query.device))),
    ("bmm2-scale-nan", ValueError, "bmm2_scale", replace(bmm2_scale=lambda c: float("nan"))),
    ("window-below-minus-1", ValueError, "window_left", kw(window_left=lambda c: -5)),
    ("window-non-causal", ValueError, "window_left", kw(window_left=lambda c: 4, causal=lambda c: False)),
    ("enable-pdl-str", TypeError, "enable_pdl", kw(enable_pdl=lambda c: "yes")),
    ("causal-str", TypeError, "causal", kw(causal=lambda c: "no")),
    ("sinks-length", ValueError, "sinks", kw(sinks=lambda c: torch.zeros(3, device=c.query.device))),
    ("sinks-float16", TypeError, "sinks",
     kw(sinks=lambda c: torch.zeros(4, dtype=torch.float16, device=c.query.device))),
    ("sinks-list-of-2", ValueError, "sinks", kw(sinks=lambda c: [torch.zeros(4, device=c.query.device)] * 2)),
    ("sinks-strided", ValueError, "sinks", kw(sinks=lambda c: torch.zeros(8, device=c.query.device)[::2])),
    ("out-dtype-str", ValueError, "out_dtype", kw(out_dtype=lambda c: "fp4")),
    ("out-dtype-int", TypeError, "out_dtype", kw(out_dtype=lambda c: 3, out=lambda c: None)),
    ("out-dtype-float64", TypeError, "out_dtype", kw(out_dtype=lambda c: torch.float64, out=lambda c: None)),
    ("out-dtype-float32", TypeError, "out_dtype", kw(out_dtype=lambda c: torch.float32, out=lambda c: None)),
    ("out-dtype-vs-out", TypeError, "out", kw(out_dtype=lambda c: torch.float16)),
    ("o-sf-scale-dense", ValueError, "o_sf_scale", kw(o_sf_scale=lambda c: 1.0)),
    ("o-sf-vec-size-dense", ValueError, "o_sf_vec_size", kw(o_sf_vec_size=lambda c: 16)),
    ("nvfp4-no-o-sf-scale", ValueError, "o_sf_scale", kw(out_dtype=lambda c: "nvfp4", out=lambda c: None)),
    ("nvfp4-o-sf-scale-zero", ValueError, "o_sf_scale",
     kw(out_dtype=lambda c: "nvfp4", out=lambda c: None, o_sf_scale=lambda c: 0.0)),
    ("nvfp4-vec-size-32", ValueError, "o_sf_vec_size",
     kw(out_dtype=lambda c: "nvfp4", out=lambda c: None, o_sf_scale=lambda c: 1.0, o_sf_vec_size=lambda c: 32)),
    ("nvfp4-out-tensor", TypeError, "out", kw(out_dtype=lambda c: "nvfp4", o_sf_scale=lambda c: 1.0)),
    ("nvfp4-scale-cols", ValueError, "out.scale", kw(out=lambda c: _fp4(c, cols_delta=4), o_sf_scale=lambda c: 1.0)),
    ("nvfp4-scale-rows", ValueError, "out",
     kw(out=lambda c: _fp4(c, rows=128, start=126), o_sf_scale=lambda c: 1.0)),
    ("fp4-out-with-dense-dtype", TypeError, "out",
     kw(out=lambda c: _fp4(c), out_dtype=lambda c: torch.bfloat16, o_sf_scale=lambda c: 1.0)),
    ("out-shape", ValueError, "out", kw(out=lambda c: torch.zeros(2, 4, 64, dtype=torch.bfloat16, device=c.query.device))),
    ("out-not-tensor", TypeError, "out", kw(out=lambda c: [0.0])),
    ("out-float32", TypeError, "out_dtype",
     kw(out=lambda c: torch.zeros(c.query.shape, device=c.query.device))),
    ("lse-shape", ValueError, "lse", kw(lse=lambda c: torch.zeros(2, 4, device=c.query.device))),
    ("lse-float16", TypeError, "lse",
     kw(lse=lambda c: torch.zeros(c.query.shape[:2], dtype=torch.float16, device=c.query.device))),
    ("device-meta", ValueError, "block_tables", replace(block_tables=lambda c: c.block_tables.to("meta"))),
    # FlashInfer 0.7.2 keywords (SPEC 8), with FlashInfer's messages where it has one.
    ("block-tables-3d-shared", ValueError, "block_tables must be 2D for shared paged KV layout, got ndim=3",
     replace(block_tables=lambda c: c.block_tables[:, None])),
    ("block-tables-2d-separate", ValueError, "block_tables must be 3D for separate paged KV layout, got ndim=2",
     kw(uses_shared_paged_kv_idx=lambda c: False)),
    ("block-tables-separate-dim1", ValueError, "block_tables must have shape[1]==2 for separate KV indices",
     lambda c: (dataclasses.replace(c, block_tables=torch.stack([c.block_tables] * 3, dim=1)),
                {"uses_shared_paged_kv_idx": False})),
    ("block-tables-separate-v-outside-pool", ValueError, "block_tables[1][1][0]",
     lambda c: (dataclasses.replace(c, block_tables=_separate_with_bad_v(c)), {"uses_shared_paged_kv_idx": False})),
    ("uses-shared-str", TypeError, "uses_shared_paged_kv_idx", kw(uses_shared_paged_kv_idx=lambda c: "yes")),
    ("skip-factor-str", TypeError, "skip_softmax_threshold_scale_factor",
     kw(skip_softmax_threshold_scale_factor=lambda c: "1e-3")),
    ("backend-unknown", ValueError, "trtllm_batch_context_with_kv_cache backend must be 'trtllm-gen' or 'cake'",
     kw(backend=lambda c: "fa3")),
    ("backend-none", ValueError, "backend must be", kw(backend=lambda c: None)),
    ("use-fp16-softmax", ValueError, "use_fp16_softmax is only supported on SM107 (Rubin)",
     kw(use_fp16_softmax=lambda c: True)),
    ("uses-spcompress", ValueError, "uses_spcompress is only supported on SM107 (Rubin)",
     kw(uses_spcompress=lambda c: True)),
    ("sm107-flag-before-everything", ValueError, "use_fp16_softmax",
     lambda c: (dataclasses.replace(c, query=c.query.tolist()), {"use_fp16_softmax": True})),
    ("counter-device", ValueError, "multi_ctas_kv_counter_buffer must be on the same device as query",
     kw(multi_ctas_kv_counter_buffer=lambda c: torch.zeros(4096, dtype=torch.uint8, device="meta"))),
    ("counter-strided", ValueError, "multi_ctas_kv_counter_buffer must be contiguous",
     kw(multi_ctas_kv_counter_buffer=lambda c: torch.zeros(8192, dtype=torch.uint8, device=c.query.device)[::2])),
    ("counter-misaligned", ValueError, "multi_ctas_kv_counter_buffer must be 16-byte aligned, got data_ptr % 16 = 4",
     kw(multi_ctas_kv_counter_buffer=lambda c: torch.zeros(4096, dtype=torch.uint8, device=c.query.device)[4:])),
    ("counter-too-small", ValueError, "multi_ctas_kv_counter_buffer is too small: got 16 bytes",
     kw(multi_ctas_kv_counter_buffer=lambda c: torch.zeros(16, dtype=torch.uint8, device=c.query.device))),
    ("counter-not-tensor", TypeError, "multi_ctas_kv_counter_buffer", kw(multi_ctas_kv_counter_buffer=lambda c: 0)),
]


def _separate_with_bad_v(c):
    """The [B, 2, M] form of the base table, with request 1's first V page id outside the pool."""
    t = torch.stack([c.block_tables, c.block_tables], dim=1).clone()
    t[1, 1, 0] = 10_000
    return t


def nvfp4_base_case(device):
    return make_case(device, q_dtype=FP8, kv_dtype="nvfp4", q_lens=(3, 5), prefix_lens=(4, 0), num_qo_heads=4,
                     num_kv_heads=2, seed=0)


def _sf(c, f):
    """kv_cache_sf with f applied to both scale tensors."""
    k_sf, v_sf = c.kwargs["kv_cache_sf"]
    return f(k_sf), f(v_sf)


def _data(c, f):
    k, v = c.kv_cache
    return f(k), f(v)


NVFP4_CASES = [
    ("no-scales", ValueError, "kv_cache_sf must be provided for NVFP4 KV cache.", kw(kv_cache_sf=lambda c: None)),
    ("v-not-uint8", TypeError, "kv_cache", replace(kv_cache=lambda c: (c.kv_cache[0], c.kv_cache[1].view(FP8)))),
    ("data-last-dim", ValueError, "kv_cache", replace(kv_cache=lambda c: _data(c, lambda t: t[..., :16]))),
    ("scales-shape", ValueError, "kv_cache_sf", kw(kv_cache_sf=lambda c: _sf(c, lambda t: t[..., :2]))),
    ("scales-pages", ValueError, "kv_cache_sf", kw(kv_cache_sf=lambda c: _sf(c, lambda t: t[:-1]))),
    ("scales-dtype", TypeError, "kv_cache_sf", kw(kv_cache_sf=lambda c: _sf(c, lambda t: t.float().half()))),
    ("scales-last-dim-strided", ValueError, "kv_cache_sf",
     kw(kv_cache_sf=lambda c: _sf(c, lambda t: torch.repeat_interleave(t.view(torch.uint8), 2, dim=3)[..., ::2]))),
    ("scales-one-tensor-dim1-1", ValueError, "kv_cache_sf",
     kw(kv_cache_sf=lambda c: c.kwargs["kv_cache_sf"][0].unsqueeze(1))),
    ("scales-three", ValueError, "kv_cache_sf", kw(kv_cache_sf=lambda c: (*c.kwargs["kv_cache_sf"],) * 2)),
    ("scales-not-tensor", TypeError, "kv_cache_sf", kw(kv_cache_sf=lambda c: "scales")),
    ("scales-device", ValueError, "kv_cache_sf", kw(kv_cache_sf=lambda c: _sf(c, lambda t: t.to("meta")))),
    ("page-size-2", ValueError, "page_size a multiple of 4",
     lambda c: (dataclasses.replace(c, kv_cache=_data(c, lambda t: t[:, :, :2]), max_kv_len=2,
                                    seq_lens=torch.minimum(c.seq_lens, torch.tensor(2, device=c.query.device)),
                                    block_tables=c.block_tables, cum_seq_lens_q=c.cum_seq_lens_q),
                {"kv_cache_sf": _sf(c, lambda t: t[:, :, :2])})),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("exc,name,mutate", [c[1:] for c in NVFP4_CASES], ids=[c[0] for c in NVFP4_CASES])
def test_bad_nvfp4_argument(device, exc, name, mutate, monkeypatch):
    case = nvfp4_base_case(device)
    out = torch.full(case.query.shape, SENTINEL, dtype=torch.bfloat16, device=device)
    kwargs = {**case.kwargs, "out": out}
    case, extra = mutate(case)
    kwargs.update(extra)
    with pytest.raises(exc) as info:
        ctxattn.trtllm_batch_context_with_kv_cache(*case.args(), **kwargs)
    assert name in str(info.value), f"message does not name {name!r}: {info.value}"
    assert torch.all(out == SENTINEL)


@pytest.mark.parametrize("device", DEVICES)
def test_nvfp4_head_dim_not_a_multiple_of_64(device):
    case = make_case(device, q_dtype=FP8, kv_dtype="nvfp4", head_dim=32, q_lens=(3,), prefix_lens=(4,), seed=0)
    with pytest.raises(ValueError, match="head_dim a multiple of 64"):
        call(case)


@pytest.mark.parametrize("device", DEVICES)
def test_valid_nvfp4_base_case(device):
    case = nvfp4_base_case(device)
    if refused_on_gpu(case):
        return
    out = ctxattn.trtllm_batch_context_with_kv_cache(*case.args(), **case.kwargs)
    assert torch.isfinite(out.float()).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("exc,name,mutate", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_argument(device, exc, name, mutate, monkeypatch):
    if device == "cuda":
        # The GPU path reads metadata contents only in check mode (the CPU always checks them).
        monkeypatch.setenv("CTXATTN_CHECK_METADATA", "1")
    case = base_case(device)
    out = torch.full(case.query.shape, SENTINEL, dtype=torch.bfloat16, device=device)
    lse = torch.full(case.query.shape[:2], SENTINEL, device=device)
    kwargs = {**case.kwargs, "out": out, "lse": lse}
    case, extra = mutate(case)
    kwargs.update(extra)
    given_out = kwargs["out"]
    with pytest.raises(exc) as info:
        ctxattn.trtllm_batch_context_with_kv_cache(*case.args(), **kwargs)
    assert name in str(info.value), f"message does not name {name!r}: {info.value}"
    assert torch.all(out == SENTINEL) and torch.all(lse == SENTINEL)
    if isinstance(given_out, ctxattn.FP4Tensor):
        assert torch.count_nonzero(given_out.data) == 0
        assert torch.count_nonzero(given_out.scale.view(torch.uint8)) == 0


@pytest.mark.parametrize("device", DEVICES)
def test_valid_base_case(device):
    """The base of the table above is itself valid: each error comes from its one mutation."""
    case = base_case(device)
    out = ctxattn.trtllm_batch_context_with_kv_cache(*case.args(), **case.kwargs)
    assert torch.isfinite(out.float()).all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tensors_without_cuda_build():
    if ctxattn.has_cuda():
        pytest.skip("this libctxattn was built with CUDA")
    case = base_case("cuda")
    with pytest.raises(NotImplementedError, match="without CUDA"):
        ctxattn.trtllm_batch_context_with_kv_cache(*case.args(), **case.kwargs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_mixed_devices():
    case = base_case("cuda")
    case = dataclasses.replace(case, seq_lens=case.seq_lens.cpu())
    with pytest.raises(ValueError, match="seq_lens"):
        ctxattn.trtllm_batch_context_with_kv_cache(*case.args(), **case.kwargs)


def test_fp4tensor_validates_its_fields():
    data = torch.zeros(2, 4, 32, dtype=torch.uint8)
    scale = torch.zeros(128, 8, dtype=FP8)
    with pytest.raises(TypeError, match="FP4Tensor.data"):
        ctxattn.FP4Tensor(data.float(), scale)
    with pytest.raises(TypeError, match="FP4Tensor.scale"):
        ctxattn.FP4Tensor(data, scale.float())
    with pytest.raises(ValueError, match="scale_start_index"):
        ctxattn.FP4Tensor(data, scale, -1)
    fp4 = ctxattn.FP4Tensor(data, scale.view(torch.uint8), 3)
    assert fp4.original_shape == (2, 4, 64) and fp4.scale_start_index == 3
