// Hopper attention kernel: fp16 Q over an e4m3 K/V cache, head dim 64.
#include "cuda/sm90/run.cuh"

CTXATTN_SM90_INSTANTIATE(kFloat16, 64, kKvE4m3)
