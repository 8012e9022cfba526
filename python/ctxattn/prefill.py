"""trtllm_batch_context_with_kv_cache: FlashInfer's call, on the ctxattn library.

This module resolves the Python-level arguments (the kv_cache forms and an NVFP4 cache's block
scales, scales as floats or tensors, the block-table forms, the output and its dtype, sinks, LSE),
checks what only Python can see (types, torch dtypes, devices, dimensions, shapes against each
other, last-dim contiguity), allocates the outputs the caller did not give, and calls the torch
custom op. The C library validates everything else before it writes anything. FlashInfer 0.7.2's
own checks come first, in its order and with its messages (SPEC 8).
"""

import inspect
import numbers
import operator
from typing import List, Optional, Tuple, Union

import torch

from . import _op  # noqa: F401  (registers torch.ops.ctxattn.batch_context_with_kv_cache)
from .fp4 import FP4Tensor

__all__ = ["trtllm_batch_context_with_kv_cache", "selected_backend", "workspace_size", "FP4Tensor"]

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1
_NVFP4_BLOCK = 16      # values per nvfp4 scale factor
_SCALE_ROW_TILE = 128  # the swizzled scale layout pads rows to whole 128-row tiles
_SCALE_COL_TILE = 4    # ... and columns to whole 4-column tiles
_ATTENTION_DTYPES = "float16, bfloat16 or float8_e4m3fn"
_KV_DTYPES = "float16, bfloat16, float8_e4m3fn or uint8 (NVFP4)"
_BACKENDS = ("trtllm-gen", "cake")
_LAYOUT_SHAPES = {
    "HND": "[num_pages, num_kv_heads, page_size, head_dim]",
    "NHD": "[num_pages, page_size, num_kv_heads, head_dim]",
}


def _round_up(x, m):
    return (x + m - 1) // m * m


def _kind(x):
    if isinstance(x, torch.Tensor):
        return f"a {x.dtype} tensor"
    name = type(x).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _tensor(name, x):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {_kind(x)}")
    return x


def _dims(name, t, ndim, what):
    if t.dim() != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D tensor {what}, got shape {tuple(t.shape)}")


def _shape(name, t, shape, what):
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {tuple(shape)} {what}, got {tuple(t.shape)}")


def _dtype(name, t, dtypes, expected):
    if t.dtype not in dtypes:
        raise TypeError(f"{name}: expected dtype {expected}, got {t.dtype}")


def _device(name, t, device):
    if t.device != device:
        raise ValueError(f"{name}: expected a tensor on {device} (the query's device), got {t.device}")


def _last_dim_contiguous(name, t):
    if t.dim() > 0 and t.shape[-1] > 1 and t.stride(-1) != 1:
        raise ValueError(f"{name}: expected stride 1 in the last dimension, got strides {t.stride()}")


def _contiguous(name, t):
    if not t.is_contiguous():
        raise ValueError(f"{name}: expected a contiguous tensor, got strides {t.stride()} for shape {tuple(t.shape)}")


def _int(name, x, lo=_INT32_MIN, hi=_INT32_MAX):
    if isinstance(x, torch.SymInt):
        return x
    if isinstance(x, bool) or not hasattr(type(x), "__index__"):
        raise TypeError(f"{name}: expected an int, got {_kind(x)}")
    # Under dynamo a dynamic int arrives as a plain int; operator.index would specialise it to a
    # constant (a recompile for every new max_q_len), so an int is taken as it is there.
    if not (isinstance(x, int) and torch.compiler.is_compiling()):
        x = operator.index(x)
    if not lo <= x <= hi:
        raise ValueError(f"{name}: expected a value in [{lo}, {hi}], got {x}")
    return x


def _float(name, x):
    if isinstance(x, torch.SymFloat):
        return x
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name}: expected a float, got {_kind(x)}")
    return float(x)


def _flag(name, x):
    if not isinstance(x, (bool, int)):
        raise TypeError(f"{name}: expected a bool, got {_kind(x)}")
    return bool(x)


def _metadata(name, t, dtypes, expected_dtype, shape, what, device):
    _tensor(name, t)
    _dtype(name, t, dtypes, expected_dtype)
    _shape(name, t, shape, what)
    _device(name, t, device)
    _contiguous(name, t)


def _split_kv_cache(kv_cache, kv_layout, query):
    """(k, v) as 4-D views in kv_layout order; the shared form gives v = k. Never copies."""
    if isinstance(kv_cache, (tuple, list)):
        if len(kv_cache) != 2:
            raise ValueError(f"kv_cache: expected a (k_cache, v_cache) pair, got {len(kv_cache)} elements")
        k = _tensor("kv_cache[0]", kv_cache[0])
        v = _tensor("kv_cache[1]", kv_cache[1])
        what = _LAYOUT_SHAPES[kv_layout]
        _dims("kv_cache[0]", k, 4, what)
        _dims("kv_cache[1]", v, 4, what)
    elif isinstance(kv_cache, torch.Tensor):
        what = "[num_pages, 1 or 2, ...] (or a (k_cache, v_cache) tuple of 4-D tensors)"
        _dims("kv_cache", kv_cache, 5, what)
        if kv_cache.shape[1] not in (1, 2):
            raise ValueError(
                f"kv_cache: expected dim 1 of size 2 (K, V) or 1 (V shares K's memory), got shape "
                f"{tuple(kv_cache.shape)}"
            )
        k = kv_cache.select(1, 0)
        v = kv_cache.select(1, 1) if kv_cache.shape[1] == 2 else k
    else:
        raise TypeError(f"kv_cache: expected a tensor or a (k_cache, v_cache) tuple, got {_kind(kv_cache)}")

    if k.shape != v.shape:
        raise ValueError(f"kv_cache: K and V must have the same shape, got {tuple(k.shape)} and {tuple(v.shape)}")
    if k.dtype != v.dtype:
        raise TypeError(f"kv_cache: K and V must have the same dtype, got {k.dtype} and {v.dtype}")
    if _op.kv_dtype_code(k.dtype) is None:
        raise TypeError(f"kv_cache: expected dtype {_KV_DTYPES}, got {k.dtype}")
    _device("kv_cache", k, query.device)
    _device("kv_cache", v, query.device)
    _last_dim_contiguous("kv_cache (K)", k)
    _last_dim_contiguous("kv_cache (V)", v)
    head_dim = query.shape[2]
    if k.dtype == torch.uint8:
        if 2 * k.shape[3] != head_dim:
            raise ValueError(
                f"kv_cache: an NVFP4 (uint8) cache holds two e2m1 codes a byte: expected head_dim / 2 = "
                f"{head_dim / 2:g} bytes in the last dimension (head_dim {head_dim}, the query's), got shape "
                f"{tuple(k.shape)}"
            )
    elif k.shape[3] != head_dim:
        raise ValueError(
            f"kv_cache: expected head_dim {head_dim} (the query's) in the last dimension, got "
            f"shape {tuple(k.shape)}"
        )
    return k, v


def _split_kv_cache_sf(kv_cache_sf, k_cache, kv_layout, query):
    """(k_sf, v_sf) as 4-D views of an NVFP4 cache's block scales; a tuple of two 4-D tensors or
    one tensor whose dim 1 holds K's and V's (there is no form with V sharing K's scales)."""
    if kv_cache_sf is None:
        raise ValueError("kv_cache_sf must be provided for NVFP4 KV cache.")
    if isinstance(kv_cache_sf, (tuple, list)):
        if len(kv_cache_sf) != 2:
            raise ValueError(f"kv_cache_sf: expected a (k_scales, v_scales) pair, got {len(kv_cache_sf)} elements")
        k_sf = _tensor("kv_cache_sf[0]", kv_cache_sf[0])
        v_sf = _tensor("kv_cache_sf[1]", kv_cache_sf[1])
    elif isinstance(kv_cache_sf, torch.Tensor):
        if kv_cache_sf.dim() != 5 or kv_cache_sf.shape[1] != 2:
            raise ValueError(
                f"kv_cache_sf: expected a (k_scales, v_scales) tuple or one tensor [num_pages, 2, ...] "
                f"(K's scales at index 0 of dim 1, V's at 1), got shape {tuple(kv_cache_sf.shape)}"
            )
        k_sf, v_sf = kv_cache_sf.select(1, 0), kv_cache_sf.select(1, 1)
    else:
        raise TypeError(f"kv_cache_sf: expected a tensor or a (k_scales, v_scales) tuple, got {_kind(kv_cache_sf)}")
    expected = (*k_cache.shape[:3], query.shape[2] // _NVFP4_BLOCK)
    what = _LAYOUT_SHAPES[kv_layout].replace("head_dim", "head_dim // 16")
    for name, t in (("kv_cache_sf (K)", k_sf), ("kv_cache_sf (V)", v_sf)):
        _dtype(name, t, (torch.float8_e4m3fn, torch.uint8), "float8_e4m3fn (or uint8 holding its bytes)")
        _shape(name, t, expected, what)
        _device(name, t, query.device)
        _last_dim_contiguous(name, t)
    return k_sf, v_sf


def _split_scale(name, scale, device):
    """(float, tensor-or-None): a tensor scale is read on the device, never synchronised to the host."""
    if isinstance(scale, torch.Tensor):
        _dtype(name, scale, (torch.float32,), "float32")
        if scale.numel() != 1:
            raise ValueError(f"{name}: expected a 1-element tensor, got shape {tuple(scale.shape)}")
        _device(name, scale, device)
        return 1.0, scale
    return _float(name, scale), None


def _resolve_sinks(sinks, num_qo_heads, device):
    if sinks is None:
        return None
    if isinstance(sinks, (list, tuple)):
        if len(sinks) != 1:
            raise ValueError(f"sinks: expected a tensor or a list holding one tensor, got {len(sinks)} elements")
        sinks = sinks[0]
    _metadata("sinks", sinks, (torch.float32,), "float32", (num_qo_heads,), "[num_qo_heads]", device)
    return sinks


def _resolve_lse(lse, return_lse, query):
    shape = (query.shape[0], query.shape[1])
    if lse is None:
        return torch.empty(shape, dtype=torch.float32, device=query.device) if return_lse else None
    _tensor("lse", lse)
    _dtype("lse", lse, (torch.float32,), "float32")
    _shape("lse", lse, shape, "[num_tokens, num_qo_heads]")
    _device("lse", lse, query.device)
    return lse


def _is_fp4(out):
    return isinstance(out, FP4Tensor) or (
        out is not None and not isinstance(out, torch.Tensor) and hasattr(out, "data") and hasattr(out, "scale")
    )


def _nvfp4_out(out, o_sf_scale, o_sf_vec_size, query):
    """(data, scale, scale_start_index, o_sf_scale, o_sf_vec_size, result) for nvfp4 output."""
    num_tokens, num_heads, head_dim = query.shape
    if o_sf_scale is None:
        raise ValueError("o_sf_scale: required for nvfp4 output, got None")
    sf_scale = _float("o_sf_scale", o_sf_scale)
    vec_size = 0 if o_sf_vec_size is None else _int("o_sf_vec_size", o_sf_vec_size)
    data_shape = (num_tokens, num_heads, head_dim // 2)
    cols = _round_up(-(-num_heads * head_dim // _NVFP4_BLOCK), _SCALE_COL_TILE)
    if out is None:
        data = torch.empty(data_shape, dtype=torch.uint8, device=query.device)
        scale = torch.empty(
            (_round_up(num_tokens, _SCALE_ROW_TILE), cols), dtype=torch.float8_e4m3fn, device=query.device
        )
        result = FP4Tensor(data, scale, 0, tuple(query.shape))
        return data, scale, 0, sf_scale, vec_size, result
    if not _is_fp4(out):
        raise TypeError(f"out: expected an FP4Tensor (or None) for out_dtype='nvfp4', got {_kind(out)}")
    data = _tensor("out.data", out.data)
    scale = _tensor("out.scale", out.scale)
    start = _int("out.scale_start_index", getattr(out, "scale_start_index", 0), 0, 2**62)
    _dtype("out.data", data, (torch.uint8,), "uint8")
    _shape("out.data", data, data_shape, "[num_tokens, num_qo_heads, head_dim // 2]")
    _device("out.data", data, query.device)
    _last_dim_contiguous("out.data", data)
    _dtype("out.scale", scale, (torch.float8_e4m3fn, torch.uint8), "float8_e4m3fn or uint8")
    _dims("out.scale", scale, 2, "[rows, round_up(num_qo_heads * head_dim / 16, 4)]")
    if scale.shape[1] != cols:
        raise ValueError(
            f"out.scale: expected {cols} columns (round_up(num_qo_heads * head_dim / 16, 4)), got shape "
            f"{tuple(scale.shape)}"
        )
    _device("out.scale", scale, query.device)
    _contiguous("out.scale", scale)
    return data, scale, start, sf_scale, vec_size, out


def _resolve_out(out, out_dtype, o_sf_scale, o_sf_vec_size, query):
    """(out, out_scale, scale_start_index, o_sf_scale, o_sf_vec_size, result) per SPEC section 4."""
    if isinstance(out_dtype, str):
        if out_dtype != "nvfp4":
            raise ValueError(f"out_dtype: expected a torch dtype, None or 'nvfp4', got {out_dtype!r}")
        return _nvfp4_out(out, o_sf_scale, o_sf_vec_size, query)
    if out_dtype is not None and not isinstance(out_dtype, torch.dtype):
        raise TypeError(f"out_dtype: expected a torch dtype, None or 'nvfp4', got {_kind(out_dtype)}")
    if _is_fp4(out):
        if out_dtype is None:
            return _nvfp4_out(out, o_sf_scale, o_sf_vec_size, query)
        raise TypeError(f"out: an FP4Tensor needs out_dtype None or 'nvfp4', got out_dtype={out_dtype}")
    for name, value in (("o_sf_scale", o_sf_scale), ("o_sf_vec_size", o_sf_vec_size)):
        if value is not None:
            raise ValueError(f"{name}: only used for nvfp4 output (out_dtype='nvfp4'); expected None, got {value!r}")
    if out is None:
        dtype = out_dtype if out_dtype is not None else query.dtype
        if _op.dtype_code(dtype) is None:
            raise TypeError(f"out_dtype: expected float16, bfloat16, float8_e4m3fn or 'nvfp4', got {dtype}")
        out = torch.empty(tuple(query.shape), dtype=dtype, device=query.device)
        return out, None, 0, 1.0, 0, out
    _tensor("out", out)
    if out_dtype is not None and out.dtype != out_dtype:
        raise TypeError(f"out: expected dtype {out_dtype} (out_dtype), got {out.dtype}")
    if _op.dtype_code(out.dtype) is None:
        raise TypeError(f"out: expected dtype {_ATTENTION_DTYPES}, got {out.dtype}")
    _shape("out", out, query.shape, "(the query's)")
    _device("out", out, query.device)
    _last_dim_contiguous("out", out)
    return out, None, 0, 1.0, 0, out


def _check_query(query):
    _tensor("query", query)
    _dims("query", query, 3, "[num_tokens, num_qo_heads, head_dim]")
    if _op.dtype_code(query.dtype) is None:
        raise TypeError(f"query: expected dtype {_ATTENTION_DTYPES}, got {query.dtype}")
    _last_dim_contiguous("query", query)


def _check_block_tables(block_tables, uses_shared_paged_kv_idx, batch_size, device):
    """FlashInfer's rank checks, then ctxattn's: [B, M] shared, or [B, 2, M] (K row, V row)."""
    _tensor("block_tables", block_tables)
    if uses_shared_paged_kv_idx:
        if block_tables.dim() != 2:
            raise ValueError(f"block_tables must be 2D for shared paged KV layout, got ndim={block_tables.dim()}")
    else:
        if block_tables.dim() != 3:
            raise ValueError(f"block_tables must be 3D for separate paged KV layout, got ndim={block_tables.dim()}")
        if block_tables.shape[1] != 2:
            raise ValueError(
                f"block_tables must have shape[1]==2 for separate KV indices, got shape={tuple(block_tables.shape)}"
            )
    _dtype("block_tables", block_tables, (torch.int32,), "int32")
    if block_tables.shape[0] != batch_size:
        raise ValueError(
            f"block_tables: expected {batch_size} rows (batch_size), got shape {tuple(block_tables.shape)}"
        )
    _device("block_tables", block_tables, device)
    _last_dim_contiguous("block_tables", block_tables)


def _prefix_sums(name, t, batch_size, device):
    """cum_seq_lens_q / _kv: int32 with at least batch_size + 1 entries (only those are read)."""
    _tensor(name, t)
    _dtype(name, t, (torch.int32,), "int32")
    if t.dim() != 1 or t.shape[0] < batch_size + 1:
        raise ValueError(
            f"{name}: expected a 1-D tensor of at least batch_size + 1 = {batch_size + 1} entries, got shape "
            f"{tuple(t.shape)}"
        )
    _device(name, t, device)
    _contiguous(name, t)


def _check_metadata(seq_lens, cum_seq_lens_q, cum_seq_lens_kv, batch_size, device):
    _metadata("seq_lens", seq_lens, (torch.int32, torch.uint32), "int32 or uint32", (batch_size,),
              "[batch_size]", device)
    _prefix_sums("cum_seq_lens_q", cum_seq_lens_q, batch_size, device)
    _prefix_sums("cum_seq_lens_kv", cum_seq_lens_kv, batch_size, device)


def _check_sm107_flags(use_fp16_softmax, uses_spcompress, query):
    """FlashInfer's first check: these select SM107-only (Rubin) kernel variants; None / False are
    no-ops, anything true is refused as FlashInfer refuses it on every other device."""
    for name, value in (("use_fp16_softmax", use_fp16_softmax), ("uses_spcompress", uses_spcompress)):
        if value:
            device = query.device if isinstance(query, torch.Tensor) else torch.device("cpu")
            if device.type == "cuda":
                major, minor = torch.cuda.get_device_capability(device)
                where = f"sm{major}{minor}"
            else:
                where = device.type
            raise ValueError(
                f"{name} is only supported on SM107 (Rubin); the current device is {where}. trtllm-gen exports "
                "those cubin variants for SM107 only."
            )


def _check_counter_buffer(buffer, batch_size, num_qo_heads, device):
    """multi_ctas_kv_counter_buffer: FlashInfer's checks; context attention never reads or writes it."""
    if buffer is None:
        return
    _tensor("multi_ctas_kv_counter_buffer", buffer)
    if buffer.device != device:
        raise ValueError("multi_ctas_kv_counter_buffer must be on the same device as query")
    if not buffer.is_contiguous():
        raise ValueError("multi_ctas_kv_counter_buffer must be contiguous")
    misaligned = buffer.data_ptr() % 16
    if misaligned:
        raise ValueError(f"multi_ctas_kv_counter_buffer must be 16-byte aligned, got data_ptr % 16 = {misaligned}")
    sm_count = torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 0
    need = _round_up(max(batch_size * num_qo_heads, sm_count), 8) * 4
    have = buffer.numel() * buffer.element_size()
    if have < need:
        raise ValueError(f"multi_ctas_kv_counter_buffer is too small: got {have} bytes, need {need} bytes")


def _resolve(
    query: torch.Tensor,
    kv_cache: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]],
    workspace_buffer: torch.Tensor,
    block_tables: torch.Tensor,
    seq_lens: torch.Tensor,
    max_q_len: int,
    max_kv_len: int,
    bmm1_scale: Union[float, torch.Tensor],
    bmm2_scale: Union[float, torch.Tensor],
    batch_size: int,
    cum_seq_lens_q: torch.Tensor,
    cum_seq_lens_kv: torch.Tensor,
    window_left: int = -1,
    out: Optional[Union[torch.Tensor, FP4Tensor]] = None,
    out_dtype: Optional[Union[str, torch.dtype]] = None,
    o_sf_scale: Optional[float] = None,
    o_sf_vec_size: Optional[int] = None,
    kv_layout: str = "HND",
    enable_pdl: Optional[bool] = None,
    sinks: Optional[List[torch.Tensor]] = None,
    kv_cache_sf: Optional[Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]] = None,
    skip_softmax_threshold_scale_factor: Optional[float] = None,
    uses_shared_paged_kv_idx: bool = True,
    causal: bool = True,
    lse: Optional[torch.Tensor] = None,
    return_lse: bool = False,
    multi_ctas_kv_counter_buffer: Optional[torch.Tensor] = None,
    use_fp16_softmax: Optional[bool] = None,
    uses_spcompress: Optional[bool] = None,
    backend: str = "trtllm-gen",
):
    """(the custom op's arguments, what the call returns): every check Python makes, and the
    outputs the caller did not give, allocated."""
    _check_sm107_flags(use_fp16_softmax, uses_spcompress, query)
    if not isinstance(backend, str) or backend not in _BACKENDS:
        raise ValueError("trtllm_batch_context_with_kv_cache backend must be 'trtllm-gen' or 'cake'")
    _check_query(query)
    device = query.device
    if not isinstance(kv_layout, str):
        raise TypeError(f"kv_layout: expected 'HND' or 'NHD', got {_kind(kv_layout)}")
    if kv_layout not in ("HND", "NHD"):
        raise ValueError(f"kv_layout: expected 'HND' or 'NHD', got {kv_layout!r}")
    k_cache, v_cache = _split_kv_cache(kv_cache, kv_layout, query)
    # NVFP4 (uint8) K / V need their block scales; for other caches kv_cache_sf is ignored.
    k_sf, v_sf = None, None
    if k_cache.dtype == torch.uint8:
        k_sf, v_sf = _split_kv_cache_sf(kv_cache_sf, k_cache, kv_layout, query)

    _tensor("workspace_buffer", workspace_buffer)
    _device("workspace_buffer", workspace_buffer, device)
    _contiguous("workspace_buffer", workspace_buffer)

    batch_size = _int("batch_size", batch_size, 0)
    max_q_len = _int("max_q_len", max_q_len)
    max_kv_len = _int("max_kv_len", max_kv_len)
    window_left = _int("window_left", window_left)
    shared_idx = _flag("uses_shared_paged_kv_idx", uses_shared_paged_kv_idx)
    _check_block_tables(block_tables, shared_idx, batch_size, device)
    _check_metadata(seq_lens, cum_seq_lens_q, cum_seq_lens_kv, batch_size, device)
    _check_counter_buffer(multi_ctas_kv_counter_buffer, batch_size, query.shape[1], device)
    skip_factor = (
        0.0 if skip_softmax_threshold_scale_factor is None
        else _float("skip_softmax_threshold_scale_factor", skip_softmax_threshold_scale_factor)
    )

    scale1, scale1_tensor = _split_scale("bmm1_scale", bmm1_scale, device)
    scale2, scale2_tensor = _split_scale("bmm2_scale", bmm2_scale, device)
    sinks = _resolve_sinks(sinks, query.shape[1], device)
    pdl = -1 if enable_pdl is None else int(_flag("enable_pdl", enable_pdl))
    causal = _flag("causal", causal)
    return_lse = _flag("return_lse", return_lse)

    out_t, out_scale, start, sf_scale, vec_size, result = _resolve_out(
        out, out_dtype, o_sf_scale, o_sf_vec_size, query
    )
    lse = _resolve_lse(lse, return_lse, query)

    op_args = (
        query, k_cache, v_cache, workspace_buffer, block_tables, seq_lens, cum_seq_lens_q,
        cum_seq_lens_kv, max_q_len, max_kv_len, batch_size, scale1, scale2, scale1_tensor,
        scale2_tensor, window_left, causal, sinks, kv_layout, pdl, out_t, out_scale, start,
        sf_scale, vec_size, lse, k_sf, v_sf, shared_idx, skip_factor,
    )
    return op_args, ((result, lse) if return_lse else result)


def trtllm_batch_context_with_kv_cache(
    query: torch.Tensor,
    kv_cache: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]],
    workspace_buffer: torch.Tensor,
    block_tables: torch.Tensor,
    seq_lens: torch.Tensor,
    max_q_len: int,
    max_kv_len: int,
    bmm1_scale: Union[float, torch.Tensor],
    bmm2_scale: Union[float, torch.Tensor],
    batch_size: int,
    cum_seq_lens_q: torch.Tensor,
    cum_seq_lens_kv: torch.Tensor,
    window_left: int = -1,
    out: Optional[Union[torch.Tensor, FP4Tensor]] = None,
    out_dtype: Optional[Union[str, torch.dtype]] = None,
    o_sf_scale: Optional[float] = None,
    o_sf_vec_size: Optional[int] = None,
    kv_layout: str = "HND",
    enable_pdl: Optional[bool] = None,
    sinks: Optional[List[torch.Tensor]] = None,
    kv_cache_sf: Optional[Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]] = None,
    skip_softmax_threshold_scale_factor: Optional[float] = None,
    uses_shared_paged_kv_idx: bool = True,
    causal: bool = True,
    lse: Optional[torch.Tensor] = None,
    return_lse: bool = False,
    multi_ctas_kv_counter_buffer: Optional[torch.Tensor] = None,
    use_fp16_softmax: Optional[bool] = None,
    uses_spcompress: Optional[bool] = None,
    backend: str = "trtllm-gen",
) -> Union[torch.Tensor, FP4Tensor, Tuple[Union[torch.Tensor, FP4Tensor], torch.Tensor]]:
    """Batched context (prefill) attention over a paged KV cache.

    CPU tensors run on ctxattn's CPU backend, CUDA tensors on its CUDA backend (on the current
    stream, without host synchronisation). See README.md (Python section) for every argument; in short:

    query            [num_tokens, num_qo_heads, head_dim], float16 / bfloat16 / float8_e4m3fn.
    kv_cache         (k, v) with each [P, Hkv, N, D] ("HND") or [P, N, Hkv, D] ("NHD"), or one
                     tensor [P, 2, ...] (K at index 0, V at 1) or [P, 1, ...] (V shares K); uint8
                     with D / 2 bytes a row: an NVFP4 cache (two e2m1 codes a byte).
    workspace_buffer any dtype, on the query's device, zeroed once before first use.
    block_tables     int32 [batch_size, max_pages_per_seq]; seq_lens int32 / uint32 [batch_size]
                     (KV lengths); cum_seq_lens_q int32 [>= batch_size + 1]; cum_seq_lens_kv int32
                     [>= batch_size + 1], checked but not read.
    bmm1_scale       float or 1-element float32 tensor: scores are bmm1_scale * q.k (no 1/sqrt(D)).
    bmm2_scale       float or 1-element float32 tensor multiplying the output.
    window_left      -1 or the number of earlier tokens each query may see besides its own.
    out / out_dtype  a preallocated output (tensor or FP4Tensor) and/or its dtype: float16,
                     bfloat16, float8_e4m3fn or "nvfp4" (then o_sf_scale is required).
    enable_pdl       None: on where supported (sm90+).
    sinks            float32 [num_qo_heads] (or a one-element list holding it): per-head logits
                     added to the softmax denominator.
    kv_cache_sf      NVFP4 caches only: the e4m3 block scales, one per 16 elements of a token row,
                     (k_scales, v_scales) each [P, Hkv, N, D / 16] (HND; NHD likewise) or one
                     tensor [P, 2, ...]; K's linear, V's interleaved by 4 tokens per page x head
                     tile (what nvfp4_quantize_paged_kv_cache writes).
    skip_softmax_threshold_scale_factor
                     None / 0: dense. f: skip a key tile for a group of rows when
                     exp(tile_max - running_max) < f / seq_lens[b] for all of them (BLASST).
    uses_shared_paged_kv_idx
                     True: one page index for K and V. False: block_tables [batch_size, 2,
                     max_pages_per_seq] with K's page ids in row 0 and V's in row 1 (one pool may
                     be passed twice, kv_cache=(pool, pool)).
    causal           bottom-right aligned causal mask (default) or full attention.
    lse / return_lse base-2 log-sum-exp [num_tokens, num_qo_heads] float32.
    multi_ctas_kv_counter_buffer
                     accepted and checked as FlashInfer checks it; context attention never uses it.
    use_fp16_softmax, uses_spcompress
                     None / False; True raises FlashInfer's ValueError (SM107-only variants).
    backend          "trtllm-gen" or "cake": both run ctxattn.

    Returns out (a tensor or FP4Tensor), or (out, lse) when return_lse is True.
    """
    op_args, returned = _resolve(
        query, kv_cache, workspace_buffer, block_tables, seq_lens, max_q_len, max_kv_len, bmm1_scale,
        bmm2_scale, batch_size, cum_seq_lens_q, cum_seq_lens_kv, window_left, out, out_dtype, o_sf_scale,
        o_sf_vec_size, kv_layout, enable_pdl, sinks, kv_cache_sf, skip_softmax_threshold_scale_factor,
        uses_shared_paged_kv_idx, causal, lse, return_lse, multi_ctas_kv_counter_buffer, use_fp16_softmax,
        uses_spcompress, backend,
    )
    if type(query) is torch.Tensor and not torch.compiler.is_compiling() and query.device.type != "meta":
        _op.run_now(*op_args)  # eager on plain tensors: the op's work without the dispatcher
    else:
        torch.ops.ctxattn.batch_context_with_kv_cache(*op_args)
    return returned


def selected_backend(*args, **kwargs):
    """The backend ("cpu", "cpu_reference", "cuda_portable" or "cuda_sm90") that
    `trtllm_batch_context_with_kv_cache` with the same arguments would run on now, given the
    backend setting in effect (ctxattn.use_backend / set_backend / CTXATTN_BACKEND, else auto).

    Runs the call's checks and the library's validation and backend choice, computes nothing and
    writes nothing (outputs the call would allocate are allocated and dropped). Raises what the
    call would raise: NotImplementedError when a forced backend cannot serve these arguments.
    """
    op_args, _ = _resolve(*args, **kwargs)
    return _op.select_backend(*op_args)


selected_backend.__signature__ = inspect.signature(_resolve)


def workspace_size(*args, **kwargs):
    """Bytes of `workspace_buffer` that `trtllm_batch_context_with_kv_cache` with the same
    arguments needs on the backend it would run on (the buffer passed may be smaller: it is not
    checked here). Depends only on the sizes, `max_kv_len`, the head counts and the device, so a
    buffer sized for an engine's largest call serves every smaller one (docs/api.md "Workspace").
    Computes nothing and writes nothing."""
    op_args, _ = _resolve(*args, **kwargs)
    return _op.workspace_size(*op_args)


workspace_size.__signature__ = inspect.signature(_resolve)
