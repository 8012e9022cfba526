"""The ctypes binding over the C API of libctxattn (include/ctxattn/ctxattn.h).

ctypes keeps the package free of any tie to one Python minor version or to torch's C++ ABI: the
shared library exports plain C functions and one plain struct, mirrored here field by field.
"""

import ctypes
import os
import threading

# ---- enums of ctxattn.h (C enums are `int` on every platform the library supports) ----
STATUS_OK = 0
STATUS_INVALID_ARGUMENT = 1
STATUS_INVALID_TYPE = 2
STATUS_UNSUPPORTED = 3
STATUS_INVALID_METADATA = 4
STATUS_CUDA_ERROR = 5
STATUS_NO_DEVICE_SUPPORT = 6
STATUS_INTERNAL_ERROR = 7

DTYPE_FLOAT16 = 0
DTYPE_BFLOAT16 = 1
DTYPE_FLOAT8_E4M3 = 2
DTYPE_NVFP4 = 3
DTYPE_FLOAT32 = 4
DTYPE_INT32 = 5
DTYPE_UINT32 = 6

KV_LAYOUT_HND = 0
KV_LAYOUT_NHD = 1

DEVICE_CPU = 0
DEVICE_CUDA = 1

BACKEND_AUTO = 0
BACKEND_CPU_REFERENCE = 1
BACKEND_CPU = 2
BACKEND_CUDA_PORTABLE = 3
BACKEND_CUDA_SM90 = 4

TILE_ORDER_DEFAULT = 0
TILE_ORDER_ASCENDING = 1
TILE_ORDER_DESCENDING = 2

# ctxattn.h CTXATTN_WORKSPACE_SKIP_STATS_OFFSET: two uint64 skip-softmax counters.
WORKSPACE_SKIP_STATS_OFFSET = 128

_c_enum = ctypes.c_int


class Args(ctypes.Structure):
    """Mirror of `ctxattn_args_t`, in declaration order."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("device_type", _c_enum),
        ("device_index", ctypes.c_int32),
        ("backend", _c_enum),
        # sizes
        ("num_tokens", ctypes.c_int64),
        ("num_qo_heads", ctypes.c_int32),
        ("num_kv_heads", ctypes.c_int32),
        ("head_dim", ctypes.c_int32),
        ("page_size", ctypes.c_int32),
        ("num_pages", ctypes.c_int64),
        ("batch_size", ctypes.c_int32),
        ("max_pages_per_seq", ctypes.c_int32),
        ("max_q_len", ctypes.c_int32),
        ("max_kv_len", ctypes.c_int32),
        # query
        ("query", ctypes.c_void_p),
        ("query_dtype", _c_enum),
        ("query_stride_token", ctypes.c_int64),
        ("query_stride_head", ctypes.c_int64),
        # KV cache
        ("k_cache", ctypes.c_void_p),
        ("v_cache", ctypes.c_void_p),
        ("kv_dtype", _c_enum),
        ("kv_layout", _c_enum),
        ("k_strides", ctypes.c_int64 * 3),
        ("v_strides", ctypes.c_int64 * 3),
        # metadata
        ("block_tables", ctypes.c_void_p),
        ("block_tables_stride", ctypes.c_int64),
        ("seq_lens", ctypes.c_void_p),
        ("seq_lens_dtype", _c_enum),
        ("cum_seq_lens_q", ctypes.c_void_p),
        ("cum_seq_lens_kv", ctypes.c_void_p),
        # math
        ("bmm1_scale", ctypes.c_float),
        ("bmm2_scale", ctypes.c_float),
        ("bmm1_scale_ptr", ctypes.c_void_p),
        ("bmm2_scale_ptr", ctypes.c_void_p),
        ("window_left", ctypes.c_int32),
        ("causal", ctypes.c_int32),
        ("sinks", ctypes.c_void_p),
        # output
        ("out", ctypes.c_void_p),
        ("out_dtype", _c_enum),
        ("out_stride_token", ctypes.c_int64),
        ("out_stride_head", ctypes.c_int64),
        ("out_scale", ctypes.c_void_p),
        ("out_scale_size_bytes", ctypes.c_int64),
        ("out_scale_start_index", ctypes.c_int64),
        ("o_sf_scale", ctypes.c_float),
        ("o_sf_vec_size", ctypes.c_int32),
        # LSE
        ("lse", ctypes.c_void_p),
        ("lse_stride_token", ctypes.c_int64),
        ("lse_stride_head", ctypes.c_int64),
        # execution
        ("workspace", ctypes.c_void_p),
        ("workspace_size", ctypes.c_size_t),
        ("stream", ctypes.c_void_p),
        ("enable_pdl", ctypes.c_int32),
        ("num_threads", ctypes.c_int32),
        ("check_metadata", ctypes.c_int32),
        # FlashInfer 0.7.2 keywords
        ("k_cache_sf", ctypes.c_void_p),
        ("v_cache_sf", ctypes.c_void_p),
        ("k_sf_strides", ctypes.c_int64 * 3),
        ("v_sf_strides", ctypes.c_int64 * 3),
        ("uses_shared_paged_kv_idx", ctypes.c_int32),
        ("block_tables_kv_stride", ctypes.c_int64),
        ("skip_softmax_threshold_scale_factor", ctypes.c_float),
        ("skip_softmax_rows", ctypes.c_int32),
        ("skip_softmax_keys", ctypes.c_int32),
        ("skip_softmax_order", ctypes.c_int32),
        ("use_fp16_softmax", ctypes.c_int32),
        ("uses_spcompress", ctypes.c_int32),
    ]


class LibraryError(RuntimeError):
    """libctxattn could not be found, loaded, or does not match this binding."""


# Defaults ctxattn_args_init() documents; checking them after the size catches a reordered or
# retyped field that happens to keep the struct's size.
_EXPECTED_DEFAULTS = {
    "device_type": DEVICE_CPU,
    "backend": BACKEND_AUTO,
    "bmm1_scale": 1.0,
    "bmm2_scale": 1.0,
    "window_left": -1,
    "causal": 1,
    "sinks": None,
    "o_sf_vec_size": 16,
    "enable_pdl": -1,
    "check_metadata": -1,
    "uses_shared_paged_kv_idx": 1,
}

# Far larger than any plausible ctxattn_args_t, so ctxattn_args_init() of a mismatched library
# writes inside this buffer rather than past a ctypes struct of the wrong size.
_PROBE_BYTES = 4096

_lock = threading.Lock()
_lib = None


def library_path():
    """The path the binding loads: $CTXATTN_LIBRARY, else libctxattn.so inside this package."""
    env = os.environ.get("CTXATTN_LIBRARY")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libctxattn.so")


def _declare(lib):
    args_p = ctypes.POINTER(Args)
    lib.ctxattn_args_init.argtypes = [ctypes.c_void_p]
    lib.ctxattn_args_init.restype = None
    for name in ("ctxattn_batch_context_with_kv_cache", "ctxattn_validate"):
        getattr(lib, name).argtypes = [args_p]
        getattr(lib, name).restype = _c_enum
    lib.ctxattn_workspace_size.argtypes = [args_p, ctypes.POINTER(ctypes.c_size_t)]
    lib.ctxattn_workspace_size.restype = _c_enum
    lib.ctxattn_select_backend.argtypes = [args_p, ctypes.POINTER(_c_enum)]
    lib.ctxattn_select_backend.restype = _c_enum
    for name in ("ctxattn_last_error", "ctxattn_version"):
        getattr(lib, name).argtypes = []
        getattr(lib, name).restype = ctypes.c_char_p
    lib.ctxattn_status_string.argtypes = [_c_enum]
    lib.ctxattn_status_string.restype = ctypes.c_char_p
    lib.ctxattn_backend_name.argtypes = [_c_enum]
    lib.ctxattn_backend_name.restype = ctypes.c_char_p
    lib.ctxattn_has_cuda.argtypes = []
    lib.ctxattn_has_cuda.restype = ctypes.c_int


def _check_layout(lib, path):
    probe = (ctypes.c_ubyte * _PROBE_BYTES)()
    lib.ctxattn_args_init(ctypes.addressof(probe))
    c_size = ctypes.c_size_t.from_buffer(probe).value
    py_size = ctypes.sizeof(Args)
    if c_size != py_size:
        raise LibraryError(
            f"{path}: ctxattn_args_t is {c_size} bytes in the library but {py_size} bytes in this "
            "Python binding; the library and the ctxattn package come from different versions"
        )
    args = Args.from_buffer(probe)
    for field, expected in _EXPECTED_DEFAULTS.items():
        got = getattr(args, field)
        if got != expected:
            raise LibraryError(
                f"{path}: ctxattn_args_init() set {field} = {got!r}, expected {expected!r}; the field "
                "layout of ctxattn_args_t differs from this Python binding"
            )


def load():
    """Loads libctxattn once, checks that its ctxattn_args_t matches `Args`, and returns it."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            path = library_path()
            if not os.path.exists(path):
                raise LibraryError(
                    f"libctxattn not found at {path}; set CTXATTN_LIBRARY to the built library "
                    "(e.g. build/libctxattn.so) or install the ctxattn package with pip"
                )
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                raise LibraryError(f"could not load {path}: {e}") from e
            _declare(lib)
            _check_layout(lib, path)
            _lib = lib
    return _lib


def new_args():
    """A fresh `Args` filled with the library's defaults (ctxattn_args_init)."""
    args = Args()
    load().ctxattn_args_init(ctypes.byref(args))
    return args


_EXCEPTIONS = {
    STATUS_INVALID_ARGUMENT: ValueError,
    STATUS_INVALID_METADATA: ValueError,
    STATUS_INVALID_TYPE: TypeError,
    STATUS_UNSUPPORTED: NotImplementedError,
    STATUS_NO_DEVICE_SUPPORT: NotImplementedError,
}


def raise_for_status(lib, status):
    """Turns a non-OK status into the Python exception of its class, with the library's message."""
    if status == STATUS_OK:
        return
    message = lib.ctxattn_last_error().decode("utf-8", errors="replace")
    if not message:
        message = lib.ctxattn_status_string(status).decode("utf-8", errors="replace")
    raise _EXCEPTIONS.get(status, RuntimeError)(message)


def run(args):
    """Calls ctxattn_batch_context_with_kv_cache; raises on a non-OK status."""
    lib = load()
    raise_for_status(lib, lib.ctxattn_batch_context_with_kv_cache(ctypes.byref(args)))


def select_backend(args):
    """The ctxattn_backend_t code the call described by `args` would run on (args.backend honoured)."""
    lib = load()
    code = _c_enum(0)
    raise_for_status(lib, lib.ctxattn_select_backend(ctypes.byref(args), ctypes.byref(code)))
    return code.value


def workspace_size(args):
    """Bytes of workspace the call described by `args` needs."""
    lib = load()
    size = ctypes.c_size_t(0)
    raise_for_status(lib, lib.ctxattn_workspace_size(ctypes.byref(args), ctypes.byref(size)))
    return size.value


def version():
    return load().ctxattn_version().decode()


def has_cuda():
    return bool(load().ctxattn_has_cuda())
