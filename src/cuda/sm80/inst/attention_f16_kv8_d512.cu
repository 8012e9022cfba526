// Portable attention kernel: f16 matrices, e4m3 KV widened to f16 (e4m3 or f16 queries), head dim 512 (two CTAs a
// tile, one half of V's columns each).
#include "cuda/sm80/run.cuh"

CTXATTN_SM80_INSTANTIATE(kFloat16, 512, kE4m3)
