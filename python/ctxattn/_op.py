"""The torch custom op `ctxattn::batch_context_with_kv_cache` over the C call.

The op takes already-resolved tensors (K and V as two views, every output allocated) and mutates
`out`, `out_scale`, `lse` and `workspace_buffer`; it returns nothing. Its fake implementation has
nothing to compute, so torch.compile traces the call and CUDA graphs capture it. Argument checks
that need Python's view of the tensors live in prefill.py; the C library validates the rest.
The backend is not an argument of the op: its eager implementation reads the thread's or
process's setting (_backend.py) each time it runs, so the schema stays the same whatever is forced.
"""

from typing import Optional

import torch

from . import _backend, _lib, _skip

OP_NAME = "ctxattn::batch_context_with_kv_cache"

_DTYPE_CODES = {
    torch.float16: _lib.DTYPE_FLOAT16,
    torch.bfloat16: _lib.DTYPE_BFLOAT16,
    torch.float8_e4m3fn: _lib.DTYPE_FLOAT8_E4M3,
    torch.float32: _lib.DTYPE_FLOAT32,
    torch.int32: _lib.DTYPE_INT32,
    torch.uint32: _lib.DTYPE_UINT32,
}

_LAYOUT_CODES = {"HND": _lib.KV_LAYOUT_HND, "NHD": _lib.KV_LAYOUT_NHD}


def dtype_code(dtype):
    """The ctxattn_dtype_t of a torch dtype, or None when the C API has no code for it."""
    return _DTYPE_CODES.get(dtype)


def kv_dtype_code(dtype):
    """The ctxattn_dtype_t of a KV cache dtype: uint8 is NVFP4 (two e2m1 codes a byte)."""
    return _lib.DTYPE_NVFP4 if dtype == torch.uint8 else _DTYPE_CODES.get(dtype)


def _ptr(t):
    return None if t is None else t.data_ptr()


def _nbytes(t):
    return t.numel() * t.element_size()


def _set_execution(a, device, workspace_buffer, enable_pdl):
    if device.type == "cuda":
        a.device_type = _lib.DEVICE_CUDA
        a.device_index = device.index
        a.stream = torch.cuda.current_stream(device).cuda_stream
    else:
        a.device_type = _lib.DEVICE_CPU
        a.device_index = 0
    a.workspace = _ptr(workspace_buffer)
    a.workspace_size = _nbytes(workspace_buffer)
    a.enable_pdl = enable_pdl


def _set_query_and_kv(a, query, k_cache, v_cache, kv_layout, k_cache_sf, v_cache_sf):
    a.num_tokens, a.num_qo_heads, a.head_dim = query.shape
    a.query = _ptr(query)
    a.query_dtype = _DTYPE_CODES[query.dtype]
    a.query_stride_token = query.stride(0)
    a.query_stride_head = query.stride(1)
    hnd = kv_layout == "HND"
    a.num_pages = k_cache.shape[0]
    a.num_kv_heads = k_cache.shape[1] if hnd else k_cache.shape[2]
    a.page_size = k_cache.shape[2] if hnd else k_cache.shape[1]
    a.k_cache = _ptr(k_cache)
    a.v_cache = _ptr(v_cache)
    a.kv_dtype = kv_dtype_code(k_cache.dtype)
    a.kv_layout = _LAYOUT_CODES[kv_layout]
    for i in range(3):  # dims 0..2 in layout order, as the C API takes them
        a.k_strides[i] = k_cache.stride(i)
        a.v_strides[i] = v_cache.stride(i)
    if k_cache_sf is not None:  # NVFP4 block scales, one byte each: strides are bytes
        a.k_cache_sf = _ptr(k_cache_sf)
        a.v_cache_sf = _ptr(v_cache_sf)
        for i in range(3):
            a.k_sf_strides[i] = k_cache_sf.stride(i)
            a.v_sf_strides[i] = v_cache_sf.stride(i)


def _set_metadata(a, block_tables, seq_lens, cum_seq_lens_q, cum_seq_lens_kv, batch_size, max_q_len,
                  max_kv_len, uses_shared_paged_kv_idx):
    a.batch_size = batch_size
    a.max_q_len = max_q_len
    a.max_kv_len = max_kv_len
    a.max_pages_per_seq = block_tables.shape[-1]
    a.block_tables = _ptr(block_tables)
    a.block_tables_stride = block_tables.stride(0)
    a.uses_shared_paged_kv_idx = 1 if uses_shared_paged_kv_idx else 0
    if not uses_shared_paged_kv_idx:  # [B, 2, M]: row 0 K's page ids, row 1 V's
        a.block_tables_kv_stride = block_tables.stride(1)
    a.seq_lens = _ptr(seq_lens)
    a.seq_lens_dtype = _DTYPE_CODES[seq_lens.dtype]
    a.cum_seq_lens_q = _ptr(cum_seq_lens_q)
    a.cum_seq_lens_kv = _ptr(cum_seq_lens_kv)


def _set_math(a, bmm1_scale, bmm2_scale, bmm1_scale_tensor, bmm2_scale_tensor, window_left, causal, sinks,
              skip_softmax_threshold_scale_factor):
    a.bmm1_scale = bmm1_scale
    a.bmm2_scale = bmm2_scale
    a.bmm1_scale_ptr = _ptr(bmm1_scale_tensor)
    a.bmm2_scale_ptr = _ptr(bmm2_scale_tensor)
    a.window_left = window_left
    a.causal = 1 if causal else 0
    a.sinks = _ptr(sinks)
    a.skip_softmax_threshold_scale_factor = skip_softmax_threshold_scale_factor
    a.skip_softmax_rows, a.skip_softmax_keys, a.skip_softmax_order = _skip.geometry()


def _set_output(a, out, out_scale, out_scale_start_index, o_sf_scale, o_sf_vec_size, lse):
    a.out = _ptr(out)
    a.out_stride_token = out.stride(0)
    a.out_stride_head = out.stride(1)
    if out_scale is not None:
        a.out_dtype = _lib.DTYPE_NVFP4
        a.out_scale = _ptr(out_scale)
        a.out_scale_size_bytes = _nbytes(out_scale)
        a.out_scale_start_index = out_scale_start_index
        a.o_sf_scale = o_sf_scale
        a.o_sf_vec_size = o_sf_vec_size
    else:
        a.out_dtype = _DTYPE_CODES[out.dtype]
    if lse is not None:
        a.lse = _ptr(lse)
        a.lse_stride_token = lse.stride(0)
        a.lse_stride_head = lse.stride(1)


def _args(
    query, k_cache, v_cache, workspace_buffer, block_tables, seq_lens, cum_seq_lens_q, cum_seq_lens_kv,
    max_q_len, max_kv_len, batch_size, bmm1_scale, bmm2_scale, bmm1_scale_tensor, bmm2_scale_tensor,
    window_left, causal, sinks, kv_layout, enable_pdl, out, out_scale, out_scale_start_index, o_sf_scale,
    o_sf_vec_size, lse, k_cache_sf, v_cache_sf, uses_shared_paged_kv_idx, skip_softmax_threshold_scale_factor,
):
    """(ctxattn_args_t of the op's arguments, where a forced backend was set or None).

    The backend and the CPU's skip-softmax geometry are read here, when the call runs (never when
    it is traced): _backend.py, _skip.py."""
    a = _lib.new_args()
    _set_execution(a, query.device, workspace_buffer, enable_pdl)
    _set_query_and_kv(a, query, k_cache, v_cache, kv_layout, k_cache_sf, v_cache_sf)
    _set_metadata(a, block_tables, seq_lens, cum_seq_lens_q, cum_seq_lens_kv, batch_size, max_q_len,
                  max_kv_len, uses_shared_paged_kv_idx)
    _set_math(a, bmm1_scale, bmm2_scale, bmm1_scale_tensor, bmm2_scale_tensor, window_left, causal, sinks,
              skip_softmax_threshold_scale_factor)
    _set_output(a, out, out_scale, out_scale_start_index, o_sf_scale, o_sf_vec_size, lse)
    a.backend, forced_by = _backend.requested(query.device.type)
    return a, forced_by


def _naming_the_setting(fn, a, forced_by):
    """fn(a); a forced backend's NotImplementedError keeps the library's message and says which
    setting forced it."""
    try:
        return fn(a)
    except NotImplementedError as e:
        if forced_by is None:
            raise
        raise NotImplementedError(f"{e} (backend forced by {forced_by})") from None


def select_backend(*op_args):
    """The backend name the op with these arguments would run on, without running it."""
    a, forced_by = _args(*op_args)
    return _backend.NAMES[_naming_the_setting(_lib.select_backend, a, forced_by)]


def run_now(*op_args):
    """The op's work, called directly: the library call on the op's arguments. The Python entry
    point uses it in eager mode on plain tensors, where the custom-op dispatcher would only add
    its own cost (about 17 us a call, measured on the CI machine's CPU: half of the call's host
    time); tracing, compiling and tensor subclasses go through the op."""
    a, forced_by = _args(*op_args)
    _naming_the_setting(_lib.run, a, forced_by)


def workspace_size(*op_args):
    """Bytes of workspace_buffer the op with these arguments needs."""
    a, forced_by = _args(*op_args)
    return _naming_the_setting(_lib.workspace_size, a, forced_by)


@torch.library.custom_op(
    OP_NAME, mutates_args=("workspace_buffer", "out", "out_scale", "lse"), device_types=None
)
def batch_context_with_kv_cache(
    query: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    workspace_buffer: torch.Tensor,
    block_tables: torch.Tensor,
    seq_lens: torch.Tensor,
    cum_seq_lens_q: torch.Tensor,
    cum_seq_lens_kv: torch.Tensor,
    max_q_len: int,
    max_kv_len: int,
    batch_size: int,
    bmm1_scale: float,
    bmm2_scale: float,
    bmm1_scale_tensor: Optional[torch.Tensor],
    bmm2_scale_tensor: Optional[torch.Tensor],
    window_left: int,
    causal: bool,
    sinks: Optional[torch.Tensor],
    kv_layout: str,
    enable_pdl: int,
    out: torch.Tensor,
    out_scale: Optional[torch.Tensor],
    out_scale_start_index: int,
    o_sf_scale: float,
    o_sf_vec_size: int,
    lse: Optional[torch.Tensor],
    k_cache_sf: Optional[torch.Tensor],
    v_cache_sf: Optional[torch.Tensor],
    uses_shared_paged_kv_idx: bool,
    skip_softmax_threshold_scale_factor: float,
) -> None:
    """Computes attention into `out` (and `out_scale` for nvfp4, `lse` when given).

    K and V are 4-D views in `kv_layout` order; a float scale is used when its tensor is None.
    `out_scale` non-None selects nvfp4 output (`out` then holds the packed e2m1 bytes). uint8 K / V
    are an NVFP4 cache with its block scales in `k_cache_sf` / `v_cache_sf` (4-D views like K / V).
    `block_tables` is [B, M], or [B, 2, M] when `uses_shared_paged_kv_idx` is False. A
    `skip_softmax_threshold_scale_factor` of 0 is dense. The backend is not an argument: it is read
    from the thread's / process's setting at run time.
    """
    run_now(
        query, k_cache, v_cache, workspace_buffer, block_tables, seq_lens, cum_seq_lens_q,
        cum_seq_lens_kv, max_q_len, max_kv_len, batch_size, bmm1_scale, bmm2_scale, bmm1_scale_tensor,
        bmm2_scale_tensor, window_left, causal, sinks, kv_layout, enable_pdl, out, out_scale,
        out_scale_start_index, o_sf_scale, o_sf_vec_size, lse, k_cache_sf, v_cache_sf,
        uses_shared_paged_kv_idx, skip_softmax_threshold_scale_factor,
    )


@batch_context_with_kv_cache.register_fake
def _batch_context_with_kv_cache_fake(
    query, k_cache, v_cache, workspace_buffer, block_tables, seq_lens, cum_seq_lens_q,
    cum_seq_lens_kv, max_q_len, max_kv_len, batch_size, bmm1_scale, bmm2_scale,
    bmm1_scale_tensor, bmm2_scale_tensor, window_left, causal, sinks, kv_layout, enable_pdl,
    out, out_scale, out_scale_start_index, o_sf_scale, o_sf_vec_size, lse, k_cache_sf, v_cache_sf,
    uses_shared_paged_kv_idx, skip_softmax_threshold_scale_factor,
):
    # Every result is written into caller-provided tensors, so there is no output to describe.
    return None
