// Hopper attention kernel: bf16 Q over an e4m3 K/V cache, head dim 256.
#include "cuda/sm90/run.cuh"

CTXATTN_SM90_INSTANTIATE(kBFloat16, 256, kKvE4m3)
