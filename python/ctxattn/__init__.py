"""ctxattn: batched context (prefill) attention over a paged KV cache.

`ctxattn.trtllm_batch_context_with_kv_cache` is FlashInfer's
`flashinfer.prefill.trtllm_batch_context_with_kv_cache`, same arguments, on CPU tensors (the CPU
backend) and CUDA tensors (the CUDA backends). `ctxattn.prefill` mirrors FlashInfer's module path.
The library picks the backend of each call; `use_backend`, `set_backend` or the environment
variable CTXATTN_BACKEND force one by name, and `selected_backend` says which one a call would use;
`workspace_size` says how large its `workspace_buffer` must be. `nvfp4_quantize_paged_kv_cache`
prepares an NVFP4 KV cache; `skip_softmax_stats` reports what skip-softmax skipped.
"""

from . import _backend, _lib, prefill
from ._backend import get_backend, set_backend, use_backend
from ._lib import LibraryError, library_path
from ._skip import skip_softmax_geometry, skip_softmax_stats
from .fp4 import FP4Tensor
from .kv_fp4 import nvfp4_dequantize_paged_kv_cache, nvfp4_quantize_paged_kv_cache
from .prefill import selected_backend, trtllm_batch_context_with_kv_cache, workspace_size

__all__ = [
    "BACKENDS",
    "FP4Tensor",
    "LibraryError",
    "get_backend",
    "has_cuda",
    "library_path",
    "nvfp4_dequantize_paged_kv_cache",
    "nvfp4_quantize_paged_kv_cache",
    "prefill",
    "selected_backend",
    "set_backend",
    "skip_softmax_geometry",
    "skip_softmax_stats",
    "trtllm_batch_context_with_kv_cache",
    "use_backend",
    "version",
    "workspace_size",
]

# The names use_backend / set_backend / CTXATTN_BACKEND accept ("-" for "_" and any case too).
BACKENDS = tuple(_backend.CODES)

__version__ = "0.1.0"


def version():
    """The version string of the loaded libctxattn."""
    return _lib.version()


def has_cuda():
    """True when the loaded libctxattn was built with its CUDA backends."""
    return _lib.has_cuda()
