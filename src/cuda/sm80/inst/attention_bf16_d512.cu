// Portable attention kernel: bf16 matrices, bf16 KV, head dim 512 (two CTAs a tile, one half of V's columns each).
#include "cuda/sm80/run.cuh"

CTXATTN_SM80_INSTANTIATE(kBFloat16, 512, k16)
