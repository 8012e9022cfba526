"""ctxattn as transformers' paged attention: greedy `generate_batch` with `paged|ctxattn` against
transformers' own paged paths, on small random-weight models (no downloads).

Two models: a Llama-style GQA model (reference: `paged|sdpa`) and a gpt-oss model, whose layers
alternate between a sliding window and full attention and whose every head has a sink (reference:
`paged|eager`; gpt-oss has no SDPA path, and transformers' paged SDPA function ignores sinks).
Each run mixes eight prompt lengths from 1 to 90 tokens, a batch-token budget that splits the long
prompts into chunks, and decode steps in the same batches.

Greedy decoding on bf16 logits can flip between two tokens whose logits tie to within rounding.
Where the tokens differ, the test re-computes that step's logits with both implementations (the
common prefix as one request) and accepts the difference only if those logits agree within
LOGIT_ATOL and the two chosen tokens are tied within LOGIT_ATOL; each such case is reported as a
warning naming the request and step, so a run says whether it found identical tokens or a near
tie. The CUDA cases (bf16) run the same checks and skip without a GPU.
"""

import subprocess
import sys
import warnings

import pytest
import torch

transformers = pytest.importorskip("transformers")

import ctxattn.integrations.transformers as cx  # noqa: E402
from attn_reference import DEVICES, _cuda_ready  # noqa: E402
from transformers import GenerationConfig, GptOssConfig, GptOssForCausalLM, LlamaConfig, LlamaForCausalLM  # noqa: E402
from transformers.generation.configuration_utils import ContinuousBatchingConfig  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

hf_logging.set_verbosity_error()

VOCAB = 512
PROMPT_LENGTHS = (5, 17, 33, 64, 1, 90, 40, 12)
NEW_TOKENS = 24
# Logits of these models spread with a standard deviation of about 1.1-1.5 and are computed in
# bf16 (one ulp is 1/32 around 4). transformers' own eager and SDPA paths differ by up to 0.13 on
# the same step; 0.25 is 8 bf16 ulps at the top logits.
LOGIT_ATOL = 0.25


def llama(device):
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=VOCAB, hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=8,
        num_key_value_heads=2, head_dim=64, max_position_embeddings=512, initializer_range=0.1,
    )
    return LlamaForCausalLM(config).to(device=device, dtype=torch.bfloat16).eval()


def gpt_oss(device):
    # Two experts, both routed to every token: a top-k router over more experts turns bf16
    # rounding in the hidden state into a different expert (seen here), which is no test of
    # attention. A window of 24 over blocks of 16 makes ctxattn's pages 8 tokens long.
    torch.manual_seed(0)
    config = GptOssConfig(
        vocab_size=VOCAB, hidden_size=128, intermediate_size=128, num_hidden_layers=2, num_attention_heads=8,
        num_key_value_heads=2, head_dim=64, max_position_embeddings=512, num_local_experts=2,
        num_experts_per_tok=2, sliding_window=24, initializer_range=0.1,
    )
    model = GptOssForCausalLM(config).to(device=device, dtype=torch.bfloat16).eval()
    assert config.layer_types == ["sliding_attention", "full_attention"]
    return model


def prompts():
    generator = torch.Generator().manual_seed(1)
    return [torch.randint(0, VOCAB, (n,), generator=generator).tolist() for n in PROMPT_LENGTHS]


def cb_config(block_size=16, **extra):
    # On the CPU transformers sizes nothing by itself from the device: every size is given.
    return ContinuousBatchingConfig(block_size=block_size, num_blocks=96, max_batch_tokens=48, **extra)


def generate(model, implementation, inputs, max_new_tokens, config):
    model.set_attn_implementation(implementation)
    generation_config = GenerationConfig(
        max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=None, pad_token_id=0
    )
    results = model.generate_batch(inputs, generation_config=generation_config, continuous_batching_config=config)
    results = list(results.values())
    assert len(results) == len(inputs), f"{implementation}: {len(results)} of {len(inputs)} requests came back"
    for r in results:
        assert r.error is None, f"{implementation}: request {r.request_id} failed: {r.error}"
    return [r.generated_tokens for r in results]


def step_logits(model, implementation, prefix, config):
    """The logits that follow `prefix`, computed as one request through `implementation`."""
    captured = []
    hook = model.lm_head.register_forward_hook(lambda module, args, output: captured.append(output.detach()))
    try:
        generate(model, implementation, [prefix], 1, config)
    finally:
        hook.remove()
    return captured[-1][0, -1].float().cpu()


def assert_same_greedy(model, reference, block_size=16, **extra):
    """Greedy tokens of paged|ctxattn equal `reference`'s, except at verified near ties."""
    inputs = prompts()
    expected = generate(model, reference, inputs, NEW_TOKENS, cb_config(block_size, **extra))
    got = generate(model, cx.ATTN_IMPLEMENTATION, inputs, NEW_TOKENS, cb_config(block_size, **extra))
    near_ties = []
    for request, (want, have) in enumerate(zip(expected, got)):
        assert len(have) == len(want) == NEW_TOKENS
        if have == want:
            continue
        step = next(i for i, (a, b) in enumerate(zip(want, have)) if a != b)
        prefix = inputs[request] + want[:step]
        ref_logits = step_logits(model, reference, prefix, cb_config(block_size))
        our_logits = step_logits(model, cx.ATTN_IMPLEMENTATION, prefix, cb_config(block_size))
        torch.testing.assert_close(our_logits, ref_logits, rtol=0, atol=LOGIT_ATOL, msg=lambda m: (
            f"request {request} (prompt of {len(inputs[request])}) first differs at step {step}; that step's "
            f"logits do not match {reference}'s: {m}"))
        tie = (ref_logits[want[step]] - ref_logits[have[step]]).abs().item()
        assert tie <= LOGIT_ATOL, (
            f"request {request} step {step}: {reference} picks {want[step]}, ctxattn {have[step]}, but their "
            f"logits are {tie:.3f} apart (more than a rounding tie)")
        near_ties.append(f"request {request} step {step}: tokens {want[step]} / {have[step]}, logits {tie:.4f} apart")
    if near_ties:
        warnings.warn(f"{reference} vs paged|ctxattn: identical except at near ties: " + "; ".join(near_ties))
    # Ties come at about 2% of the steps of these models; a whole run of them is no rounding.
    assert len(near_ties) < len(inputs), f"every request differs: {near_ties}"
    return near_ties


def assert_same_long_prefill(model, reference, block_size=16):
    """A 90-token prompt prefilled in chunks of 48: the last logits agree within LOGIT_ATOL."""
    prefix = prompts()[-1]
    ours = step_logits(model, cx.ATTN_IMPLEMENTATION, prefix, cb_config(block_size))
    theirs = step_logits(model, reference, prefix, cb_config(block_size))
    torch.testing.assert_close(ours, theirs, rtol=0, atol=LOGIT_ATOL)


@pytest.fixture
def count_paths(monkeypatch):
    """Counts, per path, the attention calls of sliding and full layers (in place or gathered)."""
    counts = {"in_place": 0, "in_place_sliding": 0, "gathered": 0}
    in_place, gathered = cx._in_place_tables, cx._gathered_tables

    def counting_in_place(*args):
        counts["in_place"] += 1
        counts["in_place_sliding"] += int(args[-1])
        return in_place(*args)

    def counting_gathered(*args):
        counts["gathered"] += 1
        return gathered(*args)

    monkeypatch.setattr(cx, "_in_place_tables", counting_in_place)
    monkeypatch.setattr(cx, "_gathered_tables", counting_gathered)
    return counts


def test_registered():
    from transformers import AttentionInterface

    assert cx.ATTN_IMPLEMENTATION == "paged|ctxattn"
    assert AttentionInterface._global_mapping[cx.ATTN_IMPLEMENTATION] is cx.paged_attention_forward
    assert cx.register() == "paged|ctxattn"


def test_core_package_does_not_import_transformers():
    code = "import sys, ctxattn, ctxattn.integrations; assert 'transformers' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_from_config_accepts_the_name():
    config = LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2)
    model = LlamaForCausalLM._from_config(config, attn_implementation="paged|ctxattn")
    assert model.config._attn_implementation == "paged|ctxattn"


def test_errors_outside_continuous_batching():
    model = llama("cpu")
    attention = model.model.layers[0].self_attn
    q = torch.zeros(1, 8, 3, 64, dtype=torch.bfloat16)
    kv = torch.zeros(1, 2, 3, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="paged cache"):
        cx.paged_attention_forward(attention, q, kv, kv, None, scaling=1.0)
    with pytest.raises(TypeError, match="float16 or bfloat16"):
        cx.paged_attention_forward(attention, q.float(), kv.float(), kv.float(), None, cache=object())
    with pytest.raises(NotImplementedError, match="softcap"):
        cx.paged_attention_forward(attention, q, kv, kv, None, cache=object(), softcap=50.0)
    with pytest.raises(NotImplementedError, match="one head dim"):
        cx.paged_attention_forward(attention, q, kv, kv[..., :32], None, cache=object())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("block_size", [16, 48])
def test_llama_gqa_matches_paged_sdpa(device, block_size, count_paths):
    model = llama(device)
    passes = []
    model.model.layers[0].self_attn.register_forward_hook(lambda *args: passes.append(None))
    assert_same_greedy(model, "paged|sdpa", block_size)
    assert_same_long_prefill(model, "paged|sdpa", block_size)
    # Both layers are one layer group: their block tables are computed once per ctxattn forward.
    passes.clear()
    count_paths["in_place"] = 0
    generate(model, cx.ATTN_IMPLEMENTATION, prompts(), 4, cb_config(block_size))
    assert count_paths["in_place"] == len(passes) > 0 and count_paths["gathered"] == 0


@pytest.mark.parametrize("device", DEVICES)
def test_gpt_oss_window_and_sinks_match_paged_eager(device, count_paths):
    model = gpt_oss(device)
    assert_same_greedy(model, "paged|eager")
    assert_same_long_prefill(model, "paged|eager")
    # Sliding layers ran in place (decode steps, chunks inside the window) and gathered (chunks
    # that wrap the rolling buffer).
    assert count_paths["in_place_sliding"] > 0 and count_paths["gathered"] > 0


@pytest.mark.skipif(not _cuda_ready(), reason="needs a CUDA device and a libctxattn built with CUDA")
@pytest.mark.parametrize("make_model,reference", [(llama, "paged|sdpa"), (gpt_oss, "paged|eager")],
                         ids=["llama", "gpt_oss"])
def test_cuda_graphs_match(make_model, reference):
    # CUDA graphs pad the batch (padding tokens, empty requests, padded index lists) and replay
    # the captured ctxattn call with the next batch's lengths and tables.
    model = make_model("cuda")
    assert_same_greedy(model, reference, use_cuda_graph=True)


def test_compiled_forward_keeps_one_graph_across_batches():
    """Continuous batching's compiled forward (dynamic shapes) runs ctxattn without a recompile per
    batch: the call keeps max_q_len / max_kv_len symbolic, so only the first batch's workspace setup
    adds a second frame, and the tokens equal the uncompiled run's."""
    from torch._dynamo.utils import counters
    from transformers.generation.configuration_utils import CompileConfig

    model = llama("cpu")
    inputs = prompts()
    expected = generate(model, cx.ATTN_IMPLEMENTATION, inputs, 8, cb_config())
    torch._dynamo.reset()
    counters.clear()
    compile_config = CompileConfig(backend="aot_eager", dynamic=True, fullgraph=False)
    got = generate(model, cx.ATTN_IMPLEMENTATION, inputs, 8,
                   cb_config(varlen_compile_config=compile_config, decode_compile_config=compile_config))
    frames = counters["frames"]["total"]
    torch._dynamo.reset()
    assert got == expected
    assert 1 <= frames <= 2, f"{frames} frames compiled for one generation run (a recompile per batch?)"
