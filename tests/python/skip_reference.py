"""SPEC 8.2 (skip-softmax) in float64 for the tests, written from the contract alone.

Per request b and KV head g, packed row r is query row r // G under head g * G + r % G; rows are
cut into groups of `rows` from the request's first row, keys into tiles of `keys` aligned at key 0.
Each group visits the tiles its rows' allowed keys touch, in `order`; the first tile that holds an
allowed key is always kept, every later one is skipped when exp(tile_max - running_max) <
f / seq_lens[b] holds for every row of the group (a row without allowed keys in the tile agrees,
a row that has seen nothing yet does not). A skipped tile changes nothing; sinks join once at
the end. Returns what the call writes and the (group, tile) counts the library reports.
"""

import math

import torch

from attn_reference import LOG2E, _scalar, logical_kv, request_kv

NEG_INF = -math.inf


def _group(s, v, lam, keys, descending):
    """(acc [R, D], m [R], l [R], counted, skipped) of one vote group: s [R, Lk] masked scores."""
    rows, lk = s.shape
    m = torch.full((rows,), NEG_INF, dtype=torch.float64)
    l = torch.zeros(rows, dtype=torch.float64)
    acc = torch.zeros(rows, v.shape[1], dtype=torch.float64)
    live = torch.isfinite(s).any(dim=0).nonzero()
    if live.numel() == 0:
        return acc, m, l, 0, 0
    tiles = range(int(live.min()) // keys, int(live.max()) // keys + 1)
    counted = skipped = 0
    for t in (reversed(tiles) if descending else tiles):
        cols = slice(t * keys, min((t + 1) * keys, lk))
        st = s[:, cols]
        tile_max = st.amax(dim=1)
        if not torch.isfinite(tile_max).any():
            continue
        counted += 1
        agree = (tile_max == NEG_INF) | (torch.exp(tile_max - m) < lam)
        if counted > 1 and bool(agree.all()):
            skipped += 1
            continue
        m_new = torch.maximum(m, tile_max)
        alpha = torch.where(m == NEG_INF, 0.0, torch.exp(m - m_new))
        p = torch.where(st == NEG_INF, 0.0, torch.exp(st - m_new[:, None]))
        l = l * alpha + p.sum(dim=1)
        acc = acc * alpha[:, None] + p @ v[cols]
        m = torch.where(torch.isfinite(m_new), m_new, m)
    return acc, m, l, counted, skipped


def reference(case, rows=64, keys=128, order="descending"):
    """(O, LSE base 2, tiles counted, tiles skipped) of the call `case` describes, float64."""
    factor = float(case.kwargs["skip_softmax_threshold_scale_factor"])
    q_all = case.query.cpu().double()
    pools = logical_kv(case)
    num_tokens, num_qo_heads, head_dim = q_all.shape
    num_kv_heads = pools[0].shape[1]
    group = num_qo_heads // num_kv_heads
    bmm1, bmm2 = _scalar(case.bmm1_scale), _scalar(case.bmm2_scale)
    window = case.kwargs.get("window_left", -1)
    causal = case.kwargs.get("causal", True)
    sinks = case.kwargs.get("sinks")
    sinks = None if sinks is None else (sinks[0] if isinstance(sinks, list) else sinks).cpu().double()
    out = torch.zeros(num_tokens, num_qo_heads, head_dim, dtype=torch.float64)
    lse = torch.zeros(num_tokens, num_qo_heads, dtype=torch.float64)
    counted = skipped = 0
    start = 0
    for b, (lq, lk) in enumerate(zip(case.q_lens, case.kv_lens)):
        if lq == 0:
            continue
        k, v = request_kv(case, b, pools)
        lam = factor / lk if lk else math.inf
        r = torch.arange(lq * group)
        i, hh = r // group, r % group
        j = torch.arange(lk)
        allowed = torch.ones(lq * group, lk, dtype=torch.bool)
        if causal:
            p = (lk - lq + i).unsqueeze(1)
            allowed = j.unsqueeze(0) <= p
            if window >= 0:
                allowed &= j.unsqueeze(0) >= p - window
        for g in range(num_kv_heads):
            heads = g * group + hh
            q = q_all[start + i, heads]  # [packed rows, D]
            s = (bmm1 * q @ k[:, g].T).masked_fill(~allowed, NEG_INF)
            for r0 in range(0, lq * group, rows):
                sl = slice(r0, min(r0 + rows, lq * group))
                acc, m, l, c, sk = _group(s[sl], v[:, g], lam, keys, order == "descending")
                counted, skipped = counted + c, skipped + sk
                if sinks is not None:
                    sink = sinks[heads[sl]]
                    m_all = torch.maximum(m, sink)
                    alpha = torch.where(m == NEG_INF, 0.0, torch.exp(m - m_all))
                    l = l * alpha + torch.exp(sink - m_all)
                    acc = acc * alpha[:, None]
                    m = m_all
                safe = torch.where(l == 0, 1.0, l)
                out[start + i[sl], heads[sl]] = torch.where(l[:, None] == 0, 0.0, bmm2 * acc / safe[:, None])
                lse[start + i[sl], heads[sl]] = torch.where(l == 0, NEG_INF, m * LOG2E + torch.log2(safe))
        start += lq
    return out, lse, counted, skipped
