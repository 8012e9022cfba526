// Portable attention kernel: f16 matrices, e4m3 KV widened to f16, head dim 256.
#include "cuda/sm80/run.cuh"

CTXATTN_SM80_INSTANTIATE(kFloat16, 256, kE4m3)
