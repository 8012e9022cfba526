// Portable attention kernel: bf16 matrices, bf16 KV, head dim 128.
#include "cuda/sm80/run.cuh"

CTXATTN_SM80_INSTANTIATE(kBFloat16, 128, k16)
