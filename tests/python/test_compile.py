"""The custom op under torch.compile, torch.library.opcheck and CUDA graphs."""

import pytest
import torch

import ctxattn
from attn_reference import DEVICES, TOL_16BIT, check_nvfp4, make_case, query_rows, reference

OP = torch.ops.ctxattn.batch_context_with_kv_cache.default


def attention(query, k, v, workspace, block_tables, seq_lens, cu_q, cu_kv, bmm1, bmm2):
    """A model-side function calling ctxattn, as a compiled graph would see it."""
    out, lse = ctxattn.trtllm_batch_context_with_kv_cache(
        query, (k, v), workspace, block_tables, seq_lens, 16, 64, bmm1, bmm2, block_tables.shape[0],
        cu_q, cu_kv, return_lse=True,
    )
    return out.float() * 2.0, lse


def case_inputs(case):
    k, v = case.kv_cache
    return (case.query, k, v, case.workspace_buffer, case.block_tables, case.seq_lens,
            case.cum_seq_lens_q, case.cum_seq_lens_kv, case.bmm1_scale, case.bmm2_scale)


def small_case(device, **kw):
    return make_case(device, q_lens=(5, 0, 9), prefix_lens=(3, 7, 40), **kw)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compile_matches_eager(device, backend):
    torch._dynamo.reset()
    case = small_case(device)
    eager_out, eager_lse = attention(*case_inputs(case))
    compiled = torch.compile(attention, backend=backend, fullgraph=True)
    out, lse = compiled(*case_inputs(case))
    assert torch.equal(out, eager_out) and torch.equal(lse, eager_lse)


@pytest.mark.parametrize("device", DEVICES)
def test_compile_dynamic_shapes(device):
    """One dynamic-shape graph serves batches of other token counts."""
    torch._dynamo.reset()
    compiled = torch.compile(attention, backend="aot_eager", fullgraph=True, dynamic=True)
    for seed, q_lens in enumerate([(5, 0, 9), (7, 2, 16), (1, 3, 4)]):
        case = make_case(device, q_lens=q_lens, prefix_lens=(3, 7, 40), seed=20 + seed)
        out, lse = compiled(*case_inputs(case))
        o_ref, lse_ref = reference(case)
        torch.testing.assert_close(out.cpu().double() / 2.0, o_ref, rtol=TOL_16BIT[0], atol=TOL_16BIT[1])
        torch.testing.assert_close(lse.cpu().double(), lse_ref, rtol=1e-3, atol=1e-3)


def attention_bounds(query, k, v, workspace, block_tables, seq_lens, cu_q, cu_kv, max_q_len, max_kv_len):
    """The host bounds as arguments, as an engine passes each batch's max_seqlen_q / max_seqlen_k."""
    return ctxattn.trtllm_batch_context_with_kv_cache(
        query, (k, v), workspace, block_tables, seq_lens, max_q_len, max_kv_len, 0.125, 1.0,
        block_tables.shape[0], cu_q, cu_kv, return_lse=True,
    )


@pytest.mark.parametrize("device", DEVICES)
def test_compile_keeps_host_bounds_symbolic(device):
    """New max_q_len / max_kv_len values reuse a dynamic graph instead of recompiling it."""
    import torch._dynamo.testing

    torch._dynamo.reset()
    counter = torch._dynamo.testing.CompileCounter()
    compiled = torch.compile(attention_bounds, backend=counter, fullgraph=True, dynamic=True)
    case = small_case(device)
    k, v = case.kv_cache
    args = (case.query, k, v, case.workspace_buffer, case.block_tables, case.seq_lens, case.cum_seq_lens_q,
            case.cum_seq_lens_kv)
    want = attention_bounds(*args, 16, 64)
    for max_q_len, max_kv_len in [(16, 64), (9, 49), (12, 57), (30, 80)]:
        out, lse = compiled(*args, max_q_len, max_kv_len)
        assert torch.equal(out, want[0]) and torch.equal(lse, want[1])
    assert counter.frame_count == 1


def attention_only(query, k, v, workspace, block_tables, seq_lens, cu_q, cu_kv, bmm1, bmm2):
    """The call alone: inductor emits no kernel of its own (its C++ compile would cost ~20 s on CPU)."""
    return ctxattn.trtllm_batch_context_with_kv_cache(
        query, (k, v), workspace, block_tables, seq_lens, 16, 64, bmm1, bmm2, block_tables.shape[0],
        cu_q, cu_kv, return_lse=True,
    )


@pytest.mark.parametrize("device", DEVICES)
def test_compile_inductor(device):
    torch._dynamo.reset()
    case = small_case(device, seed=1)
    compiled = torch.compile(attention_only, fullgraph=True)
    out, lse = compiled(*case_inputs(case))
    o_ref, lse_ref = reference(case)
    torch.testing.assert_close(out.cpu().double(), o_ref, rtol=TOL_16BIT[0], atol=TOL_16BIT[1])
    torch.testing.assert_close(lse.cpu().double(), lse_ref, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("device", DEVICES)
def test_compile_tensor_scales_change_without_recompiling(device):
    torch._dynamo.reset()
    case = small_case(device, tensor_scales=True, seed=2)
    compiled = torch.compile(attention, backend="aot_eager", fullgraph=True)
    first, _ = compiled(*case_inputs(case))
    case.bmm2_scale.fill_(0.5)
    second, _ = compiled(*case_inputs(case))
    torch.testing.assert_close(second, first * 0.5, rtol=1e-2, atol=1e-2)
    o_ref, _ = reference(case)
    torch.testing.assert_close(second.cpu().double() / 2.0, o_ref, rtol=TOL_16BIT[0], atol=TOL_16BIT[1])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("given", [False, True])
def test_compile_nvfp4_output(device, given):
    """An FP4Tensor comes out of (and goes into) a fullgraph-compiled function."""
    torch._dynamo.reset()
    case = small_case(device, seed=3)
    num_tokens, num_heads, head_dim = case.query.shape
    out = None
    if given:
        out = ctxattn.FP4Tensor(
            torch.zeros(num_tokens, num_heads, head_dim // 2, dtype=torch.uint8, device=device),
            torch.zeros(256, 16, dtype=torch.uint8, device=device), 100)

    def fp4_attention(query, k, v, workspace, block_tables, seq_lens, cu_q, cu_kv, out):
        return ctxattn.trtllm_batch_context_with_kv_cache(
            query, (k, v), workspace, block_tables, seq_lens, 16, 64, 0.125, 1.0, 3, cu_q, cu_kv,
            out=out, out_dtype="nvfp4", o_sf_scale=2.0,
        )

    compiled = torch.compile(fp4_attention, backend="aot_eager", fullgraph=True)
    fp4 = compiled(*case_inputs(case)[:8], out)
    assert isinstance(fp4, ctxattn.FP4Tensor)
    if given:
        assert fp4 is out
    o_ref, _ = reference(case)
    check_nvfp4(fp4, o_ref, 2.0, query_rows(case))


def _op_args(case, out, out_scale=None, lse=None, tensor_scales=False, sinks=None, kv_sf=(None, None),
             shared_idx=True, skip=0.0):
    k, v = case.kv_cache
    device = case.query.device
    s1 = torch.tensor([0.125], device=device) if tensor_scales else None
    s2 = torch.tensor([1.0], device=device) if tensor_scales else None
    return (
        case.query, k, v, case.workspace_buffer, case.block_tables, case.seq_lens,
        case.cum_seq_lens_q, case.cum_seq_lens_kv, case.max_q_len, case.max_kv_len, case.batch_size,
        0.125, 1.0, s1, s2, -1, True, sinks, "HND", -1, out, out_scale, 0, 2.0 if out_scale is not None else 1.0,
        0, lse, kv_sf[0], kv_sf[1], shared_idx, skip,
    )


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("variant", ["dense", "lse-sinks-tensor-scales", "nvfp4"])
def test_opcheck(device, variant):
    case = small_case(device, seed=4)
    num_tokens, num_heads, head_dim = case.query.shape
    out = torch.empty_like(case.query)
    if variant == "dense":
        args = _op_args(case, out)
    elif variant == "nvfp4":
        data = torch.empty(num_tokens, num_heads, head_dim // 2, dtype=torch.uint8, device=device)
        # uint8 scales: opcheck compares tensors with ops float8 lacks on the CPU.
        scale = torch.empty(128, 16, dtype=torch.uint8, device=device)
        args = _op_args(case, data, out_scale=scale)
    else:
        lse = torch.empty(num_tokens, num_heads, device=device)
        sinks = torch.zeros(num_heads, device=device)
        args = _op_args(case, out, lse=lse, tensor_scales=True, sinks=sinks)
    results = torch.library.opcheck(OP, args)
    assert results and all(r == "SUCCESS" for r in results.values()), results


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("enable_pdl", [None, False, True])
def test_cuda_graph_replay_with_new_metadata_and_scales(enable_pdl):
    if not ctxattn.has_cuda():
        pytest.skip("this libctxattn was built without CUDA")
    first = make_case("cuda", q_lens=(5, 3, 9), prefix_lens=(3, 7, 40), tensor_scales=True, seed=5)
    # Same tokens and the same pool shape (6 pages used + 3 spare, 5 table columns), other
    # lengths, page order, contents and scales: replay reads them all from the captured tensors.
    second = make_case("cuda", q_lens=(5, 3, 9), prefix_lens=(50, 1, 2), tensor_scales=True, seed=6,
                       bmm2_scale=0.5)
    assert second.query.shape == first.query.shape
    assert second.kv_cache[0].shape == first.kv_cache[0].shape
    assert second.block_tables.shape == first.block_tables.shape
    # The captured launch is sized by the host bounds, so they must cover every replay (as an
    # engine captures with its largest lengths).
    first.max_kv_len = second.max_kv_len = max(first.max_kv_len, second.max_kv_len)
    first.max_q_len = second.max_q_len = max(first.max_q_len, second.max_q_len)

    def run(case):
        return ctxattn.trtllm_batch_context_with_kv_cache(
            *case.args(), **case.kwargs, enable_pdl=enable_pdl, return_lse=True)

    run(first)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, lse = run(first)
    graph.replay()
    torch.cuda.synchronize()
    o_ref, lse_ref = reference(first)
    torch.testing.assert_close(out.cpu().double(), o_ref, rtol=TOL_16BIT[0], atol=TOL_16BIT[1])

    for name in ("query", "block_tables", "seq_lens", "cum_seq_lens_q", "cum_seq_lens_kv", "bmm1_scale", "bmm2_scale"):
        getattr(first, name).copy_(getattr(second, name))
    first.kv_cache[0].copy_(second.kv_cache[0])
    first.kv_cache[1].copy_(second.kv_cache[1])
    graph.replay()
    torch.cuda.synchronize()
    o_ref, lse_ref = reference(second)
    torch.testing.assert_close(out.cpu().double(), o_ref, rtol=TOL_16BIT[0], atol=TOL_16BIT[1])
    torch.testing.assert_close(lse.cpu().double(), lse_ref, rtol=1e-3, atol=1e-3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_compile_reduce_overhead_cuda_graphs():
    """Inductor's CUDA-graph mode records the call once and replays it on later calls."""
    if not ctxattn.has_cuda():
        pytest.skip("this libctxattn was built without CUDA")
    torch._dynamo.reset()
    case = small_case("cuda", tensor_scales=True, seed=7)
    compiled = torch.compile(attention_only, mode="reduce-overhead", fullgraph=True)
    o_ref, lse_ref = reference(case)
    for _ in range(3):
        out, lse = compiled(*case_inputs(case))
        torch.testing.assert_close(out.cpu().double(), o_ref, rtol=TOL_16BIT[0], atol=TOL_16BIT[1])
        torch.testing.assert_close(lse.cpu().double(), lse_ref, rtol=1e-3, atol=1e-3)
