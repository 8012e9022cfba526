"""trtllm_batch_context_with_kv_cache: FlashInfer's call, on the ctxattn library.

This module resolves the Python-level arguments (the kv_cache forms, scales as floats or tensors,
the output and its dtype, sinks, LSE), checks what only Python can see (types, torch dtypes,
devices, dimensions, shapes against each other, last-dim contiguity), allocates the outputs the
caller did not give, and calls the torch custom op. The C library validates everything else
before it writes anything.
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
    if _op.dtype_code(k.dtype) is None:
        raise TypeError(f"kv_cache: expected dtype {_ATTENTION_DTYPES}, got {k.dtype}")
    _device("kv_cache", k, query.device)
    _device("kv_cache", v, query.device)
    _last_dim_contiguous("kv_cache (K)", k)
    _last_dim_contiguous("kv_cache (V)", v)
    if k.shape[3] != query.shape[2]:
        raise ValueError(
            f"kv_cache: expected head_dim {query.shape[2]} (the query's) in the last dimension, got "
            f"shape {tuple(k.shape)}"
        )
    return k, v


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


def _check_metadata(block_tables, seq_lens, cum_seq_lens_q, cum_seq_lens_kv, batch_size, device):
    _tensor("block_tables", block_tables)
    _dtype("block_tables", block_tables, (torch.int32,), "int32")
    _dims("block_tables", block_tables, 2, "[batch_size, max_pages_per_seq]")
    if block_tables.shape[0] != batch_size:
        raise ValueError(
            f"block_tables: expected {batch_size} rows (batch_size), got shape {tuple(block_tables.shape)}"
        )
    _device("block_tables", block_tables, device)
    _last_dim_contiguous("block_tables", block_tables)
    _metadata("seq_lens", seq_lens, (torch.int32, torch.uint32), "int32 or uint32", (batch_size,),
              "[batch_size]", device)
    for name, t in (("cum_seq_lens_q", cum_seq_lens_q), ("cum_seq_lens_kv", cum_seq_lens_kv)):
        _metadata(name, t, (torch.int32,), "int32", (batch_size + 1,), "[batch_size + 1]", device)


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
    causal: bool = True,
    lse: Optional[torch.Tensor] = None,
    return_lse: bool = False,
):
    """(the custom op's arguments, what the call returns): every check Python makes, and the
    outputs the caller did not give, allocated."""
    _check_query(query)
    device = query.device
    if not isinstance(kv_layout, str):
        raise TypeError(f"kv_layout: expected 'HND' or 'NHD', got {_kind(kv_layout)}")
    if kv_layout not in ("HND", "NHD"):
        raise ValueError(f"kv_layout: expected 'HND' or 'NHD', got {kv_layout!r}")
    k_cache, v_cache = _split_kv_cache(kv_cache, kv_layout, query)

    _tensor("workspace_buffer", workspace_buffer)
    _device("workspace_buffer", workspace_buffer, device)
    _contiguous("workspace_buffer", workspace_buffer)

    batch_size = _int("batch_size", batch_size, 0)
    max_q_len = _int("max_q_len", max_q_len)
    max_kv_len = _int("max_kv_len", max_kv_len)
    window_left = _int("window_left", window_left)
    _check_metadata(block_tables, seq_lens, cum_seq_lens_q, cum_seq_lens_kv, batch_size, device)

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
        sf_scale, vec_size, lse,
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
    causal: bool = True,
    lse: Optional[torch.Tensor] = None,
    return_lse: bool = False,
) -> Union[torch.Tensor, FP4Tensor, Tuple[Union[torch.Tensor, FP4Tensor], torch.Tensor]]:
    """Batched context (prefill) attention over a paged KV cache.

    CPU tensors run on ctxattn's CPU backend, CUDA tensors on its CUDA backend (on the current
    stream, without host synchronisation). See README.md (Python section) for every argument; in short:

    query            [num_tokens, num_qo_heads, head_dim], float16 / bfloat16 / float8_e4m3fn.
    kv_cache         (k, v) with each [P, Hkv, N, D] ("HND") or [P, N, Hkv, D] ("NHD"), or one
                     tensor [P, 2, ...] (K at index 0, V at 1) or [P, 1, ...] (V shares K).
    workspace_buffer any dtype, on the query's device, zeroed once before first use.
    block_tables     int32 [batch_size, max_pages_per_seq]; seq_lens int32 / uint32 [batch_size]
                     (KV lengths); cum_seq_lens_q int32 [batch_size + 1]; cum_seq_lens_kv int32
                     [batch_size + 1], shape-checked but not read.
    bmm1_scale       float or 1-element float32 tensor: scores are bmm1_scale * q.k (no 1/sqrt(D)).
    bmm2_scale       float or 1-element float32 tensor multiplying the output.
    window_left      -1 or the number of earlier tokens each query may see besides its own.
    out / out_dtype  a preallocated output (tensor or FP4Tensor) and/or its dtype: float16,
                     bfloat16, float8_e4m3fn or "nvfp4" (then o_sf_scale is required).
    enable_pdl       None: on where supported (sm90+).
    sinks            float32 [num_qo_heads] (or a one-element list holding it): per-head logits
                     added to the softmax denominator.
    causal           bottom-right aligned causal mask (default) or full attention.
    lse / return_lse base-2 log-sum-exp [num_tokens, num_qo_heads] float32.

    Returns out (a tensor or FP4Tensor), or (out, lse) when return_lse is True.
    """
    op_args, returned = _resolve(
        query, kv_cache, workspace_buffer, block_tables, seq_lens, max_q_len, max_kv_len, bmm1_scale,
        bmm2_scale, batch_size, cum_seq_lens_q, cum_seq_lens_kv, window_left, out, out_dtype, o_sf_scale,
        o_sf_vec_size, kv_layout, enable_pdl, sinks, causal, lse, return_lse,
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
