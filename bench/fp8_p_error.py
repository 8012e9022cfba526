"""How much P = softmax probabilities quantised to e4m3 (the A operand of an FP8 P V product)
moves the nvfp4 output codes, on the SPEC's data model (Q, K, V ~ N(0, 1) stored as e4m3), in
float64 against the exact output.

    python3 bench/fp8_p_error.py        (needs numpy)

Modes: exact P; P rounded to bf16 (the 16-bit kernels); P as one e4m3 value scaled by 256 (one
FP8 P V product); P as two e4m3 terms, hi = e4m3(256 p) and lo = e4m3(16 (256 p - hi)) / 16 (two
FP8 products). Prints the RMS difference of the nvfp4 codes (SPEC: below 0.3 against the
reference) and the largest error relative to the largest output.
"""
import numpy as np

E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def e4m3(x):
    """Round to the nearest e4m3 value (ties to even), saturating at 448."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    e = np.maximum(np.floor(np.log2(np.maximum(a, 1e-300))), -6.0)  # below 2^-6: subnormal step 2^-9
    step = 2.0 ** (e - 3)
    return np.sign(x) * np.minimum(np.round(a / step) * step, 448.0)


def nvfp4_codes(o):
    """Signed e2m1 grid positions of o (rows x D) under per-16-value e4m3 block scales."""
    blocks = o.reshape(o.shape[0], -1, 16)
    sf = e4m3(np.abs(blocks).max(-1, keepdims=True) / 6)
    sf = np.where(sf == 0, 1.0, sf)
    x = np.clip(blocks / sf, -6, 6)
    idx = np.abs(np.abs(x)[..., None] - E2M1).argmin(-1)
    return np.where(x < 0, -idx, idx).reshape(o.shape)


def bf16(x):
    u = x.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).view(np.float32).astype(np.float64)


def trial(rng, mode, n_keys, n_q=64, d=128, scale=None):
    q, k, v = (e4m3(rng.standard_normal(shape)) for shape in ((n_q, d), (n_keys, d), (n_keys, d)))
    s = q @ k.T * (scale if scale else 1 / np.sqrt(d))
    p = np.exp(s - s.max(1, keepdims=True))
    l = p.sum(1, keepdims=True)
    if mode == "bf16":
        pq = bf16(p)
    elif mode == "e4m3":
        pq = e4m3(256 * p) / 256
    elif mode == "e4m3 x2":
        hi = e4m3(256 * p)
        pq = (hi + e4m3(16 * (256 * p - hi)) / 16) / 256
    else:
        pq = p
    o, og = (p @ v) / l, (pq @ v) / l
    rms = np.sqrt(np.mean((nvfp4_codes(o) - nvfp4_codes(og)) ** 2.0))
    return rms, np.abs(og - o).max() / np.abs(o).max()


def main():
    rng = np.random.default_rng(0)
    print("%-8s %6s %10s %12s" % ("P", "keys", "nvfp4 RMS", "max rel err"))
    for mode in ("exact", "bf16", "e4m3", "e4m3 x2"):
        for n_keys in (64, 524, 8192):
            runs = [trial(rng, mode, n_keys) for _ in range(3)]
            print("%-8s %6d %10.3f %12.4f" % (mode, n_keys, np.mean([r[0] for r in runs]), np.mean([r[1] for r in runs])))


if __name__ == "__main__":
    main()
