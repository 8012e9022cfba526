"""Peers that ship with torch: dense scaled_dot_product_attention (CPU, and cuDNN on CUDA), the
varlen cuDNN and FlashAttention-2 ops, and compiled FlexAttention with a block mask. All of them
read KV gathered into contiguous memory (a no-paging upper bound for them).
"""

import torch
import torch.nn.functional as F

from bench.peer_base import Peer, Prepared, as_dtype, bottom_right_mask, precision_note, require, run_dtype


def _no_sinks(inp, who):
    require(inp.sinks is None, f"{who} has no attention sinks")


def _expand_heads(k, v, group):
    return k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)


class TorchDense(Peer):
    """torch.nn.functional.scaled_dot_product_attention on [B, H, L, D] views of the packed tensors.

    torch's is_causal is top-left aligned, which equals bottom-right only when q_len == kv_len;
    other cases (and windows) pass an explicit bottom-right boolean mask. A batch of unequal
    lengths is run as one call per request: on the CPU that is how it would be used; on CUDA only
    the check does it (the varlen peers cover ragged batches there).
    """

    def __init__(self, name, device_type, backend=None, fp32=False):
        self.name = name
        self.device_types = (device_type,)
        self.backend = backend
        self.fp32 = fp32

    def strategies(self, case):
        return ("gqa", "KV heads expanded") if self.backend is not None else ("gqa",)

    def prepare(self, inp, strategy="gqa", check=False):
        _no_sinks(inp, "torch SDPA")
        w = inp.workload
        dtype = torch.float32 if self.fp32 else run_dtype(inp)
        q, k, v, exact = as_dtype(inp, dtype)
        group = w.num_qo_heads // w.num_kv_heads
        if strategy != "gqa":
            k, v = _expand_heads(k, v, group)
        gqa = strategy == "gqa" and group > 1
        notes = [precision_note(exact, dtype) if not self.fp32 else "fp32"]
        calls = []
        if w.uniform:
            calls.append(self._call_args(q, k, v, w.batch_size, w.q_lens[0], w.kv_lens[0], inp.window_left))
        else:
            require(check or inp.device.type == "cpu",
                    "ragged lengths: the dense call times uniform batches only (see cudnn_varlen)")
            q0 = k0 = 0
            for lq, lk in zip(w.q_lens, w.kv_lens):
                calls.append(self._call_args(q[q0:q0 + lq], k[k0:k0 + lk], v[k0:k0 + lk], 1, lq, lk,
                                             inp.window_left))
                q0, k0 = q0 + lq, k0 + lk
            notes.append("one call per request")
        if any(c[3] is not None for c in calls):
            notes.append("bottom-right mask materialized")
        scale = inp.bmm1_scale
        backend = self.backend

        def run():
            if backend is None:
                return [F.scaled_dot_product_attention(qd, kd, vd, attn_mask=m, is_causal=m is None,
                                                       scale=scale, enable_gqa=gqa)
                        for qd, kd, vd, m in calls]
            with torch.nn.attention.sdpa_kernel(backend):
                return [F.scaled_dot_product_attention(qd, kd, vd, attn_mask=m, is_causal=m is None,
                                                       scale=scale, enable_gqa=gqa)
                        for qd, kd, vd, m in calls]

        def result(outs):
            return torch.cat([o.transpose(1, 2).reshape(-1, o.shape[1], o.shape[3]) for o in outs])

        return Prepared(run, result, "; ".join(n for n in notes if n), exact and not self.fp32)

    @staticmethod
    def _call_args(q, k, v, batch, lq, lk, window_left):
        qd = q.view(batch, lq, q.shape[1], q.shape[2]).transpose(1, 2)
        kd = k.view(batch, lk, k.shape[1], k.shape[2]).transpose(1, 2)
        vd = v.view(batch, lk, v.shape[1], v.shape[2]).transpose(1, 2)
        mask = None
        if lq != lk or window_left >= 0:
            mask = bottom_right_mask(lq, lk, window_left, q.device)
        return qd, kd, vd, mask


class CudnnVarlen(Peer):
    """torch.ops.aten._cudnn_attention_forward on packed [T, H, D] with cumulative lengths."""

    name = "cudnn_varlen"
    # Measured with torch 2.11 / cuDNN 9.19 on an H200: with kv_len > q_len the op masks top-left
    # (every row of a request with a cached prefix wrong), and cumulative lengths must be int32.
    causal_top_left = True

    def strategies(self, case):
        return ("gqa", "KV heads expanded")

    def prepare(self, inp, strategy="gqa", check=False):
        _no_sinks(inp, "the cuDNN varlen op")
        require(inp.window_left < 0, "the cuDNN varlen op takes no window")
        w = inp.workload
        dtype = run_dtype(inp)
        q, k, v, exact = as_dtype(inp, dtype)
        if strategy != "gqa":
            k, v = _expand_heads(k, v, w.num_qo_heads // w.num_kv_heads)
        cu_q, cu_k = inp.cum_seq_lens_q, inp.cum_seq_lens_kv
        max_q, max_k, scale = inp.max_q_len, inp.max_kv_len, inp.bmm1_scale

        def run():
            return torch.ops.aten._cudnn_attention_forward(
                q, k, v, None, cu_q, cu_k, max_q, max_k, False, 0.0, True, False, scale=scale)[0]

        return Prepared(run, lambda o: o, precision_note(exact, dtype), exact)


class FlashAttn2(Peer):
    """torch.ops.aten._flash_attention_forward, varlen, bottom-right causal, native GQA."""

    name = "fa2"

    def prepare(self, inp, strategy="", check=False):
        _no_sinks(inp, "FlashAttention-2")
        w = inp.workload
        require(w.head_dim <= 256 and w.head_dim % 8 == 0, f"FlashAttention-2 takes no head dim {w.head_dim}")
        dtype = run_dtype(inp)
        q, k, v, exact = as_dtype(inp, dtype)
        cu_q, cu_k = inp.cum_seq_lens_q, inp.cum_seq_lens_kv
        max_q, max_k, scale = inp.max_q_len, inp.max_kv_len, inp.bmm1_scale
        left = inp.window_left if inp.window_left >= 0 else None
        right = 0 if inp.window_left >= 0 else None

        def run():
            return torch.ops.aten._flash_attention_forward(
                q, k, v, cu_q, cu_k, max_q, max_k, 0.0, True, False, scale=scale,
                window_size_left=left, window_size_right=right)[0]

        return Prepared(run, lambda o: o, precision_note(exact, dtype), exact)


class Flex(Peer):
    """torch.compile'd flex_attention over the packed batch with a document + bottom-right causal
    (+ window) block mask; compilation and block-mask building happen in prepare."""

    name = "flex"

    def available(self):
        try:
            from torch.nn.attention import flex_attention  # noqa: F401
        except ImportError as e:
            return f"flex_attention unavailable: {e}"
        return None

    def prepare(self, inp, strategy="", check=False):
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        _no_sinks(inp, "FlexAttention (as benchmarked)")
        _raise_recompile_limits()
        w = inp.workload
        dtype = run_dtype(inp)
        q, k, v, exact = as_dtype(inp, dtype)
        dev = q.device
        doc_q = torch.repeat_interleave(torch.arange(w.batch_size, device=dev),
                                        torch.tensor(w.q_lens, device=dev))
        doc_k = torch.repeat_interleave(torch.arange(w.batch_size, device=dev),
                                        torch.tensor(w.kv_lens, device=dev))
        # absolute position of each query row in its request's KV (bottom-right alignment)
        starts_q = inp.cum_seq_lens_q[:-1].long()
        offsets = torch.tensor([lk - lq for lq, lk in zip(w.q_lens, w.kv_lens)], device=dev)
        pos_q = torch.arange(q.shape[0], device=dev) - starts_q[doc_q] + offsets[doc_q]
        pos_k = torch.arange(k.shape[0], device=dev) - inp.cum_seq_lens_kv[:-1].long()[doc_k]
        window = inp.window_left

        def mask_mod(b, h, qi, ki):
            allowed = (doc_q[qi] == doc_k[ki]) & (pos_k[ki] <= pos_q[qi])
            if window >= 0:
                allowed = allowed & (pos_k[ki] >= pos_q[qi] - window)
            return allowed

        block_mask = create_block_mask(mask_mod, 1, None, q.shape[0], k.shape[0], device=dev)
        q4, k4, v4 = (x.transpose(0, 1).unsqueeze(0) for x in (q, k, v))
        compiled = torch.compile(flex_attention, dynamic=False)
        scale = inp.bmm1_scale
        gqa = w.num_qo_heads != w.num_kv_heads

        def run():
            return compiled(q4, k4, v4, block_mask=block_mask, scale=scale, enable_gqa=gqa)

        run()
        return Prepared(run, lambda o: o[0].transpose(0, 1), "; ".join(
            n for n in ("gathered KV, block mask", precision_note(exact, dtype)) if n), exact)


def _raise_recompile_limits():
    """Each case has its own static shapes; let dynamo keep one compiled graph per case."""
    import torch._dynamo

    for knob in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                 "accumulated_recompile_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, max(256, getattr(torch._dynamo.config, knob)))


def cudnn_dense():
    from torch.nn.attention import SDPBackend

    return TorchDense("cudnn_sdpa", "cuda", backend=SDPBackend.CUDNN_ATTENTION)


def cpu_peers():
    return [TorchDense("torch_sdpa", "cpu"), TorchDense("torch_sdpa_fp32", "cpu", fp32=True)]


def cuda_peers():
    return [cudnn_dense(), CudnnVarlen(), FlashAttn2(), Flex()]
