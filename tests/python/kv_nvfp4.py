"""Test support for NVFP4 KV caches, written from SPEC 8.1 alone (no library code).

Data: two e2m1 codes a byte, element 2i in the low nibble, bit 3 the sign, magnitudes
{0, .5, 1, 1.5, 2, 3, 4, 6}. Scales: one e4m3 per 16 elements of a token row; K's linear, V's
stored in each page x head tile of N x S bytes (S = D / 16) at tile position
(t // 4) * 4 * S + 4 * s + t % 4 for token t, block s. Everything here works on HND tensors;
callers transpose for NHD.
"""

import torch

FP8 = torch.float8_e4m3fn
E2M1 = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=torch.float64)
E4M3_NAN = 0x7F
# Exact e4m3 values: random scales drawn from these keep K and V near unit size.
SCALE_CHOICES = torch.tensor([0.25, 0.3125, 0.375, 0.4375, 0.5, 0.625])


def v_tile_positions(page_size, blocks):
    """(stored token, stored block) of each logical (token, block) of a V scale tile."""
    t = torch.arange(page_size)[:, None]
    s = torch.arange(blocks)[None, :]
    f = (t // 4) * 4 * blocks + 4 * s + t % 4
    return f // blocks, f % blocks


def swizzle_v(linear):
    """Linear V scales [P, H, N, S] (HND) to the stored interleave, by the formula."""
    stored = torch.empty_like(linear)
    rows, cols = v_tile_positions(linear.shape[2], linear.shape[3])
    stored[:, :, rows, cols] = linear
    return stored


def unswizzle_v(stored):
    rows, cols = v_tile_positions(stored.shape[2], stored.shape[3])
    return stored[:, :, rows, cols]


def decode(data, scales):
    """float64 [P, H, N, D] from uint8 codes [P, H, N, D/2] and linear e4m3 scales [P, H, N, D/16]."""
    d = data.cpu().to(torch.int64)
    values = torch.stack([E2M1[d & 0xF], E2M1[d >> 4]], dim=-1).flatten(-2)
    sf = scales.cpu().view(torch.uint8).view(FP8).double()
    return values * sf.repeat_interleave(16, dim=-1)


def random_pages(used, num_kv_heads, head_dim, gen):
    """(codes, linear scales) of one NVFP4 pool (K's or V's), HND: random codes and scales in
    every slot `used` [P, N] marks; NaN scales (and random codes) everywhere else."""
    num_pages, page_size = used.shape
    shape = (num_pages, num_kv_heads, page_size)
    codes = torch.randint(0, 256, (*shape, head_dim // 2), generator=gen, dtype=torch.int64).to(torch.uint8)
    pick = torch.randint(0, len(SCALE_CHOICES), (*shape, head_dim // 16), generator=gen)
    sf = SCALE_CHOICES[pick].to(FP8).view(torch.uint8).clone()
    sf[~used[:, None, :, None].expand_as(sf)] = E4M3_NAN
    return codes, sf.view(FP8)
