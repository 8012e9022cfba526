"""The fmha_v2 benchmark peer (bench/peers_external.py) without a GPU: where it finds the modules
bench/build_fmha_v2.sh builds, how it reads their manifest, the reasons it gives when it cannot
run, how it hands the modules to FlashInfer in place of the JIT build, and the call it makes."""

import json
import os
import re
import sys
import types

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from bench import peers_external as ext  # noqa: E402
from bench.inputs import build, check_case  # noqa: E402
from bench.peer_base import Unsupported  # noqa: E402
from bench.workloads import Case, gpu_suite  # noqa: E402

LAYOUT = "Q_PAGED_KV_HND"


def _entry(in_dt, out_dt, head_dims=(64, 128, 256)):
    name = f"trtllm_fmha_v2_q_paged_kv_hnd_{in_dt}_{out_dt}"
    return dict(file=f"modules/{name}.so", name=name, input_layout=LAYOUT, input_dtype=in_dt,
                output_dtype=out_dt, head_dims=list(head_dims), skip_softmax=[False, True], softcap=False,
                softmax_stats=False, alibi=False, kernels=[])


def _write(folder, entries, create_files=True):
    os.makedirs(os.path.join(folder, "modules"), exist_ok=True)
    for e in entries:
        if create_files:
            open(os.path.join(folder, e["file"]), "wb").close()
    with open(os.path.join(folder, ext.FMHA_V2_MANIFEST), "w") as fh:
        json.dump(dict(flashinfer="0.7.2.post1", cudart="lib/libcudart.so.13", modules=entries), fh)
    return str(folder)


def test_modules_dir_prefers_the_environment_then_the_built_group_then_the_installed_one(tmp_path, monkeypatch):
    monkeypatch.setattr(ext, "_REPO_ROOT", str(tmp_path))
    monkeypatch.delenv("FMHA_V2_MODULES", raising=False)
    built, installed = tmp_path / ".whl" / "fmha", tmp_path / "bench-out" / "sites" / "fmha"
    assert ext.fmha_v2_modules_dir() == str(built)  # nothing anywhere: where the build puts it
    _write(installed, [_entry("bf16", "bf16")])
    assert ext.fmha_v2_modules_dir() == str(installed)
    _write(built, [_entry("bf16", "bf16")])
    assert ext.fmha_v2_modules_dir() == str(built)
    monkeypatch.setenv("FMHA_V2_MODULES", "elsewhere")
    assert ext.fmha_v2_modules_dir() == os.path.abspath("elsewhere")


def test_manifest_gives_each_dtype_pair_its_module(tmp_path):
    folder = _write(tmp_path, [_entry("bf16", "bf16"), _entry("e4m3", "bf16", (128,))])
    modules = ext.read_fmha_v2_manifest(folder)
    assert set(modules) == {("bf16", "bf16"), ("e4m3", "bf16")}
    e4m3 = modules["e4m3", "bf16"]
    assert e4m3["path"] == os.path.join(folder, "modules", "trtllm_fmha_v2_q_paged_kv_hnd_e4m3_bf16.so")
    assert e4m3["head_dims"] == (128,) and e4m3["skip_softmax"] == (False, True)


def test_manifest_problems_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="build_fmha_v2.sh"):
        ext.read_fmha_v2_manifest(str(tmp_path))
    _write(tmp_path / "a", [_entry("bf16", "bf16")], create_files=False)
    with pytest.raises(FileNotFoundError, match="trtllm_fmha_v2_q_paged_kv_hnd_bf16_bf16.so"):
        ext.read_fmha_v2_manifest(str(tmp_path / "a"))
    _write(tmp_path / "b", [dict(_entry("bf16", "bf16"), input_layout="PACKED_QKV")])
    with pytest.raises(ValueError, match="PACKED_QKV"):
        ext.read_fmha_v2_manifest(str(tmp_path / "b"))
    _write(tmp_path / "c", [])
    with pytest.raises(ValueError, match="no modules"):
        ext.read_fmha_v2_manifest(str(tmp_path / "c"))


def test_peer_says_why_it_cannot_run_without_modules(tmp_path):
    reason = ext.FmhaV2(modules_dir=str(tmp_path)).available()
    assert reason is not None and "fmha_v2.json" in reason and "build_fmha_v2.sh" in reason


def test_peer_is_a_default_cuda_peer():
    from bench.peers import all_peer_names, make_peers

    assert "fmha_v2" in [p.name for p in make_peers("cuda")]
    assert "fmha_v2" in all_peer_names()["cuda"]
    peer = ext.FmhaV2()
    assert peer.paged and peer.skip_softmax_factor is None


def test_prebuilt_modules_replace_the_jit_lookup():
    def jit(*args):
        raise AssertionError("the JIT build was asked for")

    prefill = types.SimpleNamespace(get_trtllm_fmha_v2_module=jit)
    bf16, e4m3 = object(), object()
    modules = {(LAYOUT, torch.bfloat16, torch.bfloat16): bf16, (LAYOUT, torch.float8_e4m3fn, torch.bfloat16): e4m3}
    ext.use_prebuilt_fmha_v2(prefill, modules)
    lookup = prefill.get_trtllm_fmha_v2_module
    # FlashInfer asks with the output dtype only for e4m3 queries.
    assert lookup(LAYOUT, torch.bfloat16, None) is bf16
    assert lookup(LAYOUT, torch.float8_e4m3fn, torch.bfloat16) is e4m3
    with pytest.raises(RuntimeError, match="no prebuilt FMHAv2 module"):
        lookup(LAYOUT, torch.float16, None)
    ext.use_prebuilt_fmha_v2(prefill, modules)
    assert prefill.get_trtllm_fmha_v2_module is lookup


def test_caller_makes_the_paged_causal_call_with_the_skip_factor():
    seen = []
    prefill = types.SimpleNamespace(trtllm_fmha_v2_prefill=lambda *a, **k: seen.append((a, k)) or "out")
    q, kv = torch.zeros(5, 4, 64), torch.zeros(3, 2, 2, 16, 64)
    tables = torch.zeros(2, 3, dtype=torch.int32)
    seq = torch.tensor([7, 9], dtype=torch.int32)
    cum = torch.tensor([0, 2, 5], dtype=torch.int32)
    call = ext.fmha_v2_caller(prefill, q, kv, tables, seq, 3, 9, 0.125, 1.0, cum, cum, out="o",
                              workspace="ws")
    assert call(None) == "out" and call(0.3) == "out"
    (args, kwargs), (_, skip) = seen
    assert args[0][0] is q and args[0][1] is kv
    assert args[1:] == (LAYOUT, "ws", seq, 3, 9, 0.125, 1.0, 2, cum, cum)
    assert kwargs == dict(block_tables=tables, out="o", mask_mode="causal", window_left=-1,
                          skip_softmax_threshold_scale_factor=0.0)
    assert skip["skip_softmax_threshold_scale_factor"] == 0.3


def test_prepare_refuses_what_the_modules_cannot_run(tmp_path):
    folder = _write(tmp_path, [_entry("bf16", "bf16")])
    suite = {(w.name, w.variant): w for w in gpu_suite()}
    inp = build(check_case(Case(suite["long_8k", ""], "bf16", 16)), "cpu", check=True, true_size=False)
    with pytest.raises(Unsupported, match="sm_90a"):
        ext.FmhaV2(modules_dir=folder).prepare(inp)


def _built_group():
    folder = os.path.join(os.path.dirname(__file__), "..", "..", ".whl", "fmha")
    return folder if os.path.isfile(os.path.join(folder, ext.FMHA_V2_MANIFEST)) else None


@pytest.mark.skipif(_built_group() is None, reason="no .whl/fmha (bench/build_fmha_v2.sh not run here)")
def test_built_modules_take_the_arguments_flashinfer_072_passes():
    tvm_ffi = pytest.importorskip("tvm_ffi")
    folder = os.path.abspath(_built_group())
    for (in_dt, out_dt), entry in ext.read_fmha_v2_manifest(folder).items():
        module = tvm_ffi.load_module(entry["path"])
        with pytest.raises(TypeError) as err:
            module.run()  # the message lists the signature
        params = re.findall(r"(\d+): ", str(err.value).split("run(", 1)[1].split(") ->")[0])
        # trtllm_fmha_v2_prefill (0.7.2) calls module.run with 26 arguments: q, k, v, o, workspace,
        # its size, block tables, page size, seq lens, cumulative q / kv lengths, layout, max q / kv
        # lengths, batch, mask, softmax / bmm1 / bmm2 scales, window, chunk, ALiBi, softcap,
        # skip-softmax factor, softmax stats, sinks.
        assert len(params) == 26, (in_dt, out_dt, str(err.value))
