// Portable attention kernel: bf16 matrices, bf16 KV, head dim 64.
#include "cuda/sm80/run.cuh"

CTXATTN_SM80_INSTANTIATE(kBFloat16, 64, k16)
