// Hopper attention kernel: bf16 queries over an NVFP4 cache (decoded to fp16; Q converted to fp16 with a
// power-of-two scale a row), head dim 128.
#include "cuda/sm90/run.cuh"

CTXATTN_SM90_INSTANTIATE(kBFloat16, 128, kKvNvfp4)
