"""The float64 reference every implementation is checked against before it is timed, the
tolerances of SPEC.md section 6, and the nvfp4 output decoding needed to compare nvfp4 results.
"""

import math

import torch

# (rtol, atol) by (input precision, output): SPEC.md section 6.
TOLERANCES = {"16": (1e-2, 1e-2), "fp8": (4e-2, 6e-2)}
NVFP4_SCALE_TOL = 0.2
NVFP4_MAX_STEPS = 1
NVFP4_RMS_STEPS = 0.3
E2M1_GRID = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
E4M3_MAX = 448.0
NVFP4_BLOCK = 16


def reference(inp):
    """O[t, h, :] in float64 on the CPU, per SPEC.md section 3 (bottom-right causal, window, sinks)."""
    w = inp.workload
    group = w.num_qo_heads // w.num_kv_heads
    q_all = inp.query.cpu().double()
    k_all, v_all = (x.cpu().double() for x in inp.gathered())
    sinks = inp.sinks.cpu().double() if inp.sinks is not None else None
    out = torch.zeros_like(q_all)
    q0 = k0 = 0
    for lq, lk in zip(w.q_lens, w.kv_lens):
        q = q_all[q0:q0 + lq]
        k = k_all[k0:k0 + lk].repeat_interleave(group, dim=1)
        v = v_all[k0:k0 + lk].repeat_interleave(group, dim=1)
        s = torch.einsum("qhd,khd->hqk", q, k) * inp.bmm1_scale
        p = torch.arange(lq, dtype=torch.long).unsqueeze(1) + (lk - lq)
        j = torch.arange(lk, dtype=torch.long).unsqueeze(0)
        allowed = j <= p
        if inp.window_left >= 0:
            allowed &= j >= p - inp.window_left
        s = s.masked_fill(~allowed, float("-inf"))
        m = s.amax(dim=-1, keepdim=True)
        if sinks is not None:
            m = torch.maximum(m, sinks.view(-1, 1, 1))
        e = torch.exp(s - m)
        denom = e.sum(dim=-1, keepdim=True)
        if sinks is not None:
            denom = denom + torch.exp(sinks.view(-1, 1, 1) - m)
        out[q0:q0 + lq] = torch.einsum("hqk,khd->qhd", e / denom, v) * inp.bmm2_scale
        q0 += lq
        k0 += lk
    return out


def tolerance(case):
    return TOLERANCES["fp8" if case.fp8_inputs else "16"]


def compare_dense(out, ref, rtol, atol):
    """(ok, message): every element within atol + rtol * |ref| and finite."""
    out = out.detach().cpu().double().reshape(ref.shape)
    diff = (out - ref).abs()
    finite = bool(torch.isfinite(out).all())
    excess = diff - (atol + rtol * ref.abs())
    ok = finite and bool((excess <= 0).all())
    msg = f"max |err| {diff.nan_to_num(float('inf')).max().item():.3g} (rtol {rtol:g}, atol {atol:g})"
    if not finite:
        msg += f", {int((~torch.isfinite(out)).sum())} non-finite"
    return ok, msg


def _e2m1_positions(codes):
    """Signed position on the e2m1 grid (-7..7) of 4-bit codes: bit 3 is the sign."""
    magnitude = (codes & 7).long()
    return torch.where((codes & 8) != 0, -magnitude, magnitude)


def decode_nvfp4(data, scale, start, num_tokens, num_heads, head_dim):
    """(positions [T, Hq*D] on the e2m1 grid, block scales [T, Hq*D/16] as float64) of an nvfp4
    output in the 128x4 swizzled scale layout of SPEC.md section 4."""
    raw = data.detach().cpu().reshape(num_tokens, num_heads * head_dim // 2).to(torch.uint8)
    codes = torch.stack([raw & 15, raw >> 4], dim=-1).reshape(num_tokens, -1)
    cols = num_heads * head_dim // NVFP4_BLOCK
    padded_cols = (cols + 3) // 4 * 4
    flat = scale.detach().cpu().contiguous().view(torch.uint8).reshape(-1)
    r = torch.arange(num_tokens).unsqueeze(1) + start
    c = torch.arange(cols).unsqueeze(0)
    offset = ((r // 128) * (padded_cols // 4) + c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4
    sf = flat[offset.reshape(-1)].view(torch.float8_e4m3fn).double().reshape(num_tokens, cols)
    return _e2m1_positions(codes), sf


def quantize_nvfp4_reference(ref, o_sf_scale):
    """(positions, scales) of the float64 reference quantized per SPEC.md section 4."""
    t = ref.shape[0]
    blocks = ref.reshape(t, -1, NVFP4_BLOCK)
    amax = blocks.abs().amax(dim=-1)
    sf = (o_sf_scale * amax / 6.0).clamp(max=E4M3_MAX).float().to(torch.float8_e4m3fn).double()
    safe = torch.where(sf == 0, torch.ones_like(sf), sf)
    x = (blocks * o_sf_scale / safe.unsqueeze(-1)).clamp(-6.0, 6.0)
    grid = torch.tensor(E2M1_GRID, dtype=torch.float64)
    dist = (x.abs().unsqueeze(-1) - grid).abs()
    idx = dist.argmin(dim=-1)
    # ties go to the even code (round to nearest even), argmin picked the lower one
    upper = (idx + 1).clamp(max=len(E2M1_GRID) - 1)
    tie = (dist.gather(-1, upper.unsqueeze(-1)).squeeze(-1) == dist.gather(-1, idx.unsqueeze(-1)).squeeze(-1))
    idx = torch.where(tie & (idx % 2 == 1), upper, idx)
    idx = torch.where((sf == 0).unsqueeze(-1), torch.zeros_like(idx), idx)
    pos = torch.where(x < 0, -idx, idx)
    return pos.reshape(t, -1), sf


def compare_nvfp4(result, ref, o_sf_scale, num_heads, head_dim):
    """(ok, message) for an FP4Tensor-like result (fields data, scale, scale_start_index)."""
    t = ref.shape[0]
    pos, sf = decode_nvfp4(result.data, result.scale, int(getattr(result, "scale_start_index", 0)),
                           t, num_heads, head_dim)
    ref_pos, ref_sf = quantize_nvfp4_reference(ref.reshape(t, -1), o_sf_scale)
    sf_err = ((sf - ref_sf).abs() / ref_sf.abs().clamp(min=1.0)).max().item()
    steps = (pos - ref_pos).double()
    max_steps = steps.abs().max().item()
    rms = math.sqrt(steps.pow(2).mean().item())
    ok = sf_err <= NVFP4_SCALE_TOL and max_steps <= NVFP4_MAX_STEPS and rms < NVFP4_RMS_STEPS
    return ok, f"scales {sf_err:.3g} rel/abs, codes max {max_steps:.0f} steps, rms {rms:.3g}"


def compare(result, ref, inp):
    """(ok, message) for one implementation's result on the check instance."""
    case = inp.case
    if case.out_dtype == "nvfp4" and hasattr(result, "scale"):
        w = case.workload
        return compare_nvfp4(result, ref, inp.o_sf_scale, w.num_qo_heads, w.head_dim)
    rtol, atol = tolerance(case)
    return compare_dense(result, ref, rtol, atol)
