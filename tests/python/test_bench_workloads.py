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


def test_interleaved_rounds_take_the_median_of_per_round_ratios():
    """bench/runner.py with rounds > 1: each implementation is prepared once, timed once a round in
    a shuffled order, and ctxattn's vs_best is the median over the rounds of best / ours."""
    import dataclasses

    from bench.peer_base import Peer, Prepared
    from bench.runner import Runner, add_ratios

    calls = []
    # Per round: ours 100, 100, 300 us; the peer 110, 90, 330 (ratios 1.1, 0.9, 1.1 -> median 1.1,
    # against 1.0 from the medians of the times, 100 vs 110).
    script = {"ctxattn": iter([100.0, 100.0, 300.0]), "peer": iter([110.0, 90.0, 330.0])}

    class FakeTimer:
        def time(self, fn):
            name = fn()
            calls.append(name)

            @dataclasses.dataclass
            class T:
                median_us: float

            return T(next(script[name]))

    class Fake(Peer):
        device_types = ("cpu",)

        def __init__(self, name):
            self.name = name

        def prepare(self, inp, strategy="", check=False):
            return Prepared(run=lambda: self.name, result=None)

    peers = [Fake("ctxattn"), Fake("peer")]
    runner = Runner("cpu", peers, FakeTimer(), {}, check=False, rounds=3, log=lambda m: None)
    case = select_cases(cpu_suite(), ["short_256"], ["bf16"], [16])[0]
    rows = runner.run_rounds(case, inp=None, base={"gflop": 1.0})
    assert sorted(calls[:2]) == ["ctxattn", "peer"] and len(calls) == 6  # every peer once a round
    add_ratios(case, rows, {})
    ours, peer = rows
    assert ours["round_us"] == [100.0, 100.0, 300.0] and ours["median_us"] == 100.0 and peer["median_us"] == 110.0
    assert abs(ours["vs_best"] - 1.1) < 1e-12 and ours["vs_best_rounds"] == 3
