"""ctxattn as an implementation under test, and the list of implementations for a device."""

import torch

from bench.peer_base import Peer, Prepared

# Scratch for ctxattn's scheduling metadata and split-KV partials: README.md (Python section) says 128 MiB
# covers every call (a too-small workspace would be reported as the row's error).
WORKSPACE_BYTES = {"cuda": 128 * 2**20, "cpu": 128 * 2**20}


class Ctxattn(Peer):
    name = "ctxattn"
    paged = True
    device_types = ("cpu", "cuda")

    def available(self):
        try:
            import ctxattn  # noqa: F401
        except Exception as e:
            return f"ctxattn not importable: {type(e).__name__}: {e}"
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
        args = (inp.query, inp.kv_cache, workspace, inp.block_tables, inp.seq_lens, inp.max_q_len,
                inp.max_kv_len, inp.bmm1_scale, inp.bmm2_scale, w.batch_size, inp.cum_seq_lens_q,
                inp.cum_seq_lens_kv)
        call = ctxattn.trtllm_batch_context_with_kv_cache

        def run():
            return call(*args, **kwargs)

        return Prepared(run, lambda o: o, "", True)


def make_peers(device_type, names=None):
    """ctxattn first, then the peers that run on `device_type`, filtered by `names` (None: all)."""
    from bench.peers_torch import cpu_peers, cuda_peers

    if device_type == "cuda":
        from bench.peers_external import external_peers

        peers = [Ctxattn()] + external_peers() + cuda_peers()
    else:
        peers = [Ctxattn()] + cpu_peers()
    if names:
        known = {p.name for p in peers}
        unknown = set(names) - known
        if unknown:
            raise ValueError(f"unknown implementation(s) {sorted(unknown)} for {device_type}; "
                             f"known: {', '.join(p.name for p in peers)}")
        peers = [p for p in peers if p.name in names]
    return peers


def all_peer_names():
    """Every implementation name, for --help."""
    return {"cuda": "ctxattn, flashinfer_fa3, cudnn_paged, cudnn_sdpa, cudnn_varlen, fa2, flex",
            "cpu": "ctxattn, torch_sdpa, torch_sdpa_fp32"}
