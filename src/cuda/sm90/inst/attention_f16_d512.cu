// Hopper attention kernel: fp16 Q/K/V, head dim 512 (two consumer warpgroups splitting the columns).
#include "cuda/sm90/run.cuh"

CTXATTN_SM90_INSTANTIATE(kFloat16, 512, kKv16)
