"""What every implementation under test provides, and the input conversions they share.

An implementation (ctxattn or a peer) turns one case's `Inputs` into a `Prepared`: a `run`
callable that is what gets timed, and a `result` function that turns run's return value into
something the reference check can read ([T, Hq, D] dense, or the nvfp4 tensor). Everything that
is not the call itself (plans, graphs, compilation, gathering KV, casting) happens in `prepare`.
"""

import dataclasses

import torch

from bench.inputs import TORCH_DTYPES


class Unsupported(Exception):
    """The implementation cannot run this case (the message says why); reported, not an error."""


@dataclasses.dataclass
class Prepared:
    run: object
    result: object
    note: str = ""
    # False when the implementation runs another precision than the case's inputs (fp8 inputs
    # upcast to 16 bits, or fp32 on the CPU); such rows are not the "best peer" of a case that
    # has a peer at the case's own precision.
    exact: bool = True


class Peer:
    name = ""
    # The timed call reads the paged cache, so its time depends on the page size.
    paged = False
    device_types = ("cuda",)
    # The causal mask is aligned top-left (query i sees keys 0..i), which is the contract's
    # bottom-right mask only where every request has kv_len == q_len: such a peer is checked on an
    # instance without cached prefixes and skipped on workloads that have them.
    causal_top_left = False

    def available(self):
        """None when the implementation can be used in this process, else the reason."""
        return None

    def strategies(self, case):
        """Alternative ways of making the call, tried in order until one passes the check."""
        return ("",)

    def prepare(self, inp, strategy="", check=False):
        raise NotImplementedError


def as_dtype(inp, dtype):
    """(q, k, v, exact) with q [T, Hq, D] and k, v [sum(kv_lens), Hkv, D] in `dtype`.

    fp8 inputs become their exact values in `dtype` (e4m3 fits bf16 and fp16 exactly), which is
    what a peer without fp8 support would be fed; `exact` says whether `dtype` is the case's own.
    """
    k, v = inp.gathered()
    q = inp.query
    if q.dtype != dtype:
        q = q.to(dtype)
    if k.dtype != dtype:
        k, v = k.to(dtype), v.to(dtype)
    case = inp.case
    return q, k, v, dtype == TORCH_DTYPES[case.in_dtype] and dtype == TORCH_DTYPES.get(case.kv_dtype)


def run_dtype(inp):
    """The 16-bit dtype of the case: the input dtype, or the output dtype for fp8 inputs."""
    return TORCH_DTYPES[inp.case.dtype]


def bottom_right_mask(q_len, kv_len, window_left, device):
    """Boolean [q_len, kv_len], True where the key is allowed (SPEC.md section 3)."""
    p = torch.arange(q_len, device=device).unsqueeze(1) + (kv_len - q_len)
    j = torch.arange(kv_len, device=device).unsqueeze(0)
    allowed = j <= p
    if window_left >= 0:
        allowed &= j >= p - window_left
    return allowed


def precision_note(exact, dtype):
    return "" if exact else f"{str(dtype).replace('torch.', '')} in"


def require(condition, reason):
    if not condition:
        raise Unsupported(reason)
