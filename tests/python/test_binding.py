"""The Python surface: the seed's signature, the ctypes mirror of ctxattn_args_t, library lookup,
the status-to-exception mapping."""

import ctypes
import inspect

import pytest
import torch

import ctxattn
from ctxattn import _lib

# FlashInfer 0.7.2's positional order, keyword names and defaults (SPEC 1): the seed's call up to
# `sinks`, then the 0.7.2 keywords with `causal`, `lse` and `return_lse` among them.
SEED_SIGNATURE = [
    ("query", inspect.Parameter.empty),
    ("kv_cache", inspect.Parameter.empty),
    ("workspace_buffer", inspect.Parameter.empty),
    ("block_tables", inspect.Parameter.empty),
    ("seq_lens", inspect.Parameter.empty),
    ("max_q_len", inspect.Parameter.empty),
    ("max_kv_len", inspect.Parameter.empty),
    ("bmm1_scale", inspect.Parameter.empty),
    ("bmm2_scale", inspect.Parameter.empty),
    ("batch_size", inspect.Parameter.empty),
    ("cum_seq_lens_q", inspect.Parameter.empty),
    ("cum_seq_lens_kv", inspect.Parameter.empty),
    ("window_left", -1),
    ("out", None),
    ("out_dtype", None),
    ("o_sf_scale", None),
    ("o_sf_vec_size", None),
    ("kv_layout", "HND"),
    ("enable_pdl", None),
    ("sinks", None),
    ("kv_cache_sf", None),
    ("skip_softmax_threshold_scale_factor", None),
    ("uses_shared_paged_kv_idx", True),
    ("causal", True),
    ("lse", None),
    ("return_lse", False),
    ("multi_ctas_kv_counter_buffer", None),
    ("use_fp16_softmax", None),
    ("uses_spcompress", None),
    ("backend", "trtllm-gen"),
]


def test_signature_is_the_seeds():
    params = inspect.signature(ctxattn.trtllm_batch_context_with_kv_cache).parameters.values()
    assert [(p.name, p.default) for p in params] == SEED_SIGNATURE
    assert all(p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params)


def test_flashinfer_module_path():
    assert ctxattn.prefill.trtllm_batch_context_with_kv_cache is ctxattn.trtllm_batch_context_with_kv_cache
    assert ctxattn.prefill.FP4Tensor is ctxattn.FP4Tensor


def test_struct_matches_the_library():
    lib = _lib.load()
    args = _lib.Args()
    lib.ctxattn_args_init(ctypes.byref(args))
    assert args.struct_size == ctypes.sizeof(_lib.Args)
    assert args.o_sf_vec_size == 16 and args.enable_pdl == -1 and args.check_metadata == -1
    assert args.window_left == -1 and args.causal == 1 and args.bmm1_scale == 1.0
    assert args.uses_shared_paged_kv_idx == 1 and args.skip_softmax_threshold_scale_factor == 0.0
    assert args.k_cache_sf is None and args.use_fp16_softmax == 0 and args.uses_spcompress == 0


def test_layout_mismatch_is_refused(monkeypatch):
    class Longer(ctypes.Structure):
        _fields_ = [*_lib.Args._fields_, ("extra", ctypes.c_int64)]

    monkeypatch.setattr(_lib, "Args", Longer)
    with pytest.raises(_lib.LibraryError, match="ctxattn_args_t is"):
        _lib._check_layout(_lib.load(), "libctxattn.so")


def test_reordered_fields_are_refused(monkeypatch):
    fields = list(_lib.Args._fields_)
    i = [name for name, _ in fields].index("enable_pdl")
    fields[i], fields[i + 1] = fields[i + 1], fields[i]

    class Reordered(ctypes.Structure):
        _fields_ = fields

    monkeypatch.setattr(_lib, "Args", Reordered)
    with pytest.raises(_lib.LibraryError, match="field layout"):
        _lib._check_layout(_lib.load(), "libctxattn.so")


def test_library_lookup(monkeypatch, tmp_path):
    monkeypatch.setenv("CTXATTN_LIBRARY", "/some/where/libctxattn.so")
    assert _lib.library_path() == "/some/where/libctxattn.so"
    monkeypatch.delenv("CTXATTN_LIBRARY")
    assert _lib.library_path().endswith("ctxattn/libctxattn.so")
    missing = str(tmp_path / "libctxattn.so")
    monkeypatch.setenv("CTXATTN_LIBRARY", missing)
    monkeypatch.setattr(_lib, "_lib", None)
    with pytest.raises(_lib.LibraryError, match="not found"):
        _lib.load()


class FakeLib:
    def __init__(self, message):
        self.message = message

    def ctxattn_last_error(self):
        return self.message

    def ctxattn_status_string(self, status):
        return b"status text"


@pytest.mark.parametrize("status,exc", [
    (_lib.STATUS_INVALID_ARGUMENT, ValueError),
    (_lib.STATUS_INVALID_METADATA, ValueError),
    (_lib.STATUS_INVALID_TYPE, TypeError),
    (_lib.STATUS_UNSUPPORTED, NotImplementedError),
    (_lib.STATUS_NO_DEVICE_SUPPORT, NotImplementedError),
    (_lib.STATUS_CUDA_ERROR, RuntimeError),
    (_lib.STATUS_INTERNAL_ERROR, RuntimeError),
])
def test_status_mapping(status, exc):
    with pytest.raises(exc, match="^query: bad$"):
        _lib.raise_for_status(FakeLib(b"query: bad"), status)
    with pytest.raises(exc, match="status text"):
        _lib.raise_for_status(FakeLib(b""), status)
    _lib.raise_for_status(FakeLib(b""), _lib.STATUS_OK)


def test_version_and_cuda_flag():
    assert ctxattn.version() == ctxattn.__version__
    assert isinstance(ctxattn.has_cuda(), bool)


def test_op_is_registered_with_its_mutations():
    schema = torch.ops.ctxattn.batch_context_with_kv_cache.default._schema
    mutated = {a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write}
    assert mutated == {"workspace_buffer", "out", "out_scale", "lse"}
    assert len(schema.returns) == 0
