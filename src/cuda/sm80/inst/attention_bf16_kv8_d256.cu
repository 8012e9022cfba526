// Portable attention kernel: bf16 matrices, e4m3 KV widened to bf16, head dim 256.
#include "cuda/sm80/run.cuh"

CTXATTN_SM80_INSTANTIATE(kBFloat16, 256, kE4m3)
