// Hopper attention kernel: bf16 Q over an e4m3 K/V cache, head dim 512 (two consumer warpgroups splitting
// the columns).
#include "cuda/sm90/run.cuh"

CTXATTN_SM90_INSTANTIATE(kBFloat16, 512, kKvE4m3)
