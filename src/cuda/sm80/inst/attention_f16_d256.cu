// Portable attention kernel: f16 matrices, f16 KV, head dim 256.
#include "cuda/sm80/run.cuh"

CTXATTN_SM80_INSTANTIATE(kFloat16, 256, k16)
