// Portable attention kernel: f16 matrices, e4m3 KV widened to f16, head dim 64.
#include "cuda/sm80/run.cuh"

CTXATTN_SM80_INSTANTIATE(kFloat16, 64, kE4m3)
