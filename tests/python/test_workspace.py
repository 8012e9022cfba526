"""ctxattn.workspace_size: the workspace_buffer a call needs, the same number the C library
checks; a call over long KV on a GPU needs room for the split-KV partials, and one byte less is a
clear error before anything runs."""

import dataclasses
import inspect

import pytest
import torch

import ctxattn
from attn_reference import DEVICES, TOL_16BIT, TOL_LSE, make_case, query_rows, reference

HEADER = 4096


def test_workspace_size_has_the_calls_signature():
    assert inspect.signature(ctxattn.workspace_size).parameters.keys() == \
        inspect.signature(ctxattn.trtllm_batch_context_with_kv_cache).parameters.keys()
    assert ctxattn.prefill.workspace_size is ctxattn.workspace_size


def test_cpu_calls_need_the_header_only():
    case = make_case("cpu", prefix_lens=(9000, 7, 0), seed=3)
    assert ctxattn.workspace_size(*case.args(), **case.kwargs) == HEADER


def test_workspace_size_checks_like_the_call():
    case = make_case("cpu", seed=4)
    with pytest.raises(ValueError, match="kv_layout"):
        ctxattn.workspace_size(*case.args(), **{**case.kwargs, "kv_layout": "XYZ"})


@pytest.mark.parametrize("device", [d for d in DEVICES if d != "cpu"] or
                         [pytest.param("cuda", marks=pytest.mark.skip(reason="no CUDA device"))])
def test_long_kv_on_a_gpu_needs_the_split_partials(device):
    # One short chunk over 9000 cached tokens: a request the GPU backends split along the KV axis.
    case = make_case(device, num_qo_heads=8, num_kv_heads=1, q_lens=(40, 3), prefix_lens=(9000, 12000), seed=5)
    need = ctxattn.workspace_size(*case.args(), **case.kwargs)
    assert need > HEADER
    short = dataclasses.replace(case, workspace_buffer=torch.zeros(need - 1, dtype=torch.uint8, device=device))
    with pytest.raises(ValueError, match="workspace_buffer"):
        ctxattn.trtllm_batch_context_with_kv_cache(*short.args(), **short.kwargs)
    enough = dataclasses.replace(case, workspace_buffer=torch.zeros(need, dtype=torch.uint8, device=device))
    out, lse = ctxattn.trtllm_batch_context_with_kv_cache(*enough.args(), **enough.kwargs, return_lse=True)
    o_ref, lse_ref = reference(case)
    rows = query_rows(case)
    torch.testing.assert_close(out.cpu().double()[rows], o_ref[rows], rtol=TOL_16BIT[0], atol=TOL_16BIT[1])
    torch.testing.assert_close(lse.cpu().double()[rows], lse_ref[rows], rtol=TOL_LSE[0], atol=TOL_LSE[1])


def test_the_transformers_workspace_grows_to_what_a_call_needs():
    from ctxattn.integrations import transformers as integration

    first = integration.workspace_for("cpu")
    assert first.numel() >= HEADER and bool((first == 0).all())
    grown = integration.workspace_for("cpu", at_least=first.numel() + 4096)
    assert grown.numel() >= first.numel() + 4096 and bool((grown == 0).all())
    assert integration.workspace_for("cpu") is grown  # the larger buffer is kept
