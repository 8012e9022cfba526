// Hopper attention kernel: e4m3 Q, K and V on FP8 WGMMA, head dim 512 (two consumer warpgroups splitting
// the columns).
#include "cuda/sm90/run.cuh"

CTXATTN_SM90_INSTANTIATE(kE4m3, 512, kKv16)
