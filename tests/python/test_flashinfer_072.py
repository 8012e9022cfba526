"""FlashInfer 0.7.2's own test matrix of this call, ported: every combination it sweeps (dtypes
with NVFP4 caches, page sizes 16..1024, HND / NHD, GQA 1 / 5 / 8, causal or not, sinks, LSE, both
page-index layouts, skip-softmax on and off, head dim 512), at lengths a CPU runs in seconds,
each checked against the float64 reference of SPEC 3 / 8 on the tensors the call receives.

FlashInfer's generator draws q lengths in [1, max_q_len] and cached prefixes in [0, max_kv_len]
with the last request at both maxima, over a permuted page table, and passes the page-count
prefix sums as cum_seq_lens_kv; so does `fi_case` here.
"""

import itertools
import random

import pytest
import torch

import ctxattn
from attn_reference import (
    DEVICES, FP8, TOL_LSE, call, check_dense, check_nvfp4, make_case, query_rows, reference, refused_on_gpu,
    tolerance,
)

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8": FP8, "nvfp4": "nvfp4"}

# (batch_size, page_size, num_kv_heads, head_grp_size): FlashInfer's shapes, batches of 128 and
# 256 scaled to 16.
SHAPES = [
    (4, 16, 2, 1), (4, 32, 4, 5), (4, 64, 4, 8), (16, 16, 2, 5), (16, 32, 4, 1),
    (16, 64, 2, 8), (16, 16, 4, 8), (16, 32, 2, 8), (16, 64, 4, 1), (16, 64, 4, 5),
]

# (q, kv, out): FlashInfer's list, plus the NVFP4 combinations ctxattn adds (16-bit out over an
# NVFP4 cache, 16-bit queries over one).
COMBOS = [
    ("bf16", "bf16", "bf16"), ("fp16", "fp16", "fp16"), ("fp8", "fp8", "bf16"), ("fp8", "fp8", "fp16"),
    ("fp8", "fp8", "fp8"), ("fp8", "fp8", "nvfp4"), ("fp8", "nvfp4", "fp8"), ("fp8", "nvfp4", "bf16"),
    ("fp8", "nvfp4", "fp16"), ("bf16", "nvfp4", "bf16"), ("fp16", "nvfp4", "fp16"),
]


def fi_case(device, kv_layout, shape, q_dtype, kv_dtype, causal, sinks, max_q_len, max_kv_len, head_dim,
            noncontig=False, skip=False, shared_idx=True, seed=0):
    batch, page_size, num_kv_heads, group = shape
    rng = random.Random(seed)
    q_lens = [rng.randint(1, max_q_len) for _ in range(batch - 1)] + [max_q_len]
    prefix = [rng.randint(0, max_kv_len) for _ in range(batch - 1)] + [max_kv_len]
    return make_case(
        device, q_dtype=DTYPES[q_dtype], kv_dtype=DTYPES[kv_dtype], num_qo_heads=num_kv_heads * group,
        num_kv_heads=num_kv_heads, head_dim=head_dim, page_size=page_size, q_lens=q_lens, prefix_lens=prefix,
        kv_layout=kv_layout, causal=causal, sinks="tensor" if sinks else None, seed=seed,
        noncontig_query=noncontig, tensor_scales=kv_dtype in ("fp8", "nvfp4"), shared_idx=shared_idx,
        skip=1e-30 if skip else None, cum_kv="pages", sf_form=rng.choice(["tuple", "single"]),
    )


def run_and_check(case, o_dtype, seed):
    """FlashInfer's output handling: an `out` tensor or only `out_dtype` (by a coin), fp8 output
    with o_scale in [0.5, 1] folded into bmm2_scale, nvfp4 with o_sf_scale 300; LSE checked."""
    if refused_on_gpu(case):
        return
    rng = random.Random(seed)
    dtype = DTYPES[o_dtype]
    o_scale = rng.uniform(0.5, 1.0) if o_dtype == "fp8" else 1.0
    if o_scale != 1.0:
        case.bmm2_scale = 1.0 / o_scale if not isinstance(case.bmm2_scale, torch.Tensor) else case.bmm2_scale / o_scale
    lse = torch.full(case.query.shape[:2], float("nan"), device=case.query.device)
    if o_dtype == "nvfp4":
        out = call(case, out_dtype="nvfp4", o_sf_scale=300.0, o_sf_vec_size=16, lse=lse)
        o_ref, lse_ref = reference(case)
        check_nvfp4(out, o_ref, 300.0, query_rows(case))
    else:
        give_out = rng.random() < 0.5 or dtype != case.query.dtype
        kwargs = {"out": torch.empty(case.query.shape, dtype=dtype, device=case.query.device)} if give_out else {}
        if not give_out or rng.random() < 0.5:
            kwargs["out_dtype"] = dtype
        out = call(case, lse=lse, **kwargs)
        assert out.dtype == dtype
        o_ref, lse_ref = reference(case)
        rows = query_rows(case)
        rtol, atol = tolerance(case, dtype)
        torch.testing.assert_close(out.cpu().double()[rows] * o_scale, o_ref[rows] * o_scale, rtol=rtol, atol=atol)
    rows = query_rows(case)
    torch.testing.assert_close(lse.cpu().double()[rows], lse_ref[rows], rtol=TOL_LSE[0], atol=TOL_LSE[1])


def _matrix():
    """Every dtype combination x layout x page-index layout, twice, the other axes drawn per case."""
    rng = random.Random(72)
    cases = []
    for n, (combo, layout, shared) in enumerate(itertools.product(COMBOS * 2, ["HND", "NHD"], [True, False])):
        extra = dict(shape=rng.choice(SHAPES), causal=rng.random() < 0.7, sinks=rng.random() < 0.5,
                     head_dim=rng.choice([128, 128, 256]), noncontig=rng.random() < 0.3, skip=rng.random() < 0.5)
        cases.append(pytest.param(combo, layout, shared, extra, n, id=f"{'-'.join(combo)}-{layout}-{shared}-{n}"))
    return cases


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("combo,kv_layout,shared_idx,extra,n", _matrix())
def test_trtllm_batch_prefill(device, combo, kv_layout, shared_idx, extra, n):
    q_dtype, kv_dtype, o_dtype = combo
    case = fi_case(device, kv_layout, extra["shape"], q_dtype, kv_dtype, extra["causal"], extra["sinks"],
                   max_q_len=47, max_kv_len=150, head_dim=extra["head_dim"], noncontig=extra["noncontig"],
                   skip=extra["skip"], shared_idx=shared_idx, seed=n)
    run_and_check(case, o_dtype, seed=n)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("page_size", [16, 32, 64, 128, 256, 512, 1024])
@pytest.mark.parametrize("shared_idx", [True, False])
@pytest.mark.parametrize("kv_dtype", ["bf16", "nvfp4"])
def test_page_sizes_gqa5(device, page_size, shared_idx, kv_dtype):
    """FlashInfer's dynamic page size test (pages 128-1024, G = 5), from page 16 up, NVFP4 too."""
    q_dtype = "fp8" if kv_dtype == "nvfp4" else "bf16"
    case = fi_case(device, "HND", (4, page_size, 2, 5), q_dtype, kv_dtype, True, False, max_q_len=65,
                   max_kv_len=1024, head_dim=128, shared_idx=shared_idx, seed=page_size)
    run_and_check(case, "bf16", seed=page_size)


def _d512():
    combos = [("bf16", "bf16", "bf16"), ("fp16", "fp16", "fp16"), ("fp8", "fp8", "fp8"), ("fp8", "fp8", "bf16")]
    shapes = [(4, 16, 2, 1), (4, 32, 4, 5), (8, 16, 2, 8)]
    cases = []
    for n, (combo, shape, layout, max_q) in enumerate(itertools.product(combos, shapes, ["HND", "NHD"], [1, 33])):
        cases.append(pytest.param(combo, shape, layout, max_q, n, id=f"{'-'.join(combo)}-{shape}-{layout}-q{max_q}"))
    return cases


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("combo,shape,kv_layout,max_q_len,n", _d512())
def test_head_dim_512(device, combo, shape, kv_layout, max_q_len, n):
    """FlashInfer's head_dim 512 matrix (Gemma-4), no sinks; skip and page-index layout alternate."""
    q_dtype, kv_dtype, o_dtype = combo
    case = fi_case(device, kv_layout, shape, q_dtype, kv_dtype, True, False, max_q_len=max_q_len, max_kv_len=90,
                   head_dim=512, skip=n % 2 == 0, shared_idx=n % 4 < 2, seed=500 + n)
    run_and_check(case, o_dtype, seed=n)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("skip", [False, True])
@pytest.mark.parametrize("shared_idx", [True, False])
def test_single_long_request(device, skip, shared_idx):
    """FlashInfer's bs1 test (one request, q = kv, 8 / 1 heads), at 640 tokens."""
    case = fi_case(device, "HND", (1, 16, 1, 8), "bf16", "bf16", True, False, max_q_len=640, max_kv_len=0,
                   head_dim=128, skip=skip, shared_idx=shared_idx, seed=7)
    run_and_check(case, "bf16", seed=7)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("return_lse,provide_lse", [(False, False), (False, True), (True, False), (True, True)])
def test_lse_contract(device, return_lse, provide_lse):
    """A given lse is filled whether or not return_lse is set; return_lse returns (out, lse) with
    the given tensor itself."""
    case = fi_case(device, "HND", (2, 16, 2, 2), "fp16", "fp16", True, False, max_q_len=64, max_kv_len=128,
                   head_dim=128, seed=3)
    given = torch.full(case.query.shape[:2], float("nan"), device=case.query.device) if provide_lse else None
    result = call(case, lse=given, return_lse=return_lse)
    if return_lse:
        out, lse = result
        if provide_lse:
            assert lse is given
    else:
        out, lse = result, given
        assert isinstance(out, torch.Tensor)
    check_dense(case, out, lse)


@pytest.mark.parametrize("device", DEVICES)
def test_noop_keywords_change_nothing(device):
    """backend "cake", the SM107 flags at False / None, a counter buffer, a skip factor of 0 and
    block scales beside a 16-bit cache (ignored, as FlashInfer ignores them): bitwise the plain call."""
    case = fi_case(device, "NHD", (3, 16, 2, 4), "bf16", "bf16", True, True, max_q_len=20, max_kv_len=60,
                   head_dim=64, seed=9)
    plain = call(case)
    counter = torch.zeros(4096, dtype=torch.uint8, device=device)
    before = counter.clone()
    for kwargs in ({"backend": "cake"}, {"backend": "trtllm-gen", "use_fp16_softmax": False, "uses_spcompress": None},
                   {"multi_ctas_kv_counter_buffer": counter}, {"skip_softmax_threshold_scale_factor": 0.0},
                   {"kv_cache_sf": (counter, counter)}):
        assert torch.equal(call(case, **kwargs).view(torch.int16), plain.view(torch.int16)), kwargs
    assert torch.equal(counter, before)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cum_kv", ["tokens", "pages", "q", "long"])
def test_cum_seq_lens_kv_is_not_read(device, cum_kv):
    """Engines pass token prefix sums, page prefix sums (vLLM flashinfer.py), the query's (vLLM
    trtllm_attn.py) or arange(num_pages + 1) * page_size (FlashInfer's sink test, longer than
    batch_size + 1): all give the same output."""
    case = make_case(device, q_lens=(5, 9, 1), prefix_lens=(30, 0, 17), cum_kv=cum_kv, seed=21)
    assert case.cum_seq_lens_kv.numel() >= case.batch_size + 1
    base = make_case(device, q_lens=(5, 9, 1), prefix_lens=(30, 0, 17), seed=21)
    assert torch.equal(call(case).view(torch.int16), call(base).view(torch.int16))
    check_dense(case, call(case))
