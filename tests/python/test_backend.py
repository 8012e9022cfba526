"""Forcing a backend: CTXATTN_BACKEND, ctxattn.set_backend / get_backend / use_backend and
ctxattn.selected_backend; a forced backend that cannot serve a call raises, never falls back."""

import contextlib
import inspect
import threading

import pytest
import torch

import ctxattn
from attn_reference import DEVICES, FP8, TOL_16BIT, TOL_FP8_IN, TOL_LSE, make_case, query_rows, reference

ENV = "CTXATTN_BACKEND"
SENTINEL = 7.0


@pytest.fixture(autouse=True)
def clean_setting(monkeypatch):
    """Every test starts at "auto" (no environment variable, no process-wide choice) and leaves it so."""
    monkeypatch.delenv(ENV, raising=False)
    previous = ctxattn.set_backend(None)
    yield
    ctxattn.set_backend(previous)


def call(case, **extra):
    return ctxattn.trtllm_batch_context_with_kv_cache(*case.args(), **{**case.kwargs, **extra})


def selected(case, **extra):
    return ctxattn.selected_backend(*case.args(), **{**case.kwargs, **extra})


def sentinel_out(case):
    return torch.full(case.query.shape, SENTINEL, dtype=case.query.dtype, device=case.query.device)


def check(case, out, lse, tol=TOL_16BIT):
    o_ref, lse_ref = reference(case)
    rows = query_rows(case)
    torch.testing.assert_close(out.cpu().double()[rows], o_ref[rows], rtol=tol[0], atol=tol[1])
    torch.testing.assert_close(lse.cpu().double()[rows], lse_ref[rows], rtol=TOL_LSE[0], atol=TOL_LSE[1])


# ---- the setting itself ----

def test_default_is_auto():
    assert ctxattn.get_backend() == "auto"
    assert ctxattn.BACKENDS == ("auto", "cpu", "cpu_reference", "cuda_portable", "cuda_sm90")


@pytest.mark.parametrize("value,name", [
    ("cpu_reference", "cpu_reference"), ("CPU-Reference", "cpu_reference"), (" cuda-sm90 ", "cuda_sm90"),
    ("AUTO", "auto"), ("", "auto"),
])
def test_environment_variable(monkeypatch, value, name):
    monkeypatch.setenv(ENV, value)
    assert ctxattn.get_backend() == name


@pytest.mark.parametrize("value", ["sm90", "cuda", "cpu_ref", "0"])
def test_bad_environment_value(monkeypatch, value):
    monkeypatch.setenv(ENV, value)
    with pytest.raises(ValueError, match=ENV) as info:
        ctxattn.get_backend()
    assert repr(value) in str(info.value) and "cuda_sm90" in str(info.value)
    case = make_case("cpu", seed=1)
    out = sentinel_out(case)
    with pytest.raises(ValueError, match=ENV):
        call(case, out=out)
    assert bool((out == SENTINEL).all()), "a call refused for a bad CTXATTN_BACKEND wrote its output"


@pytest.mark.parametrize("bad,exc", [("sm90", ValueError), ("cuda_sm80", ValueError), (3, TypeError)])
def test_bad_names(bad, exc):
    with pytest.raises(exc, match="set_backend"):
        ctxattn.set_backend(bad)
    with pytest.raises(exc, match="use_backend"):
        with ctxattn.use_backend(bad):
            pass
    assert ctxattn.get_backend() == "auto"


def test_precedence_and_restoring(monkeypatch):
    monkeypatch.setenv(ENV, "cpu_reference")
    assert ctxattn.set_backend("cpu") is None
    assert ctxattn.get_backend() == "cpu"                    # set_backend over the environment
    with ctxattn.use_backend("cuda_portable"):
        assert ctxattn.get_backend() == "cuda_portable"      # use_backend over set_backend
        with ctxattn.use_backend("cpu_reference"):
            assert ctxattn.get_backend() == "cpu_reference"  # the innermost block wins
        assert ctxattn.get_backend() == "cuda_portable"
    with pytest.raises(KeyError):
        with ctxattn.use_backend("cuda_sm90"):
            raise KeyError("leaving the block by an exception restores the setting")
    assert ctxattn.get_backend() == "cpu"
    assert ctxattn.set_backend(None) == "cpu"                # returns the previous choice
    assert ctxattn.get_backend() == "cpu_reference"          # back to the environment


def test_use_backend_is_thread_local_set_backend_is_not():
    seen = {}

    def other_thread():
        seen["other"] = ctxattn.get_backend()

    ctxattn.set_backend("cpu_reference")
    with ctxattn.use_backend("cpu"):
        assert ctxattn.get_backend() == "cpu"
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
    assert seen["other"] == "cpu_reference"


# ---- forcing on the CPU ----

CPU_CASES = {
    "bf16-gqa": dict(seed=1),
    "fp16-window-sinks": dict(q_dtype=torch.float16, window_left=4, sinks="tensor", seed=2),
    "fp8-nhd-page1": dict(q_dtype=FP8, kv_layout="NHD", page_size=1, seed=3),
    "bf16-noncausal-gqa5": dict(num_qo_heads=5, num_kv_heads=1, causal=False, seed=4),
}


@pytest.mark.parametrize("kw", CPU_CASES.values(), ids=CPU_CASES.keys())
def test_cpu_and_cpu_reference_agree(kw):
    case = make_case("cpu", **kw)
    tol = TOL_FP8_IN if case.query.dtype == FP8 else TOL_16BIT
    results = {}
    for name in ("cpu", "cpu_reference"):
        with ctxattn.use_backend(name):
            assert selected(case) == name
            results[name] = call(case, return_lse=True, out_dtype=torch.bfloat16)
        check(case, *results[name], tol)
    rows = query_rows(case)
    (fast, fast_lse), (ref, ref_lse) = results["cpu"], results["cpu_reference"]
    # Both accumulate in fp32: far tighter than the float64 tolerances.
    torch.testing.assert_close(fast.float()[rows], ref.float()[rows], rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(fast_lse[rows], ref_lse[rows], rtol=1e-4, atol=1e-4)


def test_every_way_of_forcing_reaches_the_library(monkeypatch):
    case = make_case("cpu", seed=5)
    assert selected(case) == "cpu"                         # auto picks the fast CPU path
    monkeypatch.setenv(ENV, "cpu-reference")
    assert selected(case) == "cpu_reference"
    ctxattn.set_backend("cpu")
    assert selected(case) == "cpu"
    with ctxattn.use_backend("cpu_reference"):
        assert selected(case) == "cpu_reference"
        out, lse = call(case, return_lse=True)
    check(case, out, lse)


@pytest.mark.parametrize("name", ["cuda_sm90", "cuda_portable"])
@pytest.mark.parametrize("how", ["env", "set_backend", "use_backend"])
def test_cuda_backend_on_cpu_tensors_raises(monkeypatch, name, how):
    case = make_case("cpu", seed=6)
    out = sentinel_out(case)
    where = {"env": f"{ENV}={name}", "set_backend": f"ctxattn.set_backend('{name}')",
             "use_backend": f"ctxattn.use_backend('{name}')"}[how]
    if how == "env":
        monkeypatch.setenv(ENV, name)
    elif how == "set_backend":
        ctxattn.set_backend(name)
    with ctxattn.use_backend(name) if how == "use_backend" else contextlib.nullcontext():
        for attempt in (lambda: call(case, out=out), lambda: selected(case, out=out)):
            with pytest.raises(NotImplementedError) as info:
                attempt()
            message = str(info.value)
            assert name in message and where in message and "CPU tensors" in message, message
    assert bool((out == SENTINEL).all()), "a refused call wrote its output"


def test_selected_backend_has_the_calls_signature():
    assert inspect.signature(ctxattn.selected_backend).parameters.keys() == \
        inspect.signature(ctxattn.trtllm_batch_context_with_kv_cache).parameters.keys()
    assert ctxattn.prefill.selected_backend is ctxattn.selected_backend


def test_selected_backend_checks_like_the_call():
    case = make_case("cpu", seed=7)
    with pytest.raises(ValueError, match="kv_layout"):
        selected(case, kv_layout="XYZ")


# ---- torch.compile: the setting is read when the compiled code runs ----

def attention(query, k, v, workspace, block_tables, seq_lens, cu_q, cu_kv):
    return ctxattn.trtllm_batch_context_with_kv_cache(
        query, (k, v), workspace, block_tables, seq_lens, 16, 64, 0.125, 1.0, block_tables.shape[0],
        cu_q, cu_kv, return_lse=True,
    )


def test_compiled_code_follows_the_setting_at_call_time():
    torch._dynamo.reset()
    case = make_case("cpu", q_lens=(5, 0, 9), prefix_lens=(3, 7, 40), seed=8)
    k, v = case.kv_cache
    inputs = (case.query, k, v, case.workspace_buffer, case.block_tables, case.seq_lens,
              case.cum_seq_lens_q, case.cum_seq_lens_kv)
    compiled = torch.compile(attention, backend="aot_eager", fullgraph=True)
    with ctxattn.use_backend("cpu_reference"):
        ref_out, ref_lse = compiled(*inputs)
    fast_out, fast_lse = compiled(*inputs)
    rows = query_rows(case)
    torch.testing.assert_close(fast_out.float()[rows], ref_out.float()[rows], rtol=1e-2, atol=1e-2)
    with ctxattn.use_backend("cuda_sm90"), pytest.raises(NotImplementedError, match="cuda_sm90"):
        compiled(*inputs)


# ---- CUDA (skipped without a GPU and a CUDA build) ----

CUDA = [p for p in DEVICES if not isinstance(p, str)]


@pytest.mark.parametrize("device", CUDA)
def test_cuda_forced_backends(device):
    case = make_case(device, head_dim=128, seed=9)
    with ctxattn.use_backend("cuda_portable"):
        assert selected(case) == "cuda_portable"
        out, lse = call(case, return_lse=True)
    check(case, out, lse)
    with ctxattn.use_backend("cuda_sm90"):
        try:
            name = selected(case)
        except NotImplementedError as e:
            # Not served here (an older GPU, or a build without the kernels): the call says so too.
            assert "sm90" in str(e)
            with pytest.raises(NotImplementedError):
                call(case)
        else:
            assert name == "cuda_sm90"
            out, lse = call(case, return_lse=True)
            check(case, out, lse)
    for name in ("cpu", "cpu_reference"):
        with ctxattn.use_backend(name), pytest.raises(NotImplementedError, match="CUDA tensors"):
            call(case)
    assert selected(case) in ("cuda_portable", "cuda_sm90")
