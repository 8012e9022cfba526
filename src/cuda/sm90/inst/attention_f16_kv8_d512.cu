// Hopper attention kernel: fp16 Q over an e4m3 K/V cache, head dim 512 (two consumer warpgroups splitting
// the columns; e4m3 queries, widened, too).
#include "cuda/sm90/run.cuh"

CTXATTN_SM90_INSTANTIATE(kFloat16, 512, kKvE4m3)
