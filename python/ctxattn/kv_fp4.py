"""NVFP4 paged KV caches: quantize a 16-bit cache into the layout the call reads, and back.

Layout (SPEC 8.1): data uint8 [P, Hkv, N, D/2] ("HND") or [P, N, Hkv, D/2] ("NHD"), two e2m1
codes a byte, the even element in the low nibble; block scales float8_e4m3fn [P, Hkv, N, D/16]
(or NHD), one per 16 consecutive elements of a token row. K's scales are linear; V's are
interleaved by 4 tokens inside each page x head tile: seen as a contiguous HND [N, S] array
(S = D/16), position (t // 4) * 4 * S + 4 * s + t % 4 holds the scale of token t, block s (an
NHD cache stores the bytes that become that tile after transposing to HND). A value is
e2m1 x block scale x the tensor's global scale; the call reads e2m1 x block scale and the caller
folds the global scales into bmm1_scale / bmm2_scale.

Plain torch, on the tensors' own device; for preparing caches and for tests, not for a hot path
(the global scale's amax is read back to the host).
"""

import torch

__all__ = ["nvfp4_quantize_paged_kv_cache", "nvfp4_dequantize_paged_kv_cache"]

_E4M3_MAX = 448.0
_E2M1_MAX = 6.0
_BLOCK = 16
# e2m1 magnitudes by code 0..7; code 8..15 are their negatives.
_E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def _check_pair(k_cache, v_cache, kv_layout, what):
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"{name}: expected a 4-D {what} tensor, got {t if not isinstance(t, torch.Tensor) else tuple(t.shape)}")
    if k_cache.shape != v_cache.shape:
        raise ValueError(f"k_cache and v_cache must have the same shape, got {tuple(k_cache.shape)} and {tuple(v_cache.shape)}")
    if kv_layout not in ("HND", "NHD"):
        raise ValueError(f"kv_layout: expected 'HND' or 'NHD', got {kv_layout!r}")


def _to_hnd(x, kv_layout):
    return x if kv_layout == "HND" else x.transpose(1, 2)


def _from_hnd(x, kv_layout):
    return (x if kv_layout == "HND" else x.transpose(1, 2)).contiguous()


def _e2m1_codes(x):
    """Round-to-nearest-even e2m1 codes (sign in bit 3) of float32 values in [-6, 6]."""
    a = x.abs()
    mag = (
        (a > 0.25).to(torch.uint8) + (a >= 0.75) + (a > 1.25) + (a >= 1.75) + (a > 2.5) + (a >= 3.5) + (a > 5.0)
    ).to(torch.uint8)
    return mag | ((x < 0).to(torch.uint8) << 3)


def _swizzle_v(sf):
    """Linear [P, H, N, S] V scales (HND) to the 4-token interleave of each [N, S] tile."""
    P, H, N, S = sf.shape
    return sf.reshape(P, H, N // 4, 4, S).transpose(-1, -2).reshape(P, H, N, S)


def _unswizzle_v(sf):
    P, H, N, S = sf.shape
    return sf.reshape(P, H, N // 4, S, 4).transpose(-1, -2).reshape(P, H, N, S)


def _quantize(x, global_sf):
    """(codes uint8 [..., D/2], scales float8_e4m3fn [..., D/16]) of float32 x [..., D]."""
    blocks = x.reshape(*x.shape[:-1], x.shape[-1] // _BLOCK, _BLOCK)
    amax = blocks.abs().amax(dim=-1)
    sf = (global_sf * amax / _E2M1_MAX).clamp(max=_E4M3_MAX).to(torch.float8_e4m3fn)
    sf_value = sf.float()
    scaled = blocks * (global_sf / torch.where(sf_value == 0, 1.0, sf_value))[..., None]
    scaled = torch.where(sf_value[..., None] == 0, 0.0, scaled.clamp(-_E2M1_MAX, _E2M1_MAX))
    codes = _e2m1_codes(scaled).reshape(*x.shape[:-1], x.shape[-1] // 2, 2)
    return codes[..., 0] | (codes[..., 1] << 4), sf


def nvfp4_quantize_paged_kv_cache(k_cache, v_cache, kv_layout="HND", k_global_sf=None, v_global_sf=None):
    """Quantizes 16-bit (or float32) K / V caches to NVFP4, as FlashInfer's function of this name.

    k_cache, v_cache: [P, Hkv, N, D] ("HND") or [P, N, Hkv, D] ("NHD"), D % 64 == 0, N % 4 == 0.
    k_global_sf, v_global_sf: optional global scale factors (float or 1-element tensor); default
    448 / amax of the tensor, so the block scales fall in [0, 448 / 6].

    Returns ((k_fp4, v_fp4), (k_scales, v_scales), k_global_scale, v_global_scale): uint8 data
    and float8_e4m3fn scales in the input layout (K's scales linear, V's 4-token interleaved), and
    the floats 1 / global_sf to fold into the call's scales: bmm1_scale = q_scale *
    k_global_scale * sm_scale, bmm2_scale = v_global_scale / o_scale.
    """
    _check_pair(k_cache, v_cache, kv_layout, "KV cache")
    head_dim = k_cache.shape[-1]
    page_size = k_cache.shape[2] if kv_layout == "HND" else k_cache.shape[1]
    if page_size % 4 != 0 or head_dim % 64 != 0:
        raise ValueError(
            "V-scale swizzling requires page_size % 4 == 0 and head_dim % 64 == 0, "
            f"got page_size={page_size}, head_dim={head_dim}."
        )
    data, scales, globals_ = [], [], []
    for name, cache, gsf in (("k_global_sf", k_cache, k_global_sf), ("v_global_sf", v_cache, v_global_sf)):
        x = cache.float()
        if gsf is None:
            gsf = _E4M3_MAX / max(x.abs().amax().item(), 1e-12)
        elif isinstance(gsf, torch.Tensor):
            if gsf.numel() != 1:
                raise ValueError(f"{name}: expected a scalar or 1-element tensor, got shape {tuple(gsf.shape)}")
            gsf = float(gsf.item())
        gsf = float(gsf)
        if not gsf > 0.0:
            raise ValueError(f"{name}: expected a positive global scale factor, got {gsf}")
        codes, sf = _quantize(x, gsf)
        data.append(codes.contiguous())
        scales.append(sf.contiguous())
        globals_.append(1.0 / gsf)
    v_sf = _from_hnd(_swizzle_v(_to_hnd(scales[1], kv_layout).contiguous()), kv_layout)
    return (data[0], data[1]), (scales[0], v_sf), globals_[0], globals_[1]


def nvfp4_dequantize_paged_kv_cache(kv_cache_fp4, kv_cache_sf, k_global_scale=1.0, v_global_scale=1.0,
                                    kv_layout="HND", dtype=torch.float32):
    """The inverse: (k, v) as `dtype` in the caches' layout, each value e2m1 x block scale x the
    global scale. With the default global scales of 1 this is exactly what the call computes
    with (the global scales being folded into bmm1_scale / bmm2_scale)."""
    k_fp4, v_fp4 = kv_cache_fp4
    k_sf, v_sf = kv_cache_sf
    _check_pair(k_fp4, v_fp4, kv_layout, "uint8 NVFP4 data")
    table = torch.tensor(_E2M1 + tuple(-x for x in _E2M1), dtype=torch.float32, device=k_fp4.device)

    def decode(codes, sf, global_scale):
        c = codes.to(torch.int64)
        values = torch.stack([table[c & 0xF], table[c >> 4]], dim=-1).flatten(-2)  # even element low
        sf = sf.view(torch.float8_e4m3fn) if sf.dtype == torch.uint8 else sf
        return (values * sf.float().repeat_interleave(_BLOCK, dim=-1) * float(global_scale)).to(dtype)

    v_linear = _from_hnd(_unswizzle_v(_to_hnd(v_sf, kv_layout).contiguous()), kv_layout)
    return decode(k_fp4, k_sf, k_global_scale), decode(v_fp4, v_linear, v_global_scale)
