"""ctxattn: batched context (prefill) attention over a paged KV cache.

`ctxattn.trtllm_batch_context_with_kv_cache` is FlashInfer's
`flashinfer.prefill.trtllm_batch_context_with_kv_cache`, same arguments, on CPU tensors (the CPU
backend) and CUDA tensors (the CUDA backends). `ctxattn.prefill` mirrors FlashInfer's module path.
"""

from . import _lib, prefill
from ._lib import LibraryError, library_path
from .fp4 import FP4Tensor
from .prefill import trtllm_batch_context_with_kv_cache

__all__ = [
    "FP4Tensor",
    "LibraryError",
    "has_cuda",
    "library_path",
    "prefill",
    "trtllm_batch_context_with_kv_cache",
    "version",
]

__version__ = "0.1.0"


def version():
    """The version string of the loaded libctxattn."""
    return _lib.version()


def has_cuda():
    """True when the loaded libctxattn was built with its CUDA backends."""
    return _lib.has_cuda()
