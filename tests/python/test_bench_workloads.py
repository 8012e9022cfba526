"""The benchmark harness's workload table (bench/workloads.py): stable, unique case ids, the
dtypes each precision gives the query and the cache, and exact FLOPs shared by the variants of one
shape."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from bench.workloads import attention_flops, cpu_suite, gpu_suite, select_cases  # noqa: E402


def _cases(suite):
    return select_cases(suite, None, ["bf16", "fp16"], None)


def test_case_ids_are_unique_within_a_run_dtype():
    # (nvfp4_out reads e4m3 and writes nvfp4 whatever the run's 16-bit dtype, so its id is the
    # same in a bf16 and an fp16 run.)
    for suite in (gpu_suite(), cpu_suite()):
        for dtype in ("bf16", "fp16"):
            ids = [c.id for c in select_cases(suite, None, [dtype], None)]
            assert len(ids) == len(set(ids))


def test_precisions_give_the_query_and_the_cache_their_dtypes():
    by_label = {}
    for c in _cases(gpu_suite()):
        by_label.setdefault(c.workload.label(), []).append(c)
    for c in by_label["fp8.long_8k"] + by_label["fp8.d256"] + by_label["nvfp4_out"]:
        assert (c.in_dtype, c.kv_dtype) == ("fp8", "fp8") and c.fp8_inputs
    for c in by_label["fp8_kv.long_8k"] + by_label["fp8_kv.batch_1k"]:
        assert (c.in_dtype, c.kv_dtype, c.out_dtype) == (c.dtype, "fp8", c.dtype) and c.fp8_inputs
        assert "+fp8kv" in c.id
    for c in by_label["long_8k"]:
        assert (c.in_dtype, c.kv_dtype) == (c.dtype, c.dtype) and not c.fp8_inputs
        assert "kv" not in c.id.split("/")[1]


def test_variants_of_one_shape_count_the_same_work():
    w = {x.label(): x for x in gpu_suite()}
    assert attention_flops(w["fp8.long_8k"]) == attention_flops(w["long_8k"]) == attention_flops(w["fp8_kv.long_8k"])
    assert attention_flops(w["fp8.d256"]) == attention_flops(w["d256"])
    assert attention_flops(w["fp8_kv.batch_1k"]) == attention_flops(w["batch_1k"])
    # d64 is d64_sinks' shape without sinks (the peers without sinks are timed on it).
    assert attention_flops(w["d64"]) == attention_flops(w["d64_sinks"])
    assert w["d64_sinks"].sinks and w["d64_sinks_swa"].sinks and not w["d64"].sinks
