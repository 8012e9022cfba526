// Hopper attention kernel: fp16 Q/K/V, head dim 128.
#include "cuda/sm90/run.cuh"

CTXATTN_SM90_INSTANTIATE(kFloat16, 128, kKv16)
