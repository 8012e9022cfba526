// Hopper attention kernel: bf16 Q over an NVFP4 K/V cache (decoded to fp16 by the producer warpgroup), head dim 256.
#include "cuda/sm90/run.cuh"

CTXATTN_SM90_INSTANTIATE(kBFloat16, 256, kKvNvfp4)
