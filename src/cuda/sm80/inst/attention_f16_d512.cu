// Portable attention kernel: f16 matrices, f16 KV, head dim 512 (two CTAs a tile, one half of V's columns each).
#include "cuda/sm80/run.cuh"

CTXATTN_SM80_INSTANTIATE(kFloat16, 512, k16)
