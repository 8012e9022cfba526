"""Peers from other packages: FlashInfer's batch prefill wrapper on its Hopper (fa3) backend,
TensorRT-LLM's FMHAv2 Hopper kernels through FlashInfer's `trtllm_fmha_v2_prefill` and cuDNN's
paged SDPA graph through the cuDNN frontend, all reading the same paged cache as ctxattn, and
FlashAttention-3's forward (fa3-fwd) on the same KV gathered into contiguous memory. A GPU machine
without network gets them from bench/fetch_wheels.sh, and FMHAv2's prebuilt modules from
bench/build_fmha_v2.sh.
"""

import ctypes
import importlib
import importlib.util
import json
import math
import os
import sys
import types

import torch

from bench.peer_base import Peer, Prepared, precision_note, require, run_dtype

FLASHINFER_WORKSPACE_BYTES = 256 * 2**20


def import_flashinfer_prefill():
    """flashinfer.prefill, through the package __init__ when it imports, else without it.

    The package __init__ imports every operator family, some of which need packages a benchmark
    machine may lack (the CUTLASS DSL); the prefill module itself does not. Without the __init__,
    a bare package module with the right search path stands in for it.
    """
    try:
        return importlib.import_module("flashinfer.prefill")
    except ImportError as first:
        spec = importlib.util.find_spec("flashinfer")
        if spec is None or not spec.submodule_search_locations:
            raise
        for name in [m for m in sys.modules if m == "flashinfer" or m.startswith("flashinfer.")]:
            del sys.modules[name]
        package = types.ModuleType("flashinfer")
        package.__path__ = list(spec.submodule_search_locations)
        package.__spec__ = spec
        sys.modules["flashinfer"] = package
        try:
            return importlib.import_module("flashinfer.prefill")
        except ImportError as second:
            raise ImportError(f"{first}; without the package __init__: {second}") from second


def _paged_metadata(inp):
    """FlashInfer's page metadata (indptr, indices, last-page lengths) for the case's block table."""
    page = inp.case.page_size
    counts = [math.ceil(n / page) for n in inp.kv_lens]
    tables = inp.block_tables.cpu()
    indices = torch.cat([tables[b, :n] for b, n in enumerate(counts)]).to(torch.int32)
    indptr = torch.tensor([0] + list(_running(counts)), dtype=torch.int32)
    last = torch.tensor([(n - 1) % page + 1 for n in inp.kv_lens], dtype=torch.int32)
    dev = inp.device
    return indptr.to(dev), indices.to(dev), last.to(dev)


def _running(values):
    acc = 0
    for v in values:
        acc += v
        yield acc


class FlashInferFa3(Peer):
    name = "flashinfer_fa3"
    paged = True

    def available(self):
        try:
            import_flashinfer_prefill()
        except Exception as e:  # any import failure is a reason to report, not to stop the run
            return f"flashinfer not importable: {type(e).__name__}: {e}"
        return None

    def prepare(self, inp, strategy="", check=False):
        prefill = import_flashinfer_prefill()
        w, case = inp.workload, inp.case
        require(case.kv_dtype != "nvfp4", "this wrapper's fa3 backend reads no NVFP4 cache")
        out_dtype = run_dtype(inp)
        indptr, indices, last = _paged_metadata(inp)
        workspace = torch.zeros(FLASHINFER_WORKSPACE_BYTES, dtype=torch.uint8, device=inp.device)
        wrapper = prefill.BatchPrefillWithPagedKVCacheWrapper(workspace, kv_layout="HND", backend="fa3")
        wrapper.plan(inp.cum_seq_lens_q, indptr, indices, last, w.num_qo_heads, w.num_kv_heads,
                     w.head_dim, case.page_size, causal=True, sm_scale=inp.bmm1_scale,
                     window_left=inp.window_left, q_data_type=inp.query.dtype,
                     kv_data_type=inp.kv_cache.dtype, o_data_type=out_dtype)
        out = torch.empty(inp.query.shape, dtype=out_dtype, device=inp.device)
        kwargs = {}
        if inp.sinks is not None:
            kwargs["sinks"] = inp.sinks
        if case.in_dtype == "fp8":
            kwargs.update(q_scale=1.0)
        if case.kv_dtype == "fp8":
            kwargs.update(k_scale=1.0, v_scale=1.0)
        q, kv = inp.query, inp.kv_cache

        def run():
            return wrapper.run(q, kv, out=out, **kwargs)

        run()
        exact = case.out_dtype != "nvfp4"
        return Prepared(run, lambda o: o, "" if exact else f"{case.dtype} out", exact)


class CudnnPaged(Peer):
    """cuDNN SDPA graph: ragged Q/O, K/V read through page tables, bottom-right causal band."""

    name = "cudnn_paged"
    paged = True

    def available(self):
        try:
            import cudnn  # noqa: F401  (torch is imported first, so torch's cuDNN library is used)
        except Exception as e:
            return f"cudnn frontend not importable: {type(e).__name__}: {e}"
        return None

    def strategies(self, case):
        # The band's left bound counts the diagonal in some versions and not in others; the
        # check (with a narrow window) tells which one reproduces window_left.
        return ("left_bound=W+1", "left_bound=W") if case.workload.window_left >= 0 else ("",)

    def prepare(self, inp, strategy="", check=False):
        import cudnn

        w, case = inp.workload, inp.case
        dtype = run_dtype(inp)
        require(dtype in (torch.bfloat16, torch.float16), f"cuDNN paged SDPA takes no {dtype}")
        require(case.kv_dtype != "nvfp4", "cuDNN paged SDPA reads no NVFP4 cache")
        exact = not case.fp8_inputs and case.out_dtype != "nvfp4"
        q, kv = inp.query, inp.kv_cache
        if q.dtype != dtype:
            q = q.to(dtype)
        if kv.dtype != dtype:
            kv = kv.to(dtype)
        io = cudnn.data_type.BFLOAT16 if dtype == torch.bfloat16 else cudnn.data_type.HALF
        i32, f32 = cudnn.data_type.INT32, cudnn.data_type.FLOAT
        b, hq, d = w.batch_size, w.num_qo_heads, w.head_dim
        max_q = inp.max_q_len
        max_pages = inp.block_tables.shape[1]

        handle = cudnn.create_handle()
        cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream(inp.device).cuda_stream)
        g = cudnn.pygraph(io_data_type=io, intermediate_data_type=f32, compute_data_type=f32,
                          handle=handle)
        vec = [b + 1, 1, 1, 1]
        t_q_off = g.tensor(name="q_offsets", dim=vec, stride=[1, 1, 1, 1], data_type=i32)
        t_o_off = g.tensor(name="o_offsets", dim=vec, stride=[1, 1, 1, 1], data_type=i32)
        packed = [b, hq, max_q, d]
        packed_stride = [max_q * hq * d, d, hq * d, 1]
        t_q = g.tensor(name="q", dim=packed, stride=packed_stride, data_type=io, ragged_offset=t_q_off)
        k_pool, v_pool = kv[:, 0], kv[:, 1]
        t_k = g.tensor(name="k_pool", dim=list(k_pool.shape), stride=list(k_pool.stride()), data_type=io)
        t_v = g.tensor(name="v_pool", dim=list(v_pool.shape), stride=list(v_pool.stride()), data_type=io)
        lens = [b, 1, 1, 1]
        t_seq_q = g.tensor(name="seq_len_q", dim=lens, stride=[1, 1, 1, 1], data_type=i32)
        t_seq_kv = g.tensor(name="seq_len_kv", dim=lens, stride=[1, 1, 1, 1], data_type=i32)
        table = [b, 1, max_pages, 1]
        table_stride = [max_pages, max_pages, 1, 1]
        t_table_k = g.tensor(name="table_k", dim=table, stride=table_stride, data_type=i32)
        t_table_v = g.tensor(name="table_v", dim=table, stride=table_stride, data_type=i32)
        kwargs = dict(
            name="sdpa", attn_scale=inp.bmm1_scale, generate_stats=False, use_padding_mask=True,
            seq_len_q=t_seq_q, seq_len_kv=t_seq_kv,
            diagonal_alignment=cudnn.diagonal_alignment.BOTTOM_RIGHT, diagonal_band_right_bound=0,
            paged_attention_k_table=t_table_k, paged_attention_v_table=t_table_v,
            paged_attention_max_seq_len_kv=max_pages * case.page_size)
        if inp.window_left >= 0:
            kwargs["diagonal_band_left_bound"] = inp.window_left + (1 if strategy == "left_bound=W+1" else 0)
        bindings = {}
        if inp.sinks is not None:
            t_sink = g.tensor(name="sink", dim=[1, hq, 1, 1], stride=[hq, 1, 1, 1], data_type=f32)
            kwargs["sink_token"] = t_sink
            bindings[t_sink] = inp.sinks.view(1, hq, 1, 1)
        produced = g.sdpa(q=t_q, k=t_k, v=t_v, **kwargs)
        t_o = produced[0] if isinstance(produced, (list, tuple)) else produced
        t_o.set_output(True).set_dim(packed).set_stride(packed_stride).set_data_type(io)
        t_o.set_ragged_offset(t_o_off)
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        g.check_support()
        g.build_plans()

        offsets = (inp.cum_seq_lens_q * (hq * d)).to(torch.int32).view(vec)
        seq_q = (inp.cum_seq_lens_q[1:] - inp.cum_seq_lens_q[:-1]).to(torch.int32).view(lens)
        tables = inp.block_tables.contiguous().view(table)
        out = torch.empty(q.shape, dtype=dtype, device=inp.device)
        workspace = torch.empty(max(1, g.get_workspace_size()), dtype=torch.uint8, device=inp.device)
        bindings.update({t_q: q, t_q_off: offsets, t_k: k_pool, t_v: v_pool, t_seq_q: seq_q,
                         t_seq_kv: inp.seq_lens.view(lens), t_table_k: tables, t_table_v: tables,
                         t_o: out, t_o_off: offsets})

        def run():
            g.execute(bindings, workspace, handle=handle)
            return out

        run()
        notes = [precision_note(exact, dtype) if case.fp8_inputs else "",
                 f"{case.dtype} out" if case.out_dtype == "nvfp4" else ""]
        return Prepared(run, lambda o: o, "; ".join(n for n in notes if n), exact)


class FlashAttn3(Peer):
    """FlashAttention-3's forward from PyPI `fa3-fwd` (module fa3_fwd_interface), varlen, on KV
    gathered into contiguous [tokens, kv_heads, head_dim] tensors before timing (this build reads
    no pages): a no-paging upper bound, like the torch peers.

    The build has bf16 and e4m3 kernels for head dims 64-256 (96 and 192 too), native GQA and a
    bottom-right causal mask; it was built without fp16, sliding windows (local attention) and
    paging, and it has no attention sinks. num_splits=0 lets its own heuristic split the KV axis
    when the tiles would not fill the GPU (chunk_long_tp8), pack_gqa=None its own choice of
    packing query heads. e4m3 inputs get unit descale factors, as FlashInfer gets unit q/k/v
    scales: the case's bmm1_scale is the softmax scale, and the output is bf16.
    """

    name = "fa3"
    HEAD_DIMS = (64, 96, 128, 192, 256)

    def available(self):
        try:
            import fa3_fwd_interface  # noqa: F401  (loads its kernels into torch.ops.fa3_fwd)
        except Exception as e:
            return f"fa3-fwd not importable: {type(e).__name__}: {e}"
        return None

    def prepare(self, inp, strategy="", check=False):
        from fa3_fwd_interface import flash_attn_varlen_func

        w, case = inp.workload, inp.case
        require(inp.sinks is None, "this FA3 build has no attention sinks")
        require(inp.window_left < 0, "this FA3 build has no sliding window (built without local attention)")
        require(case.dtype == "bf16", "this FA3 build has no fp16 kernels")
        require(w.head_dim in self.HEAD_DIMS, f"FA3 takes head dims {self.HEAD_DIMS}, got {w.head_dim}")
        q = inp.query
        k, v = inp.gathered()
        kwargs = {}
        widened = case.kv_dtype != case.in_dtype  # Q and K/V of one dtype: an e4m3 cache is widened
        if widened:
            k, v = k.to(q.dtype), v.to(q.dtype)
        if case.in_dtype == "fp8":
            unit = torch.ones(w.batch_size, w.num_kv_heads, dtype=torch.float32, device=inp.device)
            kwargs.update(q_descale=unit, k_descale=unit, v_descale=unit)
        cu_q, cu_k = inp.cum_seq_lens_q, inp.cum_seq_lens_kv
        max_q, max_k, scale = inp.max_q_len, inp.max_kv_len, inp.bmm1_scale

        def run():
            return flash_attn_varlen_func(q, k, v, cu_q, cu_k, max_q, max_k, softmax_scale=scale,
                                          causal=True, num_splits=0, pack_gqa=None, **kwargs)

        run()
        exact = case.out_dtype != "nvfp4" and not widened
        note = "gathered KV" + (f", {case.dtype} KV" if widened else "") + (
            f"; {case.dtype} out" if case.out_dtype == "nvfp4" else "")
        return Prepared(run, lambda o: o, note, exact)


FMHA_V2_MANIFEST = "fmha_v2.json"
FMHA_V2_LAYOUT = "Q_PAGED_KV_HND"
FMHA_V2_WORKSPACE_BYTES = 32 * 2**20
# The manifest's dtype names (FlashInfer's) and the harness's.
FMHA_V2_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "e4m3": torch.float8_e4m3fn}
HARNESS_TO_FMHA_V2 = {"bf16": "bf16", "fp16": "fp16", "fp8": "e4m3"}
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fmha_v2_modules_dir():
    """The folder of FMHAv2's prebuilt modules: $FMHA_V2_MODULES, else the first of .whl/fmha
    (bench/build_fmha_v2.sh's output) and bench-out/sites/fmha (where bench/gpu_run.sh installs
    it) at the repository root that holds a manifest, else .whl/fmha."""
    env = os.environ.get("FMHA_V2_MODULES")
    if env:
        return os.path.abspath(env)
    candidates = [os.path.join(_REPO_ROOT, ".whl", "fmha"), os.path.join(_REPO_ROOT, "bench-out", "sites", "fmha")]
    for folder in candidates:
        if os.path.isfile(os.path.join(folder, FMHA_V2_MANIFEST)):
            return folder
    return candidates[0]


def read_fmha_v2_manifest(folder):
    """bench/build_fmha_v2.sh's manifest in `folder` as {(input dtype, output dtype): entry}, with
    FlashInfer's dtype names ("bf16", "fp16", "e4m3"), each entry's "path" made absolute and its
    "head_dims" and "skip_softmax" as tuples.

    Raises FileNotFoundError when the manifest or a module it lists is missing, ValueError when it
    lists no module or one that is not a Q_PAGED_KV_HND module of known dtypes."""
    path = os.path.join(folder, FMHA_V2_MANIFEST)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no {FMHA_V2_MANIFEST} in {folder} (run bench/build_fmha_v2.sh and carry "
                                ".whl/fmha, or set FMHA_V2_MODULES)")
    with open(path) as fh:
        manifest = json.load(fh)
    modules = {}
    for entry in manifest.get("modules", []):
        if entry.get("input_layout") != FMHA_V2_LAYOUT:
            raise ValueError(f"{path}: module {entry.get('name')} is for layout {entry.get('input_layout')}, "
                             f"not {FMHA_V2_LAYOUT}")
        pair = (entry["input_dtype"], entry["output_dtype"])
        if not set(pair) <= set(FMHA_V2_DTYPES):
            raise ValueError(f"{path}: unknown dtypes {pair}")
        module_path = os.path.join(folder, entry["file"])
        if not os.path.isfile(module_path):
            raise FileNotFoundError(f"{path} lists {entry['file']}, which is not in {folder}")
        modules[pair] = dict(entry, path=module_path, head_dims=tuple(entry["head_dims"]),
                             skip_softmax=tuple(entry["skip_softmax"]))
    if not modules:
        raise ValueError(f"{path} lists no modules")
    return modules


_fmha_v2_loaded = {}


def load_fmha_v2_modules(folder):
    """{(layout, input torch dtype, output torch dtype): loaded module} for the manifest in
    `folder`, loaded once per process with tvm_ffi. The modules name the CUDA runtime they were
    linked against (libcudart.so.13 with CUDA 13); torch has usually loaded it already, else the
    copy the manifest lists (lib/) is loaded first."""
    if folder in _fmha_v2_loaded:
        return _fmha_v2_loaded[folder]
    import tvm_ffi

    with open(os.path.join(folder, FMHA_V2_MANIFEST)) as fh:
        cudart = json.load(fh).get("cudart")
    loaded = {}
    for (in_dt, out_dt), entry in read_fmha_v2_manifest(folder).items():
        try:
            module = tvm_ffi.load_module(entry["path"])
        except Exception as e:
            if not cudart or "libcudart" not in str(e):
                raise
            ctypes.CDLL(os.path.join(folder, cudart), mode=ctypes.RTLD_GLOBAL)
            module = tvm_ffi.load_module(entry["path"])
        loaded[(FMHA_V2_LAYOUT, FMHA_V2_DTYPES[in_dt], FMHA_V2_DTYPES[out_dt])] = module
    _fmha_v2_loaded[folder] = loaded
    return loaded


def use_prebuilt_fmha_v2(prefill, modules):
    """Makes `prefill.get_trtllm_fmha_v2_module` (FlashInfer's cached JIT build, which
    trtllm_fmha_v2_prefill looks up at each call) return the prebuilt `modules`, in this process
    only. FlashInfer asks for (layout, query dtype, None) with 16-bit queries and (layout, e4m3,
    output dtype) with e4m3 ones; a pair that was not built raises instead of compiling."""
    current = prefill.get_trtllm_fmha_v2_module
    if getattr(current, "prebuilt_modules", None) is modules:
        return

    def get_prebuilt_module(input_layout, input_dtype, output_dtype=None):
        key = (input_layout.upper(), input_dtype, output_dtype if output_dtype is not None else input_dtype)
        if key not in modules:
            raise RuntimeError(f"no prebuilt FMHAv2 module for {key}; built: {sorted(map(str, modules))} "
                               "(bench/build_fmha_v2.sh, FMHA_V2_DTYPES)")
        return modules[key]

    get_prebuilt_module.prebuilt_modules = modules
    prefill.get_trtllm_fmha_v2_module = get_prebuilt_module


def fmha_v2_caller(prefill, query, kv_cache, block_tables, seq_lens, max_q_len, max_kv_len, bmm1_scale,
                   bmm2_scale, cum_seq_lens_q, cum_seq_lens_kv, out, window_left=-1, sinks=None,
                   workspace=None):
    """call(factor) running FMHAv2 bottom-right causal on a paged HND cache: [P, 2, Hkv, N, D]
    with a [B, M] table, or a (k_cache, v_cache) pair of views of one allocation with a [B, 2, M]
    table of block offsets from k_cache's start. factor None or 0 is dense, else skip-softmax's
    threshold scale factor (a key tile is skipped where exp(tile max - running max) < factor /
    kv_len, as in ctxattn). The workspace must start zeroed (the kernels' tile counter lives
    there and is left at zero after each call)."""
    if workspace is None:
        workspace = torch.zeros(FMHA_V2_WORKSPACE_BYTES, dtype=torch.uint8, device=query.device)
    batch = block_tables.shape[0]
    kwargs = dict(block_tables=block_tables, out=out, mask_mode="causal", window_left=window_left)
    if sinks is not None:
        kwargs["sinks"] = sinks

    def call(factor=None):
        return prefill.trtllm_fmha_v2_prefill(
            (query, kv_cache), FMHA_V2_LAYOUT, workspace, seq_lens, max_q_len, max_kv_len, bmm1_scale,
            bmm2_scale, batch, cum_seq_lens_q, cum_seq_lens_kv,
            skip_softmax_threshold_scale_factor=float(factor or 0.0), **kwargs)

    return call


def fmha_v2_unavailable(folder=None):
    """None when FMHAv2 can run in this process (the prebuilt modules of `folder`, else of
    fmha_v2_modules_dir(), tvm_ffi and FlashInfer's prefill module), else the reason."""
    folder = folder or fmha_v2_modules_dir()
    try:
        read_fmha_v2_manifest(folder)
    except Exception as e:
        return f"FMHAv2 modules: {type(e).__name__}: {e}"
    try:
        import tvm_ffi  # noqa: F401
    except Exception as e:
        return f"tvm_ffi not importable: {type(e).__name__}: {e}"
    try:
        prefill = import_flashinfer_prefill()
    except Exception as e:
        return f"flashinfer not importable: {type(e).__name__}: {e}"
    if not hasattr(prefill, "trtllm_fmha_v2_prefill") or not hasattr(prefill, "get_trtllm_fmha_v2_module"):
        return "this flashinfer has no trtllm_fmha_v2_prefill / get_trtllm_fmha_v2_module (0.7.2 has both)"
    return None


class FmhaV2(Peer):
    """TensorRT-LLM's FMHAv2 (the open warp-specialised sm90 context kernels) through FlashInfer's
    `trtllm_fmha_v2_prefill(qkv=(query, paged_kv), input_layout="Q_PAGED_KV_HND", ...)` on the
    case's own paged cache and block table, bottom-right causal (`mask_mode="causal"`), with the
    case's bmm1 / bmm2 scales, sinks and window. The modules are bench/build_fmha_v2.sh's, loaded
    with tvm_ffi and handed to FlashInfer in place of its JIT build: they hold the head dims and
    dtype pairs their manifest lists, without softcap, softmax stats and ALiBi, with and without
    skip-softmax. Q and KV take one dtype (bf16, fp16 or e4m3), e4m3 with a 16-bit output.
    `skip_softmax_factor` (None: dense) is skip-softmax's threshold scale factor.
    """

    name = "fmha_v2"
    paged = True

    def __init__(self, name="fmha_v2", skip_softmax_factor=None, modules_dir=None):
        self.name = name
        self.skip_softmax_factor = skip_softmax_factor
        self.modules_dir = modules_dir

    def folder(self):
        return self.modules_dir or fmha_v2_modules_dir()

    def available(self):
        return fmha_v2_unavailable(self.folder())

    def prepare(self, inp, strategy="", check=False):
        w, case = inp.workload, inp.case
        require(inp.device.type == "cuda" and torch.cuda.get_device_capability(inp.device) == (9, 0),
                "the FMHAv2 modules are built for sm_90a (H100 / H200) only")
        require(case.kv_dtype != "nvfp4", "FMHAv2 reads no NVFP4 cache")
        require(case.out_dtype != "nvfp4", "FMHAv2 writes no nvfp4 output")
        require(case.kv_dtype == case.in_dtype, "FMHAv2 takes Q and KV of one dtype")
        page = case.page_size
        require(page & (page - 1) == 0, f"FMHAv2 takes power-of-two page sizes, got {page}")
        require(inp.window_left != 0, "FMHAv2 reads window_left 0 as no window")
        in_dt, out_dt = HARNESS_TO_FMHA_V2[case.in_dtype], HARNESS_TO_FMHA_V2[case.dtype]
        folder = self.folder()
        entry = read_fmha_v2_manifest(folder).get((in_dt, out_dt))
        require(entry is not None, f"no FMHAv2 module for {in_dt} -> {out_dt} in {folder} (FMHA_V2_DTYPES of "
                                   "bench/build_fmha_v2.sh)")
        require(w.head_dim in entry["head_dims"],
                f"the FMHAv2 modules hold head dims {entry['head_dims']}, not {w.head_dim}")
        factor = self.skip_softmax_factor
        require(not factor or True in entry["skip_softmax"], "the FMHAv2 modules hold no skip-softmax kernels")
        prefill = import_flashinfer_prefill()
        use_prebuilt_fmha_v2(prefill, load_fmha_v2_modules(folder))
        kv, tables = inp.kv_cache, inp.block_tables
        if w.kv_form == "trtllm_pool":
            # [P, 2, ...] read as 2P blocks (K page p at 2p, V at 2p + 1) with a [B, 2, M] table of
            # offsets from K's start: FMHAv2 takes that form as two equal views of one allocation,
            # V's starting one block after K's (it checks that), its offsets counted from K's start.
            flat = kv.reshape(-1, *kv.shape[2:])
            kv = (flat[:-1], flat[1:])
            tables = torch.stack([2 * tables, 2 * tables + 1], dim=1).contiguous()
        out = torch.empty(inp.query.shape, dtype=FMHA_V2_DTYPES[out_dt], device=inp.device)
        call = fmha_v2_caller(prefill, inp.query, kv, tables, inp.seq_lens, inp.max_q_len, inp.max_kv_len,
                              inp.bmm1_scale, inp.bmm2_scale, inp.cum_seq_lens_q, inp.cum_seq_lens_kv, out,
                              window_left=inp.window_left, sinks=inp.sinks)

        def run():
            return call(factor)

        run()
        note = f"skip-softmax f={factor:g}" if factor else ""
        # With a factor the output is not dense attention's: not a "best peer" of the dense rows.
        return Prepared(run, lambda o: o, note, not factor)


def external_peers():
    return [FlashAttn3(), FlashInferFa3(), FmhaV2(), CudnnPaged()]
