// Hopper attention kernel: fp16 (and e4m3) Q over an NVFP4 K/V cache (decoded to fp16 by the producer warpgroup), head dim 256.
#include "cuda/sm90/run.cuh"

CTXATTN_SM90_INSTANTIATE(kFloat16, 256, kKvNvfp4)
