"""ctxattn as implementations under test (one per backend choice), and the list of
implementations for a device."""

import torch

from bench.peer_base import Peer, Prepared, Unsupported

# Scratch for ctxattn's scheduling metadata and split-KV partials: README.md (Python section) says 128 MiB
# covers every call (a too-small workspace would be reported as the row's error).
WORKSPACE_BYTES = {"cuda": 128 * 2**20, "cpu": 128 * 2**20}


class Ctxattn(Peer):
    """ctxattn through its Python call, on the backend `backend` names: "auto" (the library's
    choice) or one forced with ctxattn.use_backend, so that a row is never labelled with a backend
    other than the one that ran. Every variant runs under use_backend, which also keeps a
    CTXATTN_BACKEND in the bench's environment from changing what "ctxattn" means."""

    paged = True

    def __init__(self, name="ctxattn", backend="auto", device_types=("cpu", "cuda"), default=True):
        self.name = name
        self.backend = backend
        self.device_types = device_types
        # False: left out unless --impl names it.
        self.default = default

    def available(self):
        try:
            import ctxattn
        except Exception as e:
            return f"ctxattn not importable: {type(e).__name__}: {e}"
        if "cuda" in self.device_types and "cpu" not in self.device_types:
            try:
                if not ctxattn.has_cuda():
                    return "the loaded libctxattn has no CUDA backends (or sees no device)"
            except Exception as e:
                return f"ctxattn: {type(e).__name__}: {e}"
        return None

    def prepare(self, inp, strategy="", check=False):
        import ctxattn

        case = inp.case
        w = inp.workload
        workspace = torch.zeros(WORKSPACE_BYTES[inp.device.type], dtype=torch.uint8, device=inp.device)
        kwargs = dict(window_left=inp.window_left, sinks=inp.sinks, kv_layout="HND")
        if case.out_dtype == "nvfp4":
            kwargs.update(out_dtype="nvfp4", o_sf_scale=inp.o_sf_scale)
        else:
            kwargs["out"] = torch.empty(inp.query.shape, dtype=inp.out_torch_dtype, device=inp.device)
        kv_cache, tables, scales = inp.kv_cache, inp.block_tables, inp.kv_cache_sf
        if w.kv_form == "trtllm_pool":
            # [P, 2, ...] read as 2P pages (K page p at 2p, V at 2p + 1), passed as K's and V's
            # pool, with a [B, 2, M] table: the same bytes, no copy.
            kv_cache = kv_cache.reshape(-1, *kv_cache.shape[2:])
            kv_cache = (kv_cache, kv_cache)
            tables = torch.stack([2 * tables, 2 * tables + 1], dim=1)
            kwargs["uses_shared_paged_kv_idx"] = False
            if scales is not None:
                scales = scales.reshape(-1, *scales.shape[2:])
                scales = (scales, scales)
        if scales is not None:
            kwargs["kv_cache_sf"] = scales
        k_global, v_global = inp.kv_global_scales  # NVFP4: folded into the scales, as engines do
        args = (inp.query, kv_cache, workspace, tables, inp.seq_lens, inp.max_q_len,
                inp.max_kv_len, inp.bmm1_scale * k_global, inp.bmm2_scale * v_global, w.batch_size,
                inp.cum_seq_lens_q, inp.cum_seq_lens_kv)
        call = ctxattn.trtllm_batch_context_with_kv_cache
        backend = self.backend
        with ctxattn.use_backend(backend):
            try:
                chosen = ctxattn.selected_backend(*args, **kwargs)
            except NotImplementedError as e:
                # The forced backend cannot serve this case: the library's reason, not an error row.
                raise Unsupported(str(e)) from None
        if backend != "auto" and chosen != backend:
            raise RuntimeError(f"asked for backend {backend}, the library would run {chosen}: the row "
                               "would be mislabelled")

        def run():
            with ctxattn.use_backend(backend):
                return call(*args, **kwargs)

        return Prepared(run, lambda o: o, f"auto: {chosen}" if backend == "auto" else "", True)


def ctxattn_variants():
    """ctxattn as separate implementations, one per backend choice (docs/benchmarks.md)."""
    return [
        Ctxattn(),
        Ctxattn("ctxattn_portable", "cuda_portable", ("cuda",)),
        Ctxattn("ctxattn_sm90", "cuda_sm90", ("cuda",)),
        Ctxattn("ctxattn_reference", "cpu_reference", ("cpu",), default=False),
    ]


def make_peers(device_type, names=None):
    """The ctxattn variants first, then the peers that run on `device_type`; `names` (None: every
    default one) selects by name, in the default order."""
    from bench.peers_torch import cpu_peers, cuda_peers

    if device_type == "cuda":
        from bench.peers_external import external_peers

        others = external_peers() + cuda_peers()
    else:
        others = cpu_peers()
    peers = [p for p in ctxattn_variants() if device_type in p.device_types] + others
    if names:
        known = {p.name for p in peers}
        unknown = set(names) - known
        if unknown:
            raise ValueError(f"unknown implementation(s) {sorted(unknown)} for {device_type}; "
                             f"known: {', '.join(p.name for p in peers)}")
        return [p for p in peers if p.name in names]
    return [p for p in peers if getattr(p, "default", True)]


def all_peer_names():
    """Every implementation name, for --help ([brackets]: only when --impl names it)."""
    return {"cuda": "ctxattn, ctxattn_portable, ctxattn_sm90, fa3, flashinfer_fa3, fmha_v2, cudnn_paged, "
                    "cudnn_sdpa, "
                    "cudnn_varlen, fa2, flex",
            "cpu": "ctxattn, [ctxattn_reference], torch_sdpa, torch_sdpa_fp32"}
