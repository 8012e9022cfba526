"""Skip-softmax (SPEC 8.2) on the CPU backends: the dense limits, the vote at every geometry
against the float64 rule (skip_reference), the statistics, and what the GPU backends refuse."""

import math

import pytest
import torch

import ctxattn
import skip_reference
from attn_reference import DEVICES, FP8, SM90, TOL_LSE, call, check_dense, make_case, query_rows

CPU_BACKENDS = ["cpu", "cpu_reference"]


def concentrated(device="cpu", skip=None, **kw):
    """Attention that concentrates: every query and the first 8 and last 48 keys of each request
    share a direction worth about 12 in logits, so far-from-diagonal tiles hold little mass."""
    spec = dict(q_lens=(300, 64, 1), prefix_lens=(900, 1500, 700), num_qo_heads=8, num_kv_heads=2, head_dim=64,
                page_size=16, concentrate=12.0, seed=11)
    spec.update(kw)
    return make_case(device, skip=skip, **spec)


def run(case, backend, **extra):
    with ctxattn.use_backend(backend):
        out, lse = call(case, return_lse=True, **extra)
    return out, lse, ctxattn.skip_softmax_stats(case.workspace_buffer)


def check_against_rule(case, out, lse, stats, rows=64, keys=128, order="descending"):
    o_ref, lse_ref, counted, skipped = skip_reference.reference(case, rows, keys, order)
    assert stats == (counted, skipped)
    check_dense(case, out, lse, expected=(o_ref, lse_ref))
    return counted, skipped


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_none_and_zero_are_dense_and_report_nothing(backend):
    case = concentrated()
    dense, dense_lse, stats = run(case, backend)
    assert stats == (0, 0)
    for factor in (None, 0, 0.0):
        out, lse, stats = run(case, backend, skip_softmax_threshold_scale_factor=factor)
        assert torch.equal(out.view(torch.int16), dense.view(torch.int16)) and stats == (0, 0)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("factor", [1e-30, -1.0, float("nan")])
def test_factors_that_skip_nothing_are_dense(backend, factor):
    """FlashInfer's tests pass 1e-30: within SPEC 6 of dense attention; negative and NaN factors
    never skip. Every tile with an allowed key is counted."""
    case = concentrated(skip=factor)
    out, lse, (counted, skipped) = run(case, backend)
    assert counted > 0 and skipped == 0
    check_dense(case, out, lse)
    dense = concentrated()
    check_dense(dense, out, lse)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("factor", [0.5, 8.0, 200.0])
def test_real_factors_follow_the_rule(backend, factor):
    case = concentrated(skip=factor)
    out, lse, stats = run(case, backend)
    counted, skipped = check_against_rule(case, out, lse, stats)
    assert 0 < skipped < counted


def test_skipping_grows_with_the_factor_and_costs_accuracy():
    fractions, errors = [], []
    dense_out = call(concentrated())
    for factor in (0.05, 5.0, 500.0, float("inf")):
        case = concentrated(skip=factor)
        out, _, (counted, skipped) = run(case, "cpu")
        fractions.append(skipped / counted)
        errors.append((out.float() - dense_out.float()).abs().max().item())
    assert fractions == sorted(fractions) and fractions[0] > 0 and fractions[-1] > 0.5
    assert errors[-1] > errors[0]


@pytest.mark.parametrize("rows,keys,order", [(64, 128, "descending"), (64, 128, "ascending"), (16, 64, "descending"),
                                             (128, 256, "ascending"), (64, 192, "descending"), (1, 64, "ascending")])
def test_every_geometry(rows, keys, order):
    """The geometry a GPU kernel votes at can be asked of the CPU oracle."""
    case = concentrated(skip=20.0, q_lens=(120, 33), prefix_lens=(700, 400))
    with ctxattn.skip_softmax_geometry(rows=rows, keys=keys, order=order):
        fast = run(case, "cpu")
        ref = run(case, "cpu_reference")
    assert fast[2] == ref[2]
    check_against_rule(case, *fast, rows, keys, order)
    check_against_rule(case, *ref, rows, keys, order)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("extra", [
    dict(num_qo_heads=10, num_kv_heads=2), dict(window_left=300), dict(sinks="tensor"), dict(causal=False),
    dict(q_dtype=FP8, kv_dtype=FP8), dict(q_dtype=FP8, kv_dtype="nvfp4", head_dim=128), dict(shared_idx=False),
    dict(kv_layout="NHD", page_size=64),
], ids=str)
def test_with_every_feature(backend, extra):
    case = concentrated(skip=30.0, **extra)
    out, lse, stats = run(case, backend)
    check_against_rule(case, out, lse, stats)


def test_thread_count_does_not_change_the_bits(monkeypatch):
    case = concentrated(skip=30.0)
    monkeypatch.setenv("CTXATTN_NUM_THREADS", "1")
    one = run(case, "cpu")
    monkeypatch.setenv("CTXATTN_NUM_THREADS", "2")
    two = run(case, "cpu")
    assert torch.equal(one[0].view(torch.int16), two[0].view(torch.int16)) and one[2] == two[2]


def test_geometry_arguments_are_checked():
    for bad in (dict(rows=0), dict(keys=96), dict(keys=2048), dict(order="random"), dict(rows=True)):
        with pytest.raises(ValueError):
            with ctxattn.skip_softmax_geometry(**bad):
                pass


GPU_DEVICES = [d for d in DEVICES if not (isinstance(d, str) and d == "cpu")]


@pytest.mark.parametrize("device", GPU_DEVICES)
@pytest.mark.parametrize("factor", [1e-30, 0.5, 200.0])
def test_portable_backend_runs_skip_factors_dense(device, factor):
    """cuda_portable votes on no tile: any factor gives bitwise its dense result, statistics (0, 0)."""
    case = concentrated(device, q_lens=(200, 20), prefix_lens=(500, 100), skip=factor)
    out, _, stats = run(case, "cuda_portable")
    dense = concentrated(device, q_lens=(200, 20), prefix_lens=(500, 100))
    ref, _, _ = run(dense, "cuda_portable")
    assert stats == (0, 0) and torch.equal(out.view(torch.int16), ref.view(torch.int16))
    check_dense(dense, out)


# The sm90 kernels' vote geometry (kernel.cuh SkipVote): each consumer warpgroup's 64 packed rows
# x the kernel's key tile (traits.cuh kBlockN: 128, 64 for 16-bit D = 256, 32 at D = 512, where both
# warpgroups of a CTA vote on the same 64 rows and one reports; e4m3 Q/K/V 128 on requests under
# 4096 keys), tiles from the last to the first. Requests stay under 8192 keys, so no
# call splits (a split piece votes against its own running maximum).
@SM90
@pytest.mark.parametrize("head_dim,keys", [(64, 128), (128, 128), (256, 64), (512, 32)])
@pytest.mark.parametrize("factor", [1e-30, 0.5, 8.0, 200.0])
def test_sm90_votes_as_the_rule_at_its_geometry(head_dim, keys, factor):
    case = concentrated("cuda", skip=factor, head_dim=head_dim)
    out, lse, stats = run(case, "cuda_sm90")
    counted, skipped = check_against_rule(case, out, lse, stats, rows=64, keys=keys)
    assert counted > 0 and (skipped > 0) == (factor > 1e-20)


@SM90
@pytest.mark.parametrize("extra", [
    dict(num_qo_heads=10, num_kv_heads=2), dict(window_left=300), dict(sinks="tensor"), dict(causal=False),
    dict(q_dtype=FP8, kv_dtype=FP8, head_dim=128), dict(q_dtype=FP8, kv_dtype=FP8, head_dim=256),
    dict(shared_idx=False), dict(kv_layout="NHD", page_size=64), dict(page_size=1), dict(q_dtype=torch.float16),
    dict(head_dim=512, q_dtype=torch.float16, window_left=300, sinks="tensor"),
], ids=str)
def test_sm90_with_every_feature(extra):
    head_dim = extra.get("head_dim", 64)
    keys = 32 if head_dim == 512 else 64 if head_dim == 256 and extra.get("q_dtype") != FP8 else 128
    case = concentrated("cuda", skip=30.0, **extra)
    out, lse, stats = run(case, "cuda_sm90")
    check_against_rule(case, out, lse, stats, rows=64, keys=keys)


# The kernels that widen an e4m3 or NVFP4 cache to fp16 (16-bit queries over e4m3; e4m3, fp16 and
# bf16 queries over NVFP4 at D = 128, HND, pages of 16+) vote as the others, at their key tiles.
# (NVFP4's random block scales blur the concentration: 8 skips nothing there, 1e4 about half.)
@SM90
@pytest.mark.parametrize("q_dtype,kv_dtype,head_dim,keys", [
    (torch.float16, FP8, 64, 128), (torch.bfloat16, FP8, 128, 128), (torch.float16, FP8, 128, 128),
    (torch.bfloat16, FP8, 256, 64), (FP8, "nvfp4", 128, 128), (torch.float16, "nvfp4", 128, 128),
    (torch.bfloat16, "nvfp4", 128, 128), (FP8, "nvfp4", 256, 64),
], ids=str)
@pytest.mark.parametrize("factor", [1e-30, "skips"])
def test_sm90_votes_over_widened_caches(q_dtype, kv_dtype, head_dim, keys, factor):
    if factor == "skips":
        factor = 1e4 if kv_dtype == "nvfp4" else 8.0
    case = concentrated("cuda", skip=factor, q_dtype=q_dtype, kv_dtype=kv_dtype, head_dim=head_dim,
                        kv_layout="HND")
    out, lse, stats = run(case, "cuda_sm90")
    counted, skipped = check_against_rule(case, out, lse, stats, rows=64, keys=keys)
    assert counted > 0 and (skipped > 0) == (factor > 1e-20)


@SM90
def test_sm90_skipping_is_deterministic():
    case = concentrated("cuda", skip=30.0, head_dim=128)
    first, _, stats = run(case, "cuda_sm90")
    for _ in range(3):
        again, _, again_stats = run(case, "cuda_sm90")
        assert torch.equal(first.view(torch.int16), again.view(torch.int16)) and again_stats == stats
