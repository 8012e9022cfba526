// Hopper attention kernel: bf16 Q/K/V, head dim 256.
#include "cuda/sm90/run.cuh"

CTXATTN_SM90_INSTANTIATE(kBFloat16, 256, kKv16)
